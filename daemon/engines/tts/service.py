"""Streaming, cached speech synthesis over the voice store, used by every protocol.

Local voices are synthesized sentence by sentence in the TTS worker pool; remote
voices (``tts.remote``) are streamed from their server as the audio arrives, and
spoken by their local fallback voice when every endpoint fails (never cached).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import asdict
from typing import TypeVar

from daemon.audio.pcm import PcmResampler, encode, resample_pcm
from daemon.engines.tts.base import SentenceAudio, SynthesisOptions, TtsEngine
from daemon.engines.tts.cache import TtsCache, cache_key
from daemon.engines.tts.remote import MixedTts, RemoteTts, SpeakLocally
from daemon.engines.tts.text import (
    bound_pieces,
    check_speakable,
    ends_phrase,
    first_phrase,
    split_sentences,
    spoken,
)
from daemon.engines.tts.voices import VoiceInfo, VoiceStore
from daemon.engines.workers import WorkerPool
from daemon.errors import Busy, InvalidText, RemoteUnavailable, RequestTimeout, TextTooLong

_LOGGER = logging.getLogger(__name__)
READ_AHEAD = 4
"""Pieces of audio one request may hold synthesized ahead of its reader."""
STALL_TIMEOUT_S = 30.0
"""How long a request's buffer may stay full before its reader counts as gone (s)."""
_RETRY_S = 0.05
_T = TypeVar("_T")


class TtsService:
    """Validates requests, runs the engine in its worker pool, caches results."""

    def __init__(
        self,
        engine: TtsEngine,
        store: VoiceStore,
        pool: WorkerPool,
        cache: TtsCache | None,
        default_voice: str,
        sentence_silence_s: float,
        max_text_chars: int,
        stall_timeout_s: float = STALL_TIMEOUT_S,
    ) -> None:
        self.engine = engine
        self.store = store
        self.pool = pool
        self.cache = cache
        self.default_voice = default_voice
        self.sentence_silence_s = sentence_silence_s
        self.max_text_chars = max_text_chars
        self.stall_timeout_s = stall_timeout_s

    def prepare(self, text: str, options: SynthesisOptions) -> tuple[VoiceInfo, list[str]]:
        """Check text and voice; return the voice and the sentences to speak.

        For checks on the event loop: the voice comes from the store's memory
        (:meth:`VoiceStore.lookup`). What is synthesized uses :meth:`prepare_async`.
        """
        return self.check_voice(options), self._sentences(text)

    async def prepare_async(
        self, text: str, options: SynthesisOptions
    ) -> tuple[VoiceInfo, list[str]]:
        """Like :meth:`prepare`, with the voice read afresh from the store in a thread."""
        sentences = self._sentences(text)
        return await self.check_voice_async(options), sentences

    def _sentences(self, text: str) -> list[str]:
        if len(text) > self.max_text_chars:
            raise TextTooLong(f"text is {len(text)} characters; the limit is {self.max_text_chars}")
        check_speakable(text)
        sentences = split_sentences(spoken(text))
        if not sentences:
            raise InvalidText("text to speak is empty (or only Markdown marks and emoji)")
        return bound_pieces(sentences)

    def check_voice(self, options: SynthesisOptions) -> VoiceInfo:
        """The voice these options name, from the store's memory; UnknownVoice otherwise."""
        return self.store.lookup(options.voice or self.default_voice)

    async def check_voice_async(self, options: SynthesisOptions) -> VoiceInfo:
        """The voice these options name, read from the store off the event loop."""
        # A voice replaced or changed since it was last read must not be spoken (or
        # cached) with its old model and defaults.
        return await self.store.get_async(options.voice or self.default_voice)

    def output_rate(self, voice: VoiceInfo, options: SynthesisOptions) -> int:
        """The sample rate audio will have (Hz)."""
        return options.sample_rate or voice.sample_rate

    async def stream(
        self, text: str, options: SynthesisOptions, quick_start: bool = False
    ) -> AsyncIterator[SentenceAudio]:
        """Yield audio sentence by sentence as each is synthesized; with
        ``quick_start`` the first sentence's opening phrase is spoken on its own first
        (:func:`~daemon.engines.tts.text.first_phrase`), for earlier audio."""
        voice, sentences = await self.prepare_async(text, options)
        if quick_start:
            sentences = first_phrase(sentences)
        async for block in self.stream_prepared(voice, sentences, options):
            yield block

    async def stream_prepared(
        self, voice: VoiceInfo, sentences: list[str], options: SynthesisOptions
    ) -> AsyncIterator[SentenceAudio]:
        """Like :meth:`stream`, for what :meth:`prepare` returned.

        Each sentence is one call in the worker pool, so a worker is held only while
        it synthesizes, never while a reader is slow: a task synthesizes up to
        ``READ_AHEAD`` sentences ahead into this request's own buffer, and stops
        (the stream then fails with RequestTimeout) when the buffer stays full for
        ``stall_timeout_s``. A remote voice holds no worker: its sentences are
        streamed into the same buffer as the audio arrives (only its local fallback
        runs in the pool).
        """
        silence_s = (
            self.sentence_silence_s
            if options.sentence_silence_s is None
            else options.sentence_silence_s
        )
        rate = self.output_rate(voice, options)
        gap = b"\x00\x00" * int(rate * silence_s)
        last = len(sentences) - 1

        remote = self.engine.remote(voice) if isinstance(self.engine, MixedTts) else None
        if voice.remote is not None and remote is None:
            raise RemoteUnavailable(f"remote voice '{voice.name}' is not configured here")

        queue: asyncio.Queue[SentenceAudio | None] = asyncio.Queue(READ_AHEAD)
        failure: list[BaseException] = []

        async def put(item: SentenceAudio | None) -> None:
            try:
                async with asyncio.timeout(self.stall_timeout_s):
                    await queue.put(item)
            except TimeoutError:
                _LOGGER.info(
                    "Speech stopped: its reader took nothing for %g s", self.stall_timeout_s
                )
                raise RequestTimeout(
                    f"the client read no audio for {self.stall_timeout_s:g} s"
                ) from None

        async def produce() -> None:
            try:
                for index, sentence in enumerate(sentences):
                    tail = gap if index < last and ends_phrase(sentence) else b""
                    if remote is None:
                        pieces = self._local_pieces(voice, index, sentence, options, rate, tail)
                    else:
                        pieces = self._remote_piece(
                            remote, voice, index, sentence, options, rate, tail
                        )
                    async for block in pieces:
                        await put(block)
                await put(None)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # noqa: BLE001 - handed to the reader
                failure.append(exc)
                if not queue.full():
                    queue.put_nowait(None)  # wakes a reader waiting on the queue

        producer = asyncio.create_task(produce())
        try:
            while True:
                item = await queue.get()
                if failure:
                    raise failure[0]
                if item is None:
                    return
                yield item
        finally:
            producer.cancel()

    async def _local_pieces(
        self,
        voice: VoiceInfo,
        index: int,
        sentence: str,
        options: SynthesisOptions,
        rate: int,
        tail: bytes,
    ) -> AsyncIterator[SentenceAudio]:
        """One sentence of a local voice, piece by piece as the engine makes it (Piper:
        as it is decoded); each piece, resampled, is one call in the pool."""
        made: list[Iterator[bytes]] = []
        resampler = PcmResampler(voice.sample_rate, rate)

        def step(_: int, __: str) -> tuple[bytes, bool]:
            if not made:
                made.append(iter(self.engine.synthesize(voice, sentence, options)))
            pcm = next(made[0], None)
            if pcm is None:
                return resampler.feed(b"", last=True) + tail, True
            return resampler.feed(pcm), False

        first, done = index, False
        while not done:
            pcm, done = await self._run_piece(step, first, sentence)
            first = 1  # a sentence under way waits for room in the pool, never refused
            if pcm:
                yield SentenceAudio(pcm, rate, sentence)

    async def _remote_piece(
        self,
        remote: RemoteTts,
        voice: VoiceInfo,
        index: int,
        sentence: str,
        options: SynthesisOptions,
        rate: int,
        tail: bytes,
    ) -> AsyncIterator[SentenceAudio]:
        """One sentence of a remote voice as its audio arrives (no worker is held), or
        the whole sentence from the group's local fallback voice when every endpoint
        failed before any audio."""
        resampler = PcmResampler(voice.sample_rate, rate)
        try:
            async with contextlib.aclosing(remote.stream(voice, sentence, options)) as pcms:
                async for pcm in pcms:
                    if out := resampler.feed(pcm):
                        yield SentenceAudio(out, rate, sentence)
        except SpeakLocally as exc:
            local = await self.store.get_async(exc.voice)
            if local.remote is not None:
                raise RemoteUnavailable(f"fallback voice '{local.name}' is remote") from None
            yield await self._run_piece(
                self._fallback_work(local, options, rate, tail), index, sentence
            )
            return
        end = resampler.feed(b"", last=True) + tail
        if end:
            yield SentenceAudio(end, rate, sentence)

    def _fallback_work(
        self, local: VoiceInfo, options: SynthesisOptions, rate: int, tail: bytes
    ) -> Callable[[int, str], SentenceAudio]:
        """What a worker runs to speak a sentence with a remote voice's local fallback."""
        assert isinstance(self.engine, MixedTts)
        engine = self.engine.local
        local_options = dataclasses.replace(options, voice=local.name, speaker=None)

        def work(index: int, sentence: str) -> SentenceAudio:
            pcm = b"".join(engine.synthesize(local, sentence, local_options))
            pcm = resample_pcm(pcm, local.sample_rate, rate) + tail
            return SentenceAudio(pcm, rate, sentence, fallback=True)

        return work

    async def _run_piece(self, work: Callable[[int, str], _T], index: int, sentence: str) -> _T:
        """One sentence in the pool. A full queue refuses a new request (Busy), but a
        request already speaking waits for room, up to ``stall_timeout_s``."""
        deadline = asyncio.get_running_loop().time() + self.stall_timeout_s
        while True:
            try:
                return await self.pool.run(work, index, sentence)
            except Busy:
                if index == 0 or asyncio.get_running_loop().time() > deadline:
                    raise
            await asyncio.sleep(_RETRY_S)

    async def stream_cached(
        self, text: str, options: SynthesisOptions, quick_start: bool = False
    ) -> AsyncIterator[SentenceAudio]:
        """Like :meth:`stream`, but a cached utterance comes back at once as one
        block, and a fresh one is stored (as raw PCM) once it is complete."""
        voice, sentences = await self.prepare_async(text, options)
        if quick_start:
            sentences = first_phrase(sentences)
        key = self.key(text, voice, options, "pcm")
        hit = await self.cache_get(key)
        if hit is not None:
            yield SentenceAudio(hit, self.output_rate(voice, options), text)
            return
        parts = []
        fallback = False
        async for block in self.stream_prepared(voice, sentences, options):
            parts.append(block.pcm)
            fallback = fallback or block.fallback
            yield block
        if any(parts) and not fallback:  # a fallback's audio must not outlive the outage
            await self.cache_put(key, b"".join(parts))

    def key(self, text: str, voice: VoiceInfo, options: SynthesisOptions, fmt: str) -> str | None:
        """Cache key for text spoken by ``voice`` in this format; None without a cache."""
        if self.cache is None:
            return None
        # The model's change time: a voice replaced under the same name is not served stale.
        opts = asdict(options) | {"voice": voice.name, "voice_version": voice.version}
        if voice.remote is not None:  # the server, model and voice that speak it
            opts["remote"] = asdict(voice.remote)
        if opts["sentence_silence_s"] is None:
            opts["sentence_silence_s"] = self.sentence_silence_s
        return cache_key(text=text, options=opts, fmt=fmt)

    async def cache_get(self, key: str | None) -> bytes | None:
        """The audio cached under ``key``; None on a miss or when ``key`` is None."""
        if key is None or self.cache is None:
            return None
        return await asyncio.to_thread(self.cache.get, key)

    async def cache_put(self, key: str | None, data: bytes) -> None:
        """Store ``data`` under ``key`` (nothing when ``key`` is None)."""
        if key is not None and self.cache is not None:
            await asyncio.to_thread(self.cache.put, key, data)

    async def synthesize(
        self, text: str, options: SynthesisOptions, fmt: str = "wav", use_cache: bool = True
    ) -> bytes:
        """The whole utterance encoded as ``fmt`` (wav, flac, pcm).

        With ``use_cache`` the result comes from the cache when there and is stored
        there otherwise; without it the cache is neither read nor written.
        """
        voice, sentences = await self.prepare_async(text, options)
        key = self.key(text, voice, options, fmt) if use_cache else None
        hit = await self.cache_get(key)
        if hit is not None:
            return hit
        blocks = [block async for block in self.stream_prepared(voice, sentences, options)]
        parts = [block.pcm for block in blocks]
        if not any(parts):
            raise InvalidText("the text has nothing speakable in it")
        data = await asyncio.to_thread(
            encode, b"".join(parts), self.output_rate(voice, options), fmt
        )
        if not any(block.fallback for block in blocks):
            await self.cache_put(key, data)
        return data
