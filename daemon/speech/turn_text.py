"""The text turn signal, and how it joins the acoustic turn model's answer.

When the speaker pauses, the session already decodes the utterance so far (the
speculative transcript). Its last word says a lot about whether the turn is over:
a command that ends in "for", "and", "to", "the" or a filler ("um") is not finished
in any voice, whatever the pitch does. Text-based turn detectors (LiveKit's, for
one) work from that signal; here it is a short word list per language
(:mod:`daemon.speech.turn_words`), and it joins the acoustic model in
:func:`turn_complete`:

- a transcript that cannot end a command vetoes "complete";
- a transcript that can end one lowers the bar to ``text_threshold``: the acoustic
  model only has to lean towards "finished" (its own boundary is 0.5);
- no transcript (nothing heard, a failed decode) leaves the model alone at its
  threshold.

Everything here is pure: text and probabilities in, a decision out.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from daemon.speech.turn_words import Endings, endings


class TextTurn(enum.Enum):
    """What the words so far say about the turn."""

    UNKNOWN = "unknown"
    """No words (silence, a cough, a failed decode): the text says nothing."""
    INCOMPLETE = "incomplete"
    """The words stop where a command cannot end ("Set a timer for")."""
    COMPLETE = "complete"
    """The words could end a command here."""


_TRAILING_OFF = re.compile(r"(\.\.\.|…|,|-|–|—|;|:)\s*$")
"""Punctuation Whisper writes where speech trails off or a list goes on."""
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
"""A word: letters or digits ("50" in "to 50%" is the command's last word)."""


def text_turn(text: str, language: str | None = None) -> TextTurn:
    """What a (speculative) transcript says about the end of the turn.

    ``language`` picks the rules (:mod:`daemon.speech.turn_words`; None: English). A
    language without rules says UNKNOWN for any words but a trailing-off mark.
    """
    stripped = text.strip()
    words = [w.strip("'’") for w in _WORD.findall(stripped.lower())]
    if not words:
        return TextTurn.UNKNOWN
    if _TRAILING_OFF.search(stripped):
        return TextTurn.INCOMPLETE
    rules = endings(language)
    if rules is None:
        return TextTurn.UNKNOWN
    last = words[-1]
    if last in rules.continuing or last in rules.fillers:
        return TextTurn.INCOMPLETE
    if len(words) > 1 and words[-2] in rules.duration and _number(last, rules):
        return TextTurn.INCOMPLETE  # "for ten": the unit is still to come
    return TextTurn.COMPLETE


def _number(word: str, rules: Endings) -> bool:
    return word.isdigit() or word in rules.numbers


@dataclass(frozen=True)
class TurnPolicy:
    """How a session decides that a turn is complete."""

    threshold: float | None = None
    """P(complete) that ends the turn on the acoustic model alone; None: the model's
    own verdict (``vad.turn_threshold``, applied when the model loaded)."""
    text: bool = True
    """Join the speculative transcript's last words to the decision."""
    text_threshold: float = 0.5
    """P(complete) that ends the turn when the words could end a command."""

    def __post_init__(self) -> None:
        for value in (self.threshold, self.text_threshold):
            if value is not None and not 0.0 <= value <= 1.0:
                raise ValueError(f"a turn threshold must be in [0, 1], not {value}")


@dataclass(frozen=True)
class TurnJudgement:
    """One turn decision and what made it."""

    probability: float
    """The acoustic model's P(complete)."""
    words: str | None
    """The pause's speculative transcript, when it was waited for (None: not used)."""
    text: TextTurn
    complete: bool


def acoustic_complete(policy: TurnPolicy, probability: float, model_says: bool) -> bool:
    """The acoustic model's answer alone, at the policy's threshold."""
    return model_says if policy.threshold is None else probability >= policy.threshold


def wants_text(policy: TurnPolicy, probability: float, model_says: bool) -> bool:
    """Whether the transcript could change the decision (then it is worth waiting for):
    it can veto a "complete", or turn a leaning "incomplete" into "complete"."""
    if not policy.text:
        return False
    return acoustic_complete(policy, probability, model_says) or (
        probability >= policy.text_threshold
    )


def turn_complete(policy: TurnPolicy, probability: float, model_says: bool, text: TextTurn) -> bool:
    """The turn decision from the acoustic model's answer and the words so far.

    Args:
        policy: the thresholds, and whether the text counts at all.
        probability: the acoustic model's P(complete).
        model_says: the model's verdict at its own threshold.
        text: :func:`text_turn` of the speculative transcript (UNKNOWN without one).

    Returns:
        True when the turn is complete.
    """
    if not policy.text or text is TextTurn.UNKNOWN:
        return acoustic_complete(policy, probability, model_says)
    if text is TextTurn.INCOMPLETE:
        return False
    return acoustic_complete(policy, probability, model_says) or (
        probability >= policy.text_threshold
    )
