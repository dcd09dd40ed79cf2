"""The household's names known now, in memory: every request reads them, the source
writes them.

A request never waits for Home Assistant: :meth:`NameStore.prompt` composes from the
reading at hand (none: the client's prompt alone). Each model ranks the names with its
own tokenizer (:func:`~daemon.house.prompt.rank`); that takes about 15 µs a name, so
it runs in a worker thread: when a reading is published, for every model seen so far,
before it is swapped in; for a model seen for the first time, in the background,
while its first prompts use the reading's own order with estimated token counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from collections.abc import Sequence
from typing import Any

from daemon.house.names import Household, HouseName, SourceState
from daemon.house.prompt import PromptBudget, Ranked, TokenCounter, compose, rank

_LOGGER = logging.getLogger(__name__)


class NameStore:
    """The current :class:`Household` and each model's ranking of it."""

    def __init__(self) -> None:
        self._current = Household()
        self.state = SourceState.OFF
        """Set by the source; shown by :meth:`status`."""
        self._counters: dict[str, TokenCounter | None] = {}
        """Each model seen so far (by its budget's key), with its tokenizer."""
        self._rankings: dict[str, tuple[int, tuple[Ranked, ...]]] = {}
        """Per model: the generation ranked, and its ranking."""
        self._pending: dict[str, asyncio.Task[None]] = {}

    @property
    def current(self) -> Household:
        """The reading in use now."""
        return self._current

    def prompt(self, client: str | None, budget: PromptBudget) -> str | None:
        """``client``'s prompt with the household's names after it, within ``budget``
        (``client`` itself when no names are known). Never waits."""
        household = self._current
        if not household.names:
            return client
        return compose(client, self._ranking(household, budget), budget)

    def _ranking(self, household: Household, budget: PromptBudget) -> Sequence[Ranked]:
        known = self._rankings.get(budget.key)
        if known is not None and known[0] == household.generation:
            return known[1]
        if budget.key not in self._counters:
            self._counters[budget.key] = budget.count_tokens
        self._rank_later(budget.key, household)
        known = self._rankings.get(budget.key)
        if known is not None and known[0] == household.generation:
            return known[1]  # ranked at once: no tokenizer, or no event loop
        # Meanwhile: the reading's own order, tokens estimated (generously).
        return rank(household.names, None)

    def _rank_later(self, key: str, household: Household) -> None:
        """Rank ``household`` for model ``key`` in a worker thread (one task at a time)."""
        count = self._counters.get(key)
        if count is None:  # no tokenizer: the reading's order is the ranking (cheap)
            self._rankings[key] = (household.generation, rank(household.names, None))
            return
        if key in self._pending:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (a benchmark, a script): rank now
            self._rankings[key] = (household.generation, _safe_rank(household.names, count))
            return
        task = loop.create_task(self._rank(key, household), name=f"house-rank-{key}")
        self._pending[key] = task
        task.add_done_callback(lambda _: self._pending.pop(key, None))

    async def _rank(self, key: str, household: Household) -> None:
        ranked = await asyncio.to_thread(_safe_rank, household.names, self._counters.get(key))
        if household.generation >= self._rankings.get(key, (-1, ()))[0]:
            self._rankings[key] = (household.generation, ranked)

    async def publish(self, names: Sequence[HouseName], refreshed_at: float) -> Household:
        """Make ``names`` (one whole reading, ranked) the names in use, ranked for every
        model seen so far first (in a worker thread)."""
        household = Household(tuple(names), refreshed_at, self._current.generation + 1)
        counters = dict(self._counters)
        rankings = await asyncio.to_thread(_rank_all, household, counters)
        self._rankings.update(rankings)
        self._current = household
        return household

    def forget(self) -> None:
        """No names any more (Home Assistant was turned off)."""
        self._current = Household((), None, self._current.generation + 1)
        self._rankings.clear()

    def touch(self, refreshed_at: float) -> None:
        """A reading found the same names: only its time changes."""
        now = self._current
        self._current = Household(now.names, refreshed_at, now.generation)

    async def close(self) -> None:
        """End background ranking (safe to call more than once)."""
        for task in list(self._pending.values()):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

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
    except Exception as exc:  # noqa: BLE001 - the prompt still works without the ranking
        _LOGGER.warning("Ranking the household's names failed: %s", type(exc).__name__)
        return rank(names, None)


def _rank_all(
    household: Household, counters: dict[str, TokenCounter | None]
) -> dict[str, tuple[int, tuple[Ranked, ...]]]:
    return {
        key: (household.generation, _safe_rank(household.names, count))
        for key, count in counters.items()
    }
