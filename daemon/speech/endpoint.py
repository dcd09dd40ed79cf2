"""Endpointing as a pure state machine over (seconds, is_speech) steps.

No audio, no clocks, no I/O: the speech session feeds one VAD decision per frame
and acts on the events returned. Times are seconds of audio since the stream began.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class EndpointState(Enum):
    """Where the utterance is."""

    WAITING = "waiting"
    """No speech yet."""
    SPEECH = "speech"
    """Speech in progress."""
    PAUSED = "paused"
    """Silence after speech, long enough to start a speculative decode."""
    ENDED = "ended"
    """Trailing silence reached: the utterance is over (speech may still resume
    while the client keeps sending; hands-free callers ``reset()`` instead)."""


@dataclass(frozen=True)
class EndpointConfig:
    """Durations in seconds."""

    speech_start_s: float = 0.09
    """Continuous speech needed to start (or resume) an utterance."""
    speculative_silence_s: float = 0.24
    """Silence after speech that starts a speculative decode."""
    trailing_silence_s: float = 0.7
    """Silence after speech that ends the utterance (without a turn model)."""
    turn: bool = False
    """Ask a turn model whether the speaker has finished (``turn_check`` events)."""
    turn_check_s: float = 0.2
    """With ``turn``: silence after speech by which the model is asked (the point its
    threshold was chosen at)."""
    turn_early_check_s: float | None = None
    """With ``turn``: an earlier first question (None: none). The speculative decode
    starts here too; an "incomplete" answer is asked again at ``turn_check_s``."""
    turn_recheck_s: float = 0.0
    """With ``turn``: more silence between later checks while it says "incomplete"
    (0: none; the first answer stands until ``max_pause_s``)."""
    max_pause_s: float = 1.6
    """With ``turn``: silence that ends the utterance whatever the model says."""
    max_utterance_s: float | None = None
    """Speech this long (from its onset) ends the utterance; None: no limit. A session
    that ends turns itself needs it: a television the VAD hears as speech never pauses."""
    no_speech_s: float | None = None
    """Audio this long without an utterance starting ends the stream empty; None: the
    client ends it."""


@dataclass(frozen=True)
class EndpointEvent:
    """A transition; ``at_s`` is the relevant audio time."""

    kind: str
    """started (at speech onset), paused and ended (at end of speech), resumed, and
    turn_check (at end of speech: ask the turn model, answer with ``turn_decided``)."""
    at_s: float
    reason: str = ""
    """Why an utterance ended: silence (the fixed trailing silence), turn (the turn
    model), max-pause, longest-utterance, no-speech (then ``at_s`` is the time it
    was given up), or forced."""


class Endpointer:
    """Turns per-frame VAD decisions into utterance events."""

    def __init__(self, config: EndpointConfig | None = None) -> None:
        self.config = config or EndpointConfig()
        self.state = EndpointState.WAITING
        self.now_s = 0.0
        self.speech_start_s: float | None = None
        self.speech_end_s: float | None = None
        self._run_start: float | None = None
        self._run_s = 0.0
        self._silence_s = 0.0
        self._next_check_s = self.first_check_s
        """With a turn model: the silence at which it is asked next."""
        self._unasked = False
        """With a turn model: this pause could not be asked about (the fixed silence ends it)."""
        self._waiting_since = 0.0
        """Audio time since which no utterance has started (for ``no_speech_s``)."""
        self._cut_at_longest = False
        """This utterance reached ``max_utterance_s``: it stays ended (speech that goes on
        is no new utterance until :meth:`reset`, so it is not ended again every frame)."""

    @property
    def first_check_s(self) -> float:
        """With a turn model: the silence at which it is first asked about a pause."""
        cfg = self.config
        early = cfg.turn_early_check_s
        return cfg.turn_check_s if early is None else min(early, cfg.turn_check_s)

    @property
    def pause_s(self) -> float:
        """Silence after speech that pauses the utterance (speculation starts)."""
        cfg = self.config
        if cfg.turn:
            return min(cfg.speculative_silence_s, self.first_check_s)
        return cfg.speculative_silence_s

    def process(self, seconds: float, is_speech: bool) -> list[EndpointEvent]:
        """Advance by one frame of ``seconds``; return the events it caused."""
        events = self._step(seconds, is_speech)
        return events + self._limits() if self.state is not EndpointState.ENDED else events

    def _limits(self) -> list[EndpointEvent]:
        """End what the clock says must end: no speech at all, or speech too long."""
        cfg = self.config
        if self.state is EndpointState.WAITING:
            if cfg.no_speech_s is not None and self.now_s - self._waiting_since >= cfg.no_speech_s:
                self.state = EndpointState.ENDED
                return [EndpointEvent("ended", self.now_s, "no-speech")]
            return []
        start = self.speech_start_s
        if cfg.max_utterance_s is not None and start is not None and not self._cut_at_longest:
            if self.now_s - start >= cfg.max_utterance_s:
                self._cut_at_longest = True
                return self.force_end("longest-utterance")
        return []

    def _step(self, seconds: float, is_speech: bool) -> list[EndpointEvent]:
        start = self.now_s
        self.now_s += seconds
        events: list[EndpointEvent] = []
        cfg = self.config
        if self.state is EndpointState.ENDED and self.speech_start_s is None:
            return events  # given up without speech: there is nothing to resume
        if is_speech:
            if self._run_start is None:
                self._run_start = start
            self._run_s += seconds
        else:
            self._run_start = None
            self._run_s = 0.0

        if self.state is EndpointState.WAITING:
            if is_speech and self._run_s >= cfg.speech_start_s:
                self.state = EndpointState.SPEECH
                self.speech_start_s = self._run_start
                self.speech_end_s = self.now_s
                self._silence_s = 0.0
                events.append(EndpointEvent("started", self.speech_start_s or 0.0))
            return events

        # SPEECH, PAUSED or ENDED: a speech run long enough counts as speech; short blips
        # are treated as silence so clicks do not hold an utterance open.
        if is_speech and self._run_s >= cfg.speech_start_s:
            self.speech_end_s = self.now_s
            self._silence_s = 0.0
            if self._cut_at_longest:
                # Past the longest utterance it stays ended (no new events), but its words
                # still count: a recording's final decode holds every word to its end.
                return events
            self._next_check_s = self.first_check_s
            self._unasked = False
            if self.state in (EndpointState.PAUSED, EndpointState.ENDED):
                self.state = EndpointState.SPEECH
                events.append(EndpointEvent("resumed", self._run_start or start))
            return events
        if not is_speech or self._run_s < cfg.speech_start_s:
            self._silence_s = self.now_s - (self.speech_end_s or 0.0)
        if self.state is EndpointState.SPEECH and self._silence_s >= self.pause_s:
            self.state = EndpointState.PAUSED
            events.append(EndpointEvent("paused", self.speech_end_s or start))
        if self.state is not EndpointState.PAUSED:
            return events
        end_s = self._end_silence_s()
        if self._silence_s >= end_s:
            self.state = EndpointState.ENDED
            reason = "max-pause" if cfg.turn and not self._unasked else "silence"
            events.append(EndpointEvent("ended", self.speech_end_s or start, reason))
        elif cfg.turn and self._silence_s >= self._next_check_s:
            # After an early question, once more at the usual point; later ones only
            # with a recheck interval: the model hears a long silence as a finished
            # turn, so by default one answer per pause (after the early one) stands.
            if self._next_check_s < cfg.turn_check_s - 1e-9:
                self._next_check_s = cfg.turn_check_s
            else:
                recheck = cfg.turn_recheck_s if cfg.turn_recheck_s > 0 else float("inf")
                self._next_check_s = self._silence_s + recheck
            events.append(EndpointEvent("turn_check", self.speech_end_s or start))
        return events

    def _pause_of(self, at_s: float) -> bool:
        """True while the pause after speech ending at ``at_s`` goes on (an answer
        about it still applies; speech resuming makes it stale)."""
        return (
            self.state is EndpointState.PAUSED
            and self.speech_end_s is not None
            and abs(self.speech_end_s - at_s) < 1e-9
        )

    def _end_silence_s(self) -> float:
        cfg = self.config
        return cfg.max_pause_s if cfg.turn and not self._unasked else cfg.trailing_silence_s

    def turn_unasked(self, at_s: float) -> list[EndpointEvent]:
        """The ``turn_check`` of speech ending at ``at_s`` got no answer (the model
        failed, or the machine was too busy to ask): the fixed trailing silence ends
        this pause, as without a turn model, rather than the longest pause."""
        if not self._pause_of(at_s):
            return []
        self._unasked = True
        self._next_check_s = float("inf")
        if self._silence_s >= self._end_silence_s():
            self.state = EndpointState.ENDED
            return [EndpointEvent("ended", at_s, "silence")]
        return []

    def turn_decided(self, at_s: float, complete: bool) -> list[EndpointEvent]:
        """The turn model's answer to the ``turn_check`` of speech ending at ``at_s``.

        "Complete" ends the utterance at once, unless speech resumed since the check
        (the answer is then stale and ignored). "Incomplete" changes nothing: the
        next check, or ``max_pause_s``, decides.
        """
        if complete and self._pause_of(at_s):
            self.state = EndpointState.ENDED
            return [EndpointEvent("ended", at_s, "turn")]
        return []

    def force_end(self, reason: str = "forced") -> list[EndpointEvent]:
        """End the utterance now (it reached its length limit); speech ends here."""
        if self.state in (EndpointState.WAITING, EndpointState.ENDED):
            return []
        if self.state is EndpointState.SPEECH:
            self.speech_end_s = self.now_s
        self.state = EndpointState.ENDED
        return [EndpointEvent("ended", self.speech_end_s or self.now_s, reason)]

    def reset(self) -> None:
        """Wait for the next utterance (hands-free listening); time keeps running."""
        self.state = EndpointState.WAITING
        self.speech_start_s = None
        self.speech_end_s = None
        self._run_start = None
        self._run_s = 0.0
        self._silence_s = 0.0
        self._next_check_s = self.first_check_s
        self._unasked = False
        self._cut_at_longest = False
        self._waiting_since = self.now_s
