"""A real ``hearth serve`` subprocess on free loopback ports, for end-to-end tests.

mDNS is off unless a test turns it on, and then it stays on the loopback
interface: tests never advertise on the LAN.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.tts import Synthesize, SynthesizeVoice

from daemon.audio.pcm import encode
from tests.helpers import free_port

SYSTEMD_VARIABLES = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID")


class Daemon:
    """One ``hearth serve`` process; use as a context manager."""

    def __init__(
        self,
        workdir: Path,
        extra: str = "",
        mdns: bool = False,
        wyoming: str = "",
        env: dict[str, str] | None = None,
        http: str = "",
    ) -> None:
        """``http``: more keys of the ``http`` section (indented YAML lines)."""
        self.workdir = workdir
        self.env = env or {}
        """Extra environment (e.g. NOTIFY_SOCKET); systemd's own variables are dropped."""
        self.http_port = free_port()
        self.wyoming_port = free_port()
        self.https_port = free_port()
        self.config_path = workdir / "config.yaml"
        mdns_yaml = (
            "mdns:\n  enabled: true\n  interfaces: [127.0.0.1]\n"
            if mdns
            else "mdns:\n  enabled: false\n"
        )
        self.config_path.write_text(
            f"state_dir: {workdir / 'state'}\n"
            f"http:\n  host: 127.0.0.1\n  port: {self.http_port}\n{http}"
            f"https:\n  port: {self.https_port}\n"
            f"wyoming:\n  uri: tcp://127.0.0.1:{self.wyoming_port}\n{wyoming}" + mdns_yaml + extra
        )
        self.proc: subprocess.Popen[str] | None = None
        self.output = ""
        self._lines: list[str] = []
        self._reader: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def https_url(self) -> str:
        return f"https://127.0.0.1:{self.https_port}"

    @property
    def wyoming_uri(self) -> str:
        return f"tcp://127.0.0.1:{self.wyoming_port}"

    def start(self, wait: bool = True, timeout: float = 120) -> Daemon:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "daemon.cli", "--config", str(self.config_path), "serve"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={k: v for k, v in os.environ.items() if k not in SYSTEMD_VARIABLES}
            | {"HF_HUB_OFFLINE": "1"}
            | self.env,
        )
        # Read the log as it comes: a full pipe would block the daemon's event loop.
        self._lines = []
        self._reader = threading.Thread(target=self._read, args=(self.proc,), daemon=True)
        self._reader.start()
        if wait:
            self.wait_ready(timeout)
        return self

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self._lines.append(line)

    @property
    def log(self) -> str:
        """Everything logged so far (also while the daemon runs)."""
        return self.output + "".join(self._lines)

    def wait_for_log(self, text: str, timeout: float = 60) -> str:
        """Wait until ``text`` appears in the log; return the log."""
        deadline = time.monotonic() + timeout
        while text not in self.log:
            if time.monotonic() > deadline:
                raise AssertionError(f"never logged {text!r}:\n{self.log}")
            time.sleep(0.05)
        return self.log

    def wait_ready(self, timeout: float = 120) -> None:
        """Wait for /healthz to answer 200 (every engine and listener is up)."""
        self.wait_for("/healthz", 200, timeout)

    def wait_for(self, path: str, status: int, timeout: float = 120) -> httpx.Response:
        """Poll ``path`` until it answers ``status``; fail if the process exits."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"hearth serve exited early:\n{self.stop()}")
            try:
                resp = httpx.get(f"{self.url}{path}", timeout=2)
                if resp.status_code == status:
                    return resp
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"{path} never answered {status}:\n{self.stop()}")

    def sessions(self, protocol: str) -> float:
        """``hearth_active_sessions`` of ``protocol`` now (for HTTP: requests in flight)."""
        metrics = httpx.get(f"{self.url}/metrics", timeout=10).text
        gauge = re.compile(rf'^hearth_active_sessions\{{protocol="{protocol}"\}} (\S+)$', re.M)
        found = gauge.search(metrics)
        return 0.0 if found is None else float(found[1])

    def wait_for_sessions(
        self, protocol: str, enough: Callable[[float], bool], timeout: float = 30.0
    ) -> None:
        """Wait (bounded) until the ``protocol`` session count is ``enough``."""
        deadline = time.monotonic() + timeout
        while not enough(count := self.sessions(protocol)):
            assert time.monotonic() < deadline, f"{count:g} {protocol} sessions after {timeout} s"
            time.sleep(0.05)

    async def no_sessions_left(self, protocol: str, timeout: float = 30.0) -> None:
        """Wait (bounded) until the daemon holds no ``protocol`` session: it has noticed
        every peer that earlier tests closed, so their slots count toward no cap."""
        await asyncio.to_thread(self.wait_for_sessions, protocol, lambda n: n == 0, timeout)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> str:
        """Stop the process; return everything it logged."""
        if self.proc is None:
            return self.output
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=10)
            self._reader = None
        self.output += "".join(self._lines)
        self._lines = []
        return self.output

    @property
    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.returncode

    def __enter__(self) -> Daemon:
        if self.proc is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def serve(self, wait: bool = True) -> Iterator[Daemon]:
        """For module fixtures: start, yield, stop; a clean exit (0, no traceback) is
        part of every test module's result."""
        self.start(wait=wait)
        try:
            yield self
        finally:
            out = self.stop()
        assert self.returncode == 0, out
        assert "Traceback" not in out, out


async def synthesize(
    daemon: Daemon, text: str, voice: str | None = None
) -> tuple[list[Event], int, bytes]:
    """(every event up to audio-stop or error, the rate, the audio) of one Wyoming
    ``synthesize`` (``voice`` None: the default voice)."""
    named = SynthesizeVoice(name=voice) if voice else None
    async with AsyncTcpClient("127.0.0.1", daemon.wyoming_port) as c:
        await c.write_event(Synthesize(text=text, voice=named).event())
        events: list[Event] = []
        while True:
            event = await asyncio.wait_for(c.read_event(), 60)
            assert event is not None, f"connection closed: {events}"
            events.append(event)
            if event.type in ("audio-stop", "error"):
                break
    starts = [e for e in events if e.type == "audio-start"]
    rate = int(starts[0].data["rate"]) if starts else 0
    return events, rate, b"".join(e.payload or b"" for e in events if e.type == "audio-chunk")


def heard(daemon: Daemon, pcm: bytes, rate: int) -> str:
    """What the daemon's own tiny.en hears in ``pcm``."""
    resp = httpx.post(
        f"{daemon.url}/v1/audio/transcriptions",
        files={"file": ("s.wav", encode(pcm, rate, "wav"), "audio/wav")},
        data={"model": "tiny.en", "language": "en"},
        timeout=120,
    )
    assert resp.status_code == 200, resp.text
    return str(resp.json()["text"])
