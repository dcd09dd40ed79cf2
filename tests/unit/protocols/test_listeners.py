"""The service drives its listeners through one interface: start order, reload, stop, metrics."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest

import daemon.service as service_module
from daemon.config import Config, parse_config
from daemon.ops.notify import Notifier
from daemon.runtime.reload import plan_reload
from daemon.service import HearthService, ServiceState, restart_keys
from protocols.listener import Announcement, Drained, Listener

TIMEOUT_S = 10


class RecordingNotifier(Notifier):
    """Keeps every sd_notify message instead of sending it."""

    def __init__(self) -> None:
        super().__init__(address="")
        self.sent: list[dict[str, Any]] = []

    def send(self, **fields: str | int) -> bool:
        self.sent.append(fields)
        return True


class FakeListener:
    """A listener that records what the service asks of it."""

    def __init__(self, name: str, log: list[str], early: bool = False, sessions: int = 0) -> None:
        self.name = name
        self.early = early
        self.log = log
        self.sessions = sessions
        self.in_flight = False
        self.stopped_with: list[float] = []
        self.reconfigured: list[tuple[Config, bool]] = []
        self.fail_stop = False

    async def start(self) -> None:
        self.log.append(f"start {self.name}")

    async def stop(self, grace_s: float) -> None:
        self.stopped_with.append(grace_s)
        if self.fail_stop:
            raise RuntimeError("cannot stop")

    def reconfigure(self, config: Config, swapped: bool) -> Drained:
        self.reconfigured.append((config, swapped))
        return lambda: not self.in_flight

    def busy(self) -> bool:
        return self.in_flight

    def active_sessions(self) -> dict[str, int]:
        return {self.name: self.sessions}

    def announcements(self) -> list[Announcement]:
        return []

    def describe(self) -> str:
        return f"{self.name} here" if self.name != "webrtc" else ""


class FakeEngines:
    """Just enough of Engines for the service's bookkeeping."""

    pools: tuple[object, ...] = ()
    llm = None

    def __init__(self) -> None:
        self.status = ["asr", "tts"]
        self.closed = False

    def gauges(self) -> None:
        return None

    def describe(self) -> list[dict[str, object]]:
        return []

    def close(self) -> None:
        self.closed = True


def base_yaml(state_dir: Path) -> str:
    return f"state_dir: {state_dir}\nmdns:\n  enabled: false\nlimits:\n  shutdown_grace_s: 3\n"


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return parse_config(base_yaml(tmp_path), "test.yaml")


def make_service(config: Config, log: list[str]) -> tuple[HearthService, list[FakeListener]]:
    service = HearthService(config, report=object(), notifier=RecordingNotifier())  # type: ignore[arg-type]
    listeners = [
        FakeListener("http", log, early=True, sessions=2),
        FakeListener("wyoming", log, sessions=1),
        FakeListener("webrtc", log),
    ]
    service.doors.listeners = list(listeners)
    return service, listeners


def test_fakes_are_listeners() -> None:
    listener: Listener = FakeListener("x", [])
    assert listener.name == "x"


def test_metrics_and_status_come_from_the_listeners(config: Config) -> None:
    service, _ = make_service(config, [])
    service.engines = FakeEngines()  # type: ignore[assignment]
    snapshot = service._metrics_snapshot()
    assert snapshot.sessions == {"http": 2, "wyoming": 1, "webrtc": 0}
    assert service._status_line() == "Ready: 2 models; http here; wyoming here"


async def test_run_starts_early_listeners_before_loading_and_stops_all_with_the_grace(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    log: list[str] = []
    service, listeners = make_service(config, log)
    engines = FakeEngines()

    def load_engines(*args: object, **kwargs: object) -> FakeEngines:
        log.append("load")
        return engines

    async def warm_up(*args: object) -> None:
        log.append("warm")

    monkeypatch.setattr(service_module, "load_engines", load_engines)
    monkeypatch.setattr(service_module, "warm_up", warm_up)
    monkeypatch.setattr(service, "_make_listeners", lambda: list(listeners))
    notifier = service.notifier
    assert isinstance(notifier, RecordingNotifier)
    loop = asyncio.get_running_loop()
    running = asyncio.create_task(service.run())
    try:
        async with asyncio.timeout(TIMEOUT_S):
            while not any("READY" in m for m in notifier.sent):
                await asyncio.sleep(0.01)
        assert log == ["start http", "load", "warm", "start wyoming", "start webrtc"]
        assert service.state is ServiceState.READY
        ready = [m for m in notifier.sent if "READY" in m][0]
        assert ready["STATUS"] == "Ready: 2 models; http here; wyoming here"
        listeners[1].fail_stop = True  # one listener failing to stop holds up nothing
        service._on_stop_signal(signal.SIGTERM)
        async with asyncio.timeout(TIMEOUT_S):
            assert await running == 0
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        running.cancel()
    assert all(listener.stopped_with == [3.0] for listener in listeners)
    assert any("STOPPING" in m for m in notifier.sent)
    assert engines.closed


async def test_a_second_stop_signal_stops_listeners_at_once(config: Config) -> None:
    service, listeners = make_service(config, [])
    service._on_stop_signal(signal.SIGTERM)
    service._on_stop_signal(signal.SIGTERM)
    async with asyncio.timeout(TIMEOUT_S):
        await service.close()
    assert all(sorted(listener.stopped_with) == [0.0, 3.0] for listener in listeners)


async def test_reload_reconfigures_every_listener_and_retires_only_when_all_drained(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    service, listeners = make_service(config, [])
    old, new = FakeEngines(), FakeEngines()
    service.engines = old  # type: ignore[assignment]
    retiring: dict[str, Any] = {}

    async def retire(previous: object, current: object, drained: Drained, timeout_s: float) -> bool:
        retiring.update(previous=previous, current=current, drained=drained)
        return True

    monkeypatch.setattr(service_module, "retire", retire)
    listeners[1].in_flight = True  # a Wyoming request runs on the old engines
    newer = parse_config(
        base_yaml(Path(config.state_dir)) + "wyoming:\n  max_connections: 3\n", "test.yaml"
    )
    service._apply(plan_reload(config, newer, restart_keys()), new)  # type: ignore[arg-type]
    async with asyncio.timeout(TIMEOUT_S):
        while not retiring:
            await asyncio.sleep(0.01)
    assert service.engines is new
    core = service.core
    assert core is not None and core.wraps(new, service.config)  # type: ignore[arg-type]
    assert all(listener.reconfigured == [(service.config, True)] for listener in listeners)
    assert retiring["previous"] is old and retiring["current"] is new
    assert not retiring["drained"]()
    listeners[1].in_flight = False
    assert retiring["drained"]()


def test_a_live_reload_tells_listeners_no_engines_changed(config: Config) -> None:
    service, listeners = make_service(config, [])
    service.engines = FakeEngines()  # type: ignore[assignment]
    newer = parse_config(base_yaml(Path(config.state_dir)) + "auth:\n  api_key: k\n", "test.yaml")
    service._apply(plan_reload(config, newer, restart_keys()), None)
    assert all(listener.reconfigured == [(service.config, False)] for listener in listeners)


# ---------------------------------------------------------------- each listener


class FakeRtcSession:
    """What the WebRTC listener reads of a session."""

    def __init__(self, busy: bool) -> None:
        self.busy = busy
        self.told = 0

    def on_engines_changed(self) -> None:
        self.told += 1


def test_webrtc_reload_repoints_every_session_and_drains_the_busy_ones(config: Config) -> None:
    from protocols.webrtc.manager import RtcManager

    manager = RtcManager(config.webrtc, None)  # type: ignore[arg-type]
    talking, idle = FakeRtcSession(busy=True), FakeRtcSession(busy=False)
    manager.sessions = {"a": talking, "b": idle}  # type: ignore[dict-item]
    assert manager.busy() and manager.active_sessions() == {"webrtc": 2}
    assert manager.reconfigure(config, False)() and talking.told == 0  # live settings only
    drained = manager.reconfigure(config, True)
    assert (talking.told, idle.told) == (1, 1)
    assert not drained()
    talking.busy = False  # the utterance on the old engines ended
    assert drained()


def test_http_reload_drains_requests_begun_before_the_swap(config: Config) -> None:
    from daemon.ops.inflight import InFlight
    from protocols.http.server import HttpListener

    inflight = InFlight()
    listener = HttpListener(object(), config, inflight)
    before = inflight.begin("willow")
    offer = inflight.begin("webrtc")  # the WebRTC listener counts its sessions
    assert listener.active_sessions() == {"willow": 1, "openai": 0}
    drained = listener.reconfigure(config, True)
    after = inflight.begin("openai")  # on the new engines: not waited for
    assert not drained()
    inflight.end(before)
    inflight.end(offer)
    assert drained() and listener.busy()
    inflight.end(after)


def test_wyoming_reload_applies_limits_and_drains_busy_connections(config: Config) -> None:
    from protocols.wyoming.server import WyomingServer

    server = WyomingServer.from_config(config, None)  # type: ignore[arg-type]
    busy = type("Connection", (), {"busy": True})()
    server._tasks = {object(): busy}  # type: ignore[dict-item]
    newer = parse_config(
        base_yaml(Path(config.state_dir)) + "wyoming:\n  max_connections: 3\n", "test.yaml"
    )
    drained = server.reconfigure(newer, True)
    assert server.max_connections == 3 and server.active_sessions() == {"wyoming": 1}
    assert not drained()
    busy.busy = False
    assert drained() and not server.busy()


def test_http_reload_waits_for_a_session_only_while_it_holds_engines(config: Config) -> None:
    from daemon.ops.inflight import InFlight
    from protocols.http.server import HttpListener

    inflight = InFlight()
    listener = HttpListener(object(), config, inflight)
    talking, idle = inflight.begin("openai"), inflight.begin("openai")  # Realtime sockets
    hearing = {"talking": True}
    talking.busy = lambda: hearing["talking"]
    idle.busy = lambda: False
    drained = listener.reconfigure(config, True)
    assert not drained()  # an utterance on the old engines
    hearing["talking"] = False
    assert drained()  # both sockets still open: they move to the new engines
    assert not listener.busy()  # open and idle
    hearing["talking"] = True  # its next utterance is heard on the new engines
    assert drained() and listener.active_sessions() == {"willow": 0, "openai": 2}
