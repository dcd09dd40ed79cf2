"""The people Hearth knows by voice, over HTTP: ``/api/speakers`` (enroll, list, rename,
remove). Never an embedding: names, recording counts and dates only.

The store is read per request, so a change is seen at once by every protocol.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Body, Depends, Request, UploadFile
from fastapi.responses import JSONResponse, Response

from daemon.errors import InvalidRequest, SpeakersOff
from daemon.runtime.engines import Engines
from daemon.speakers.service import SpeakerService
from daemon.speakers.store import Speaker
from daemon.speech.transcribe import decode_upload
from protocols.http.auth import require_api_key
from protocols.http.common import config_of, ready_engines

router = APIRouter(tags=["speakers"], dependencies=[Depends(require_api_key)])
MAX_RECORDING_S = 60.0
"""One enrollment recording at most."""


def _speakers(engines: Engines) -> SpeakerService:
    if engines.speakers is None:
        raise SpeakersOff(
            "speaker verification is off (speakers.enabled: false, or its model did not load)"
        )
    return engines.speakers


def _shown(speaker: Speaker) -> dict[str, Any]:
    return {"name": speaker.name, "takes": speaker.takes, "enrolled_at": speaker.enrolled_at}


@router.get("/api/speakers", summary="Every enrolled speaker (names only)")
async def list_speakers(engines: Engines = Depends(ready_engines)) -> dict[str, Any]:
    """Names, recording counts and enrollment times; never embeddings."""
    speakers = await asyncio.to_thread(_speakers(engines).store.list)
    return {"speakers": [_shown(s) for s in speakers]}


@router.post("/api/speakers/{name}", summary="Enroll a speaker", status_code=201)
async def enroll_speaker(
    request: Request,
    name: str,
    files: list[UploadFile],
    engines: Engines = Depends(ready_engines),
) -> JSONResponse:
    """Multipart ``files``: a few recordings of the person's voice, any format PyAV reads.

    Enrolling a known name again replaces their enrollment.
    """
    service = _speakers(engines)
    if len(files) > service.settings.max_takes:
        raise InvalidRequest(f"at most {service.settings.max_takes} recordings")
    limits = config_of(request).limits
    recordings = [await decode_upload(await upload.read(), MAX_RECORDING_S) for upload in files]
    async with asyncio.timeout(limits.request_timeout_s):
        speaker = await service.enroll(name, recordings)
    return JSONResponse(_shown(speaker), status_code=201)


@router.patch("/api/speakers/{name}", summary="Rename a speaker")
async def rename_speaker(
    name: str,
    new_name: str = Body(..., embed=True, description="the speaker's new name"),
    engines: Engines = Depends(ready_engines),
) -> dict[str, Any]:
    """``{"new_name": ...}``; the enrollment stays."""
    store = _speakers(engines).store
    return _shown(await asyncio.to_thread(store.rename, name, new_name))


@router.delete("/api/speakers/{name}", summary="Forget a speaker", status_code=204)
async def remove_speaker(name: str, engines: Engines = Depends(ready_engines)) -> Response:
    """Their embedding is deleted."""
    await asyncio.to_thread(_speakers(engines).store.remove, name)
    return Response(status_code=204)
