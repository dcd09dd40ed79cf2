"""The add-on's discovery call against a fake Supervisor, and the health probes."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from daemon.ops import probe
from daemon.ops.supervisor import AddonContext, DiscoveryFailed, addon_context, announce


class FakeSupervisor:
    """Answers POST /discovery with the statuses it is given, one per call, then 200."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses
        self.calls: list[tuple[str, str, dict]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.calls.append((self.path, self.headers["Authorization"], body))
                status = fake.statuses.pop(0) if fake.statuses else 200
                if status == 200:
                    answer = {"result": "ok", "data": {"uuid": "ab" * 16}}
                else:
                    answer = {"result": "error", "message": "Apps must list services"}
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def supervisor() -> Iterator[FakeSupervisor]:
    fake = FakeSupervisor([])
    yield fake
    fake.server.shutdown()


def context(url: str) -> AddonContext:
    return AddonContext("token-1", Path("/data/options.json"), url)


def test_the_wyoming_uri_is_announced_with_the_token(supervisor):
    uuid = announce(context(supervisor.url), "wyoming", {"uri": "tcp://homeassistant:10300"})
    assert uuid == "ab" * 16
    (path, auth, body) = supervisor.calls[0]
    assert (path, auth) == ("/discovery", "Bearer token-1")
    assert body == {"service": "wyoming", "config": {"uri": "tcp://homeassistant:10300"}}


def test_it_retries_while_the_supervisor_is_busy_then_succeeds(supervisor):
    supervisor.statuses[:] = [503, 502]
    waits: list[float] = []
    announce(context(supervisor.url), "wyoming", {"uri": "tcp://h:1"}, sleep=waits.append)
    assert len(supervisor.calls) == 3 and waits == [1.0, 2.0]


def test_a_refusal_is_final_and_says_why(supervisor):
    supervisor.statuses[:] = [403]
    with pytest.raises(DiscoveryFailed, match="refused the wyoming discovery: 403 Apps must"):
        announce(context(supervisor.url), "wyoming", {"uri": "tcp://h:1"}, sleep=lambda s: None)
    assert len(supervisor.calls) == 1


def test_an_unreachable_supervisor_is_given_up_on_clearly():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    waits: list[float] = []
    with pytest.raises(DiscoveryFailed, match="did not take the wyoming discovery"):
        announce(context(f"http://127.0.0.1:{port}"), "wyoming", {}, attempts=4, sleep=waits.append)
    assert waits == [1.0, 2.0, 4.0]


def test_the_add_on_is_recognised_by_its_token_and_options(tmp_path):
    options = tmp_path / "options.json"
    env = {"SUPERVISOR_TOKEN": "t", "HEARTH_ADDON_OPTIONS": str(options)}
    assert addon_context(env) is None  # no options file: not the add-on
    options.write_text("{}")
    found = addon_context(env)
    assert found is not None and found.token == "t" and found.url == "http://supervisor"
    assert addon_context({"HEARTH_ADDON_OPTIONS": str(options)}) is None  # no token


class FakeWyoming:
    """Answers one describe with ``answer`` (raw bytes), as a Wyoming server would."""

    def __init__(self, answer: bytes) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]

        def serve() -> None:
            conn, _ = self.sock.accept()
            with conn:
                conn.recv(1024)
                conn.sendall(answer)

        threading.Thread(target=serve, daemon=True).start()


def info(programs: dict) -> bytes:
    data = json.dumps(programs).encode()
    header = json.dumps({"type": "info", "data_length": len(data)}).encode()
    return header + b"\n" + data


def test_describe_wants_info_that_names_programs():
    named = FakeWyoming(info({"asr": [{"name": "hearth-asr"}], "tts": [{"name": "hearth-tts"}]}))
    answer = probe.describe("127.0.0.1", named.port)
    assert answer.ok and "hearth-asr" in answer.detail
    assert not probe.describe("127.0.0.1", FakeWyoming(info({})).port).ok
    assert not probe.describe("127.0.0.1", FakeWyoming(b'{"type": "pong"}\n').port).ok
    assert not probe.describe("127.0.0.1", FakeWyoming(b"").port).ok


def test_endpoints_of_listeners_bound_everywhere():
    assert probe.wyoming_endpoint("tcp://0.0.0.0:10300") == ("127.0.0.1", 10300)
    assert probe.wyoming_endpoint("tcp://[::]:10300") == ("::1", 10300)
    assert probe.wyoming_endpoint("unix:///run/hearth.sock") is None
