"""What a reload (SIGHUP) changes, and how the engines it replaces are retired.

A reload compares the running configuration with the file's new content, key by
key. Three kinds of change:

* **live**: read per request or applied to a running object (API key, Willow
  settings, log level, Wyoming limits, mDNS name, request timeouts): in effect
  at once;
* **engines**: models, the voice folder, VAD, queues, session limits: a new
  :class:`~daemon.runtime.engines.Engines` is built beside the running one, taking over
  every model whose settings did not change, and swapped in when warm;
* **restart**: listener addresses and ports, TLS, WebRTC, /metrics on or off (each
  listener's kind says which: ``protocols.listener.ListenerKind``): kept as they are,
  with a warning, until the next restart.

Retiring the old engines: requests hold the objects they started with (a
speech session holds its model and pools), so a model that is not carried over
is freed by Python's reference counting when its last request ends. What needs
an explicit close (a worker pool the new engines do not use, a replaced LLM
client, replaced remote ASR models and remote voices with their HTTP clients and
health checks) is closed once every request in flight at the swap has ended, or after
``limits.request_timeout_s`` at the latest.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from daemon.config import Config, load_config
from daemon.engines.hardware import HardwareReport
from daemon.errors import ConfigError
from daemon.runtime.engines import Engines
from daemon.runtime.loading import load_engines
from daemon.runtime.remote import close_remotes
from daemon.runtime.startup import in_daemon_thread, warm_up

_LOGGER = logging.getLogger(__name__)

ENGINE_SECTIONS = ("state_dir", "models_dir", "asr", "vad", "tts", "llm", "voices.dir", "limits")
"""Sections (and keys) the engines are built from."""
ENGINE_FREE = (
    "limits.request_timeout_s",
    "limits.shutdown_grace_s",
    "limits.max_upload_mb",
    "limits.max_file_audio_s",
)
"""Keys in those sections that the engines never read (routes read them per request)."""


@dataclass(frozen=True)
class ReloadPlan:
    """The outcome of comparing two configurations."""

    config: Config
    """What to run on: the new configuration, restart-only keys kept as they were."""
    live: list[str]
    engines: list[str]
    restart: list[str]

    @property
    def changed(self) -> list[str]:
        """Every changed key."""
        return sorted(self.live + self.engines + self.restart)


def changed_keys(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted paths of the settings that differ (``asr.models.tiny.en.beam_size``)."""
    if dataclasses.is_dataclass(old) and dataclasses.is_dataclass(new):
        out: list[str] = []
        for f in dataclasses.fields(old):
            if f.metadata.get("internal"):
                continue
            path = f"{prefix}.{f.name}" if prefix else f.name
            out += changed_keys(getattr(old, f.name), getattr(new, f.name), path)
        return out
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(old.keys() | new.keys()):
            if key in old and key in new:
                out += changed_keys(old[key], new[key], f"{prefix}.{key}")
            else:
                out.append(f"{prefix}.{key}")
        return out
    return [] if old == new else [prefix]


def _under(key: str, roots: tuple[str, ...]) -> bool:
    return any(key == root or key.startswith(root + ".") for root in roots)


def _with(config: Any, path: list[str], value: Any) -> Any:
    """``config`` with the setting at ``path`` replaced by ``value``."""
    if not path:
        return value
    head = getattr(config, path[0])
    return dataclasses.replace(config, **{path[0]: _with(head, path[1:], value)})


def plan_reload(old: Config, new: Config, restart_keys: tuple[str, ...]) -> ReloadPlan:
    """Sort each changed key into live, engines or restart (see the module docstring).

    ``restart_keys``: the keys (and sections) that take effect only when the daemon
    restarts, the listeners' own (``daemon.service.restart_keys``)."""
    live: list[str] = []
    engines: list[str] = []
    restart: list[str] = []
    effective = new
    for key in changed_keys(old, new):
        if _under(key, restart_keys):
            restart.append(key)
        elif _under(key, ENGINE_SECTIONS) and not _under(key, ENGINE_FREE):
            engines.append(key)
        else:
            live.append(key)
    for root in restart_keys:
        if any(_under(key, (root,)) for key in restart):
            path = root.split(".")
            current: Any = old
            for part in path:
                current = getattr(current, part)
            effective = _with(effective, path, current)
    return ReloadPlan(effective, sorted(live), sorted(engines), sorted(restart))


async def retire(
    old: Engines,
    new: Engines,
    drained: Callable[[], bool],
    timeout_s: float,
    poll_s: float = 0.1,
) -> bool:
    """Close what only ``old`` uses once ``drained()`` or after ``timeout_s``.

    Returns whether every old request ended in time. Also closes when cancelled
    (the daemon is stopping): nothing old is left open.
    """
    deadline = time.monotonic() + timeout_s
    in_time = True
    try:
        while not drained():
            if time.monotonic() >= deadline:
                in_time = False
                _LOGGER.warning(
                    "Requests on the previous engines still running after %.0f s; closing",
                    timeout_s,
                )
                break
            await asyncio.sleep(poll_s)
    finally:
        kept = {id(pool) for pool in new.pools}
        for pool in old.pools:
            if id(pool) not in kept:
                pool.close()
        if old.llm is not None and old.llm is not new.llm:
            await old.llm.close()
        await close_remotes(remote_engines(old), keep=remote_engines(new))
    _LOGGER.info("Previous engines retired")
    return in_time


def remote_engines(engines: Engines) -> list[object]:
    """The engines of ``engines`` that hold HTTP clients and health checks, the LLM
    aside (closed on its own): remote ASR models, the TTS engine with remote voices."""
    tts = getattr(engines, "tts", None)
    return [*getattr(engines, "asr", {}).values(), tts.engine if tts is not None else None]


async def read_plan(current: Config, restart_keys: tuple[str, ...]) -> ReloadPlan | None:
    """Re-read ``current``'s file and plan the reload (:func:`plan_reload`); None when it
    is refused (the reason is logged, and the daemon runs on)."""
    source = current.source
    try:
        if source.startswith("<"):
            raise ConfigError("started without a config file: there is nothing to re-read")
        new = await asyncio.to_thread(
            functools.partial(
                load_config, source, addon=current.addon, addon_source=current.addon_source
            )
        )
    except ConfigError as exc:
        _LOGGER.error("Reload refused: %s; still running on the previous config", exc)
        return None
    plan = plan_reload(current, new, restart_keys)
    if not plan.changed:
        _LOGGER.info("Reload: %s is unchanged", source)
        return plan
    _LOGGER.info("Reload: changed %s", ", ".join(plan.changed))
    for key in plan.restart:
        _LOGGER.warning("Reload: %s takes effect only after a restart", key)
    return plan


async def load_beside(
    config: Config,
    previous: Engines,
    report: HardwareReport,
    watch: Callable[[Engines], None],
) -> Engines:
    """New engines that take over every unchanged model from ``previous``, warm;
    ``watch`` sees them before the warm-up (their pools' metrics)."""

    def load_changed() -> Engines:
        return load_engines(config, report, previous=previous)

    engines = await in_daemon_thread(load_changed)
    try:
        watch(engines)
        await warm_up(engines, previous)
    except BaseException:
        await retire(engines, previous, lambda: True, 0)  # close only what is new
        raise
    return engines
