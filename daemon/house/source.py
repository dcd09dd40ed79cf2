"""Keeping the household's names current from one Home Assistant.

On each connection the source first subscribes to the four registries' update events
(entities, devices, areas, floors), then reads everything once, so that no change falls
between the reading and the subscription. A change (an entity renamed, an alias added,
an entity exposed or hidden: Home Assistant keeps a registry entity's exposure in its
options, so that is an entity registry update too) waits ``refresh_delay_ms`` for more
to come, then everything is read again. No polling: between changes nothing is sent but
the websocket's pings.

When Home Assistant restarts or cannot be reached, the names known stay in use, and
the source tries again after ``retry_min_s``, doubling the wait after each failure up
to ``retry_max_s`` (a refused token waits ``retry_max_s`` at once: Home Assistant can
ban an address after failed logins). The waits are :meth:`HomeAssistantSource.on_reconnect`
and :meth:`HomeAssistantSource.on_settle`, which tests override to skip the sleeps.

Entities without a unique id (configured in YAML) keep their exposure outside the
registry and fire no event when it changes: they are read again at the next reconnect.
"""

from __future__ import annotations

import asyncio
import logging
import time
import traceback

from websockets.exceptions import WebSocketException

from daemon.config import HomeAssistantConfig
from daemon.house.client import AuthFailed, HaConnection, HaError
from daemon.house.endpoint import Endpoint
from daemon.house.names import SourceState
from daemon.house.registry import MAX_ENTITIES, Answers, exposed_ids, household_names
from daemon.house.store import NameStore

_LOGGER = logging.getLogger(__name__)

REGISTRY_EVENTS = (
    "entity_registry_updated",
    "device_registry_updated",
    "area_registry_updated",
    "floor_registry_updated",
)
"""Events that may change a name (each in the allowlist a non-administrator may
subscribe to)."""
FAILURES = (HaError, OSError, TimeoutError, WebSocketException, ValueError)
"""What a connection may end with; each is retried."""


class HomeAssistantSource:
    """Reads one Home Assistant's names into a store, and keeps them current."""

    def __init__(self, endpoint: Endpoint, config: HomeAssistantConfig, store: NameStore) -> None:
        self.endpoint = endpoint
        self.config = config
        self.store = store
        self.readings = 0
        """Readings completed (tests wait on it)."""

    # ---------------------------------------------------------------- hooks

    async def on_reconnect(self, delay_s: float) -> None:
        """Wait before connecting again (tests override it to skip the sleep)."""
        await asyncio.sleep(delay_s)

    async def on_settle(self, delay_s: float) -> None:
        """Wait for more registry changes before reading again (tests override it)."""
        await asyncio.sleep(delay_s)

    def retry_delay(self, failures: int, refused: bool = False) -> float:
        """The wait after ``failures`` failures in a row (s)."""
        config = self.config
        if refused:
            return config.retry_max_s
        return min(config.retry_max_s, config.retry_min_s * 2 ** min(failures - 1, 32))

    # ---------------------------------------------------------------- life

    async def run(self) -> None:
        """Read and follow Home Assistant until cancelled; never raises otherwise."""
        failures = 0
        while True:
            self.store.state = SourceState.CONNECTING
            refused = False
            try:
                await self._follow()
            except asyncio.CancelledError:
                raise
            except FAILURES as exc:
                refused = isinstance(exc, AuthFailed)
                self._report(exc, failures)
            except Exception as exc:  # noqa: BLE001 - a bug here must not end the daemon
                # Where, not what: the message may hold a name.
                frame = traceback.extract_tb(exc.__traceback__)[-1]
                where = f"{frame.filename}:{frame.lineno}"
                _LOGGER.error("Home Assistant names: %s at %s", type(exc).__name__, where)
            if self.store.state is SourceState.CONNECTED:
                failures = 0  # the connection served: its end starts a new streak
            failures += 1
            self.store.state = SourceState.RETRYING
            await self.on_reconnect(self.retry_delay(failures, refused))

    def _report(self, exc: BaseException, failures: int) -> None:
        """Log why the connection ended: the first of a streak as a warning, then quietly."""
        why = failure_reason(exc)
        connected = self.store.state is SourceState.CONNECTED
        level = logging.WARNING if failures == 0 or connected else logging.DEBUG
        url = self.endpoint.url
        _LOGGER.log(level, "Home Assistant at %s: %s; the names known stay in use", url, why)

    async def _connect(self) -> HaConnection:
        config = self.config
        return await HaConnection.open(
            self.endpoint,
            connect_timeout_s=config.connect_timeout_s,
            request_timeout_s=config.request_timeout_s,
            max_bytes=config.max_message_mb * 1024 * 1024,
        )

    async def read_once(self) -> None:
        """Connect, read every name once, and disconnect (``hearth check``)."""
        conn = await self._connect()
        try:
            await self._read(conn)
        finally:
            await conn.close()

    async def _follow(self) -> None:
        """One connection: subscribe, read, then read again after each change."""
        config = self.config
        conn = await self._connect()
        try:
            for event_type in REGISTRY_EVENTS:
                await conn.subscribe(event_type)
            await self._read(conn)
            self.store.state = SourceState.CONNECTED
            while True:
                await conn.wait_change()
                await self.on_settle(config.refresh_delay_ms / 1000)
                conn.clear_change()  # what came while settling is in the next reading
                await self._read(conn)
        finally:
            await conn.close()

    async def _read(self, conn: HaConnection) -> None:
        """Read every name once and publish them (the same names: only the time moves)."""
        exposed = exposed_ids(await conn.call("homeassistant/expose_entity/list"), MAX_ENTITIES)
        states = await conn.call("get_states")
        entries = (
            await conn.call("config/entity_registry/get_entries", entity_ids=exposed)
            if exposed
            else {}
        )
        devices = await conn.call("config/device_registry/list")
        areas = await conn.call("config/area_registry/list")
        try:
            floors = await conn.call("config/floor_registry/list")
        except HaError as exc:
            if exc.code != "unknown_command":
                raise
            floors = None  # a release before floors (2024.4)
        answers = Answers(exposed, states, entries, devices, areas, floors)
        names = await asyncio.to_thread(household_names, answers, exposed, self.config.max_names)
        now = time.time()
        if tuple(names) == self.store.current.names:
            self.store.touch(now)
        else:
            await self.store.publish(names, now)
        self.readings += 1
        counts = self.store.current.counts()
        _LOGGER.info(
            "Home Assistant: %d names (%d entities, %d aliases, %d areas, %d floors)",
            counts["names"], counts["entity"], counts["alias"], counts["area"], counts["floor"],
        )  # fmt: skip


def failure_reason(exc: BaseException) -> str:
    """Why a connection failed, in words. Codes and types only: Home Assistant's messages
    may quote entity ids, which are the household's."""
    if isinstance(exc, AuthFailed):
        return "refused the token (homeassistant.token, or the add-on's homeassistant_api)"
    if isinstance(exc, HaError) and exc.code == "unauthorized":
        return "refused a command: the token must be an administrator's"
    if isinstance(exc, HaError) and exc.code == "not-home-assistant":
        return "did not answer as Home Assistant's websocket API does (is the URL right?)"
    code = exc.code if isinstance(exc, HaError) else type(exc).__name__
    return f"connection failed or ended ({code})"
