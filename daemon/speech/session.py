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

The session is cut by job: :mod:`~daemon.speech.intake` keeps the converted audio,
the endpointer (:mod:`~daemon.speech.endpoint`) segments it into utterances,
:mod:`~daemon.speech.decodes` runs the speculative, partial and final decodes, and
:mod:`~daemon.speech.turn_checks` asks the turn model at each pause. This module
holds them together under one lock and owns the event stream.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import replace

import numpy as np

from daemon.audio.pcm import RATE, AudioFormat
from daemon.engines.asr.base import AsrModel, Transcript
from daemon.engines.turn.base import TurnModel
from daemon.engines.vad.base import Vad
from daemon.engines.workers import WorkerPool
from daemon.errors import HearthError, InvalidAudio
from daemon.ops.stream import EventStream
from daemon.speech.decodes import Decodes
from daemon.speech.endpoint import Endpointer, EndpointEvent, EndpointState
from daemon.speech.events import FinalTranscript, SessionEvent, VoiceStarted, VoiceStopped
from daemon.speech.intake import BATCH_WAIT_S, AudioIntake, Held
from daemon.speech.session_views import SessionViews
from daemon.speech.settings import SessionOptions, SessionSettings
from daemon.speech.turn_checks import TurnChecks

__all__ = ["SessionOptions", "SessionSettings", "SpeechSession"]
_LOGGER = logging.getLogger(__name__)
MAX_QUEUED_EVENTS = 64
"""Events a session holds for a reader that has not taken them yet."""


class SpeechSession(SessionViews):
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
        self.options = options or SessionOptions()
        asr.check_options(self.options.transcribe)  # before any audio: every protocol
        endpoint = self.settings.endpoint
        self.turns: TurnChecks | None = None
        """The turn model's questions (None: the fixed silence ends every pause)."""
        if endpoint.turn and turn is not None and turn_pool is not None:
            self.turns = TurnChecks(turn, turn_pool, asr_pool, self.settings.turn)
        elif endpoint.turn:
            endpoint = replace(endpoint, turn=False)  # no model: the fixed silence decides
        self._vad_pool = vad_pool
        self._vad = vad.stream()
        self._frame = self._vad.frame_samples
        self.endpointer = Endpointer(endpoint)
        settings_ = self.settings
        self.intake = AudioIntake(
            settings_.max_audio_s, settings_.max_sample_rate, settings_.max_channels
        )
        self._lock = asyncio.Lock()
        """Serializes input: feed, finish and the VAD worker's changes to the buffer."""
        self._events: EventStream[SessionEvent] = EventStream(MAX_QUEUED_EVENTS)
        self._outbox: deque[SessionEvent] = deque()
        """Events decided on the loop, in order, not yet in the stream."""
        self._flush_lock = asyncio.Lock()
        self._batch_timer: asyncio.TimerHandle | None = None
        """Classifies a held batch when no more audio comes (see :meth:`feed`)."""
        self._failed: HearthError | None = None
        """What failed the audio the batch timer classified: every later call raises it."""
        self.decodes = Decodes(
            asr, asr_pool, settings_, self.options, self.intake, self.endpointer,
            self._emit, self._flush,
        )  # fmt: skip
        self.ended: asyncio.Task[None] | None = None
        self._check_due: float | None = None
        """A turn check that came due while another was answered (its speech end)."""
        """With ``ends_turn``, once the endpoint ended the utterance: the final decode."""
        self.on_utterance: Callable[[np.ndarray], None] | None = None
        """Called with each utterance's trimmed audio as its final decode starts."""

    # ------------------------------------------------------------------ input

    def start(self, fmt: AudioFormat) -> None:
        """Declare the input format; validates it (InvalidAudio when absurd).

        Declaring the same format again is harmless (Wyoming repeats it on every
        chunk); a different format once audio has arrived is refused.
        """
        self.intake.start(fmt)

    async def feed(self, data: bytes) -> None:
        """Add a chunk of PCM in the declared format (any size).

        The VAD's worker classifies the audio once a whole frame is there (see
        :meth:`AudioIntake.hold`), so most of Home Assistant's 10 ms chunks cost no
        worker call. Hands-free, an utterance that ended is decoded here and its FinalTranscript
        joins the stream. Waits while the stream is full (its reader is behind).
        """
        if not self.intake.started:
            raise InvalidAudio("audio arrived before its format (rate, width, channels)")
        async with self._lock:
            if self.ended is not None:
                return  # the session ended the utterance itself: the rest is dropped
            if self._finished:
                raise InvalidAudio("audio arrived after the end of the utterance")
            self._raise_failed()
            advice = self.intake.hold(data, self._frame)
            if advice is Held.NOW:
                await self._classify(self.intake.take_held())
            elif advice is Held.BATCH and self._batch_timer is None:
                loop = asyncio.get_running_loop()
                self._batch_timer = loop.call_later(BATCH_WAIT_S, self._batch_waited)

    def _raise_failed(self) -> None:
        """Raise what failed the audio classified by the batch timer (from then on:
        that audio is lost, so the stream cannot go on)."""
        if self._failed is not None:
            raise self._failed

    def _stop_batch_timer(self) -> None:
        if self._batch_timer is not None:
            self._batch_timer.cancel()
            self._batch_timer = None

    async def _classify(self, data: bytes) -> None:
        """Convert, classify and act on ``data`` (holding the session lock)."""
        self._stop_batch_timer()
        events = await self._vad_pool.run(self._ingest, data, False)
        self._handle(events)
        await self._after_end()
        await self._flush()

    def _batch_waited(self) -> None:
        """No more audio came for a held batch: classify it now (see :meth:`feed`)."""
        self._batch_timer = None
        self.decodes.track(asyncio.ensure_future(self._classify_held()))

    async def _classify_held(self) -> None:
        async with self._lock:
            if self.ended is not None or self._finished or not self.intake.holding:
                return
            try:
                await self._classify(self.intake.take_held())
            except HearthError as exc:
                self._failed = exc  # every later feed and finish raises it

    def _ingest(self, data: bytes, last: bool) -> list[EndpointEvent]:
        """Convert and classify (runs in a worker thread, serialized per session)."""
        self.intake.add(data, last)
        events: list[EndpointEvent] = []
        frame_s = self._frame / RATE
        for frame in self.intake.frames(self._frame):
            events.extend(self.endpointer.process(frame_s, self._vad.is_speech(frame)))
        ep = self.endpointer
        if not self.options.hands_free:
            return events
        if ep.speech_start_s is not None and (
            ep.now_s - ep.speech_start_s >= self.settings.max_audio_s - 1.0
        ):
            # Hands-free streams never end; an endless utterance (a TV) is cut here
            # and decoded, rather than failing the whole stream.
            events.extend(ep.force_end())
        if ep.state is EndpointState.WAITING:
            # Keep only what the next utterance's leading padding could need.
            self.intake.keep_last(
                int(self.settings.padding_s * RATE)
                + int(self.settings.endpoint.speech_start_s * RATE)
                + self._frame
            )
        return events

    async def _after_end(self) -> None:
        """An utterance the endpoint ended: hands-free, decode it and listen on; with
        ``ends_turn``, decode it and end the session (holding the session lock).

        Not while the audio is a recording sent faster than it was spoken (a file sent
        at once): a pause inside it is no end of a turn, and the client's audio-stop
        ends it with every word. The end is asked again at each later batch, so a
        stream that slows to the clock (a live one after a burst) ends here after all.
        """
        ep = self.endpointer
        if ep.state is not EndpointState.ENDED:
            return
        if self.options.hands_free:
            await self._next_utterance()
        elif self.options.ends_turn and self.ended is None:
            if self.intake.recording():
                if ep.speech_start_s is None:
                    ep.reset()  # silence leading a file: its speech may still come
                return
            # Nothing is ingested after this, so the buffer the decode slices stays put.
            self.decodes.finished = True
            self.ended = asyncio.ensure_future(self._conclude(time.perf_counter()))
            self.decodes.track(self.ended)

    async def _conclude(self, began: float) -> None:
        """The final transcript of an utterance the session ended itself; the stream
        ends with it (without it when the decode fails: ``ended`` holds the error)."""
        try:
            self._emit(await self._final(began))
            await self._flush()
        finally:
            self._events.close()

    # ------------------------------------------------------------------ decisions

    def _handle(self, events: Iterable[EndpointEvent]) -> None:
        """Act on endpointing events (on the loop, holding the session lock)."""
        for event in events:
            if event.kind == "started":
                self._emit(VoiceStarted(int(event.at_s * 1000)))
            elif event.kind == "resumed":
                self.decodes.discard()
            elif event.kind == "ended" and event.reason != "no-speech":
                # (Given up without speech, no voice started: none stops.)
                _LOGGER.debug("Utterance ended by %s at %.2f s", event.reason, event.at_s)
                self._emit(VoiceStopped(int(event.at_s * 1000)))
            elif event.kind == "turn_check":
                self._check_turn(event.at_s)
        turn_check_s = self.endpointer.first_check_s if self.turns is not None else None
        self.decodes.speculate(turn_check_s)
        self.decodes.maybe_partial()

    def _check_turn(self, speech_end_s: float) -> None:
        """Ask the turn model about the audio up to now (on the loop, holding the lock)."""
        turns = self.turns
        if turns is None:
            return
        if turns.in_flight:
            # One question at a time: this one is asked when the answer in flight
            # leaves the pause undecided.
            self._check_due = speech_end_s
            return
        self._check_due = None
        ep = self.endpointer
        recording = self.intake.recording()
        if turns.should_skip(recording):
            # The turn model saves time only on an idle machine and a live speaker:
            # the fixed trailing silence ends this pause instead, unless its words
            # leave the sentence open (they cost no CPU to read).
            words = None if recording else self.decodes.words_at(speech_end_s)
            if words is None:
                self._handle(ep.turn_unasked(speech_end_s))
                return
            turns.task = asyncio.ensure_future(self._words_decide(words, speech_end_s))
            self.decodes.track(turns.task)
            return
        samples = self.intake.samples
        first = int((ep.speech_start_s or 0.0) * RATE) - int(self.settings.padding_s * RATE)
        start = max(first, samples - int(turns.window_s * RATE))
        audio = self.intake.pcm(start, samples)  # a copy, now, under the lock
        turns.asked += 1
        turns.task = asyncio.ensure_future(self._decide_turn(audio, speech_end_s))
        self.decodes.track(turns.task)

    async def _words_decide(self, words: asyncio.Task[Transcript], speech_end_s: float) -> None:
        """A pause the turn model was not asked about: open words hold it to the
        longest pause; otherwise the fixed silence ends it."""
        assert self.turns is not None
        held = await self.turns.words_only(words)
        async with self._lock:
            if self._finished or held:
                return
            self._handle(self.endpointer.turn_unasked(speech_end_s))
            await self._after_end()
        await self._flush()

    async def _decide_turn(self, audio: np.ndarray, speech_end_s: float) -> None:
        assert self.turns is not None
        # The speculative decode started at this pause (the pause's words).
        words = self.decodes.words_at(speech_end_s)
        complete = await self.turns.decide(audio, words)
        async with self._lock:
            if self._finished:
                return
            ep = self.endpointer
            self._handle(
                ep.turn_unasked(speech_end_s)
                if complete is None
                else ep.turn_decided(speech_end_s, complete)
            )
            due, self._check_due = self._check_due, None
            if due is not None and not complete and ep.speech_end_s == due:
                if ep.state is EndpointState.PAUSED:
                    self.turns.task = None  # this answer is in: the next may be asked
                    self._check_turn(due)  # the later question that waited for it
            await self._after_end()
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
            self.decodes.finished = True  # from here on, a late partial is not worth sending
            try:
                self._raise_failed()
                if self.intake.started:
                    events = await self._vad_pool.run(self._ingest, self.intake.take_held(), True)
                    self._handle(events)
                self._emit(await self._final(began))
                await self._flush()
            finally:
                self._events.close()

    async def _final(self, began: float) -> FinalTranscript:
        return await self.decodes.final(began, self.language, self.on_utterance)

    async def utterance_audio(self) -> np.ndarray | None:
        """The trimmed utterance as 16 kHz float32 (None without speech).

        For a second decode of the same speech (a translation) after :meth:`finish`.
        """
        async with self._lock:
            rng = self.decodes.speech_range()
            return None if rng is None else self.intake.audio(*rng)

    async def _next_utterance(self) -> None:
        """Hands-free, the endpointer saw an utterance end: decode it and reset.

        Runs holding the session lock. Audio before the next utterance is dropped
        so memory stays bounded for days.
        """
        self._emit(await self._final(time.perf_counter()))
        self.intake.forget_before(self.intake.samples - int(self.settings.padding_s * RATE))
        self.endpointer.reset()
        self.decodes.next_utterance()

    async def close(self) -> None:
        """Cancel pending decodes and end the stream; safe to call more than once."""
        self._stop_batch_timer()
        self._events.close()
        self.decodes.close()
