"""The people Hearth knows by voice, over HTTP: ``/api/speakers`` (enroll, list, rename,
remove). Never an embedding: names, recording counts and dates only.

The store is read per request, so a change is seen at once by every protocol.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends, UploadFile
from fastapi.responses import JSONResponse, Response

from daemon.runtime.api import Services, Speaker
from protocols.http.auth import require_api_key
from protocols.http.common import ready_services

router = APIRouter(tags=["speakers"], dependencies=[Depends(require_api_key)])


def _shown(speaker: Speaker) -> dict[str, Any]:
    return {"name": speaker.name, "takes": speaker.takes, "enrolled_at": speaker.enrolled_at}


@router.get("/api/speakers", summary="Every enrolled speaker (names only)")
async def list_speakers(services: Services = Depends(ready_services)) -> dict[str, Any]:
    """Names, recording counts and enrollment times; never embeddings."""
    return {"speakers": [_shown(s) for s in await services.people.list_speakers()]}


@router.post("/api/speakers/{name}", summary="Enroll a speaker", status_code=201)
async def enroll_speaker(
    name: str,
    files: list[UploadFile],
    services: Services = Depends(ready_services),
) -> JSONResponse:
    """Multipart ``files``: a few recordings of the person's voice, any format PyAV reads.

    Enrolling a known name again replaces their enrollment.
    """
    services.people.check_enrollment(len(files))  # before the uploads are read
    speaker = await services.people.enroll_speaker(name, [await upload.read() for upload in files])
    return JSONResponse(_shown(speaker), status_code=201)


@router.post(
    "/api/speakers/{name}/from-voice/{voice}",
    summary="Enroll a speaker from a custom voice's takes",
    status_code=201,
)
async def enroll_from_voice(
    name: str, voice: str, services: Services = Depends(ready_services)
) -> JSONResponse:
    """The takes the person recorded for custom voice ``voice`` (``/enroll``, ``hearth
    voices enroll``): nothing to record again."""
    speaker = await services.people.enroll_speaker_from_voice(name, voice)
    return JSONResponse(_shown(speaker), status_code=201)


@router.patch("/api/speakers/{name}", summary="Rename a speaker")
async def rename_speaker(
    name: str,
    new_name: str = Body(..., embed=True, description="the speaker's new name"),
    services: Services = Depends(ready_services),
) -> dict[str, Any]:
    """``{"new_name": ...}``; the enrollment stays."""
    return _shown(await services.people.rename_speaker(name, new_name))


@router.delete("/api/speakers/{name}", summary="Forget a speaker", status_code=204)
async def remove_speaker(name: str, services: Services = Depends(ready_services)) -> Response:
    """Their embedding is deleted."""
    await services.people.remove_speaker(name)
    return Response(status_code=204)
