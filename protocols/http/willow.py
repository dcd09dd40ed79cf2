"""Willow Inference Server speech-to-text: ``POST /api/willow`` and ``POST /api/asr``.

``/api/willow`` is one spoken request of the core (a device upload): the device's
chunked body is heard as it arrives, and the core starts decoding when the person
pauses (WIS waits for the whole body before it begins), verifies the speaker and
translates when asked, and keeps the audio when told to. ``/api/asr`` transcribes an
uploaded file. This module reads the WIS query and headers and writes WIS's JSON.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Query, Request, UploadFile
from fastapi.responses import JSONResponse, Response
from starlette.datastructures import UploadFile as StarletteUpload
from starlette.requests import ClientDisconnect

from daemon.audio.decode import BodyDecoder, body_decoder
from daemon.config import Config
from daemon.errors import InvalidRequest
from daemon.runtime.api import (
    Decoding,
    FileRequest,
    FinalTranscript,
    Identify,
    Profile,
    Services,
    SpokenRequest,
    TranscribeOptions,
)
from protocols.http.auth import require_api_key
from protocols.http.common import config_of, ready_services
from protocols.http.errors import HttpError
from protocols.http.names import WIS_MODELS, asr_model_name
from protocols.http.willow_audio import parse_audio_headers

_LOGGER = logging.getLogger(__name__)
router = APIRouter(tags=["willow"], dependencies=[Depends(require_api_key)])

MODEL_HELP = "ASR model name; WIS names (tiny, base, small, medium, large) mean the default"


def transcribe_options(
    beam_size: int | None, detect_language: bool, force_language: str | None
) -> TranscribeOptions:
    """WIS query parameters as decoding options (InvalidRequest when out of range)."""
    language = force_language.strip().lower() if force_language else None
    if language is None and detect_language:
        language = "auto"
    return TranscribeOptions(beam_size=beam_size, language=language)


class AsrQuery:
    """The WIS query parameters of every speech route (a FastAPI dependency)."""

    def __init__(
        self,
        model: str | None = Query(None, description=MODEL_HELP),
        beam_size: int | None = Query(None, description="1-10; default: the model's"),
        detect_language: bool = Query(False, description="detect the spoken language"),
        force_language: str | None = Query(None, description="ISO language code"),
    ) -> None:
        self.model = model
        self.options = transcribe_options(beam_size, detect_language, force_language)

    def model_name(self, services: Services) -> str | None:
        """The configured model to use (None, or a WIS size name: the default)."""
        return asr_model_name(services, self.model, WIS_MODELS)


async def form_audio(request: Request) -> bytes | None:
    """The multipart field ``audio_file`` (as WIS sends it); None if not multipart."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        return None
    form = await request.form(max_files=1, max_fields=8)
    upload = form.get("audio_file")
    if not isinstance(upload, StarletteUpload):  # fastapi's is a subclass
        raise InvalidRequest("send the recording as the multipart field 'audio_file'")
    return await upload.read()


def upload_decoder(request: Request, config: Config) -> BodyDecoder:
    """The body decoder for an upload described by ``x-audio-*`` headers (a bad header
    fails here, before any request opens)."""
    limits = config.limits
    codec, fmt = parse_audio_headers(request.headers, limits.max_sample_rate, limits.max_channels)
    return body_decoder(codec, fmt, limits.max_audio_s)


def wis_response(
    text: str,
    language: str,
    infer_ms: float,
    audio_ms: int,
    stats: bool,
    translation: str | None = None,
) -> dict[str, Any]:
    """The JSON WIS answers: language and text; stats and translation when asked."""
    body: dict[str, Any] = {"language": language, "text": text}
    if stats:
        body = {
            "infer_time": round(infer_ms, 1),
            "infer_speedup": speedup(audio_ms, infer_ms),
            "audio_duration": audio_ms,
        } | body
    if translation is not None:
        body["translation"] = translation
    return body


def speedup(audio_ms: float, infer_ms: float) -> int:
    """How many times faster than real time a decode was (rounded down, as WIS reports it)."""
    return int(audio_ms // infer_ms) if infer_ms > 0 else 0


def saved_audio(config: Config) -> Path:
    """Where uploads asked to be kept go (``willow.save_dir``, else the state folder)."""
    if config.willow.save_dir:
        return Path(config.willow.save_dir).expanduser()
    return config.state_path / "saved_audio"


@router.post("/api/willow", summary="Speech from a Willow device (chunked, real time)")
async def willow(
    request: Request,
    services: Services = Depends(ready_services),
    query: AsrQuery = Depends(),
    translate: bool = Query(False, description="also return an English translation"),
    stats: bool = Query(False, description="add infer_time, infer_speedup, audio_duration"),
    save_audio: bool = Query(False, description="store the audio (only if willow.save_audio)"),
    voice_auth: bool = Query(
        False, description="answer only for an enrolled speaker's voice (406 otherwise)"
    ),
) -> Response:
    """Transcribe the body while it streams in; answers ``{"language", "text"}``.

    Headers: ``x-audio-codec`` (pcm, wav, amrwb, or anything PyAV decodes) and, for
    pcm, ``x-audio-sample-rate``, ``x-audio-bits``, ``x-audio-channel``.
    """
    if voice_auth and not services.people.verifies:
        # Fail closed, before the upload: verification is off or its model did not load.
        raise HttpError("voice-not-authorized", "speaker verification is off (speakers.enabled)")
    config = config_of(request)
    decoder = upload_decoder(request, config)
    keep = save_audio and config.willow.save_audio
    spoken = SpokenRequest(
        Profile.DEVICE_UPLOAD,
        Decoding(query.model_name(services), query.options),
        identify=Identify.VERIFY if voice_auth else Identify.NONE,
        translate=translate,
        record_to=saved_audio(config) if keep else None,
    )
    speech = await services.speech.open_request(spoken)
    try:
        await speech.hear_body(request.stream(), decoder)
        final = await speech.finish()
    except ClientDisconnect:
        _LOGGER.info("A Willow upload was cut off before its end; nothing to answer")
        return Response(status_code=400)
    finally:
        await speech.close()
    _LOGGER.debug(
        "Willow: %d ms of audio, final %.0f ms after the body (speculative %s)",
        final.audio_ms,
        final.decode_ms,
        final.speculative,
    )
    # WIS adds its timings to every verified answer.
    body = wis_response(
        final.text,
        final.language,
        final.decode_ms,
        final.audio_ms,
        stats or voice_auth,
        final.translation,
    )
    if voice_auth:
        body |= voice_auth_fields(final)
    return JSONResponse(body)


def voice_auth_fields(final: FinalTranscript) -> dict[str, Any]:
    """WIS's ``voice_auth`` and ``speaker_status`` for an enrolled speaker's voice.

    Raises:
        HttpError: 406 ``voice-not-authorized`` for any other voice, no voice at all, or
            nobody enrolled (closed by default, as WIS).
    """
    if not final.speech_ms:
        raise HttpError("voice-not-authorized", "no voice heard to verify")
    if final.speaker is None:
        _LOGGER.info("Willow: voice_auth refused (no enrolled speaker matched)")
        raise HttpError("voice-not-authorized", "Unauthorized voice")
    scores = {name: f"{score:.3f}" for name, score in final.verified}
    return {"voice_auth": scores, "speaker_status": f"I heard {final.speaker} say:"}


@router.post("/api/asr", summary="Transcribe an uploaded audio file")
async def asr(
    audio_file: UploadFile,
    services: Services = Depends(ready_services),
    query: AsrQuery = Depends(),
    translate: bool = Query(False, description="also return an English translation"),
) -> JSONResponse:
    """Multipart ``audio_file`` in any format PyAV reads; answers text and timings."""
    name = query.model_name(services)
    services.speech.check_transcribe(name, query.options)  # before the upload is read
    data = await audio_file.read()
    upload = FileRequest(data, name, query.options, translate=translate)
    result = await services.speech.transcribe_file(upload)
    body = wis_response(
        result.text, result.language, result.infer_ms, result.audio_ms, True, result.translation
    )
    return JSONResponse(body)
