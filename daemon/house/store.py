"""The household's names known now, in memory: every request reads them, the source
writes them.

A request never waits for Home Assistant: :meth:`NameStore.second_prompt` works from
the reading at hand (none: no second reading). Each model ranks the names with its own
tokenizer (:func:`~daemon.house.prompt.rank`, about 15 µs a name) and compares them
with what it heard through a :class:`~daemon.house.match.NameMatcher`. Both are made
in worker threads: when a reading is published, for every model seen so far, before it
is swapped in; for a model seen for the first time, by its first second reading (which
runs in the ASR worker anyway). A lock keeps the per-model caches whole across threads.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import threading
from collections.abc import Sequence
from typing import Any

from daemon.house.match import NameMatcher
from daemon.house.names import Household, HouseName, SourceState
from daemon.house.prompt import PromptBudget, Ranked, TokenCounter, compose, rank

_LOGGER = logging.getLogger(__name__)


class NameStore:
    """The current :class:`Household` and each model's matcher for it."""

    def __init__(self) -> None:
        self._current = Household()
        self.state = SourceState.OFF
        """Set by the source; shown by :meth:`status`."""
        self._lock = threading.Lock()
        self._counters: dict[str, TokenCounter | None] = {}
        """Each model seen so far (by its budget's key), with its tokenizer."""
        self._matchers: dict[str, tuple[int, NameMatcher]] = {}
        """Per model: the generation matched, and its matcher."""

    @property
    def current(self) -> Household:
        """The reading in use now."""
        return self._current

    def second_prompt(
        self, client: str | None, budget: PromptBudget, heard: str
    ) -> tuple[str, tuple[str, ...]] | None:
        """The prompt of a second reading of an utterance first heard as ``heard``:
        ``client``'s prompt, then the names most like something heard (within
        ``budget``), with those names; None when no name is alike (or none are
        known). Blocking for milliseconds: called from the ASR worker thread."""
        matcher = self.matcher(budget)
        if matcher is None:
            return None
        found = matcher.candidates(heard)
        prompt = compose(client, found, budget) if found else None
        if prompt is None or prompt == client:
            return None
        # Only the names the budget let in: the second reading is kept for those.
        return prompt, tuple(name.text for name in found if name.text in prompt)

    def matcher(self, budget: PromptBudget) -> NameMatcher | None:
        """Model ``budget.key``'s matcher for the current reading (made now, in the
        calling thread, if the model is new); None when no names are known."""
        household = self._current
        if not household.names:
            return None
        with self._lock:
            known = self._matchers.get(budget.key)
            if known is not None and known[0] == household.generation:
                return known[1]
            self._counters.setdefault(budget.key, budget.count_tokens)
        made = _match(household.names, budget.count_tokens)
        with self._lock:
            if household.generation >= self._matchers.get(budget.key, (-1, None))[0]:
                self._matchers[budget.key] = (household.generation, made)
        return made

    async def publish(self, names: Sequence[HouseName], refreshed_at: float) -> Household:
        """Make ``names`` (one whole reading, ranked) the names in use, matched for
        every model seen so far first (in a worker thread)."""
        household = Household(tuple(names), refreshed_at, self._current.generation + 1)
        with self._lock:
            counters = dict(self._counters)
        made = await asyncio.to_thread(_match_all, household, counters)
        with self._lock:
            self._matchers.update(made)
        self._current = household
        return household

    def forget(self) -> None:
        """No names any more (Home Assistant was turned off)."""
        self._current = Household((), None, self._current.generation + 1)
        with self._lock:
            self._matchers.clear()

    def touch(self, refreshed_at: float) -> None:
        """A reading found the same names: only its time changes."""
        now = self._current
        self._current = Household(now.names, refreshed_at, now.generation)

    def status(self) -> dict[str, Any]:
        """What ``/healthz`` and ``hearth check`` show: the source's state, how many names
        of each kind, and when they were read. Never the names."""
        household = self._current
        at = household.refreshed_at
        return {"state": self.state.value, **household.counts()} | {
            "refreshed_at": None
            if at is None
            else datetime.datetime.fromtimestamp(at, datetime.UTC).isoformat(timespec="seconds")
        }


def _safe_rank(names: Sequence[HouseName], count: TokenCounter | None) -> tuple[Ranked, ...]:
    """:func:`rank`, falling back to the reading's order if the tokenizer fails."""
    try:
        return rank(names, count)
    except Exception as exc:  # noqa: BLE001 - the names still match without the ranking
        _LOGGER.warning("Ranking the household's names failed: %s", type(exc).__name__)
        return rank(names, None)


def _match(names: Sequence[HouseName], count: TokenCounter | None) -> NameMatcher:
    return NameMatcher(_safe_rank(names, count))


def _match_all(
    household: Household, counters: dict[str, TokenCounter | None]
) -> dict[str, tuple[int, NameMatcher]]:
    return {
        key: (household.generation, _match(household.names, count))
        for key, count in counters.items()
    }
