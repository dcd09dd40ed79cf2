"""The household's names as the composition root sees them: one object to start,
reconfigure (SIGHUP), stop and ask for its status, and the store to hand the core's services."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from daemon.config import HomeAssistantConfig
from daemon.house.agent import HouseAgent
from daemon.house.commands import CommandBook
from daemon.house.endpoint import Endpoint, describe, endpoint_of
from daemon.house.names import SourceState
from daemon.house.source import FAILURES, HomeAssistantSource, failure_reason
from daemon.house.store import NameStore

_LOGGER = logging.getLogger(__name__)


class House:
    """The name store, and the source that keeps it current while one is configured."""

    def __init__(
        self, config: HomeAssistantConfig, environ: Mapping[str, str] | None = None
    ) -> None:
        self.store = NameStore()
        self.commands = CommandBook(self.store, config.commands)
        """The household's commands per language (built in the background)."""
        self._environ = environ
        self.config = config
        self.endpoint: Endpoint | None = endpoint_of(config, environ)
        """None: Home Assistant is not configured, and nothing connects."""
        self.source: HomeAssistantSource | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start following Home Assistant, when one is configured (in the background:
        start-up never waits for it)."""
        if self.endpoint is None or self._task is not None:
            return
        _LOGGER.info("Reading the household's names from %s", describe(self.endpoint))
        self.source = HomeAssistantSource(self.endpoint, self.config, self.store)
        self._task = asyncio.create_task(self.source.run(), name="homeassistant-names")

    async def reconfigure(self, config: HomeAssistantConfig) -> None:
        """Apply a reloaded ``homeassistant`` section: a changed one reconnects; turned
        off, the names are forgotten."""
        if config == self.config:
            return
        await self._stop_source()
        self.config = config
        self.commands.enabled = config.commands
        self.endpoint = endpoint_of(config, self._environ)
        if self.endpoint is None:
            self.store.forget()
            self.store.state = SourceState.OFF
        self.start()

    async def stop(self) -> None:
        """Stop following Home Assistant (safe to call more than once)."""
        await self._stop_source()

    async def _stop_source(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.source = None

    def agent(self, languages: tuple[str, ...]) -> HouseAgent | None:
        """Who carries out the household's commands said to Hearth's own doors (Home
        Assistant's conversation agent), or None: Home Assistant is not configured, or
        ``homeassistant.commands`` is off."""
        if self.endpoint is None or not self.config.commands:
            return None
        return HouseAgent(self.endpoint, self.config, self.commands, languages)

    def status(self) -> dict[str, Any]:
        """Counts and the time of the last reading, for ``/healthz`` (never a name)."""
        return self.store.status()


async def probe(
    config: HomeAssistantConfig, environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """One reading for ``hearth check``: where, how many names and when (never a name),
    or ``error``: why it failed. ``{"state": "off"}`` when nothing is configured."""
    endpoint = endpoint_of(config, environ)
    if endpoint is None:
        return {"state": SourceState.OFF.value}
    store = NameStore()
    try:
        await HomeAssistantSource(endpoint, config, store).read_once()
    except FAILURES as exc:
        return {"url": describe(endpoint), "error": failure_reason(exc)}
    return {"url": describe(endpoint)} | store.status() | {"state": "read"}
