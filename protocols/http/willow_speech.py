"""Willow Inference Server speech out: ``/api/tts`` and ``/api/speaker`` (``/api/sts``
is in :mod:`protocols.http.sts`)."""

from __future__ import annotations

import asyncio
import logging

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse

from daemon.audio.stream import output_format
from daemon.errors import InvalidAudio, InvalidRequest
from daemon.runtime.api import Services, VoiceRequest
from daemon.voices.enroll import Enrollment
from protocols.http.auth import require_api_key
from protocols.http.common import config_of, ready_services, require
from protocols.http.formats import audio_responses
from protocols.http.names import WIS_SPEAKERS
from protocols.http.rawquery import raw_params
from protocols.http.voices_api import store_of
from protocols.http.willow import form_audio

_LOGGER = logging.getLogger(__name__)
router = APIRouter(tags=["willow"], dependencies=[Depends(require_api_key)])
TRUE = ("1", "true", "yes", "on")


@router.get(
    "/api/tts",
    summary="Speak text (Willow devices' TTS URL)",
    response_class=StreamingResponse,
    responses=audio_responses("The spoken text, in the asked format"),
)
async def tts(
    request: Request,
    services: Services = Depends(ready_services),
    text: str | None = Query(None, description="text to speak; may be sent unencoded, last"),
    format: str = Query("wav", description="wav, flac, mp3, opus, aac or pcm"),
    speaker: str | None = Query(None, description="a voice, or a speaker of the default voice"),
    nocache: bool = Query(False, description="synthesize anew; neither read nor fill the cache"),
) -> StreamingResponse:
    """Audio at ``willow.tts_sample_rate``, streamed sentence by sentence.

    Willow firmware appends the text without URL encoding; the raw query string is
    read so that spaces, ``&``, ``+`` and punctuation in the text survive.
    """
    params = raw_params(request.scope.get("query_string", b"").decode("latin-1"))
    text = params.get("text")
    if text is None:
        raise InvalidRequest("the text query parameter is missing")
    require(services.voices.speaks, "TTS")
    options = services.voices.resolve_voice(
        VoiceRequest(
            params.get("speaker") or params.get("voice"),
            WIS_SPEAKERS,
            sample_rate=config_of(request).willow.tts_sample_rate,
        )
    )
    fmt = output_format(params.get("format") or "wav")
    use_cache = params.get("nocache", "").strip().lower() not in TRUE
    speech = await services.voices.open_speech(text, options, fmt, use_cache)
    headers = {"X-Cache": "hit" if speech.cached else "miss"}
    return StreamingResponse(speech.chunks, media_type=fmt.media_type, headers=headers)


@router.get("/api/speaker", summary="Voices that can speak")
async def list_speakers(services: Services = Depends(ready_services)) -> dict[str, list[str]]:
    """``{"speakers": [...]}``: every voice in the voice store."""
    return {"speakers": [voice.name for voice in await services.voices.list_voices()]}


def speaker_query(
    speaker: str | None = Query(None, description="name of the voice"),
    speaker_name: str | None = Query(None, description="the same, as WIS clients name it"),
) -> str:
    """The voice a WIS speaker route names (a FastAPI dependency)."""
    name = speaker or speaker_name
    if not name:
        raise InvalidRequest("name the voice: ?speaker=NAME")
    return name


@router.post("/api/speaker", summary="Enroll a voice from a recording")
async def add_speaker(
    request: Request,
    speaker: str = Depends(speaker_query),
    services: Services = Depends(ready_services),
) -> dict[str, object]:
    """WIS adds a custom speaker from an audio file; Hearth starts (or continues) an
    enrollment of that name with it: the recording is checked like any take, its
    transcript becomes its text, and ``hearth voices train`` turns the takes into a voice.

    The audio is a multipart ``audio_file``, or the request body itself.
    """
    data = await form_audio(request)
    if data is None:
        data = await request.body()
        if not data:
            raise InvalidAudio("the request has no recording: send 'audio_file' or a body")
    enrollment = Enrollment(config_of(request), speaker)
    check = await services.speech.add_take(enrollment, data, None)
    status = await asyncio.to_thread(enrollment.status)
    return {
        "speaker": speaker,
        "accepted": check.accepted,
        "problems": list(check.problems),
        "transcript": check.transcript,
        "enrolled_seconds": status["seconds"],
        "progress": status["progress"],
    }


@router.delete("/api/speaker", summary="Remove a voice")
async def delete_speaker(
    request: Request,
    speaker: str = Depends(speaker_query),
) -> dict[str, str]:
    """Remove a user voice from the store (bundled voices are read-only)."""
    await asyncio.to_thread(store_of(request).remove, speaker)
    return {"removed": speaker}
