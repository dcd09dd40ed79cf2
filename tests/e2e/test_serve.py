"""`hearth serve` as a real subprocess on free loopback ports."""

import ssl

import httpx
import pytest

from tests.daemon import Daemon

pytestmark = pytest.mark.e2e


def test_serve_answers_ping_and_health_then_stops_cleanly(tmp_path):
    daemon = Daemon(tmp_path).start(wait=False)
    try:
        assert daemon.wait_for("/api/ping", 200).json() == {"message": "pong"}
        health = daemon.wait_for("/healthz", 200).json()
        assert health["status"] == "ready"
        names = {e["name"] for e in health["engines"]}
        assert names == {"asr:tiny.en", "tts", "llm"}
        assert all(e["device"] == "cpu" for e in health["engines"])
        assert health["versions"]["faster-whisper"] != "missing"
        assert httpx.get(f"{daemon.url}/docs", timeout=5).status_code == 200
        assert "/healthz" in httpx.get(f"{daemon.url}/openapi.json", timeout=5).json()["paths"]
    finally:
        out = daemon.stop()
    assert daemon.returncode == 0, out
    assert "Ready in" in out


def test_healthz_is_503_while_loading(tmp_path):
    daemon = Daemon(tmp_path).start(wait=False)
    try:
        # The listener is up before the engines: the first answer is 503, then 200.
        first = daemon.wait_for("/healthz", 503, timeout=60).json()
        assert first["status"] in ("starting", "loading")
        daemon.wait_for("/healthz", 200)
    finally:
        daemon.stop()


def test_engines_that_cannot_load_stop_the_daemon_with_a_reason(tmp_path):
    daemon = Daemon(
        tmp_path,
        "asr:\n  allow_download: false\n  default_model: x\n"
        "  models:\n    x:\n      path: medium.en\n",
    ).start(wait=False)
    daemon.proc.wait(timeout=60)
    out = daemon.stop()
    assert daemon.returncode == 1
    assert "ASR model 'medium.en' is not on disk" in out


def test_https_serves_the_same_api_with_a_self_signed_certificate(tmp_path):
    from daemon.ops.tls import fingerprint

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
