"""Spoken audio encoded while it is synthesized, and kept in the TTS cache.

Every HTTP speech route uses :func:`open_speech`: the text, voice and format are
checked, and the first audio awaited, before the response begins (so errors become
proper statuses), a cache hit is sent at once, and a miss streams sentence by
sentence and stores the result (unless a remote voice's fallback spoke).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from daemon.audio.pcm import encode
from daemon.audio.stream import OutputFormat, StreamEncoder
from daemon.engines.tts.base import SentenceAudio, SynthesisOptions
from daemon.engines.tts.service import TtsService

_LOGGER = logging.getLogger(__name__)
SEND_TIMEOUT_S = 30.0
"""Longest a client may take to accept one chunk before it is dropped (s)."""


@dataclass
class SpeechStream:
    """Encoded audio ready to send; iterate :attr:`chunks` once."""

    media_type: str
    rate: int
    """Sample rate of the audio (Hz)."""
    cached: bool
    """True when the audio came from the cache."""
    chunks: AsyncIterator[bytes]


async def open_speech(
    tts: TtsService,
    text: str,
    options: SynthesisOptions,
    fmt: OutputFormat,
    use_cache: bool = True,
) -> SpeechStream:
    """Validate, then return the audio as a stream of encoded chunks.

    With ``use_cache`` a cached copy is served when there and the result is stored
    when it is complete; without it the cache is neither read nor written.
    """
    voice, sentences = await tts.prepare_async(text, options)
    rate = tts.output_rate(voice, options)
    key = tts.key(text, voice, options, fmt.name) if use_cache else None
    hit = await tts.cache_get(key)
    if hit is not None:
        return SpeechStream(fmt.media_type, rate, True, _once(hit))
    blocks = tts.stream_prepared(voice, sentences, options)
    # The first audio is awaited here, so that a failure before any (a remote voice's
    # servers down with no fallback, a full queue) is a status, not a cut response.
    first = await anext(blocks, None)
    chunks = _produce(tts, _after(first, blocks), fmt, rate, key)
    return SpeechStream(fmt.media_type, rate, False, _send_deadline(chunks))


async def _after(
    first: SentenceAudio | None, rest: AsyncIterator[SentenceAudio]
) -> AsyncIterator[SentenceAudio]:
    """``first`` (when there is one), then ``rest``."""
    if first is None:
        return
    yield first
    async for block in rest:
        yield block


async def _send_deadline(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """``chunks``, cancelling the task that sends them when one send outlasts
    ``SEND_TIMEOUT_S``: a client that stops reading would otherwise hold its
    connection and buffered audio for as long as it likes. The server closes a
    connection whose response task ends that way, so the client sees a cut body."""
    sender = asyncio.current_task()
    loop = asyncio.get_running_loop()
    timeout_s = SEND_TIMEOUT_S

    def drop() -> None:
        _LOGGER.info("Dropped a speech client that read nothing for %g s", timeout_s)
        if sender is not None:
            sender.cancel()

    async for chunk in chunks:
        timer = loop.call_later(timeout_s, drop)
        try:
            yield chunk  # the caller sends it before asking for the next one
        finally:
            timer.cancel()


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def _produce(
    tts: TtsService,
    blocks: AsyncIterator[SentenceAudio],
    fmt: OutputFormat,
    rate: int,
    key: str | None,
) -> AsyncIterator[bytes]:
    """Encode ``blocks`` as they come; store the whole under ``key``."""
    encoder = StreamEncoder(fmt, rate)
    pcm: list[bytes] = []
    sent: list[bytes] = []
    fallback = False
    try:
        async for block in blocks:
            pcm.append(block.pcm)
            fallback = fallback or block.fallback
            data = await asyncio.to_thread(encoder.write, block.pcm)
            if data:
                sent.append(data)
                yield data
        tail = await asyncio.to_thread(encoder.close)
        if tail:
            sent.append(tail)
            yield tail
    finally:
        # Idempotent; releases PyAV's encoder when the client left early.
        await asyncio.to_thread(encoder.close)
    if key is not None and any(pcm) and not fallback:
        # A remote voice's fallback is not cached: it must not outlive the outage.
        # The streamed WAV header has no length; the cached copy gets the real one.
        whole = (
            await asyncio.to_thread(encode, b"".join(pcm), rate, "wav")
            if fmt.name == "wav"
            else b"".join(sent)
        )
        await tts.cache_put(key, whole)
