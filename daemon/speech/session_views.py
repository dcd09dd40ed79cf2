"""What a speech session shows of itself: where the utterance is, what the turn model
decided, how much was decoded (clients, tests, benchmarks and metrics read these)."""

from __future__ import annotations

from daemon.engines.asr.base import AsrModel
from daemon.speech.decodes import Decodes
from daemon.speech.endpoint import Endpointer, EndpointState
from daemon.speech.intake import AudioIntake
from daemon.speech.settings import SessionOptions
from daemon.speech.turn_checks import TurnChecks
from daemon.speech.turn_text import TurnJudgement


class SessionViews:
    """Read-only views of a :class:`~daemon.speech.session.SpeechSession`'s parts."""

    asr: AsrModel
    options: SessionOptions
    turns: TurnChecks | None
    decodes: Decodes
    intake: AudioIntake
    endpointer: Endpointer

    @property
    def turn_checks(self) -> int:
        """Turn-model decisions asked for: tests and benchmarks read it."""
        return 0 if self.turns is None else self.turns.asked

    @property
    def turn_skips(self) -> int:
        """Checks not made because the machine was busy (the fixed silence decided)."""
        return 0 if self.turns is None else self.turns.skipped

    @property
    def judgements(self) -> list[TurnJudgement]:
        """The latest turn decisions, with what decided them: tests and benchmarks read it."""
        return [] if self.turns is None else list(self.turns.judgements)

    @property
    def asr_calls(self) -> int:
        """Whisper decodes started (partials included): tests and metrics read it."""
        return self.decodes.calls

    @property
    def _finished(self) -> bool:
        return self.decodes.finished

    @property
    def samples(self) -> int:
        """Internal samples received so far (whole stream), held ones included."""
        return self.intake.received

    @property
    def in_utterance(self) -> bool:
        """True while an utterance is under way (speech was heard and not yet decoded)."""
        return self.endpointer.state is not EndpointState.WAITING

    @property
    def turn_ended(self) -> bool:
        """True when the turn model ended the utterance (a client may stop sending)."""
        return self.turns is not None and self.endpointer.state is EndpointState.ENDED

    @property
    def language(self) -> str:
        """The expected language: the requested one, else the model's default ("en")."""
        lang = self.options.transcribe.language
        return (
            lang if lang and lang != "auto" else getattr(self.asr, "default_language", "") or "en"
        )
