"""Telling systemd what the daemon is doing (the sd_notify protocol).

A ``Type=notify`` unit gives the daemon a datagram socket in ``$NOTIFY_SOCKET``;
each message is newline-separated ``KEY=VALUE`` lines: ``READY=1`` once serving,
``STATUS=...`` for ``systemctl status``, ``WATCHDOG=1`` as a keep-alive,
``RELOADING=1`` and ``STOPPING=1`` around reloads and shutdown. Without the
variable (not under systemd) every call does nothing.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time

_LOGGER = logging.getLogger(__name__)


class Notifier:
    """Sends sd_notify messages; a no-op when systemd did not ask for them."""

    def __init__(self, address: str | None = None) -> None:
        address = address if address is not None else os.environ.get("NOTIFY_SOCKET", "")
        # "@name" is a socket in the abstract namespace: a leading NUL byte.
        self.address = "\0" + address[1:] if address.startswith("@") else address
        self._sock: socket.socket | None = None

    @property
    def enabled(self) -> bool:
        """True when running under a manager that listens."""
        return bool(self.address)

    def send(self, **fields: str | int) -> bool:
        """Send one message (``send(READY=1, STATUS="Ready")``); False if it failed.

        A failure is logged, never raised: the daemon serves on without systemd.
        """
        if not self.address:
            return False
        message = "\n".join(f"{key}={value}" for key, value in fields.items())
        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
                self._sock.setblocking(False)
            self._sock.sendto(message.encode("utf-8"), self.address)
        except OSError as exc:
            _LOGGER.warning("sd_notify %s failed: %s", ",".join(fields), exc)
            return False
        return True

    def ready(self, status: str) -> None:
        """Serving: every engine is loaded and every listener bound."""
        self.send(READY=1, STATUS=status)

    def status(self, text: str) -> None:
        """What the daemon is doing (shown by ``systemctl status``)."""
        self.send(STATUS=text)

    def reloading(self, status: str = "Reloading the configuration") -> None:
        """A reload began; end it with :meth:`ready`."""
        now_usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self.send(RELOADING=1, MONOTONIC_USEC=now_usec, STATUS=status)

    def stopping(self, status: str = "Stopping") -> None:
        """Shutdown began."""
        self.send(STOPPING=1, STATUS=status)

    def close(self) -> None:
        """Close the socket; safe to call more than once."""
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()


def watchdog_interval(environ: dict[str, str] | None = None) -> float | None:
    """Seconds between keep-alives: half of ``WatchdogSec=``; None when not asked.

    ``$WATCHDOG_PID``, when set, must be this process (a child must not ping).
    """
    env = os.environ if environ is None else environ
    usec = env.get("WATCHDOG_USEC", "")
    pid = env.get("WATCHDOG_PID", "")
    if not usec.isdigit() or int(usec) == 0:
        return None
    if pid and pid != str(os.getpid()):
        return None
    return int(usec) / 1e6 / 2


async def keep_alive(notifier: Notifier, interval: float) -> None:
    """Send ``WATCHDOG=1`` every ``interval`` seconds, from the event loop itself.

    The pings come from a task on the loop, not a thread: when the loop is stuck
    (a blocking call, a busy loop) they stop and systemd restarts the unit.
    """
    while True:
        notifier.send(WATCHDOG=1)
        await asyncio.sleep(interval)
