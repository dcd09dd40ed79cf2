"""The voice store over HTTP: ``/api/voices`` (import, list, change, remove),
enrollment takes and training jobs, and the ``/enroll`` page's API.

Store changes are visible at once to every protocol: the store is read per request.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Body, Depends, Form, Request, UploadFile
from fastapi.responses import JSONResponse, Response

from daemon.errors import InvalidRequest
from daemon.runtime.api import Services, VoiceStore
from daemon.voices.enroll import Enrollment
from daemon.voices.importer import import_bytes
from daemon.voices.training import Training
from protocols.http.auth import require_api_key
from protocols.http.common import config_of, ready_services, service_of

router = APIRouter(tags=["voices"], dependencies=[Depends(require_api_key)])


def store_of(request: Request) -> VoiceStore:
    """The voice store of the running configuration (the engines' one when loaded)."""
    path = config_of(request).voices_path
    service = service_of(request)
    if service.loaded and service.services.voices.store.user_dir == path:
        return service.services.voices.store
    return _store_at(path)


@functools.lru_cache(maxsize=4)
def _store_at(path: Path) -> VoiceStore:
    """One store per folder, so bundled voices' metadata is read once."""
    return VoiceStore(path)


def training_of(request: Request) -> Training:
    """The service's training jobs (one manager, so finished children are reaped)."""
    service: Any = service_of(request)
    training: Training = service.training
    return training


@router.get("/api/voices", summary="Every voice in the store")
async def list_voices(request: Request) -> dict[str, Any]:
    """Bundled and user voices with their metadata, and the default voice."""
    voices = await store_of(request).list_async()
    return {
        "default": config_of(request).tts.default_voice,
        "voices": [voice.describe() for voice in voices],
    }


@router.post("/api/voices", summary="Import a Piper voice", status_code=201)
async def add_voice(
    request: Request,
    name: str = Form(..., description="the new voice's name"),
    files: list[UploadFile] | None = None,
    model: UploadFile | None = None,
    config: UploadFile | None = None,
    archive: UploadFile | None = None,
    display_name: str | None = Form(None),
) -> JSONResponse:
    """Multipart: ``model`` (.onnx) and ``config`` (.onnx.json), or an ``archive``
    (.tar, .tar.gz or .zip holding both), or both files as ``files``.

    The voice must load and speak a test sentence; otherwise 400 with the reason.
    """
    uploads = [u for u in (*(files or ()), model, config, archive) if u is not None]
    if not uploads:
        raise InvalidRequest("send the voice as model + config files, or an archive")
    limit = config_of(request).voices.max_upload_mb * 1_000_000
    data = {}
    for upload in uploads:
        filename = upload.filename or "upload"
        if upload is model and not filename.endswith(".onnx"):
            filename += ".onnx"
        if upload is config and not filename.endswith(".json"):
            filename += ".json"
        data[filename] = await upload.read()
    meta = {"display_name": display_name} if display_name else {}
    voice = await asyncio.to_thread(import_bytes, store_of(request), name, data, meta, limit)
    return JSONResponse(voice.describe(), status_code=201)


@router.get("/api/voices/{name}", summary="One voice")
async def show_voice(request: Request, name: str) -> dict[str, Any]:
    """The voice's metadata and synthesis defaults."""
    return (await store_of(request).get_async(name)).describe()


@router.delete("/api/voices/{name}", summary="Remove a user voice", status_code=204)
async def remove_voice(request: Request, name: str) -> Response:
    """Delete a user voice (bundled voices are read-only: 400)."""
    await asyncio.to_thread(store_of(request).remove, name)
    return Response(status_code=204)


@router.patch("/api/voices/{name}", summary="Rename a voice or set its defaults")
async def change_voice(
    request: Request,
    name: str,
    body: dict[str, Any] = Body(
        ...,
        examples=[{"name": "grandpa", "display_name": "Grandpa", "defaults": {"speed": 0.9}}],
    ),
) -> dict[str, Any]:
    """JSON ``name`` (rename), ``display_name``, ``defaults`` (default_speaker, speed,
    noise_scale, noise_w_scale, volume; null clears one)."""
    store = store_of(request)
    unknown = set(body) - {"name", "display_name", "defaults"}
    if unknown:
        raise InvalidRequest(f"unknown field(s): {', '.join(sorted(unknown))}")
    defaults = body.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise InvalidRequest("defaults must be an object")
    display = body.get("display_name")
    if display is not None and not isinstance(display, str):
        raise InvalidRequest("display_name must be a string")
    if defaults or display is not None:
        await asyncio.to_thread(store.update, name, display, defaults)
    new_name = body.get("name")
    if new_name is not None and new_name != name:
        if not isinstance(new_name, str):
            raise InvalidRequest("name must be a string")
        name = (await asyncio.to_thread(store.rename, name, new_name)).name
    return (await store.get_async(name)).describe()


@router.get("/api/voices/{name}/enrollment", summary="Prompts and progress of an enrollment")
async def enrollment_status(request: Request, name: str) -> dict[str, Any]:
    """Prompts to read, accepted takes and progress toward the target duration."""
    return await asyncio.to_thread(Enrollment(config_of(request), name).status)


@router.put("/api/voices/{name}/enrollment/takes/{index}", summary="Record a take")
async def record_take(
    request: Request, name: str, index: int, services: Services = Depends(ready_services)
) -> dict[str, Any]:
    """The request body is the take (WAV, or any format PyAV reads) of prompt ``index``.

    Answers the checks; ``accepted`` false lists the problems to fix before a retake.
    """
    enrollment = Enrollment(config_of(request), name)
    await asyncio.to_thread(enrollment.prompt, index)  # a wrong index: before the upload
    data = await request.body()
    check = await services.speech.add_take(enrollment, data, index)
    return {"take": check.__dict__, "status": await asyncio.to_thread(enrollment.status)}


@router.delete(
    "/api/voices/{name}/enrollment/takes/{take_id}", summary="Drop a take", status_code=204
)
async def drop_take(request: Request, name: str, take_id: str) -> Response:
    """Remove an accepted take (to redo it)."""
    await asyncio.to_thread(Enrollment(config_of(request), name).remove, take_id)
    return Response(status_code=204)


@router.post("/api/voices/{name}/training", summary="Train the enrolled voice", status_code=202)
async def start_training(
    request: Request, name: str, replace: bool = False, display_name: str | None = None
) -> JSONResponse:
    """Start fine-tuning on the accepted takes, in the background."""
    status = await asyncio.to_thread(training_of(request).start, name, display_name, replace)
    return JSONResponse(status, status_code=202)


@router.get("/api/voices/{name}/training", summary="Training progress")
async def training_status(request: Request, name: str) -> dict[str, Any]:
    """State (queued, running, exporting, done, failed, interrupted), epoch, loss, time left."""
    return await asyncio.to_thread(training_of(request).status, name)


@router.delete("/api/voices/{name}/training", summary="Stop a training job")
async def cancel_training(request: Request, name: str) -> dict[str, Any]:
    """Stop the job; the voice is not added."""
    return await asyncio.to_thread(training_of(request).cancel, name)
