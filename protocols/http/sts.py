"""Willow speech to speech: ``POST /api/sts``, one push-to-talk turn of a conversation.

The upload is one spoken request of the core (:mod:`daemon.speech.request`), a
push-to-talk turn of a conversation: it decodes, names the speaker, and starts the
reply on the speculative transcript while the body still arrives, within the
profile's cap and deadline. This module hands the body over, and turns the turn's
events into response headers and an encoded audio stream.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response, StreamingResponse
from starlette.requests import ClientDisconnect

from daemon.audio.decode import BodyDecoder
from daemon.audio.stream import StreamEncoder, output_format
from daemon.errors import HearthError
from daemon.runtime.api import (
    ConversationEvent,
    Decoding,
    Profile,
    Replies,
    Services,
    SpeechRequest,
    SpokenRequest,
    VoiceRequest,
)
from daemon.runtime.api import events as ev
from protocols.http.auth import require_api_key
from protocols.http.common import config_of, ready_services, require
from protocols.http.formats import audio_responses
from protocols.http.names import WIS_SPEAKERS
from protocols.http.willow import AsrQuery, form_audio, upload_decoder

_LOGGER = logging.getLogger(__name__)
router = APIRouter(tags=["willow"], dependencies=[Depends(require_api_key)])


@router.post(
    "/api/sts",
    summary="Speech in, spoken reply out",
    response_class=StreamingResponse,
    responses=audio_responses("The spoken reply, in the asked format")
    | {204: {"description": "No speech was heard"}},
)
async def sts(
    request: Request,
    services: Services = Depends(ready_services),
    query: AsrQuery = Depends(),
    speaker: str | None = Query(None, description="voice of the reply"),
    format: str = Query("wav", description="wav, flac, mp3, opus, aac or pcm"),
    conversation_id: str = Query("", max_length=128, description="keeps history across calls"),
) -> Response:
    """Speech → transcript → LLM → speech, streamed from the first spoken sentence.

    The body is raw audio with the ``x-audio-*`` headers of ``/api/willow`` (read as
    it arrives, and no further than the end of the speaker's turn), or a multipart
    ``audio_file``. Response headers, URL-encoded: ``X-Transcript``; ``X-Reply``,
    the reply text written by the time audio starts; ``X-Reply-Complete`` (``true``
    when that is the whole reply). 204 when no speech was heard.
    """
    config = config_of(request)
    require(services.chat.replies, "speech pipeline")
    fmt = output_format(format)
    tts_options = services.voices.resolve_voice(
        VoiceRequest(speaker, WIS_SPEAKERS, sample_rate=config.willow.tts_sample_rate)
    )
    data = await form_audio(request)
    decoder = upload_decoder(request, config) if data is None else None
    spoken = SpokenRequest(
        # A streamed body may go on after the speaker is done: the turn decides.
        Profile.DEVICE_UPLOAD if decoder is None else Profile.DEVICE_TURN,
        Decoding(query.model_name(services), query.options),
        replies=Replies(on=True, voice=tts_options),
        conversation_id=conversation_id,
        stream=True,
    )
    speech = await services.speech.open_request(spoken)
    events = speech.events()
    # The body is fed while the conversation hears it, so a reply can start on a
    # pause before the upload ends.
    feeding = asyncio.ensure_future(_hear(request, speech, data, decoder))
    reading = asyncio.ensure_future(_until_audio(events))
    try:
        await asyncio.wait({feeding, reading}, return_when=asyncio.FIRST_EXCEPTION)
        if feeding.done():
            feeding.result()  # the feed's error: no final will come
        head = await reading
        await feeding
    except BaseException as exc:
        feeding.cancel()
        reading.cancel()
        await speech.close()  # a reply started on a pause must not run on
        if isinstance(exc, ClientDisconnect):
            _LOGGER.info("A speech-to-speech upload was cut off before its end")
            return Response(status_code=400)
        raise
    if head.rate is None:
        await speech.close()
        return Response(status_code=204, headers=head.headers())
    body = _audio(speech, events, StreamEncoder(fmt, head.rate))
    return StreamingResponse(body, media_type=fmt.media_type, headers=head.headers())


async def _hear(
    request: Request, speech: SpeechRequest, data: bytes | None, decoder: BodyDecoder | None
) -> None:
    """Feed the upload to the request, then end the utterance."""
    if decoder is not None:
        await speech.hear_body(request.stream(), decoder)
    else:
        await speech.hear_file(data or b"")
    await speech.stop()  # the final (and the reply) follow as events


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


async def _until_audio(events: AsyncIterator[ConversationEvent]) -> _Head:
    """Read events up to the first audio (or the end); raise the conversation's error."""
    head = _Head()
    async for event in events:
        if isinstance(event, ev.FinalTranscript):
            head.transcript = event.text
            if not event.text.strip():
                head.complete = True  # nothing was said: no reply follows
                return head
        elif isinstance(event, ev.ReplyChunk):
            head.reply.append(event.text)
        elif isinstance(event, ev.SpeechAudioStart):
            head.rate = event.rate
            return head
        elif isinstance(event, ev.RunEnded):
            head.complete = True
            return head
    return head


async def _audio(
    speech: SpeechRequest, events: AsyncIterator[ConversationEvent], encoder: StreamEncoder
) -> AsyncIterator[bytes]:
    """Encode the spoken reply as its events arrive, to the end of the reply."""
    try:
        async for event in events:
            if isinstance(event, ev.SpeechAudio):
                if data := await asyncio.to_thread(encoder.write, event.pcm):
                    yield data
            elif isinstance(event, ev.SpeechAudioStop):
                if data := await asyncio.to_thread(encoder.close):
                    yield data
    except HearthError as exc:
        _LOGGER.warning("Spoken reply failed mid-stream: %s: %s", exc.code, exc.message)
    finally:
        await speech.close()
        await asyncio.to_thread(encoder.close)
