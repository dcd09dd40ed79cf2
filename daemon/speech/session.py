"""The streaming speech session: the heart of Hearth.

Audio arrives in arbitrary chunks at any rate, width and channel count; it is
converted to 16 kHz mono, classified frame by frame by the VAD, and endpointed by a
pure state machine. While the person speaks, partial transcripts are decoded now and
then. When the VAD sees the end of speech, the trimmed utterance is decoded
*speculatively*, so that when the client says the audio is over the result is
usually ready; if speech resumes, that work is discarded. Audio without speech
gives an empty transcript without running Whisper.

Everything the session finds leaves through one bounded stream, :meth:`SpeechSession.events`,
which the adapter reads in a task of its own: a partial that is ready between two
chunks reaches the client at once, and a reader that falls behind holds
:meth:`~SpeechSession.feed` back rather than growing memory.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from daemon.audio.pcm import RATE, AudioFormat, PcmConverter, pcm_to_float
from daemon.engines.asr.base import AsrModel, TranscribeOptions, Transcript
from daemon.engines.turn.base import TurnModel, TurnPrediction
from daemon.engines.vad.base import Vad
from daemon.engines.workers import WorkerPool
from daemon.errors import AudioTooLong, InvalidAudio
from daemon.speech.endpoint import EndpointConfig, Endpointer, EndpointEvent, EndpointState
from daemon.speech.events import (
    FinalTranscript,
    PartialTranscript,
    SessionEvent,
    SpeculationDiscarded,
    SpeculativeTranscript,
    VoiceStarted,
    VoiceStopped,
)
from daemon.speech.stream import EventStream
from daemon.speech.turn_text import (
    TextTurn,
    TurnJudgement,
    TurnPolicy,
    text_turn,
    turn_complete,
    wants_text,
)

_LOGGER = logging.getLogger(__name__)
PARTIAL_QUIET_S = 0.06
"""No partial decode starts after this much silence (s)."""
MAX_QUEUED_EVENTS = 64
"""Events a session holds for a reader that has not taken them yet."""


@dataclass(frozen=True)
class SessionSettings:
    """Daemon-wide session behaviour (from config)."""

    endpoint: EndpointConfig = EndpointConfig()
    padding_s: float = 0.12
    """Audio kept before speech onset and after speech end when trimming."""
    speculative_padding_s: float | None = None
    """Trailing audio a speculative decode waits for (None: all of ``padding_s``). A
    client that ends the audio itself (push-to-talk) may speculate on less: the decode
    is kept as long as no more speech follows, whatever silence arrives after it."""
    partial_interval_s: float = 0.6
    """New audio between two partial decodes."""
    turn: TurnPolicy = TurnPolicy()
    """How the turn model's answer and the speculative transcript decide a turn."""
    max_audio_s: float = 60.0
    max_sample_rate: int = 192000
    max_channels: int = 8

    def push_to_talk(self, silence_s: float) -> SessionSettings:
        """These settings for a client that ends the utterance itself (a button).

        The speculative decode starts after ``silence_s`` of silence, with that much
        trailing audio: the person still holds the button, so a wrong guess (speech
        goes on) costs one discarded decode, and a release finds the text ready.
        """
        return replace(
            self,
            endpoint=replace(self.endpoint, speculative_silence_s=silence_s),
            speculative_padding_s=min(silence_s, self.padding_s),
        )


@dataclass(frozen=True)
class SessionOptions:
    """Per-request choices."""

    transcribe: TranscribeOptions = TranscribeOptions()
    partials: bool = True
    speculative: bool = True
    hands_free: bool = False
    """Many utterances in one stream: idle audio is dropped as it ages."""
    ends_turn: bool = False
    """The session ends the utterance itself: when the endpoint does, the final
    transcript is decoded and the stream ends; audio after it is dropped, and a later
    :meth:`SpeechSession.finish` changes nothing (Wyoming with ``requires_external_vad``
    false)."""


@dataclass
class _Decode:
    start: int
    speech_end: int
    """Where the speech ended (stream samples): the decode holds while it is the same."""
    task: asyncio.Task[Transcript]


class SpeechSession:
    """One utterance, or with ``hands_free`` an endless stream of them."""

    def __init__(
        self,
        asr: AsrModel,
        asr_pool: WorkerPool,
        vad: Vad,
        vad_pool: WorkerPool,
        settings: SessionSettings | None = None,
        options: SessionOptions | None = None,
        *,
        turn: TurnModel | None = None,
        turn_pool: WorkerPool | None = None,
    ) -> None:
        self.asr = asr
        self.settings = settings or SessionSettings()
        endpoint = self.settings.endpoint
        self._turn = turn if endpoint.turn and turn_pool is not None else None
        self._turn_pool = turn_pool
        if endpoint.turn and self._turn is None:
            endpoint = replace(endpoint, turn=False)  # no model: the fixed silence decides
        self.options = options or SessionOptions()
        asr.check_options(self.options.transcribe)  # before any audio: every protocol
        self._asr_pool = asr_pool
        self._vad_pool = vad_pool
        self._vad = vad.stream()
        self._frame = self._vad.frame_samples
        self.endpointer = Endpointer(endpoint)
        self._turn_task: asyncio.Task[None] | None = None
        self.turn_checks = 0
        """Turn-model decisions asked for: tests and benchmarks read it."""
        self.turn_skips = 0
        """Checks not made because the machine was busy (the fixed silence decided)."""
        self.judgements: deque[TurnJudgement] = deque(maxlen=32)
        """The latest turn decisions, with what decided them: tests and benchmarks read it."""
        self.ended: asyncio.Task[None] | None = None
        """With ``ends_turn``, once the endpoint ended the utterance: the final decode."""
        self.on_utterance: Callable[[np.ndarray], None] | None = None
        """Called with each utterance's trimmed audio as its final decode starts."""
        self._fmt: AudioFormat | None = None
        self._converter: PcmConverter | None = None
        self._buf = bytearray()
        self._vad_pos = 0
        self._offset = 0
        """Samples dropped from the buffer's front (hands-free streams)."""
        self._lock = asyncio.Lock()
        """Serializes input: feed, finish and the VAD worker's changes to the buffer."""
        self._events: EventStream[SessionEvent] = EventStream(MAX_QUEUED_EVENTS)
        self._outbox: deque[SessionEvent] = deque()
        """Events decided on the loop, in order, not yet in the stream."""
        self._flush_lock = asyncio.Lock()
        self._spec: _Decode | None = None
        self._partial: asyncio.Task[None] | None = None
        self._last_partial_at = 0
        self._last_partial_text = ""
        self._tasks: set[asyncio.Task[object]] = set()
        self._finished = False
        self.asr_calls = 0
        """Whisper decodes started (partials included): tests and metrics read it."""

    # ------------------------------------------------------------------ input

    def start(self, fmt: AudioFormat) -> None:
        """Declare the input format; validates it (InvalidAudio when absurd).

        Declaring the same format again is harmless (Wyoming repeats it on every
        chunk); a different format once audio has arrived is refused.
        """
        if fmt == self._fmt:
            return
        fmt.validate(self.settings.max_sample_rate, self.settings.max_channels)
        if self._fmt is not None and self.samples > 0:
            raise InvalidAudio(
                f"audio format changed mid-stream ({self._fmt.rate} Hz/{self._fmt.width} B/"
                f"{self._fmt.channels} ch to {fmt.rate} Hz/{fmt.width} B/{fmt.channels} ch)"
            )
        self._fmt = fmt
        self._converter = PcmConverter(fmt)

    @property
    def samples(self) -> int:
        """Internal samples received so far (whole stream)."""
        return self._offset + len(self._buf) // 2

    @property
    def in_utterance(self) -> bool:
        """True while an utterance is under way (speech was heard and not yet decoded)."""
        return self.endpointer.state is not EndpointState.WAITING

    @property
    def turn_ended(self) -> bool:
        """True when the turn model ended the utterance (a client may stop sending)."""
        return self._turn is not None and self.endpointer.state is EndpointState.ENDED

    async def feed(self, data: bytes) -> None:
        """Add a chunk of PCM in the declared format (any size).

        Hands-free, an utterance that ended is decoded here and its FinalTranscript
        joins the stream. Waits while the stream is full (its reader is behind).
        """
        if self._converter is None:
            raise InvalidAudio("audio arrived before its format (rate, width, channels)")
        async with self._lock:
            if self.ended is not None:
                return  # the session ended the utterance itself: the rest is dropped
            if self._finished:
                raise InvalidAudio("audio arrived after the end of the utterance")
            events = await self._vad_pool.run(self._ingest, data, False)
            self._handle(events)
            await self._after_end()
            await self._flush()

    async def _after_end(self) -> None:
        """An utterance the endpoint ended: hands-free, decode it and listen on; with
        ``ends_turn``, decode it and end the session (holding the session lock)."""
        if self.endpointer.state is not EndpointState.ENDED:
            return
        if self.options.hands_free:
            await self._next_utterance()
        elif self.options.ends_turn and self.ended is None:
            # Nothing is ingested after this, so the buffer the decode slices stays put.
            self._finished = True
            self.ended = asyncio.ensure_future(self._conclude(time.perf_counter()))
            self._tasks.add(self.ended)
            self.ended.add_done_callback(self._tasks.discard)

    async def _conclude(self, began: float) -> None:
        """The final transcript of an utterance the session ended itself; the stream
        ends with it (without it when the decode fails: ``ended`` holds the error)."""
        try:
            self._emit(await self._final(began))
            await self._flush()
        finally:
            self._events.close()

    def _append(self, samples: np.ndarray) -> None:
        limit = int(self.settings.max_audio_s * RATE)
        if len(self._buf) // 2 + samples.size > limit:
            raise AudioTooLong(f"audio is longer than the {self.settings.max_audio_s:g} s limit")
        self._buf += samples.astype("<i2").tobytes()

    def _drop(self, count: int) -> None:
        """Forget the oldest ``count`` buffered samples (already classified)."""
        count = min(count, self._vad_pos)
        if count > 0:
            del self._buf[: count * 2]
            self._offset += count
            self._vad_pos -= count

    def _ingest(self, data: bytes, last: bool) -> list[EndpointEvent]:
        """Convert and classify (runs in a worker thread, serialized per session)."""
        assert self._converter is not None and self._fmt is not None
        # Refuse an oversized chunk before converting it (memory stays bounded).
        incoming = len(data) // self._fmt.frame_bytes * RATE // self._fmt.rate
        if len(self._buf) // 2 + incoming > int(self.settings.max_audio_s * RATE) + RATE:
            raise AudioTooLong(f"audio is longer than the {self.settings.max_audio_s:g} s limit")
        samples = self._converter.convert(data)
        if last:
            samples = np.concatenate([samples, self._converter.flush()])
        self._append(samples)
        events: list[EndpointEvent] = []
        n = self._frame
        frame_s = n / RATE
        total = len(self._buf) // 2
        while self._vad_pos + n <= total:
            # A copy, so no view keeps the buffer from being resized.
            frame = np.frombuffer(self._buf[self._vad_pos * 2 : (self._vad_pos + n) * 2], "<i2")
            events.extend(self.endpointer.process(frame_s, self._vad.is_speech(frame)))
            self._vad_pos += n
        ep = self.endpointer
        if (
            self.options.hands_free
            and ep.speech_start_s is not None
            and ep.now_s - ep.speech_start_s >= self.settings.max_audio_s - 1.0
        ):
            # Hands-free streams never end; an endless utterance (a TV) is cut here
            # and decoded, rather than failing the whole stream.
            events.extend(ep.force_end())
        if self.options.hands_free and self.endpointer.state is EndpointState.WAITING:
            # Keep only what the next utterance's leading padding could need.
            keep = (
                int(self.settings.padding_s * RATE)
                + int(self.settings.endpoint.speech_start_s * RATE)
                + n
            )
            self._drop(len(self._buf) // 2 - keep)
        return events

    # ------------------------------------------------------------------ decisions

    def _handle(self, events: Iterable[EndpointEvent]) -> None:
        """Act on endpointing events (on the loop, holding the session lock)."""
        for event in events:
            if event.kind == "started":
                self._emit(VoiceStarted(int(event.at_s * 1000)))
            elif event.kind == "resumed":
                self._discard_speculation()
            elif event.kind == "ended" and event.reason != "no-speech":
                # (Given up without speech, no voice started: none stops.)
                self._emit(VoiceStopped(int(event.at_s * 1000)))
            elif event.kind == "turn_check":
                self._check_turn(event.at_s)
        self._maybe_speculate()
        self._maybe_partial()

    def _speech_range(self) -> tuple[int, int] | None:
        """Trimmed utterance [start, end) in stream samples, or None without speech."""
        ep = self.endpointer
        if ep.speech_start_s is None or ep.speech_end_s is None:
            return None
        pad = int(self.settings.padding_s * RATE)
        start = max(self._offset, int(ep.speech_start_s * RATE) - pad)
        end = min(self.samples, int(ep.speech_end_s * RATE) + pad)
        return (start, end) if end > start else None

    def _slice(self, start: int, end: int) -> np.ndarray:
        """A float32 copy of stream samples [start, end).

        Only call it holding the session lock: the VAD worker thread appends to and
        drops from the buffer while it ingests, so a slice taken then could mix
        offsets. Decodes therefore copy their audio when they are decided, not later.
        """
        a, b = (start - self._offset) * 2, (end - self._offset) * 2
        return pcm_to_float(np.frombuffer(bytes(self._buf[a:b]), dtype="<i2"))

    def _decode(self, audio: np.ndarray, options: TranscribeOptions) -> asyncio.Task[Transcript]:
        self.asr_calls += 1
        task = asyncio.ensure_future(self._asr_pool.run(self.asr.transcribe, audio, options))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _maybe_speculate(self) -> None:
        if not self.options.speculative:
            return
        if self.endpointer.state not in (EndpointState.PAUSED, EndpointState.ENDED):
            return
        rng = self._speech_range()
        ep = self.endpointer
        if rng is None or ep.speech_end_s is None:
            return
        # Wait until the trailing padding has arrived (or as much as the settings ask).
        speech_end = int(ep.speech_end_s * RATE)
        wait_s = self.settings.padding_s
        if self.settings.speculative_padding_s is not None:
            wait_s = min(wait_s, self.settings.speculative_padding_s)
        if self._turn is not None:
            # The reply should be under way when the turn model decides.
            wait_s = min(wait_s, self.settings.endpoint.turn_check_s)
        if self.samples < speech_end + int(wait_s * RATE):
            return
        if self._spec is not None and (self._spec.start, self._spec.speech_end) == (
            rng[0],
            speech_end,
        ):
            return  # only silence arrived since: the decode in flight still holds
        self._discard_speculation()
        _LOGGER.debug("Speculative decode of %.2f s", (rng[1] - rng[0]) / RATE)
        task = self._decode(self._slice(*rng), self.options.transcribe)
        spec = _Decode(rng[0], speech_end, task)
        self._spec = spec
        speech_ms = int((rng[1] - rng[0]) * 1000 / RATE)

        def ready(task: asyncio.Future[Transcript]) -> None:
            # Decided here, synchronously, so the event keeps its place before a
            # later SpeculationDiscarded or FinalTranscript.
            if self._spec is spec and not task.cancelled() and task.exception() is None:
                self._emit(SpeculativeTranscript(task.result().text, speech_ms))
                self._flush_soon()

        spec.task.add_done_callback(ready)

    def _check_turn(self, speech_end_s: float) -> None:
        """Ask the turn model about the audio up to now (on the loop, holding the lock)."""
        if self._turn is None or self._turn_pool is None:
            return
        if self._turn_task is not None and not self._turn_task.done():
            return  # one question at a time; the next check (or max_pause_s) follows
        ep = self.endpointer
        if not self._turn_pool.idle or self._asr_pool.queued:
            # The turn model saves time only on an idle machine: with other sessions'
            # checks or decodes waiting, its CPU would delay their transcripts. The
            # fixed trailing silence ends this pause instead.
            self.turn_skips += 1
            _LOGGER.debug("Turn check skipped: the machine is busy")
            self._handle(ep.turn_unasked(speech_end_s))
            return
        window = int(self._turn.window_s * RATE)
        first = int((ep.speech_start_s or 0.0) * RATE) - int(self.settings.padding_s * RATE)
        start = max(self._offset, first, self.samples - window)
        a, b = (start - self._offset) * 2, (self.samples - self._offset) * 2
        audio = np.frombuffer(bytes(self._buf[a:b]), dtype="<i2")  # a copy: see _slice
        self.turn_checks += 1
        task = asyncio.ensure_future(self._decide_turn(audio, speech_end_s))
        self._turn_task = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _decide_turn(self, audio: np.ndarray, speech_end_s: float) -> None:
        assert self._turn is not None and self._turn_pool is not None
        verdict: TurnPrediction | None = None
        try:
            verdict = await self._turn_pool.run(self._turn.predict, audio)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - without an answer, the fixed silence decides
            _LOGGER.warning("Turn check failed: %s", exc)
        complete = None if verdict is None else await self._judge(verdict, speech_end_s)
        async with self._lock:
            if self._finished:
                return
            ep = self.endpointer
            self._handle(
                ep.turn_unasked(speech_end_s)
                if complete is None
                else ep.turn_decided(speech_end_s, complete)
            )
            await self._after_end()
        await self._flush()

    async def _judge(self, verdict: TurnPrediction, speech_end_s: float) -> bool:
        """The turn decision: the model's answer, and the words of the pause's
        speculative decode when they could change it (waiting for that decode, which
        the transcript needs anyway)."""
        policy = self.settings.turn
        words: str | None = None
        spec = self._spec
        if (
            wants_text(policy, verdict.probability, verdict.complete)
            and spec is not None
            and spec.speech_end == int(speech_end_s * RATE)
        ):
            await asyncio.wait({spec.task})  # a discarded decode is cancelled: no words
            if not spec.task.cancelled() and spec.task.exception() is None:
                words = spec.task.result().text
        text = TextTurn.UNKNOWN if words is None else text_turn(words)
        complete = turn_complete(policy, verdict.probability, verdict.complete, text)
        self.judgements.append(TurnJudgement(verdict.probability, words, text, complete))
        _LOGGER.debug(
            "Turn check: p(complete)=%.2f, words %r (%s): %s",
            verdict.probability,
            words,
            text.value,
            "complete" if complete else "not complete",
        )
        return complete

    def _discard_speculation(self) -> None:
        if self._spec is not None:
            # A decode still queued is dropped, so the next one does not wait behind it;
            # one already in a worker thread cannot be interrupted and its result is ignored.
            self._spec.task.cancel()
            self._spec.task.add_done_callback(_consume_result)
            self._spec = None
            self._emit(SpeculationDiscarded())

    def _maybe_partial(self) -> None:
        if not self.options.partials or self.endpointer.state is not EndpointState.SPEECH:
            return
        if self._partial is not None and not self._partial.done():
            return
        interval = int(self.settings.partial_interval_s * RATE)
        if self.samples - self._last_partial_at < interval or not self._asr_pool.idle:
            return
        ep = self.endpointer
        if ep.speech_end_s is not None and ep.now_s - ep.speech_end_s > PARTIAL_QUIET_S:
            # The speaker may be stopping: leave the worker free for the speculative
            # decode, which would otherwise wait behind this partial.
            return
        rng = self._speech_range()
        if rng is None:
            return
        self._last_partial_at = self.samples
        start, end = rng[0], self.samples
        opts = TranscribeOptions(
            beam_size=1,
            language=self.options.transcribe.language,
            task=self.options.transcribe.task,
            initial_prompt=self.options.transcribe.initial_prompt,
        )
        audio = self._slice(start, end)  # now, under the lock: see _slice
        self._partial = asyncio.ensure_future(self._run_partial(audio, opts))

    async def _run_partial(self, audio: np.ndarray, opts: TranscribeOptions) -> None:
        try:
            result = await self._decode(audio, opts)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a partial is best effort; the final reports
            _LOGGER.debug("Partial decode skipped: %s", exc)
            return
        if result.text and result.text != self._last_partial_text and not self._finished:
            self._last_partial_text = result.text
            self._emit(PartialTranscript(result.text, int(audio.size * 1000 / RATE)))
            await self._flush()

    # ------------------------------------------------------------------ output

    def _emit(self, event: SessionEvent) -> None:
        """Decide an event (in order); :meth:`_flush` moves it into the stream."""
        self._outbox.append(event)

    async def _flush(self) -> None:
        """Move decided events into the stream, waiting while it is full."""
        async with self._flush_lock:
            while self._outbox:
                await self._events.put(self._outbox.popleft())

    def _flush_soon(self) -> None:
        """Flush from a callback, in a task the session tracks."""
        task = asyncio.ensure_future(self._flush())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def events(self) -> AsyncIterator[SessionEvent]:
        """Every event of the session, in order, as soon as it is known.

        The one output of the session: read it in a task of its own from the
        start. It ends after the FinalTranscript (hands-free: when the session
        closes), or without one when :meth:`finish` failed or the session closed.
        """
        async for event in self._events:
            yield event

    async def finish(self) -> None:
        """The audio is over: decode the final transcript and end the stream with it.

        Raises what stopped the decode (the stream then ends without a final).
        """
        began = time.perf_counter()
        if self.ended is not None:
            await self.ended  # the session ended it already: its final (or its error)
            return
        async with self._lock:
            if self.ended is not None:
                await self.ended
                return
            if self._finished:
                raise InvalidAudio("the utterance is already finished")
            self._finished = True  # from here on, a late partial is not worth sending
            try:
                if self._converter is not None:
                    events = await self._vad_pool.run(self._ingest, b"", True)
                    self._handle(events)
                self._emit(await self._final(began))
                await self._flush()
            finally:
                self._events.close()

    async def _final(self, began: float) -> FinalTranscript:
        audio_ms = int(self.samples * 1000 / RATE)
        rng = self._speech_range()
        if rng is None:
            self._discard_speculation()
            return FinalTranscript("", self.language, audio_ms, 0, 0.0)
        ep = self.endpointer
        speech_end = int((ep.speech_end_s or 0.0) * RATE)
        # The speculative decode holds when no speech followed it: more silence after it
        # (up to the padding) changes nothing a decode would hear.
        speculative = self._spec is not None and (self._spec.start, self._spec.speech_end) == (
            rng[0],
            speech_end,
        )
        audio = self._slice(*rng)
        if speculative:
            assert self._spec is not None
            task = self._spec.task
        else:
            self._discard_speculation()
            task = self._decode(audio, self.options.transcribe)
        if self.on_utterance is not None:
            self.on_utterance(audio)  # beside the decode (the speaker's embedding)
        result = await task
        self._spec = None
        return FinalTranscript(
            text=result.text,
            language=result.language,
            audio_ms=audio_ms,
            speech_ms=int((rng[1] - rng[0]) * 1000 / RATE),
            decode_ms=(time.perf_counter() - began) * 1000.0,
            speculative=speculative,
        )

    async def utterance_audio(self) -> np.ndarray | None:
        """The trimmed utterance as 16 kHz float32 (None without speech).

        For a second decode of the same speech (a translation) after :meth:`finish`.
        """
        async with self._lock:
            rng = self._speech_range()
            return None if rng is None else self._slice(*rng)

    @property
    def language(self) -> str:
        """The expected language: the requested one, else the model's default ("en")."""
        lang = self.options.transcribe.language
        return (
            lang if lang and lang != "auto" else getattr(self.asr, "default_language", "") or "en"
        )

    async def _next_utterance(self) -> None:
        """Hands-free, the endpointer saw an utterance end: decode it and reset.

        Runs holding the session lock. Audio before the next utterance is dropped
        so memory stays bounded for days.
        """
        self._emit(await self._final(time.perf_counter()))
        keep_from = self.samples - int(self.settings.padding_s * RATE)
        drop = max(0, keep_from - self._offset)
        self._drop(drop)
        self.endpointer.reset()
        self._last_partial_text = ""
        if self._partial is not None:
            self._partial.cancel()  # a late partial must not follow this final

    async def close(self) -> None:
        """Cancel pending decodes and end the stream; safe to call more than once."""
        self._finished = True
        self._events.close()
        for task in list(self._tasks):
            task.cancel()
        if self._partial is not None:
            self._partial.cancel()
        self._spec = None


def _consume_result(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()
