"""A fake systemd: records what a daemon sends to $NOTIFY_SOCKET."""

from __future__ import annotations

import os
import socket
import threading
import time


class NotifyListener:
    """Binds an abstract-namespace datagram socket and records each message."""

    def __init__(self) -> None:
        self.address = f"@hearth-test-{os.getpid()}-{time.monotonic_ns()}"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + self.address[1:])
        self.sock.settimeout(0.2)
        self.messages: list[tuple[float, dict[str, str]]] = []
        """(monotonic time received, fields) per message."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            fields = dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line)
            self.messages.append((time.monotonic(), fields))

    def values(self, key: str) -> list[str]:
        """Every value sent for ``key``, in order."""
        return [fields[key] for _, fields in self.messages if key in fields]

    def times(self, key: str, value: str = "1") -> list[float]:
        """When each message with ``key=value`` arrived."""
        return [at for at, fields in self.messages if fields.get(key) == value]

    def wait_for(self, key: str, value: str = "1", timeout: float = 120) -> float:
        """Wait for a message with ``key=value``; return when it arrived."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.times(key, value)
            if found:
                return found[0]
            time.sleep(0.02)
        raise AssertionError(f"no {key}={value} in {self.messages}")

    def close(self) -> None:
        """Stop listening."""
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()
