"""Requests in flight, by protocol and by the engine generation they started on.

The HTTP middleware registers each request here. Metrics read the counts per
protocol; a reload waits until the requests that started before its swap have
ended before it closes what only the old engines used.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class Ticket:
    """One request in flight."""

    id: int
    protocol: str
    generation: int


class InFlight:
    """Counts requests while they run; ``generation`` grows by one per engine swap."""

    def __init__(self) -> None:
        self.generation = 0
        self._ids = itertools.count(1)
        self._open: dict[int, Ticket] = {}

    def begin(self, protocol: str) -> Ticket:
        """A request started."""
        ticket = Ticket(next(self._ids), protocol, self.generation)
        self._open[ticket.id] = ticket
        return ticket

    def end(self, ticket: Ticket) -> None:
        """The request ended (safe to call more than once)."""
        self._open.pop(ticket.id, None)

    def active(self) -> dict[str, int]:
        """Requests in flight now, per protocol."""
        return dict(Counter(t.protocol for t in self._open.values()))

    def started_before(self, generation: int) -> int:
        """Requests in flight that started before ``generation``."""
        return sum(1 for t in self._open.values() if t.generation < generation)
