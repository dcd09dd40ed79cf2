"""Which of the household's names an utterance may hold, from what a first reading heard.

Whisper writes a name it does not know as words it does know: "Pádraig's Office" as
"Portoox office", "Obergeschoss" as "over gush-hoss", "Mamó's Lamp" as "Mammals Lap".
The letters keep some of the name's shape. :class:`NameMatcher` compares every name
that Whisper would misspell (not :attr:`~daemon.house.prompt.Ranked.plain`) with each
run of words the first reading wrote, as sets of letter pairs (accents folded, case,
apostrophes and word breaks aside), and returns the few most alike: the prompt of
the second reading (:mod:`daemon.engines.asr.hints`).

On the names bench's first readings (45 commands, 4 voices, 212 names in the house),
76 of 180 had the name said among the candidates, where the whole list's prompt of
400 characters held 17 of the commands' 41 names; 50 of 120 ordinary commands found
some name alike (and were read twice, for nothing).

Pure; names never leave the object (no logging).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from daemon.house.prompt import Ranked

MAX_CANDIDATES = 8
"""Names in a second reading's prompt, at most (about 50 tokens)."""
RESEMBLANCE_MIN = 0.5
"""A name this alike (Dice coefficient of letter pairs) to some words heard is a
candidate. Lower finds more of the names said, and reads more utterances twice."""
MAX_HEARD_WORDS = 32
"""A longer transcript is not a home command: only its first words are compared."""

_NOT_LETTER = re.compile(r"[^a-z ]+")
_FOLD = str.maketrans({"ł": "l", "Ł": "l", "ø": "o", "Ø": "o", "đ": "d", "ß": "ss", "æ": "ae"})


def letters(text: str) -> str:
    """``text`` as plain lower-case letters and single spaces: accents folded
    ("Przedpokój" -> "przedpokoj"), apostrophes dropped ("Niamh's" -> "niamhs")."""
    decomposed = unicodedata.normalize("NFKD", text.translate(_FOLD))
    bare = "".join(c for c in decomposed if not unicodedata.combining(c)).lower()
    return " ".join(_NOT_LETTER.sub(" ", bare.replace("'", "").replace("’", "")).split())


def spelled(text: str) -> str:
    """``text`` in lower-case words, apostrophes and punctuation dropped, accents kept:
    whether a name is written as the house spells it ("Przedpokoj" is not)."""
    bare = text.replace("'", "").replace("’", "").casefold()
    return " ".join("".join(c if c.isalnum() else " " for c in bare).split())


def pairs(text: str) -> frozenset[str]:
    """The letter pairs of ``text`` (already :func:`letters`), its ends included, the
    spaces between its words left out: Whisper splits an unknown name where it likes
    ("Mammal Slap" for "Mamó's Lamp", "Oberge shas" for "Obergeschoss")."""
    padded = f" {text.replace(' ', '')} "
    return frozenset(padded[i : i + 2] for i in range(len(padded) - 1))


class NameMatcher:
    """The names of one ranking that Whisper would misspell, ready to compare."""

    def __init__(self, ranked: Sequence[Ranked]) -> None:
        self._names = [
            (name, pairs(letters(name.text)), len(letters(name.text).split()), spelled(name.text))
            for name in ranked
            if not name.plain and letters(name.text)
        ]
        self._longest = max((words for _, _, words, _ in self._names), default=0) + 1

    def __len__(self) -> int:
        return len(self._names)

    def candidates(self, heard: str) -> tuple[Ranked, ...]:
        """The names most like some run of words in ``heard`` (at most
        :data:`MAX_CANDIDATES`, at least :data:`RESEMBLANCE_MIN` alike), most alike
        first, the ranking's order breaking ties; none already written there."""
        words = letters(heard).split()[:MAX_HEARD_WORDS]
        if not words or not self._names:
            return ()
        written = f" {spelled(heard)} "
        # Each run of 1..longest words, as letter pairs, by its length in words.
        runs: dict[int, list[frozenset[str]]] = {}
        for size in range(1, min(self._longest, len(words)) + 1):
            runs[size] = [
                pairs(" ".join(words[i : i + size])) for i in range(len(words) - size + 1)
            ]
        # Every pair any run can hold: each word's own, and those across a word break.
        heard_pairs = frozenset().union(*runs[1])
        heard_pairs |= {a[-1] + b[0] for a, b in zip(words, words[1:], strict=False)}
        scored: list[tuple[float, int, Ranked]] = []
        for order, (name, grams, size, text) in enumerate(self._names):
            if f" {text} " in written:
                continue  # written already, as the house spells it: nothing to gain
            # No run shares more pairs with the name than the whole transcript does, and
            # 2m/(n+m) bounds the Dice coefficient of a run sharing m of the name's n.
            shared = len(grams & heard_pairs)
            if 2 * shared < RESEMBLANCE_MIN * (len(grams) + shared):
                continue
            best = 0.0
            for length in range(1, min(size + 1, len(words)) + 1):
                for run in runs[length]:
                    best = max(best, 2 * len(grams & run) / (len(grams) + len(run)))
            if best >= RESEMBLANCE_MIN:
                scored.append((-best, order, name))
        scored.sort(key=lambda item: (item[0], item[1]))
        return tuple(name for _, _, name in scored[:MAX_CANDIDATES])
