"""Willow Inference Server speech out: ``/api/tts``, ``/api/speaker`` and ``/api/sts``."""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response, StreamingResponse
from starlette.datastructures import UploadFile
from starlette.requests import ClientDisconnect

from daemon.audio.pcm import INTERNAL
from daemon.audio.stream import StreamEncoder, output_format
from daemon.errors import InvalidAudio, InvalidRequest
from daemon.runtime.engines import Engines
from daemon.speech.events import (
    FinalTranscript,
    PipelineEvent,
    ReplyChunk,
    RunEnded,
    RunError,
    SpeechAudio,
    SpeechAudioStart,
    SpeechAudioStop,
)
from daemon.speech.session import SpeechSession
from daemon.speech.speak import open_speech
from daemon.speech.transcribe import decode_upload
from daemon.voices.enroll import Enrollment
from protocols.http.auth import require_api_key
from protocols.http.common import config_of, ready_engines, require
from protocols.http.errors import HttpError, timed_out
from protocols.http.formats import audio_responses
from protocols.http.names import WIS_SPEAKERS, synthesis_options
from protocols.http.rawquery import raw_params
from protocols.http.voices_api import store_of
from protocols.http.willow import AsrQuery, feed_body, upload_session, willow_session

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
    engines: Engines = Depends(ready_engines),
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
    tts_service = require(engines.tts, "TTS")
    options = synthesis_options(
        engines,
        params.get("speaker") or params.get("voice"),
        WIS_SPEAKERS,
        sample_rate=config_of(request).willow.tts_sample_rate,
    )
    fmt = output_format(params.get("format") or "wav")
    use_cache = params.get("nocache", "").strip().lower() not in TRUE
    speech = await open_speech(tts_service, text, options, fmt, use_cache)
    headers = {"X-Cache": "hit" if speech.cached else "miss"}
    return StreamingResponse(speech.chunks, media_type=fmt.media_type, headers=headers)


@router.get("/api/speaker", summary="Voices that can speak")
async def list_speakers(engines: Engines = Depends(ready_engines)) -> dict[str, list[str]]:
    """``{"speakers": [...]}``: every voice in the voice store."""
    return {"speakers": [voice.name for voice in await engines.voices.list_async()]}


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
    engines: Engines = Depends(ready_engines),
) -> dict[str, object]:
    """WIS adds a custom speaker from an audio file; Hearth starts (or continues) an
    enrollment of that name with it: the recording is checked like any take, its
    transcript becomes its text, and ``hearth voices train`` turns the takes into a voice.

    The audio is a multipart ``audio_file``, or the request body itself.
    """
    data = await _form_audio(request)
    if data is None:
        data = await request.body()
        if not data:
            raise InvalidAudio("the request has no recording: send 'audio_file' or a body")
    enrollment = Enrollment(config_of(request), speaker)
    check = await enrollment.add_take(engines, data, None)
    status = await asyncio.to_thread(enrollment.status)
    return {
        "speaker": speaker,
        "accepted": check.accepted,
        "problems": list(check.problems),
        "transcript": check.transcript,
        "enrolled_seconds": status["seconds"],
        "progress": status["progress"],
    }


async def _form_audio(request: Request) -> bytes | None:
    """The multipart field ``audio_file`` (as WIS sends it); None if not multipart."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        return None
    form = await request.form(max_files=1, max_fields=8)
    upload = form.get("audio_file")
    if not isinstance(upload, UploadFile):  # starlette's: fastapi's is a subclass
        raise InvalidRequest("send the recording as the multipart field 'audio_file'")
    return await upload.read()


async def _feed_file(session: SpeechSession, data: bytes, max_seconds: float) -> None:
    """Decode a whole file (anything PyAV reads) into the session."""
    samples = await decode_upload(data, max_seconds) if data else None
    if samples is None or not samples.size:
        raise InvalidAudio("the file holds no audio")
    session.start(INTERNAL)
    await session.feed(samples.astype("<i2").tobytes())


@router.delete("/api/speaker", summary="Remove a voice")
async def delete_speaker(
    request: Request,
    speaker: str = Depends(speaker_query),
) -> dict[str, str]:
    """Remove a user voice from the store (bundled voices are read-only)."""
    await asyncio.to_thread(store_of(request).remove, speaker)
    return {"removed": speaker}


@router.post(
    "/api/sts",
    summary="Speech in, spoken reply out",
    response_class=StreamingResponse,
    responses=audio_responses("The spoken reply, in the asked format")
    | {204: {"description": "No speech was heard"}},
)
async def sts(
    request: Request,
    engines: Engines = Depends(ready_engines),
    query: AsrQuery = Depends(),
    speaker: str | None = Query(None, description="voice of the reply"),
    format: str = Query("wav", description="wav, flac, mp3, opus, aac or pcm"),
    conversation_id: str = Query("", max_length=128, description="keeps history across calls"),
) -> Response:
    """Speech → transcript → LLM → speech, streamed from the first spoken sentence.

    The body is raw audio with the ``x-audio-*`` headers of ``/api/willow`` (read as
    it arrives), or a multipart ``audio_file``. Response headers, URL-encoded:
    ``X-Transcript``; ``X-Reply``, the reply text written by the time audio starts;
    ``X-Reply-Complete`` (``true`` when that is the whole reply). 204 when no
    speech was heard.
    """
    config = config_of(request)
    limits = config.limits
    pipeline = require(engines.pipeline, "speech pipeline")
    fmt = output_format(format)
    tts_options = synthesis_options(
        engines, speaker, WIS_SPEAKERS, sample_rate=config.willow.tts_sample_rate
    )
    feed: Callable[[], Awaitable[None]]
    data = await _form_audio(request)
    if data is None:
        # A streamed body may go on after the speaker is done: the turn decides.
        session, decoder = upload_session(request, engines, config, query, turn=True)
        feed = functools.partial(feed_body, request, session, decoder, until_turn_end=True)
    else:
        session = willow_session(engines, config, query)
        feed = functools.partial(_feed_file, session, data, limits.max_audio_s)
    run = pipeline.start(
        session=session,
        conversation_id=conversation_id or uuid.uuid4().hex,
        speak=True,
        tts_options=tts_options,
    )
    events = run.events()
    assert isinstance(events, AsyncGenerator)
    # The body is fed while the run reads the session's events, so a reply can
    # start on a pause before the upload ends.
    feeding = asyncio.ensure_future(_feed_all(session, feed))
    try:
        async with asyncio.timeout(limits.request_timeout_s):
            head = await _until_audio(events)
            await feeding  # its error, if the run ended because the feed failed
    except BaseException as exc:
        feeding.cancel()
        await events.aclose()  # a reply started on a pause must not run on for nobody
        await session.close()
        if isinstance(exc, ClientDisconnect):
            _LOGGER.info("A speech-to-speech upload was cut off before its end")
            return Response(status_code=400)
        if isinstance(exc, TimeoutError):
            raise timed_out(limits.request_timeout_s) from None
        raise
    if head.rate is None:
        await events.aclose()
        return Response(status_code=204, headers=head.headers())
    body = _audio(events, StreamEncoder(fmt, head.rate))
    return StreamingResponse(body, media_type=fmt.media_type, headers=head.headers())


async def _feed_all(session: SpeechSession, feed: Callable[[], Awaitable[None]]) -> None:
    """Feed the audio, then end it; on failure end the session (and its stream)."""
    try:
        await feed()
        await session.finish()
    except BaseException:
        await session.close()
        raise


class _Head:
    """What is known when the first audio is ready."""

    def __init__(self) -> None:
        self.transcript = ""
        self.reply: list[str] = []
        self.rate: int | None = None
        self.complete = False

    def headers(self) -> dict[str, str]:
        return {
            "X-Transcript": quote(self.transcript),
            "X-Reply": quote("".join(self.reply).strip()),
            "X-Reply-Complete": "true" if self.complete else "false",
        }


async def _until_audio(events: AsyncIterator[PipelineEvent]) -> _Head:
    """Read events up to the first audio (or the end); raise the run's error."""
    head = _Head()
    async for event in events:
        if isinstance(event, FinalTranscript):
            head.transcript = event.text
        elif isinstance(event, ReplyChunk):
            head.reply.append(event.text)
        elif isinstance(event, RunError):
            raise HttpError(event.code, event.message)
        elif isinstance(event, SpeechAudioStart):
            head.rate = event.rate
            return head
        elif isinstance(event, RunEnded):
            head.complete = True
            return head
    return head


async def _audio(
    events: AsyncGenerator[PipelineEvent, None], encoder: StreamEncoder
) -> AsyncIterator[bytes]:
    """Encode the spoken reply as its events arrive."""
    try:
        async for event in events:
            if isinstance(event, SpeechAudio):
                if data := await asyncio.to_thread(encoder.write, event.pcm):
                    yield data
            elif isinstance(event, SpeechAudioStop):
                if data := await asyncio.to_thread(encoder.close):
                    yield data
            elif isinstance(event, RunError):
                _LOGGER.warning("Spoken reply failed mid-stream: %s: %s", event.code, event.message)
    finally:
        await events.aclose()
        await asyncio.to_thread(encoder.close)
