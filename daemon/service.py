"""The daemon's lifecycle: bind listeners, load engines, serve, reload, shut down.

Everything with side effects at start-up happens here (never at import): probing
hardware, loading models, warming them up. HTTP listens first so that /healthz
can answer 503 while engines load; once the engines are warm and every listener
is bound, "Ready" is logged and systemd is told ``READY=1``.

SIGHUP reloads the configuration (see :mod:`daemon.reload`). SIGTERM stops the
listeners accepting, unregisters mDNS, gives in-flight requests up to
``limits.shutdown_grace_s`` to finish, then exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import logging
import math
import platform
import signal
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .config import Config, load_config
from .engines import Engines, load_engines
from .errors import ConfigError, ModelUnavailable
from .hardware import HardwareReport, probe
from .inflight import InFlight
from .logs import set_level
from .metrics import Metrics, ServiceSnapshot, outcome_of_code
from .notify import Notifier, keep_alive, watchdog_interval
from .reload import ReloadPlan, plan_reload, retire
from .startup import in_daemon_thread, warm_up
from .training import Training

if TYPE_CHECKING:
    from protocols.webrtc.manager import RtcManager
    from protocols.wyoming.server import WyomingServer

    from .mdns import Advertiser

_LOGGER = logging.getLogger(__name__)


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
        self.training = Training(config)
        self.state = ServiceState.STARTING
        self.error = ""
        self.started = time.monotonic()
        self.wyoming: WyomingServer | None = None
        self.rtc: RtcManager | None = None
        self.mdns: Advertiser | None = None
        self._mdns_start: asyncio.Task[None] | None = None
        self.notifier = notifier or Notifier()
        self.inflight = InFlight()
        """HTTP requests in flight (the middleware registers them)."""
        self.metrics = Metrics(self._metrics_snapshot)
        self._servers: list[Any] = []
        self._stopping: asyncio.Task[None] | None = None
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
        return self.state is ServiceState.READY, details

    def _metrics_snapshot(self) -> ServiceSnapshot:
        sessions = {"willow": 0, "openai": 0} | self.inflight.active()
        sessions["wyoming"] = self.wyoming.connections if self.wyoming is not None else 0
        sessions["webrtc"] = len(self.rtc.sessions) if self.rtc is not None else 0
        states = tuple(s.value for s in ServiceState)
        return ServiceSnapshot(self.state.value, states, self.engines, sessions)

    def _status_line(self) -> str:
        models = len(self.engines.status) if self.engines is not None else 0
        wyoming = self.wyoming.uri if self.wyoming is not None else "off"
        return f"Ready: {models} models; HTTP port {self.config.http.port}; Wyoming {wyoming}"

    # ---------------------------------------------------------------- life

    async def load(self) -> None:
        """Probe hardware and load engines in a worker thread, then warm up."""
        self.state = ServiceState.LOADING
        began = time.perf_counter()
        self.notifier.status("Loading models")
        if self.report is None:
            self.report = await in_daemon_thread(probe)
        self.engines = await in_daemon_thread(load_engines, self.config, self.report)
        self.metrics.watch(self.engines)
        self.notifier.status("Warming up models")
        await warm_up(self.engines)
        await self._start_listeners()
        await self._http_bound()
        self.state = ServiceState.READY
        _LOGGER.info("Ready in %.1f s", time.perf_counter() - began)
        # Voice training interrupted by a stop or a reboot goes on from its last checkpoint.
        await asyncio.to_thread(self.training.resume_interrupted)
        self.notifier.ready(self._status_line())

    def current_engines(self) -> Engines:
        """The engines in use now (protocol adapters call this per request)."""
        if self.engines is None:
            raise ModelUnavailable("the daemon is still loading its models")
        return self.engines

    async def _start_listeners(self) -> None:
        """Bind the Wyoming listener, then advertise both services over mDNS."""
        from protocols.wyoming.server import WyomingServer

        config = self.config
        self.notifier.status("Binding listeners")
        self.wyoming = WyomingServer(
            config.wyoming.uri,
            self.current_engines,
            max_connections=config.wyoming.max_connections,
            max_event_bytes=config.wyoming.max_event_bytes,
            body_timeout_s=config.limits.request_timeout_s,
            observer=lambda code: self.metrics.request("wyoming", outcome_of_code(code)),
        )
        await self.wyoming.start()
        self._start_mdns()

    def _start_mdns(self) -> None:
        """Advertise the Wyoming and HTTP services (when mdns.enabled)."""
        config = self.config
        if not config.mdns.enabled:
            return
        from .mdns import HTTP_TYPE, WYOMING_TYPE, Advertised, Advertiser

        services = [Advertised(HTTP_TYPE, config.http.port, {"path": "/"})]
        if self.wyoming is not None and self.wyoming.port:
            services.insert(0, Advertised(WYOMING_TYPE, self.wyoming.port, {}))
        self.mdns = Advertiser(config.mdns, services)
        # Probing for name conflicts takes seconds: do not hold up readiness.
        self._mdns_start = asyncio.create_task(self.mdns.start(), name="mdns-start")

    async def _stop_mdns(self) -> None:
        """Unregister from mDNS; safe to call more than once."""
        mdns, self.mdns = self.mdns, None
        if self._mdns_start is not None:
            self._mdns_start.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._mdns_start
            self._mdns_start = None
        if mdns is not None:
            await mdns.close()

    async def _http_bound(self) -> None:
        """Wait until every HTTP(S) listener is bound (READY=1 promises it)."""
        while not all(s.started or s.should_exit for s in self._servers):
            await asyncio.sleep(0.05)

    async def run(self) -> int:
        """Serve until SIGTERM/SIGINT; returns the process exit code."""
        from protocols.http.app import create_app
        from protocols.webrtc.manager import RtcManager

        from .httpserver import DaemonServer

        app = create_app(self)
        # WebRTC sessions belong to the service: counted in /metrics, closed on stop.
        self.rtc = RtcManager(self.config.webrtc, self.current_engines)
        app.state.rtc = self.rtc
        http = self.config.http
        server = DaemonServer(self._uvicorn_config(app, http.port), on_stop=self._begin_stop)
        self._servers = [server]
        if self.config.https.enabled:
            from .tls import certificate_files, fingerprint

            cert, key = await asyncio.to_thread(certificate_files, self.config)
            tls = DaemonServer(
                self._uvicorn_config(app, self.config.https.port, cert, key), own_signals=False
            )
            server.followers.append(tls)
            self._servers.append(tls)
            _LOGGER.info(
                "HTTPS on https://%s:%d (certificate %s, SHA-256 %s)",
                http.host,
                self.config.https.port,
                cert,
                fingerprint(cert),
            )
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGHUP, self._on_sighup)
        interval = watchdog_interval() if self.notifier.enabled else None
        if interval is not None:
            self._spawn(keep_alive(self.notifier, interval), "watchdog")
            _LOGGER.info("systemd watchdog: a keep-alive every %.1f s", interval)
        loader = asyncio.create_task(self._load_or_fail(server))
        _LOGGER.info("Hearth %s listening on http://%s:%d", __version__, http.host, http.port)
        try:
            await asyncio.gather(*(s.serve() for s in self._servers))
        finally:
            loop.remove_signal_handler(signal.SIGHUP)
            self._begin_stop()
            server.stop()
            loader.cancel()
            try:
                await loader
            except asyncio.CancelledError:
                pass
            await self.close()
            self.notifier.close()
        return 1 if self.error else 0

    def _spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """A background task the service keeps (and cancels in close())."""
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _uvicorn_config(
        self, app: Any, port: int, cert: Path | None = None, key: Path | None = None
    ) -> Any:
        import uvicorn

        return uvicorn.Config(
            app,
            host=self.config.http.host,
            port=port,
            log_config=None,
            access_log=False,
            lifespan="off",
            ws="websockets-sansio",
            ssl_certfile=str(cert) if cert else None,
            ssl_keyfile=str(key) if key else None,
            timeout_graceful_shutdown=math.ceil(self.config.limits.shutdown_grace_s),
        )

    async def _load_or_fail(self, server: Any) -> None:
        try:
            await self.load()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported, then the daemon exits
            self.state = ServiceState.FAILED
            self.error = str(exc)
            _LOGGER.error("Engines failed to load: %s", exc)
            self.notifier.status(f"Failed: {exc}")
            server.stop()

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
        source = self.config.source
        try:
            if source.startswith("<"):
                raise ConfigError("started without a config file: there is nothing to re-read")
            new = await asyncio.to_thread(load_config, source)
        except ConfigError as exc:
            _LOGGER.error("Reload refused: %s; still running on the previous config", exc)
            return False
        plan = plan_reload(self.config, new)
        if not plan.changed:
            _LOGGER.info("Reload: %s is unchanged", source)
            return True
        _LOGGER.info("Reload: changed %s", ", ".join(plan.changed))
        for key in plan.restart:
            _LOGGER.warning("Reload: %s takes effect only after a restart", key)
        engines = None
        if plan.engines and self.engines is not None:
            self.notifier.status("Reloading: loading changed models beside the running ones")
            try:
                engines = await self._load_beside(plan.config, self.engines)
            except Exception as exc:  # noqa: BLE001 - the old engines serve on
                _LOGGER.error("Reload failed: %s; still running on the previous config", exc)
                return False
        self._apply(plan, engines)
        return True

    async def _load_beside(self, config: Config, previous: Engines) -> Engines:
        """New engines that take over every unchanged model from ``previous``, warm."""
        assert self.report is not None
        report = self.report

        def load_changed() -> Engines:
            return load_engines(config, report, previous=previous)

        engines = await in_daemon_thread(load_changed)
        try:
            self.metrics.watch(engines)
            await warm_up(engines, previous)
        except BaseException:
            await retire(engines, previous, lambda: True, 0)  # close only what is new
            raise
        return engines

    def _apply(self, plan: ReloadPlan, engines: Engines | None) -> None:
        """Swap in the new config (and engines); no await: requests see one or the other."""
        old = self.config
        self.config = plan.config
        self.training.reconfigure(plan.config)
        if engines is not None and self.engines is not None:
            previous, self.engines = self.engines, engines
            self.inflight.generation += 1
            generation = self.inflight.generation
            busy = self.wyoming.busy_connections() if self.wyoming is not None else []

            def drained() -> bool:
                return not self.inflight.started_before(generation) and not any(
                    c.busy for c in busy
                )

            self._spawn(
                retire(previous, engines, drained, self.config.limits.request_timeout_s),
                "retire-engines",
            )
        if old.log.level != plan.config.log.level:
            set_level(plan.config.log.level)
        if self.wyoming is not None:
            self.wyoming.max_connections = plan.config.wyoming.max_connections
            self.wyoming.max_event_bytes = plan.config.wyoming.max_event_bytes
            self.wyoming.body_timeout_s = plan.config.limits.request_timeout_s
        if old.mdns != plan.config.mdns:
            self._spawn(self._restart_mdns(), "mdns-restart")

    async def _restart_mdns(self) -> None:
        await self._stop_mdns()
        self._start_mdns()

    # ---------------------------------------------------------------- stop

    def _begin_stop(self) -> None:
        """The first stop request: tell systemd, start draining every listener."""
        if self._stopping is not None:
            return
        grace = self.config.limits.shutdown_grace_s
        if self.state is not ServiceState.FAILED:
            self.state = ServiceState.STOPPING
        self.notifier.stopping(f"Stopping: in-flight requests get up to {grace:g} s")
        self._stopping = asyncio.create_task(self._stop_listeners(grace), name="stop")

    async def _stop_listeners(self, grace_s: float) -> None:
        """Unregister mDNS and stop Wyoming accepting; its open requests get ``grace_s``.

        HTTP drains at the same time in uvicorn (``timeout_graceful_shutdown``).
        """
        wyoming, self.wyoming = self.wyoming, None
        rtc, self.rtc = self.rtc, None
        steps = [self._stop_mdns()]
        if rtc is not None:
            steps.append(rtc.close())
        if wyoming is not None:
            steps.append(wyoming.stop(grace_s))
        await asyncio.gather(*steps)

    async def close(self) -> None:
        """Stop listeners, finish retiring, release engines; safe to call more than once."""
        self._begin_stop()
        assert self._stopping is not None
        await self._stopping
        for task in list(self._tasks):
            task.cancel()  # a retirement closes what it holds on its way out
        await asyncio.gather(*self._tasks, return_exceptions=True)
        engines, self.engines = self.engines, None
        if engines is not None:
            if engines.llm is not None:
                await engines.llm.close()
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
