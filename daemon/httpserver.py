"""uvicorn's server with SIGTERM/SIGINT owned by the daemon."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Iterator

import uvicorn

_LOGGER = logging.getLogger(__name__)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class DaemonServer(uvicorn.Server):
    """A uvicorn server that stops on SIGTERM/SIGINT without re-raising them.

    uvicorn re-raises a caught signal after shutting down, which ends the process
    with the signal's status; a service stopped on purpose must exit 0. A second
    signal forces the exit.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Install loop signal handlers for the life of ``serve()``."""
        loop = asyncio.get_running_loop()
        for sig in STOP_SIGNALS:
            loop.add_signal_handler(sig, self.request_stop, sig)
        try:
            yield
        finally:
            for sig in STOP_SIGNALS:
                loop.remove_signal_handler(sig)

    def request_stop(self, sig: int = signal.SIGTERM) -> None:
        """Begin a graceful shutdown (a second request forces it)."""
        _LOGGER.info("Stopping on %s", signal.Signals(sig).name)
        if self.should_exit:
            self.force_exit = True
        self.should_exit = True
