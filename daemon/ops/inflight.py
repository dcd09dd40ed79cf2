"""Requests in flight, by protocol and by the engine generation they started on.

The HTTP middleware registers each request here. Metrics read the counts per
protocol; a reload waits until the requests that started before its swap have
ended before it closes what only the old engines used.

A long-lived session (the Realtime WebSocket) moves to new engines at its next
utterance or response, as WebRTC sessions do: its ticket says when it ``holds``
engines (an utterance under way, a response), and a reload waits only for the
sessions that held engines at the swap to stop holding them, not for them to close.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(eq=False)
class Ticket:
    """One request in flight."""

    id: int
    protocol: str
    generation: int
    busy: Callable[[], bool] | None = None
    """A session's: whether it holds engines now (None: a request holds them while open)."""

    def holds(self) -> bool:
        """Whether this request holds the engines it started on now."""
        return self.busy is None or self.busy()


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

    def busy(self) -> bool:
        """Whether any request holds engines now (an idle session does not)."""
        return any(t.holds() for t in self._open.values())

    def holding(self, generation: int) -> list[Ticket]:
        """Requests that started before ``generation`` and hold their engines now."""
        return [t for t in self._open.values() if t.generation < generation and t.holds()]

    def still_holding(self, tickets: list[Ticket]) -> bool:
        """Whether any of ``tickets`` is open and holds its engines. A ticket that let
        go is dropped from the list: a session's next utterance is on newer engines."""
        tickets[:] = [t for t in tickets if t.id in self._open and t.holds()]
        return bool(tickets)
