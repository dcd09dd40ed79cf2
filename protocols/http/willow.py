"""Willow Inference Server speech-to-text: ``POST /api/willow`` and ``POST /api/asr``.

``/api/willow`` reads the device's chunked upload as it arrives and feeds every
chunk to a speech session, which endpoints it and starts decoding when the person
pauses; WIS waits for the whole body before it begins. ``/api/asr`` transcribes an
uploaded file.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
import wave
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Query, Request, UploadFile
from fastapi.responses import JSONResponse, Response
from starlette.datastructures import UploadFile as StarletteUpload
from starlette.requests import ClientDisconnect

from daemon.audio.decode import BodyDecoder, PcmBody, WavBody, body_decoder
from daemon.audio.pcm import AudioFormat
from daemon.config import Config
from daemon.engines.asr.base import TranscribeOptions
from daemon.errors import InvalidAudio, InvalidRequest
from daemon.ops.storage import writing
from daemon.runtime.facade import Hearth
from daemon.runtime.profiles import Profile
from daemon.speakers.service import SpeakerService
from daemon.speech.events import FinalTranscript
from daemon.speech.session import SpeechSession
from daemon.speech.transcribe import decode_upload, speedup
from protocols.http.auth import require_api_key
from protocols.http.common import config_of, ready_hearth
from protocols.http.errors import HttpError, timed_out
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

    def model_name(self, hearth: Hearth) -> str | None:
        """The configured model to use (None, or a WIS size name: the default)."""
        return asr_model_name(hearth, self.model, WIS_MODELS)


def willow_session(hearth: Hearth, query: AsrQuery, turn: bool = False) -> SpeechSession:
    """A speech session for one device upload (no partial transcripts).

    A device ends its upload itself (its own VAD), so the turn model is only asked
    with ``turn`` (a speech-to-speech upload that may stream on after the turn).
    """
    profile = Profile.WILLOW_TURN if turn else Profile.WILLOW_UPLOAD
    return hearth.open_session(profile, query.model_name(hearth), query.options, partials=False)


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
    fails here, before any session opens)."""
    limits = config.limits
    codec, fmt = parse_audio_headers(request.headers, limits.max_sample_rate, limits.max_channels)
    return body_decoder(codec, fmt, limits.max_audio_s)


def upload_session(
    request: Request, hearth: Hearth, config: Config, query: AsrQuery, turn: bool = False
) -> tuple[SpeechSession, BodyDecoder]:
    """The session and body decoder for an upload described by ``x-audio-*`` headers."""
    decoder = upload_decoder(request, config)
    return willow_session(hearth, query, turn), decoder


async def feed_body(
    request: Request,
    session: SpeechSession,
    decoder: BodyDecoder,
    kept: list[bytes] | None = None,
    until_turn_end: bool = False,
) -> None:
    """Feed the request body to the session chunk by chunk, as it arrives.

    With ``until_turn_end``, reading stops when the session decides the speaker's
    turn is over (the rest of the body is not needed). Raises InvalidAudio when the
    body holds no audio at all.
    """

    async def feed(pcm: bytes) -> None:
        assert decoder.fmt is not None
        session.start(decoder.fmt)
        await session.feed(pcm)
        if kept is not None:
            kept.append(pcm)

    # Raw PCM and WAV only copy bytes; a codec (AMR-WB) decodes in a worker thread.
    inline = isinstance(decoder, (PcmBody, WavBody))
    async for chunk in request.stream():
        if not chunk:
            continue
        pcm = decoder.feed(chunk) if inline else await asyncio.to_thread(decoder.feed, chunk)
        if pcm:
            await feed(pcm)
            if until_turn_end and session.turn_ended:
                return
    if tail := await asyncio.to_thread(decoder.finish):
        await feed(tail)
    if session.samples == 0:
        raise InvalidAudio("the body holds no audio")


async def final_transcript(session: SpeechSession) -> FinalTranscript | None:
    """Read a session's event stream to its end; its FinalTranscript, if one came.

    Read it from the start, in a task of its own, so that the stream never fills.
    """
    final = None
    async for event in session.events():
        if isinstance(event, FinalTranscript):
            final = event
    return final


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


def save_upload(config: Config, fmt: AudioFormat, parts: list[bytes]) -> Path:
    """Write an upload as a WAV file under ``willow.save_dir`` (blocking)."""
    folder = (
        Path(config.willow.save_dir).expanduser()
        if config.willow.save_dir
        else config.state_path / "saved_audio"
    )
    path = folder / f"willow-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}.wav"
    with writing("saved Willow audio", folder):
        folder.mkdir(parents=True, exist_ok=True)
        # 0600: recordings of the household are for the daemon's user only.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with open(fd, "wb") as raw, wave.open(raw, "wb") as out:
        out.setnchannels(fmt.channels)
        out.setsampwidth(fmt.width)
        out.setframerate(fmt.rate)
        out.writeframes(b"".join(parts))
    return path


@router.post("/api/willow", summary="Speech from a Willow device (chunked, real time)")
async def willow(
    request: Request,
    hearth: Hearth = Depends(ready_hearth),
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
    speakers = hearth.speakers
    if voice_auth and speakers is None:
        # Fail closed, before the upload: verification is off or its model did not load.
        raise HttpError("voice-not-authorized", "speaker verification is off (speakers.enabled)")
    config = config_of(request)
    limits = config.limits
    options = query.options
    session, decoder = upload_session(request, hearth, config, query)
    kept: list[bytes] | None = [] if save_audio and config.willow.save_audio else None
    reading = asyncio.ensure_future(final_transcript(session))
    try:
        async with asyncio.timeout(limits.request_timeout_s):
            await feed_body(request, session, decoder, kept)
            await session.finish()
            final = await reading
            assert final is not None  # finish() raises when there is none
            translation = None
            verified = None
            audio = await session.utterance_audio() if voice_auth or translate else None
            if voice_auth and speakers is not None:  # None: refused above
                verified = await verify_speaker(speakers, audio)
            if translate:
                translation = (
                    final.text
                    if audio is None
                    else await hearth.translate(session, audio, options, final.text)
                )
    except ClientDisconnect:
        _LOGGER.info("A Willow upload was cut off before its end; nothing to answer")
        return Response(status_code=400)
    except TimeoutError:
        raise timed_out(limits.request_timeout_s) from None
    finally:
        reading.cancel()
        await session.close()
    if kept and decoder.fmt is not None:
        path = await asyncio.to_thread(save_upload, config, decoder.fmt, kept)
        _LOGGER.info("Saved Willow audio to %s", path)
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
        translation,
    )
    if verified is not None:
        body |= verified
    return JSONResponse(body)


async def verify_speaker(speakers: SpeakerService, audio: Any) -> dict[str, Any]:
    """WIS's ``voice_auth`` and ``speaker_status`` for an enrolled speaker's voice.

    Raises:
        HttpError: 406 ``voice-not-authorized`` for any other voice, no voice at all, or
            nobody enrolled (closed by default, as WIS).
    """
    if audio is None:
        raise HttpError("voice-not-authorized", "no voice heard to verify")
    match = await speakers.identify(audio)
    if match.name is None:
        _LOGGER.info("Willow: voice_auth refused (no enrolled speaker matched)")
        raise HttpError("voice-not-authorized", "Unauthorized voice")
    threshold = speakers.settings.threshold
    scores = {name: f"{score:.3f}" for name, score in match.scores.items() if score >= threshold}
    return {"voice_auth": scores, "speaker_status": f"I heard {match.name} say:"}


@router.post("/api/asr", summary="Transcribe an uploaded audio file")
async def asr(
    request: Request,
    audio_file: UploadFile,
    hearth: Hearth = Depends(ready_hearth),
    query: AsrQuery = Depends(),
    translate: bool = Query(False, description="also return an English translation"),
) -> JSONResponse:
    """Multipart ``audio_file`` in any format PyAV reads; answers text and timings."""
    limits = config_of(request).limits
    options = query.options
    name = query.model_name(hearth)
    # An unknown model or language fails before the upload is decoded.
    hearth.check_transcribe(name, options)
    data = await audio_file.read()
    try:
        async with asyncio.timeout(limits.request_timeout_s):
            samples = await decode_upload(data, limits.max_file_audio_s)
            result = await hearth.transcribe_file(samples, name, options, translate)
    except TimeoutError:
        raise timed_out(limits.request_timeout_s) from None
    body = wis_response(
        result.text, result.language, result.infer_ms, result.audio_ms, True, result.translation
    )
    return JSONResponse(body)
