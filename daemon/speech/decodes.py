"""A speech session's Whisper decodes: speculative, partial and final.

When the speaker pauses, the trimmed utterance is decoded *speculatively*; the final
transcript reuses that decode when no speech followed it. While the person speaks,
partial transcripts are decoded now and then, when the ASR worker is idle. Every
decode copies its audio when it is decided (under the session's lock) and runs in
the ASR worker pool. :class:`Decodes` decides when; the session decides what the
utterance is (its endpointer) and owns the lock and the event stream.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from daemon.audio.pcm import RATE
from daemon.engines.asr.base import AsrModel, TranscribeOptions, Transcript
from daemon.engines.workers import WorkerPool
from daemon.speech.endpoint import Endpointer, EndpointState
from daemon.speech.events import (
    FinalTranscript,
    PartialTranscript,
    SessionEvent,
    SpeculationDiscarded,
    SpeculativeTranscript,
)
from daemon.speech.intake import AudioIntake
from daemon.speech.settings import SessionOptions, SessionSettings

_LOGGER = logging.getLogger(__name__)
PARTIAL_QUIET_S = 0.06
"""No partial decode starts after this much silence (s)."""


@dataclass
class Speculation:
    """A decode started at a pause."""

    start: int
    speech_end: int
    """Where the speech ended (stream samples): the decode holds while it is the same."""
    task: asyncio.Task[Transcript]


class Decodes:
    """The decodes of one session (see the module docstring)."""

    def __init__(
        self,
        asr: AsrModel,
        pool: WorkerPool,
        settings: SessionSettings,
        options: SessionOptions,
        intake: AudioIntake,
        endpointer: Endpointer,
        emit: Callable[[SessionEvent], None],
        flush: Callable[[], Awaitable[None]],
    ) -> None:
        self.asr = asr
        self.pool = pool
        self.settings = settings
        self.options = options
        self._intake = intake
        self._endpointer = endpointer
        self._emit = emit
        self._flush = flush
        self.spec: Speculation | None = None
        self.partial: asyncio.Task[None] | None = None
        self._last_partial_at = 0
        self._last_partial_text = ""
        self.tasks: set[asyncio.Task[Any]] = set()
        self.calls = 0
        """Decodes started (partials included; a final with its second reading counts once)."""
        self.finished = False
        """No partial is worth sending any more (the utterance is being finished)."""

    def track(self, task: asyncio.Task[Any]) -> None:
        """Keep ``task`` until it ends (cancelled with the session)."""
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def speech_range(self) -> tuple[int, int] | None:
        """Trimmed utterance [start, end) in stream samples, or None without speech."""
        ep = self._endpointer
        if ep.speech_start_s is None or ep.speech_end_s is None:
            return None
        pad = int(self.settings.padding_s * RATE)
        start = max(self._intake.first, int(ep.speech_start_s * RATE) - pad)
        end = min(self._intake.samples, int(ep.speech_end_s * RATE) + pad)
        return (start, end) if end > start else None

    def _ending(self, rng: tuple[int, int], speech_end: int) -> TranscribeOptions:
        """The session's options, saying where the speech ends in the decoded audio:
        what Whisper writes into the silence after it is not taken as said (by the turn
        decision, or in the transcript)."""
        return replace(self.options.transcribe, speech_end_s=max(0, speech_end - rng[0]) / RATE)

    def decode(
        self, audio: np.ndarray, options: TranscribeOptions, *, final: bool = False
    ) -> asyncio.Task[Transcript]:
        """One decode of ``audio`` in the ASR pool; a ``final`` one (or its speculation)
        with the second reading the session's hints ask for."""
        self.calls += 1
        hints = self.options.hints if final else None
        commands = self.options.commands if final else None
        if hints is not None or commands is not None:
            job = self.pool.run(self.asr.transcribe_hinted, audio, options, hints, commands)
        else:
            job = self.pool.run(self.asr.transcribe, audio, options)
        task = asyncio.ensure_future(job)
        self.track(task)
        return task

    # ------------------------------------------------------------------ speculation

    def speculate(self, turn_check_s: float | None) -> None:
        """At a pause, decode what was said (once the trailing padding arrived)."""
        if not self.options.speculative:
            return
        ep = self._endpointer
        if ep.state not in (EndpointState.PAUSED, EndpointState.ENDED):
            return
        rng = self.speech_range()
        if rng is None or ep.speech_end_s is None:
            return
        # Wait until the trailing padding has arrived (or as much as the settings ask).
        speech_end = int(ep.speech_end_s * RATE)
        wait_s = self.settings.padding_s
        if self.settings.speculative_padding_s is not None:
            wait_s = min(wait_s, self.settings.speculative_padding_s)
        if turn_check_s is not None:
            # The reply should be under way when the turn model decides.
            wait_s = min(wait_s, turn_check_s)
        if self._intake.samples < speech_end + int(wait_s * RATE):
            return
        if self.spec is not None and (self.spec.start, self.spec.speech_end) == (
            rng[0],
            speech_end,
        ):
            return  # only silence arrived since: the decode in flight still holds
        self.discard()
        _LOGGER.debug("Speculative decode of %.2f s", (rng[1] - rng[0]) / RATE)
        task = self.decode(self._intake.audio(*rng), self._ending(rng, speech_end), final=True)
        spec = Speculation(rng[0], speech_end, task)
        self.spec = spec
        speech_ms = int((rng[1] - rng[0]) * 1000 / RATE)

        def ready(task: asyncio.Future[Transcript]) -> None:
            # Decided here, synchronously, so the event keeps its place before a
            # later SpeculationDiscarded or FinalTranscript.
            if self.spec is spec and not task.cancelled() and task.exception() is None:
                self._emit(SpeculativeTranscript(task.result().text, speech_ms))
                self.track(asyncio.ensure_future(self._flush()))

        spec.task.add_done_callback(ready)

    def words_at(self, speech_end_s: float) -> asyncio.Task[Transcript] | None:
        """The speculative decode of the pause that ended speech at ``speech_end_s``."""
        spec = self.spec
        if spec is None or spec.speech_end != int(speech_end_s * RATE):
            return None
        return spec.task

    def discard(self) -> None:
        """Drop the speculative decode (speech resumed, or another replaces it)."""
        if self.spec is not None:
            # A decode still queued is dropped, so the next one does not wait behind it;
            # one already in a worker thread cannot be interrupted and its result is ignored.
            self.spec.task.cancel()
            self.spec.task.add_done_callback(_consume_result)
            self.spec = None
            self._emit(SpeculationDiscarded())

    # ------------------------------------------------------------------ partials

    def maybe_partial(self) -> None:
        """While the person speaks, decode what was said so far now and then."""
        ep = self._endpointer
        if not self.options.partials or ep.state is not EndpointState.SPEECH:
            return
        if self.partial is not None and not self.partial.done():
            return
        samples = self._intake.samples
        interval = int(self.settings.partial_interval_s * RATE)
        if samples - self._last_partial_at < interval or not self.pool.idle:
            return
        if ep.speech_end_s is not None and ep.now_s - ep.speech_end_s > PARTIAL_QUIET_S:
            # The speaker may be stopping: leave the worker free for the speculative
            # decode, which would otherwise wait behind this partial.
            return
        rng = self.speech_range()
        if rng is None:
            return
        self._last_partial_at = samples
        transcribe = self.options.transcribe
        opts = TranscribeOptions(
            beam_size=1,
            language=transcribe.language,
            task=transcribe.task,
            initial_prompt=transcribe.initial_prompt,
        )
        audio = self._intake.audio(rng[0], samples)  # now, under the lock
        self.partial = asyncio.ensure_future(self._run_partial(audio, opts))

    async def _run_partial(self, audio: np.ndarray, opts: TranscribeOptions) -> None:
        try:
            result = await self.decode(audio, opts)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a partial is best effort; the final reports
            _LOGGER.debug("Partial decode skipped: %s", exc)
            return
        if result.text and result.text != self._last_partial_text and not self.finished:
            self._last_partial_text = result.text
            self._emit(PartialTranscript(result.text, int(audio.size * 1000 / RATE)))
            await self._flush()

    def next_utterance(self) -> None:
        """Hands-free: the utterance was decoded; partials start afresh."""
        self._last_partial_text = ""
        if self.partial is not None:
            self.partial.cancel()  # a late partial must not follow this final

    # ------------------------------------------------------------------ final

    async def final(
        self,
        began: float,
        language: str,
        on_utterance: Callable[[np.ndarray], None] | None,
    ) -> FinalTranscript:
        """The utterance's final transcript (reusing the speculative decode when it holds)."""
        audio_ms = int(self._intake.samples * 1000 / RATE)
        rng = self.speech_range()
        if rng is None:
            self.discard()
            return FinalTranscript("", language, audio_ms, 0, 0.0)
        speech_end = int((self._endpointer.speech_end_s or 0.0) * RATE)
        # The speculative decode holds when no speech followed it: more silence after it
        # (up to the padding) changes nothing a decode would hear.
        spec = self.spec
        speculative = spec is not None and (spec.start, spec.speech_end) == (rng[0], speech_end)
        audio = self._intake.audio(*rng)
        if spec is not None and speculative:
            task = spec.task
        else:
            self.discard()
            task = self.decode(audio, self._ending(rng, speech_end), final=True)
        if on_utterance is not None:
            on_utterance(audio)  # beside the decode (the speaker's embedding)
        result = await task
        self.spec = None
        return FinalTranscript(
            text=result.text,
            language=result.language,
            audio_ms=audio_ms,
            speech_ms=int((rng[1] - rng[0]) * 1000 / RATE),
            decode_ms=(time.perf_counter() - began) * 1000.0,
            speculative=speculative,
        )

    def close(self) -> None:
        """Cancel every decode."""
        self.finished = True
        for task in list(self.tasks):
            task.cancel()
        if self.partial is not None:
            self.partial.cancel()
        self.spec = None


def _consume_result(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()
