"""A second reading of an utterance, with a prompt chosen from what the first heard.

A prompt of names helps Whisper write a name as the household spells it ("Pádraig's
Office", not "Portoox office"), and harms the rest: with a long list before it, tiny.en
heard ordinary commands 2-3 WER points worse. So the first reading has no names in it
(the client's own prompt only), and a :class:`Hinter` looks at what it heard: when a
few of the names it knows resemble something there, the same audio is read again with
just those names in the prompt (:class:`Hint`). The second reading is kept only when
it writes one of those names and the first did not (:func:`keeps`); otherwise the
first stands, word for word. An utterance that resembles no name costs nothing more.

The hinter is handed in (the household's names live elsewhere); the model reads twice
(:meth:`~daemon.engines.asr.base.AsrModel.transcribe_hinted`). Pure functions here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class Hint:
    """A second reading's prompt and the names it is for (never logged: ``repr``
    shows only how many)."""

    prompt: str = field(repr=False)
    names: tuple[str, ...] = field(repr=False)

    def __repr__(self) -> str:
        return f"Hint({len(self.names)} names)"


class Hinter(Protocol):
    """What a second reading asks of whoever knows the names."""

    def hint(self, heard: str) -> Hint | None:
        """The second reading's prompt for an utterance the first reading heard as
        ``heard``, or None: nothing there resembles a name (one reading is enough).
        Called in the ASR worker thread; cheap (milliseconds)."""
        ...


def _letters(text: str) -> str:
    """Words in lower case with punctuation and apostrophes dropped, accents kept."""
    bare = text.replace("'", "").replace("\u2019", "")
    kept = "".join(c if c.isalnum() or c.isspace() else " " for c in bare)
    return " ".join(kept.casefold().split())


def writes(name: str, text: str) -> bool:
    """Whether ``text`` writes ``name`` with its letters and accents (case, punctuation
    and apostrophes aside)."""
    wanted = _letters(name)
    return bool(wanted) and f" {wanted} " in f" {_letters(text)} "


MORE_WORDS_MAX = 1
"""A second reading may hold this many more words than the first, at most: a name
takes the place of the words Whisper wrote for it ("Mammals Lap", "Mamó's Lamp"), it
adds none. Longer, it has begun to say the utterance again ("Turn on Ciarán's Lamp.
Turn on Ciarán"), which the guard lets through when the repeat is cut short."""
FEWER_WORDS_MAX = 3
"""...and this many fewer: a name may stand for a few words ("the dark, golden" for
"the Dachboden"), not for the rest of the sentence."""


def keeps(first: str, second: str, names: Sequence[str]) -> bool:
    """Whether the second reading replaces the first: it writes one of ``names`` that
    the first did not write, in about as many words (``Niamh's Lamp.`` for "Turn on
    Neve's lamp and the kitchen light" is dropped). A second reading that only moves
    other words (what a prompt of names does to ordinary speech) is dropped."""
    more = len(second.split()) - len(first.split())
    if more > MORE_WORDS_MAX or more < -FEWER_WORDS_MAX:
        return False
    return any(writes(name, second) and not writes(name, first) for name in names)
