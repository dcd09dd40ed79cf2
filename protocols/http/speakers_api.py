"""The people Hearth knows by voice, over HTTP: ``/api/speakers`` (enroll, list, rename,
remove). Never an embedding: names, recording counts and dates only.

The store is read per request, so a change is seen at once by every protocol.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Body, Depends, Request, UploadFile
from fastapi.responses import JSONResponse, Response

from daemon.audio.pcm import decode_file
from daemon.errors import InvalidRequest, SpeakersOff
from daemon.runtime.facade import Hearth
from daemon.speakers.service import SpeakerService
from daemon.speakers.store import Speaker
from daemon.speech.transcribe import decode_upload
from daemon.voices.enroll import Enrollment
from protocols.http.auth import require_api_key
from protocols.http.common import config_of, ready_hearth

router = APIRouter(tags=["speakers"], dependencies=[Depends(require_api_key)])
MAX_RECORDING_S = 60.0
"""One enrollment recording at most."""


def _speakers(hearth: Hearth) -> SpeakerService:
    speakers = hearth.speakers
    if speakers is None:
        raise SpeakersOff(
            "speaker verification is off (speakers.enabled: false, or its model did not load)"
        )
    return speakers


def _shown(speaker: Speaker) -> dict[str, Any]:
    return {"name": speaker.name, "takes": speaker.takes, "enrolled_at": speaker.enrolled_at}


@router.get("/api/speakers", summary="Every enrolled speaker (names only)")
async def list_speakers(hearth: Hearth = Depends(ready_hearth)) -> dict[str, Any]:
    """Names, recording counts and enrollment times; never embeddings."""
    speakers = await asyncio.to_thread(_speakers(hearth).store.list)
    return {"speakers": [_shown(s) for s in speakers]}


@router.post("/api/speakers/{name}", summary="Enroll a speaker", status_code=201)
async def enroll_speaker(
    request: Request,
    name: str,
    files: list[UploadFile],
    hearth: Hearth = Depends(ready_hearth),
) -> JSONResponse:
    """Multipart ``files``: a few recordings of the person's voice, any format PyAV reads.

    Enrolling a known name again replaces their enrollment.
    """
    service = _speakers(hearth)
    if len(files) > service.settings.max_takes:
        raise InvalidRequest(f"at most {service.settings.max_takes} recordings")
    limits = config_of(request).limits
    recordings = [await decode_upload(await upload.read(), MAX_RECORDING_S) for upload in files]
    async with asyncio.timeout(limits.request_timeout_s):
        speaker = await service.enroll(name, recordings)
    return JSONResponse(_shown(speaker), status_code=201)


@router.post(
    "/api/speakers/{name}/from-voice/{voice}",
    summary="Enroll a speaker from a custom voice's takes",
    status_code=201,
)
async def enroll_from_voice(
    request: Request, name: str, voice: str, hearth: Hearth = Depends(ready_hearth)
) -> JSONResponse:
    """The takes the person recorded for custom voice ``voice`` (``/enroll``, ``hearth
    voices enroll``): nothing to record again."""
    service = _speakers(hearth)
    config = config_of(request)
    enrollment = Enrollment(config, voice)
    paths = await asyncio.to_thread(enrollment.recordings, service.settings.max_takes)
    recordings = [await asyncio.to_thread(decode_file, str(p), MAX_RECORDING_S) for p in paths]
    async with asyncio.timeout(config.limits.request_timeout_s):
        speaker = await service.enroll(name, recordings)
    return JSONResponse(_shown(speaker), status_code=201)


@router.patch("/api/speakers/{name}", summary="Rename a speaker")
async def rename_speaker(
    name: str,
    new_name: str = Body(..., embed=True, description="the speaker's new name"),
    hearth: Hearth = Depends(ready_hearth),
) -> dict[str, Any]:
    """``{"new_name": ...}``; the enrollment stays."""
    store = _speakers(hearth).store
    return _shown(await asyncio.to_thread(store.rename, name, new_name))


@router.delete("/api/speakers/{name}", summary="Forget a speaker", status_code=204)
async def remove_speaker(name: str, hearth: Hearth = Depends(ready_hearth)) -> Response:
    """Their embedding is deleted."""
    await asyncio.to_thread(_speakers(hearth).store.remove, name)
    return Response(status_code=204)
