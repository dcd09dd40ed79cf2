"""The daemon's lifecycle: bind listeners, load engines, serve, shut down.

Everything with side effects at start-up happens here (never at import): probing
hardware, loading models, warming them up. HTTP listens first so that /healthz
can answer 503 while engines load, then "Ready" is logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import logging
import platform
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from . import __version__
from .asr.base import TranscribeOptions
from .config import Config
from .engines import Engines, load_engines
from .errors import HearthError, ModelUnavailable
from .hardware import HardwareReport, probe
from .tts.base import SynthesisOptions

if TYPE_CHECKING:
    from protocols.wyoming.server import WyomingServer

    from .mdns import Advertiser

_LOGGER = logging.getLogger(__name__)
T = TypeVar("T")


class ServiceState(enum.Enum):
    """Where the daemon is in its life."""

    STARTING = "starting"
    LOADING = "loading"
    READY = "ready"
    FAILED = "failed"
    STOPPING = "stopping"


class HearthService:
    """Owns the config, the hardware report, the engines and the listeners."""

    def __init__(self, config: Config, report: HardwareReport | None = None) -> None:
        self.config = config
        self.report = report
        self.engines: Engines | None = None
        self.state = ServiceState.STARTING
        self.error = ""
        self.started = time.monotonic()
        self.wyoming: WyomingServer | None = None
        self.mdns: Advertiser | None = None
        self._mdns_start: asyncio.Task[None] | None = None

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

    # ---------------------------------------------------------------- life

    async def load(self) -> None:
        """Probe hardware and load engines in a worker thread, then warm up."""
        self.state = ServiceState.LOADING
        began = time.perf_counter()
        if self.report is None:
            self.report = await _in_daemon_thread(probe)
        self.engines = await _in_daemon_thread(load_engines, self.config, self.report)
        await self._warm_up(self.engines)
        await self._start_listeners()
        self.state = ServiceState.READY
        _LOGGER.info("Ready in %.1f s", time.perf_counter() - began)

    def current_engines(self) -> Engines:
        """The engines in use now (protocol adapters call this per request)."""
        if self.engines is None:
            raise ModelUnavailable("the daemon is still loading its models")
        return self.engines

    async def _start_listeners(self) -> None:
        """Bind the Wyoming listener, then advertise both services over mDNS."""
        from protocols.wyoming.server import WyomingServer

        config = self.config
        self.wyoming = WyomingServer(
            config.wyoming.uri,
            self.current_engines,
            max_connections=config.wyoming.max_connections,
            max_event_bytes=config.wyoming.max_event_bytes,
            body_timeout_s=config.limits.request_timeout_s,
        )
        await self.wyoming.start()
        if config.mdns.enabled:
            from .mdns import HTTP_TYPE, WYOMING_TYPE, Advertised, Advertiser

            services = [Advertised(HTTP_TYPE, config.http.port, {"path": "/"})]
            if self.wyoming.port:
                services.insert(0, Advertised(WYOMING_TYPE, self.wyoming.port, {}))
            self.mdns = Advertiser(config.mdns, services)
            # Probing for name conflicts takes seconds: do not hold up readiness.
            self._mdns_start = asyncio.create_task(self.mdns.start(), name="mdns-start")

    async def _warm_up(self, engines: Engines) -> None:
        """One tiny call per engine so the first real request is not the slow one."""
        silence = np.zeros(16000, dtype=np.float32)
        for model in engines.asr.values():
            await engines.asr_pool.run(model.transcribe, silence, TranscribeOptions())
        if engines.tts is not None:
            async for _ in engines.tts.stream("Ready.", SynthesisOptions()):
                pass
        if engines.chat is not None:
            try:
                await engines.chat.warm_up()
            except HearthError as exc:  # a remote LLM may come up later
                _LOGGER.warning("LLM warm-up failed: %s", exc)

    async def run(self) -> int:
        """Serve until SIGTERM/SIGINT; returns the process exit code."""
        from protocols.http.app import create_app

        from .httpserver import DaemonServer

        app = create_app(self)
        http = self.config.http
        server = DaemonServer(self._uvicorn_config(app, http.port))
        servers = [server]
        if self.config.https.enabled:
            from .tls import certificate_files, fingerprint

            cert, key = await asyncio.to_thread(certificate_files, self.config)
            tls = DaemonServer(
                self._uvicorn_config(app, self.config.https.port, cert, key), own_signals=False
            )
            server.followers.append(tls)
            servers.append(tls)
            _LOGGER.info(
                "HTTPS on https://%s:%d (certificate %s, SHA-256 %s)",
                http.host,
                self.config.https.port,
                cert,
                fingerprint(cert),
            )
        loader = asyncio.create_task(self._load_or_fail(server))
        _LOGGER.info("Hearth %s listening on http://%s:%d", __version__, http.host, http.port)
        try:
            await asyncio.gather(*(s.serve() for s in servers))
        finally:
            self.state = ServiceState.STOPPING
            server.stop()
            loader.cancel()
            try:
                await loader
            except asyncio.CancelledError:
                pass
            await self.close()
        return 1 if self.error else 0

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
            server.stop()

    async def close(self) -> None:
        """Unadvertise, close listeners, release engines; safe to call more than once."""
        mdns, self.mdns = self.mdns, None
        if self._mdns_start is not None:
            self._mdns_start.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._mdns_start
        if mdns is not None:
            await mdns.close()
        wyoming, self.wyoming = self.wyoming, None
        if wyoming is not None:
            await wyoming.stop()
        engines, self.engines = self.engines, None
        if engines is not None:
            if engines.llm is not None:
                await engines.llm.close()
            engines.close()


async def _in_daemon_thread(func: Callable[..., T], *args: Any) -> T:
    """Run a long start-up call in a daemon thread.

    Unlike the default executor, a daemon thread does not hold up the process
    exit, so SIGTERM during model loading (or a slow download) stops at once.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def target() -> None:
        try:
            result, error = func(*args), None
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
            result, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop is gone: the daemon is exiting
            pass

    threading.Thread(target=target, name=f"hearth-{func.__name__}", daemon=True).start()
    return await future


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
