"""How failures leave a Wyoming connection: one ``error`` event per failure, then EOF."""

from __future__ import annotations

from wyoming.error import Error
from wyoming.event import Event

from daemon.errors import HearthError
from protocols.wyoming.framing import FrameError


def error_event(exc: BaseException) -> Event:
    """The one mapping from failures to Wyoming ``error`` events."""
    if isinstance(exc, HearthError):
        return Error(text=exc.message, code=exc.code).event()
    if isinstance(exc, FrameError):
        return Error(text=exc.message, code="invalid-event").event()
    return Error(text="internal error; see the daemon's log", code="internal-error").event()


class Reported(Exception):
    """An error event was already sent (mid-answer, or by a request's own task); the
    connection must close without sending another."""

    def __init__(self, code: str, counted: bool = False) -> None:
        super().__init__(code)
        self.code = code
        self.counted = counted
        """The request's outcome was already told to the observer."""
