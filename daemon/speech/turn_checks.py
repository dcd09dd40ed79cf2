"""A speech session's turn checks: is the pause the end of the turn?

:class:`TurnChecks` asks the acoustic turn model about the audio up to a pause, one
question at a time, in the turn worker, and joins its answer to the words of the
pause's speculative decode (:mod:`daemon.speech.turn_text`). It yields to a busy
machine: with other checks or decodes waiting, its CPU would delay their
transcripts, so the pause is left to the fixed silence. The session owns the
endpointer and acts on the answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque

import numpy as np

from daemon.engines.asr.base import Transcript
from daemon.engines.turn.base import TurnModel, TurnPrediction
from daemon.engines.workers import WorkerPool
from daemon.speech.turn_text import (
    TextTurn,
    TurnJudgement,
    TurnPolicy,
    text_turn,
    turn_complete,
    wants_text,
)

_LOGGER = logging.getLogger(__name__)


class TurnChecks:
    """The turn model's questions for one session (see the module docstring)."""

    def __init__(
        self, model: TurnModel, pool: WorkerPool, asr_pool: WorkerPool, policy: TurnPolicy
    ) -> None:
        self.model = model
        self.pool = pool
        self.policy = policy
        self._asr_pool = asr_pool
        self.task: asyncio.Task[None] | None = None
        """The question in flight (the session's task; benchmarks await it)."""
        self.asked = 0
        """Turn-model decisions asked for (the session counts each as it asks): tests
        and benchmarks read it."""
        self.skipped = 0
        """Checks not made because the machine was busy (the fixed silence decided)."""
        self.judgements: deque[TurnJudgement] = deque(maxlen=32)
        """The latest decisions, with what decided them: tests and benchmarks read it."""

    @property
    def window_s(self) -> float:
        """The longest audio the model hears (its window, seconds)."""
        return self.model.window_s

    @property
    def in_flight(self) -> bool:
        """Whether a question is being answered (one at a time)."""
        return self.task is not None and not self.task.done()

    def should_skip(self, recording: bool = False) -> bool:
        """Whether not to ask (counted as a skip when so): the machine is too busy, or
        the audio is a ``recording`` sent faster than it was spoken (its end is the
        client's to mark, and the model's CPU would only delay the transcript)."""
        if recording:
            reason = "the audio arrives faster than it was spoken"
        elif self.pool.idle and not self._asr_pool.queued:
            return False
        else:
            reason = "the machine is busy"
        self.skipped += 1
        _LOGGER.debug("Turn check skipped: %s", reason)
        return True

    async def decide(
        self, audio: np.ndarray, words: asyncio.Task[Transcript] | None
    ) -> bool | None:
        """Whether the turn is complete after ``audio`` (int16, up to the pause).

        ``words`` is the pause's speculative decode, waited for only when its words
        could change the answer. None when the model failed: the caller lets the
        fixed silence decide.
        """
        try:
            verdict = await self.pool.run(self.model.predict, audio)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - without an answer, the fixed silence decides
            _LOGGER.warning("Turn check failed: %s", exc)
            return None
        return await self._judge(verdict, words)

    async def words_only(self, words: asyncio.Task[Transcript] | None) -> bool:
        """Whether the pause's words leave the sentence open, when the turn model was
        not asked (a busy machine): reading them costs no CPU, and "Set a timer for"
        must not end at the fixed silence either. False: the fixed silence decides."""
        if words is None or not self.policy.text:
            return False
        text, turn = await _read(words)
        _LOGGER.debug("Turn check skipped; words %r (%s)", text, turn.value)
        return turn is TextTurn.INCOMPLETE

    async def _judge(self, verdict: TurnPrediction, words: asyncio.Task[Transcript] | None) -> bool:
        policy = self.policy
        text: str | None = None
        turn = TextTurn.UNKNOWN
        if words is not None and wants_text(policy, verdict.probability, verdict.complete):
            text, turn = await _read(words)
        complete = turn_complete(policy, verdict.probability, verdict.complete, turn)
        self.judgements.append(TurnJudgement(verdict.probability, text, turn, complete))
        _LOGGER.debug(
            "Turn check: p(complete)=%.2f, words %r (%s): %s",
            verdict.probability,
            text,
            turn.value,
            "complete" if complete else "not complete",
        )
        return complete


async def _read(words: asyncio.Task[Transcript]) -> tuple[str | None, TextTurn]:
    """The words of a speculative decode and what they say about the turn, in the
    language decoded. Without the words written after the end of speech, an open
    ending may show ("Set a timer for it." -> "Set a timer for"): the more open of the
    two readings counts, so leaving a word out never ends a turn sooner."""
    await asyncio.wait({words})  # a discarded decode is cancelled: no words
    if words.cancelled() or words.exception() is not None:
        return None, TextTurn.UNKNOWN
    result = words.result()
    turn = text_turn(result.text, result.language)
    if turn is not TextTurn.INCOMPLETE and result.heard_text is not None:
        if text_turn(result.heard_text, result.language) is TextTurn.INCOMPLETE:
            return result.heard_text, TextTurn.INCOMPLETE
    return result.text, turn
