"""OpenAI-compatible endpoints: transcriptions, speech and models (chat completions are
in :mod:`protocols.http.openai_chat`).

The official ``openai`` client works against ``http://host:19000/v1`` with the API
key (any string when none is configured). Model and voice names of OpenAI's own
(``whisper-1``, ``alloy``...) mean Hearth's defaults.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Depends, Form, Request, UploadFile
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict

from daemon.audio.stream import output_format
from daemon.errors import HearthError
from daemon.runtime.api import (
    FileRequest,
    Identify,
    Segment,
    Services,
    TranscribeOptions,
    Transcript,
    VoiceRequest,
)
from protocols.http import formats
from protocols.http.auth import require_api_key
from protocols.http.common import ready_services, require
from protocols.http.formats import audio_responses
from protocols.http.names import OPENAI_ASR_MODELS, OPENAI_VOICES, asr_model_name

router = APIRouter(prefix="/v1", tags=["openai"], dependencies=[Depends(require_api_key)])
SPEECH_RATE = 24000
"""OpenAI's speech comes at 24 kHz (raw ``pcm`` clients assume it)."""
CREATED = int(time.time())


@router.post(
    "/audio/transcriptions",
    summary="Transcribe an audio file",
    responses=formats.media_responses(
        formats.TEXT_MEDIA_TYPES, "The transcript, in the asked response_format"
    ),
)
async def transcriptions(
    file: UploadFile,
    model: str = Form("whisper-1"),
    language: str | None = Form(None),
    prompt: str | None = Form(None),
    response_format: str = Form("json"),
    temperature: float = Form(0.0),
    stream: bool = Form(False),
    services: Services = Depends(ready_services),
) -> Response:
    """Text of ``file`` (any format PyAV reads); ``stream=true`` sends server-sent
    ``transcript.text.delta`` events as segments are decoded, then
    ``transcript.text.done``. ``temperature`` is accepted and ignored."""
    fmt = formats.check_response_format(response_format)
    name = asr_model_name(services, model, OPENAI_ASR_MODELS)
    options = TranscribeOptions(
        language=language or None,
        initial_prompt=prompt or None,
        timestamps=fmt in ("srt", "vtt", "verbose_json"),
    )
    # An unknown model or language fails now, not after the upload (or as a stream event).
    services.speech.check_transcribe(name, options)
    data = await file.read()
    if stream:
        items = await services.speech.stream_file(FileRequest(data, name, options))
        return StreamingResponse(_transcript_events(items), media_type="text/event-stream")
    # Who is speaking (for verbose_json) is found beside the decode.
    identify = Identify.NAME if fmt == "verbose_json" else Identify.NONE
    result = await services.speech.transcribe_file(
        FileRequest(data, name, options, identify=identify)
    )
    if fmt == "text":
        return PlainTextResponse(result.text + "\n")
    if fmt == "srt":
        return PlainTextResponse(formats.to_srt(result.segments))
    if fmt == "vtt":
        return PlainTextResponse(formats.to_vtt(result.segments), media_type="text/vtt")
    if fmt == "verbose_json":
        body = formats.verbose_json(
            result.text, result.language, result.audio_ms / 1000, result.segments
        )
        if result.identified:
            body["speaker"] = result.speaker  # an enrolled speaker's name, or null (beyond OpenAI)
        return JSONResponse(body)
    return JSONResponse({"text": result.text})


async def _transcript_events(items: AsyncIterator[Segment | Transcript]) -> AsyncIterator[bytes]:
    """Server-sent events of a streamed decode (the core bounds it by the deadline)."""
    text = ""
    try:
        async for item in items:
            if isinstance(item, Segment) and item.text:
                delta = (" " if text else "") + item.text
                text += delta
                yield formats.sse({"type": "transcript.text.delta", "delta": delta})
            elif isinstance(item, Transcript):
                yield formats.sse({"type": "transcript.text.done", "text": item.text})
    except HearthError as exc:
        yield formats.sse({"type": "error", "error": {"code": exc.code, "message": exc.message}})


class SpeechBody(BaseModel):
    """``POST /v1/audio/speech`` body."""

    model_config = ConfigDict(extra="ignore")
    model: str = "tts-1"
    input: str
    voice: str = "alloy"
    response_format: str = "mp3"
    speed: float = 1.0
    instructions: str | None = None
    """Accepted and ignored: Piper voices take no instructions."""
    stream_format: Literal["audio"] = "audio"


@router.post(
    "/audio/speech",
    summary="Speak text",
    response_class=StreamingResponse,
    responses=audio_responses("The spoken input, in the asked format"),
)
async def speech(
    body: SpeechBody, request: Request, services: Services = Depends(ready_services)
) -> StreamingResponse:
    """Audio of ``input`` (wav, flac, mp3, opus, aac, pcm) at 24 kHz, streamed as each
    sentence is spoken. OpenAI voice names mean the default voice."""
    require(services.voices.speaks, "TTS")
    fmt = output_format(body.response_format)
    options = services.voices.resolve_voice(
        VoiceRequest(body.voice, OPENAI_VOICES, speed=body.speed, sample_rate=SPEECH_RATE)
    )
    audio = await services.voices.open_speech(body.input, options, fmt)
    return StreamingResponse(audio.chunks, media_type=fmt.media_type)


@router.get("/models", summary="Models Hearth serves")
async def models(services: Services = Depends(ready_services)) -> dict[str, Any]:
    """ASR models, the LLM, the TTS engine and every voice (local and remote: a voice
    is what ``/audio/speech`` takes as ``voice``), as OpenAI lists models."""
    ids = [model.name for model in services.house.asr_models()]
    if services.chat.llm is not None:
        ids.append(services.chat.llm.name)
    owners = dict.fromkeys(ids, "hearth")
    if services.voices.speaks:
        owners.setdefault("piper", "hearth")
        for voice in await services.voices.list_voices():
            owner = f"hearth:{voice.remote.group}" if voice.remote is not None else "hearth"
            owners.setdefault(voice.name, owner)
    return {
        "object": "list",
        "data": [
            {"id": name, "object": "model", "created": CREATED, "owned_by": owner}
            for name, owner in owners.items()
        ],
    }
