"""The daemon's lifecycle: bind listeners, load engines, serve, reload, shut down.

Everything with side effects at start-up happens here (never at import): probing
hardware, checking library patches, loading models, warming them up. The service
holds its listeners (HTTP/HTTPS, Wyoming, WebRTC) behind one interface,
:class:`protocols.listener.Listener`, and knows nothing else of them. Early ones
(HTTP) bind first, so that /healthz can answer 503 while engines load; once the
engines are warm and every listener is bound, "Ready" is logged and systemd is
told ``READY=1``.

SIGHUP reloads the configuration (see :mod:`daemon.runtime.reload`): every listener
is reconfigured and says when the requests running on the previous engines have
ended. SIGTERM stops every listener accepting, unregisters mDNS, gives in-flight
requests up to ``limits.shutdown_grace_s`` to finish, then exits 0; a second
SIGTERM (or SIGINT) cancels what is still running.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import logging
import platform
import signal
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from daemon import __version__
from daemon.config import Config
from daemon.engines.hardware import HardwareReport, probe
from daemon.engines.hub.progress import Downloads
from daemon.errors import EXIT_CONFIG, ConfigError, ModelUnavailable
from daemon.house.service import House
from daemon.ops import memory
from daemon.ops.inflight import InFlight
from daemon.ops.logs import set_level
from daemon.ops.metrics import Metrics, ServiceSnapshot, outcome_of_code
from daemon.ops.notify import Notifier, keep_alive, watchdog_interval
from daemon.ops.presence import MdnsPresence
from daemon.runtime.context import Core
from daemon.runtime.engines import Engines
from daemon.runtime.loading import load_engines
from daemon.runtime.reload import ReloadPlan, load_beside, read_plan, remote_engines, retire
from daemon.runtime.remote import close_remotes
from daemon.runtime.services import Services
from daemon.runtime.startup import in_daemon_thread, warm_up
from daemon.voices.training import Training
from protocols.doors import Doors

if TYPE_CHECKING:
    from protocols.listener import Listener, ListenerKind

_LOGGER = logging.getLogger(__name__)


def listener_kinds() -> tuple[ListenerKind, ...]:
    """Every way in, in the order they are made (HTTP carries WebRTC's signaling)."""
    from protocols.http.server import KIND as HTTP
    from protocols.webrtc.manager import KIND as WEBRTC
    from protocols.wyoming.server import KIND as WYOMING

    return (WEBRTC, HTTP, WYOMING)


def restart_keys() -> tuple[str, ...]:
    """The settings the listeners bind with: a reload keeps them until a restart."""
    return tuple(key for kind in listener_kinds() for key in kind.restart)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class ServiceState(enum.Enum):
    """Where the daemon is in its life."""

    STARTING = "starting"
    LOADING = "loading"
    READY = "ready"
    FAILED = "failed"
    STOPPING = "stopping"


class HearthService:
    """Owns the config, the hardware report, the engines and the listeners."""

    def __init__(
        self,
        config: Config,
        report: HardwareReport | None = None,
        notifier: Notifier | None = None,
    ) -> None:
        self.config = config
        self.report = report
        self.engines: Engines | None = None
        self.downloads = Downloads()
        """Models and voices fetched by name: shown in /healthz from the start."""
        self._core: Core | None = None
        """The core over ``engines`` (made again when they or the config are swapped)."""
        self.services = Services(self.current_core)
        """The core's services, as the protocol adapters see it (valid across reloads)."""
        self.training = Training(config)
        self.house = House(config.homeassistant)
        """The household's names (Home Assistant), read in the background when configured."""
        self.state = ServiceState.STARTING
        self.error = ""
        self.config_error = False
        self.started = time.monotonic()
        self.doors = Doors(lambda: self._stopping is not None)
        """Every way in (made by ``run``)."""
        self.mdns = MdnsPresence()
        self.notifier = notifier or Notifier()
        self.inflight = InFlight()
        """HTTP requests in flight (the middleware registers them)."""
        self.metrics = Metrics(self._metrics_snapshot)
        self.trimmer = memory.Trimmer()
        """Gives the allocator's free memory back now and then (months of uptime)."""
        self._stop_requested = asyncio.Event()
        self._stopping: asyncio.Task[None] | None = None
        self._stopping_now: asyncio.Task[None] | None = None
        self._reload_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()

    # ---------------------------------------------------------------- views

    def health(self) -> tuple[bool, dict[str, Any]]:
        """Ready flag and details for /healthz."""
        details: dict[str, Any] = {
            "status": self.state.value,
            "version": __version__,
            "uptime_s": round(time.monotonic() - self.started, 1),
            "python": platform.python_version(),
            "versions": _library_versions(),
        }
        if self.error:
            details["error"] = self.error
        if self.report is not None:
            details["cuda_devices"] = [g.__dict__ for g in self.report.gpus]
        if self.engines is not None:
            details["engines"] = self.engines.describe()
        details["downloads"] = self.downloads.describe()
        details["homeassistant"] = self.house.status()
        return self.state is ServiceState.READY, details

    def _metrics_snapshot(self) -> ServiceSnapshot:
        states = tuple(s.value for s in ServiceState)
        gauges = self.engines.gauges() if self.engines is not None else None
        return ServiceSnapshot(self.state.value, states, gauges, self.doors.sessions())

    def _status_line(self) -> str:
        models = len(self.engines.status) if self.engines is not None else 0
        return "; ".join([f"Ready: {models} models", *self.doors.where()])

    # ---------------------------------------------------------------- life

    async def load(self) -> None:
        """Probe hardware and load engines in a worker thread, then warm up."""
        self.state = ServiceState.LOADING
        began = time.perf_counter()
        self.notifier.status("Loading models")
        if self.report is None:
            self.report = await in_daemon_thread(probe)
        report, downloads = self.report, self.downloads

        def load_all() -> Engines:
            return load_engines(self.config, report, downloads=downloads)

        self.engines = await in_daemon_thread(load_all)
        self.metrics.watch(self.engines.pools)
        self.notifier.status("Warming up models")
        await warm_up(self.engines)
        self.notifier.status("Binding listeners")
        await self.doors.start(early=False)
        if self._stopping is not None:
            return  # stopped while loading: never READY
        self._start_mdns()
        self.trimmer.start()
        self.state = ServiceState.READY
        _LOGGER.info("Ready in %.1f s", time.perf_counter() - began)
        # Voice training interrupted by a stop or a reboot goes on from its last checkpoint.
        await asyncio.to_thread(self.training.resume_interrupted)
        self.notifier.ready(self._status_line())

    @property
    def loaded(self) -> bool:
        """Whether the engines are loaded (the services answer; else ModelUnavailable)."""
        return self.engines is not None

    @property
    def core(self) -> Core | None:
        """The engines and config in force, as the services read them (None: loading)."""
        engines = self.engines
        if engines is None:
            return None
        if self._core is None or not self._core.wraps(engines, self.config):
            chat = getattr(engines, "chat", None)
            if chat is not None:
                languages = {getattr(m, "default_language", "") for m in engines.asr.values()}
                chat.home = self.house.agent(tuple(sorted(languages - {""})) or ("en",))
            self._core = Core(engines, self.config, self.house.store, self.house.commands)
        return self._core

    def current_core(self) -> Core:
        """The core in force (the services read it at each call)."""
        core = self.core
        if core is None:
            raise ModelUnavailable("the daemon is still loading its models")
        return core

    def _make_listeners(self) -> list[Listener]:
        """One listener per kind of :func:`listener_kinds`, in order (a kind may use those
        made before it)."""
        from protocols.listener import Wiring

        wiring = Wiring(
            config=self.config,
            services=self.services,
            service=self,
            inflight=self.inflight,
            on_failure=self._begin_stop,
            observe=lambda protocol, code: self.metrics.request(protocol, outcome_of_code(code)),
        )
        made: dict[str, Listener] = {}
        for kind in listener_kinds():
            made[kind.name] = kind.make(wiring, made)
        return list(made.values())

    async def run(self) -> int:
        """Serve until SIGTERM/SIGINT; returns the process exit code."""
        from protocols.patches import verify_all

        verify_all()  # a library upgraded past what a patch was written for is logged now
        self.doors.listeners = self._make_listeners()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGHUP, self._on_sighup)
        # These stay until the loop closes: a second signal while listeners drain
        # must not kill the process with the signal's status.
        for sig in STOP_SIGNALS:
            loop.add_signal_handler(sig, self._on_stop_signal, sig)
        interval = watchdog_interval() if self.notifier.enabled else None
        if interval is not None:
            self._spawn(keep_alive(self.notifier, interval), "watchdog")
            _LOGGER.info("systemd watchdog: a keep-alive every %.1f s", interval)
        loader: asyncio.Task[None] | None = None
        try:
            await self.doors.start(early=True)
            self.house.start()
            loader = asyncio.create_task(self._load_or_fail(), name="load")
            await self._stop_requested.wait()
        finally:
            loop.remove_signal_handler(signal.SIGHUP)
            self._begin_stop()
            if loader is not None:
                loader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await loader
            await self.close()
            self.notifier.close()
        if not self.error:
            return 0
        return EXIT_CONFIG if self.config_error else 1

    def _spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """A background task the service keeps (and cancels in close())."""
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _load_or_fail(self) -> None:
        try:
            await self.load()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported, then the daemon exits
            self.state = ServiceState.FAILED
            self.error = str(exc)
            self.config_error = isinstance(exc, ConfigError)  # found as the engines load
            _LOGGER.error("Engines failed to load: %s", exc)
            self.notifier.status(f"Failed: {exc}")
            self._begin_stop()

    # ---------------------------------------------------------------- reload

    def _on_sighup(self) -> None:
        self._spawn(self.reload(), "reload")

    async def reload(self) -> bool:
        """Re-read the config file and apply it without downtime; False if refused.

        An invalid file, or engines that fail to load, leave the daemon running
        on the previous configuration; the reason is logged.
        """
        async with self._reload_lock:
            if self.state is not ServiceState.READY:
                _LOGGER.warning("Reload ignored: the daemon is %s", self.state.value)
                return False
            began = time.perf_counter()
            self.notifier.reloading()
            try:
                applied = await self._reload()
            finally:
                if self.state is ServiceState.READY:
                    self.notifier.ready(self._status_line())
            self.metrics.reloads.labels("applied" if applied else "refused").inc()
            if applied:
                _LOGGER.info("Reloaded in %.2f s", time.perf_counter() - began)
            return applied

    async def _reload(self) -> bool:
        plan = await read_plan(self.config, restart_keys())
        if plan is None or not plan.changed:
            return plan is not None
        engines = None
        if plan.engines and self.engines is not None:
            assert self.report is not None
            self.notifier.status("Reloading: loading changed models beside the running ones")
            try:
                engines = await load_beside(
                    plan.config, self.engines, self.report, lambda e: self.metrics.watch(e.pools)
                )
            except Exception as exc:  # noqa: BLE001 - the old engines serve on
                _LOGGER.error("Reload failed: %s; still running on the previous config", exc)
                return False
        self._apply(plan, engines)
        return True

    def _apply(self, plan: ReloadPlan, engines: Engines | None) -> None:
        """Swap in the new config (and engines); no await: requests see one or the other."""
        old = self.config
        self.config = plan.config
        self.training.reconfigure(plan.config)
        previous = self.engines
        swapped = engines if engines is not None and previous is not None else None
        if swapped is not None:
            self.engines = swapped
        # After the swap: a listener told of new engines points its clients at them.
        if swapped is not None:
            self.current_core()  # the new core, before a listener points its clients at it
        drained = self.doors.reconfigure(plan.config, swapped is not None)
        if swapped is not None and previous is not None:
            self._spawn(
                retire(
                    previous,
                    swapped,
                    lambda: all(check() for check in drained),
                    self.config.limits.request_timeout_s,
                ),
                "retire-engines",
            )
        if old.log.level != plan.config.log.level:
            set_level(plan.config.log.level)
        if old.homeassistant != plan.config.homeassistant:
            self._spawn(self.house.reconfigure(plan.config.homeassistant), "house-reconfigure")
        if old.mdns != plan.config.mdns:
            self._spawn(self._restart_mdns(), "mdns-restart")

    def _start_mdns(self) -> None:
        """Advertise what the listeners announce (when mdns.enabled)."""
        if self._stopping is None:
            self.mdns.start(self.config.mdns, self.doors.announced())

    async def _restart_mdns(self) -> None:
        await self.mdns.stop()
        self._start_mdns()

    # ---------------------------------------------------------------- stop

    def _on_stop_signal(self, sig: int) -> None:
        """SIGTERM/SIGINT: drain gracefully; a second one stops at once."""
        name = signal.Signals(sig).name
        if self._stopping is None:
            _LOGGER.info("Stopping on %s", name)
            self._begin_stop()
        elif self._stopping_now is None:
            _LOGGER.warning("Stopping now on a second %s: requests in flight are cancelled", name)
            self._stopping_now = asyncio.create_task(self.doors.stop(0.0), name="stop-now")

    def _begin_stop(self) -> None:
        """The first stop request: tell systemd, start draining every listener."""
        if self._stopping is not None:
            return
        grace = self.config.limits.shutdown_grace_s
        if self.state is not ServiceState.FAILED:
            self.state = ServiceState.STOPPING
        self.notifier.stopping(f"Stopping: in-flight requests get up to {grace:g} s")
        self._stop_requested.set()
        self._stopping = asyncio.create_task(self._drain(grace), name="stop")

    async def _drain(self, grace_s: float) -> None:
        """Unregister mDNS while every listener stops; requests get ``grace_s``."""
        await asyncio.gather(self.mdns.stop(), self.doors.stop(grace_s), self.trimmer.stop())

    async def close(self) -> None:
        """Stop listeners, finish retiring, release engines; safe to call more than once."""
        self._begin_stop()
        assert self._stopping is not None
        await self._stopping
        if self._stopping_now is not None:
            await self._stopping_now
        for task in list(self._tasks):
            task.cancel()  # a retirement closes what it holds on its way out
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.house.stop()
        engines, self.engines = self.engines, None
        if engines is not None:
            if engines.llm is not None:
                await engines.llm.close()
            await close_remotes(remote_engines(engines))
            engines.close()


@functools.lru_cache(maxsize=1)
def _library_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("faster-whisper", "ctranslate2", "piper-tts", "llama-cpp-python", "onnxruntime"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "missing"
    return out
