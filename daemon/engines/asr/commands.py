"""A command-aware reading: Home Assistant's own sentences, scored on the same audio.

Whisper hears anything and mishears commands ("Top oil my timers" for "stop all my
timers"); a closed grammar hears commands well and nothing else. The two together:
when the first reading is not a command the household's grammar knows, whoever holds
the grammar (a :class:`CommandReader`) names the command sentences nearest to it, and
the same model scores each of them on the same audio (the probability of every token
of the given text, as Whisper's word timestamps compute it; the encoder output
reused). A candidate replaces the first reading only when the audio supports it about
as well as the first reading itself: its mean token log-probability at most
:data:`MARGIN` below the first's (chosen on the choice half of the commands bench).
A question or chatter scores far below its own reading (-3 against -0.1 for "What is
the meaning of life?") and stays as said.

Pure rules here; the model scores (:meth:`AsrModel.score_texts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

MARGIN = 2.0
"""How far below the first reading's mean token log-probability a command may score
and still replace it."""
FLOOR = -3.0
"""A command the audio gives a lower mean token log-probability than this was not said,
however poor the first reading (French eSpeak NG through base, a first reading of
noise: two sentences of chatter became commands at the margin alone)."""
WORDS_APART_MAX = 3
"""A command with this many more or fewer words than the first reading is not its
reading (a near sentence for only part of what was said)."""


class CommandReader(Protocol):
    """What a command-aware reading asks of whoever knows the household's grammar."""

    def candidates(self, heard: str) -> Sequence[str]:
        """Command sentences that ``heard`` (the first reading) may have been, best
        first; none when ``heard`` already is a command, or nothing is near. Called in
        the ASR worker thread; cheap (milliseconds)."""
        ...


@dataclass(frozen=True)
class Scored:
    """A text and its mean token log-probability on the audio."""

    text: str
    score: float


def written(sentence: str) -> str:
    """A template's sentence as Whisper writes one: a capital first letter and a full
    stop ("turn on the kitchen light" -> "Turn on the kitchen light.")."""
    text = sentence.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".?!" else text + "."


def spoken(sentence: str) -> str:
    """The form a candidate is scored in: lower case after its first letter, as Whisper
    writes most names it hears ("Turn off the ceiling fan." scores -0.24 where "Turn off
    the Ceiling Fan." scores -1.12 on the same audio); the household's spelling is what
    comes back (:func:`written`)."""
    text = written(sentence)
    return text[:1] + text[1:].lower()


def near_enough(first: str, candidate: str) -> bool:
    """Whether ``candidate`` could be a reading of all of ``first`` (about as many words)."""
    return abs(len(candidate.split()) - len(first.split())) <= WORDS_APART_MAX


def choose(
    first: Scored, candidates: Sequence[Scored], margin: float = MARGIN, floor: float = FLOOR
) -> Scored | None:
    """The best-scoring candidate when it scores at most ``margin`` below ``first`` and
    at least ``floor``; None: the first reading stays."""
    if not candidates:
        return None
    best = max(candidates, key=lambda c: c.score)
    return best if best.score >= max(first.score - margin, floor) else None
