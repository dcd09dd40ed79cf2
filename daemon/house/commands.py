"""The household's commands, for a command-aware reading of what was said.

:class:`CommandBook` keeps one :class:`~daemon.house.grammar.HouseGrammar` per
language for the current reading of the household's names: built in a background
thread when first asked for and again after each new reading (a build takes seconds),
while the grammar of the last reading keeps serving. :class:`HouseCommands` is one
session's reader (the ASR model's :class:`CommandReader`): a first reading Home
Assistant would match stays; one it would not gets the command sentences nearest to
it, for the model to score on the same audio.

Nothing is read while the household has no names (Home Assistant not configured, or
not read yet): a command grammar without the house's names would write names that
are not there.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from typing import Protocol

from daemon.house.grammar import HouseGrammar, load_intents
from daemon.house.store import NameStore

_LOGGER = logging.getLogger(__name__)

CANDIDATES = 4
"""Command sentences scored per utterance (each costs a forced decode of its tokens;
chosen on the choice half of ``bench/commands.py``)."""


class CommandBook:
    """The household's grammar per language, kept current with its names."""

    def __init__(self, store: NameStore, enabled: bool = True) -> None:
        self._store = store
        self.enabled = enabled
        """``homeassistant.commands``: false and no grammar is built or read."""
        self._lock = threading.Lock()
        self._built: dict[str, tuple[int, HouseGrammar]] = {}
        """Per language: the household generation it was built for, and the grammar."""
        self._building: set[str] = set()
        self._missing: set[str] = set()
        """Languages the templates do not cover."""

    def grammar(self, language: str) -> HouseGrammar | None:
        """The grammar for ``language`` (the latest built; a newer one is started in the
        background when the names changed). None: off, no names, none built yet, or a
        language without templates. Never blocks for a build."""
        household = self._store.current
        if not self.enabled or not household.names:
            return None
        language = language.lower().split("-")[0].split("_")[0]
        with self._lock:
            if language in self._missing:
                return None
            built = self._built.get(language)
            stale = built is None or built[0] != household.generation
            if stale and language not in self._building:
                self._building.add(language)
                threading.Thread(
                    target=self._build, args=(language,), name=f"grammar-{language}", daemon=True
                ).start()
        return None if built is None else built[1]

    def _build(self, language: str) -> None:
        household = self._store.current
        try:
            intents = load_intents(language)
            if intents is None:
                with self._lock:
                    self._missing.add(language)
                return
            grammar = HouseGrammar(intents, household)
            with self._lock:
                known = self._built.get(language)
                if known is None or known[0] <= household.generation:
                    self._built[language] = (household.generation, grammar)
            _LOGGER.info("Home Assistant's commands ready for language %s", language)
        except Exception as exc:  # noqa: BLE001 - transcripts go on without commands
            _LOGGER.warning("Building the command grammar failed (%s)", type(exc).__name__)
        finally:
            with self._lock:
                self._building.discard(language)


_NUMBER = re.compile(r"\d+%?")
"""A number as Whisper writes one, with its per cent sign."""


def with_numbers(grammar: HouseGrammar, heard: str, near: Sequence[str]) -> list[str]:
    """``near`` with the numbers that were heard in place of the templates' sample
    numbers ("set Bedroom Curtain to 20" for "At Madroom curtain to 50%" becomes "set
    Bedroom Curtain to 50"): the grammar writes out only a few numbers of each range.
    A sentence the grammar no longer matches with them keeps its own."""
    numbers = _NUMBER.findall(heard)
    out: list[str] = []
    for sentence in near:
        found = _NUMBER.findall(sentence)
        if numbers and found and len(found) <= len(numbers):
            for given in (numbers, [n.rstrip("%") for n in numbers]):
                changed = _renumbered(sentence, given)
                if changed != sentence and grammar.match(changed) is not None:
                    sentence = changed
                    break
        if sentence not in out:
            out.append(sentence)
    return out


def _renumbered(sentence: str, numbers: Sequence[str]) -> str:
    given = iter(numbers)
    return _NUMBER.sub(lambda _: next(given), sentence)


class Grammars(Protocol):
    """Where a reader finds the grammar of its language (a :class:`CommandBook`)."""

    def grammar(self, language: str) -> HouseGrammar | None:
        """The grammar for ``language`` now (None: none ready); never blocks."""
        ...


class HouseCommands:
    """One session's :class:`~daemon.engines.asr.commands.CommandReader`."""

    def __init__(self, book: Grammars, language: str, count: int | None = None) -> None:
        self._book = book
        self._language = language
        self._count = CANDIDATES if count is None else count

    def candidates(self, heard: str) -> Sequence[str]:
        """The command sentences nearest to ``heard``; none when it already is a command
        (or no grammar is ready). Called in the ASR worker thread."""
        if not heard.strip():
            return []
        grammar = self._book.grammar(self._language)
        if grammar is None:
            return []
        try:
            if grammar.match(heard) is not None:
                return []
            return with_numbers(grammar, heard, grammar.near(heard, self._count))
        except Exception as exc:  # noqa: BLE001 - the first reading stands
            _LOGGER.warning("Matching a command failed (%s)", type(exc).__name__)
            return []
