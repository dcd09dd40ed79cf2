"""`hearth serve` as a real subprocess on free loopback ports."""

import os
import signal
import ssl
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.helpers import free_port

pytestmark = pytest.mark.e2e


def start(tmp_path: Path, extra: str = "") -> tuple[subprocess.Popen, str]:
    port = free_port()
    config = tmp_path / "config.yaml"
    config.write_text(
        f"state_dir: {tmp_path / 'state'}\n"
        f"http:\n  host: 127.0.0.1\n  port: {port}\n"
        f"https:\n  port: {free_port()}\n"
        f"wyoming:\n  uri: tcp://127.0.0.1:{free_port()}\n"
        "mdns:\n  enabled: false\n" + extra
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "daemon.cli", "--config", str(config), "serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=os.environ | {"HF_HUB_OFFLINE": "1"},
    )
    return proc, f"http://127.0.0.1:{port}"


def wait_for(url: str, proc: subprocess.Popen, status: int, timeout: float = 90) -> httpx.Response:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read()
        try:
            resp = httpx.get(url, timeout=2)
            if resp.status_code == status:
                return resp
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} never answered {status}")


def test_serve_answers_ping_and_health_then_stops_cleanly(tmp_path):
    proc, base = start(tmp_path)
    try:
        assert wait_for(f"{base}/api/ping", proc, 200).json() == {"message": "pong"}
        health = wait_for(f"{base}/healthz", proc, 200).json()
        assert health["status"] == "ready"
        names = {e["name"] for e in health["engines"]}
        assert names == {"asr:tiny.en", "tts", "llm"}
        assert all(e["device"] == "cpu" for e in health["engines"])
        assert health["versions"]["faster-whisper"] != "missing"
        assert httpx.get(f"{base}/docs", timeout=5).status_code == 200
        assert "/healthz" in httpx.get(f"{base}/openapi.json", timeout=5).json()["paths"]
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert "Ready in" in out


def test_healthz_is_503_while_loading(tmp_path):
    proc, base = start(tmp_path)
    try:
        # The listener is up before the engines: the first answer is 503, then 200.
        first = wait_for(f"{base}/healthz", proc, 503, timeout=60).json()
        assert first["status"] in ("starting", "loading")
        wait_for(f"{base}/healthz", proc, 200)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_engines_that_cannot_load_stop_the_daemon_with_a_reason(tmp_path):
    proc, _ = start(
        tmp_path,
        "asr:\n  allow_download: false\n  default_model: x\n"
        "  models:\n    x:\n      path: medium.en\n",
    )
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "ASR model 'medium.en' is not on disk" in out


def test_https_serves_the_same_api_with_a_self_signed_certificate(tmp_path):
    from daemon.tls import fingerprint
    from tests.daemon import Daemon

    with Daemon(tmp_path) as daemon:
        cert = tmp_path / "state" / "tls" / "hearth.crt"
        trust = ssl.create_default_context(cafile=str(cert))
        resp = httpx.get(f"{daemon.https_url}/api/ping", verify=trust, timeout=5)
        assert resp.json() == {"message": "pong"}
        assert httpx.get(f"{daemon.https_url}/healthz", verify=trust).status_code == 200
        with pytest.raises(httpx.ConnectError):  # not trusted without the certificate
            httpx.get(f"{daemon.https_url}/api/ping", timeout=5)
    out = daemon.output
    assert daemon.returncode == 0, out
    assert fingerprint(cert) in out  # logged at start for people to compare
