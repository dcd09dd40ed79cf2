"""A fake Home Assistant websocket API on loopback, for tests and benchmarks.

It speaks what Hearth reads, as Home Assistant 2026.2 answers it (its
``websocket_api``, ``exposed_entities.py`` and ``config/*_registry.py``): the handshake
(``auth_required``, ``auth``, ``auth_ok`` / ``auth_invalid``), ids that must increase,
``homeassistant/expose_entity/list`` (administrators only), ``get_states``,
``config/entity_registry/get_entries``, ``config/device_registry/list``,
``config/area_registry/list``, ``config/floor_registry/list`` and ``subscribe_events``.
A test renames an entity (the registry event follows, as Home Assistant sends it),
restarts the server (every connection drops; new ones are refused meanwhile), and reads
which commands came, to see that nothing polls.

Run it in the test's event loop (``await fake.start()``), or in a thread of its own for
a daemon in another process (``with fake.in_thread(): ...``).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

TOKEN = "fake-long-lived-token"
VERSION = "2026.2.3"


@dataclass
class Entity:
    entity_id: str
    name: str
    """The friendly name (a user's registry name)."""
    aliases: list[str] = field(default_factory=list)
    area_id: str | None = None
    device_id: str | None = None
    exposed: bool = True
    disabled: bool = False


@dataclass
class Area:
    area_id: str
    name: str
    aliases: list[str] = field(default_factory=list)
    floor_id: str | None = None


@dataclass
class Floor:
    floor_id: str
    name: str
    aliases: list[str] = field(default_factory=list)


class FakeHomeAssistant:
    """One fake Home Assistant: registries in memory, served over a websocket."""

    def __init__(self, token: str = TOKEN, admin: bool = True, floors: bool = True) -> None:
        self.token = token
        self.admin = admin
        """False: the token is a non-administrator's (expose_entity/list is refused)."""
        self.floors_supported = floors
        """False: a release before floors (``config/floor_registry/list`` is unknown)."""
        self.entities: dict[str, Entity] = {}
        self.devices: dict[str, dict[str, Any]] = {}
        self.areas: dict[str, Area] = {}
        self.floors: dict[str, Floor] = {}
        self.commands: list[str] = []
        """Every command's type, in order (``auth`` included)."""
        self.conversations: list[tuple[str, str | None]] = []
        """Every ``conversation/process``: its text and language."""
        self.connections = 0
        """Connections accepted so far."""
        self.port = 0
        self._server: Server | None = None
        self._live: set[ServerConnection] = set()
        self._subscriptions: dict[ServerConnection, dict[int, str]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def url(self) -> str:
        """The base URL Hearth is configured with (``homeassistant.url``)."""
        return f"http://127.0.0.1:{self.port}"

    # ---------------------------------------------------------------- setup

    def add_entity(self, entity: Entity) -> None:
        self.entities[entity.entity_id] = entity

    def add_area(self, area: Area) -> None:
        self.areas[area.area_id] = area

    def add_floor(self, floor: Floor) -> None:
        self.floors[floor.floor_id] = floor

    # ---------------------------------------------------------------- life

    async def start(self, port: int = 0) -> None:
        """Serve on 127.0.0.1 (``port`` 0: a free one, kept across restarts)."""
        self._loop = asyncio.get_running_loop()
        self._server = await serve(self._handle, "127.0.0.1", port, max_size=None)
        self.port = next(iter(self._server.sockets)).getsockname()[1]

    async def stop(self) -> None:
        """Stop serving and drop every connection (Home Assistant going down)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
            await server.wait_closed()

    async def restart(self, down_s: float = 0.0) -> None:
        """Drop every connection, refuse new ones for ``down_s``, then serve again."""
        await self.stop()
        await asyncio.sleep(down_s)
        await self.start(self.port)

    @contextlib.contextmanager
    def in_thread(self) -> Iterator[FakeHomeAssistant]:
        """Serve from a thread of its own (for a daemon in another process)."""
        ready = threading.Event()
        loop = asyncio.new_event_loop()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(self.start())
            ready.set()
            loop.run_forever()

        thread = threading.Thread(target=run, name="fake-home-assistant", daemon=True)
        thread.start()
        assert ready.wait(10), "the fake Home Assistant did not start"
        try:
            yield self
        finally:
            asyncio.run_coroutine_threadsafe(self.stop(), loop).result(10)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            loop.close()

    def call(self, coro: Any) -> Any:
        """Run a coroutine of this fake in its own loop (from another thread)."""
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    # ---------------------------------------------------------------- changes

    async def rename(self, entity_id: str, name: str) -> None:
        """A user renames an entity: the registry changes and its update event goes out."""
        entity = self.entities[entity_id]
        old, entity.name = entity.name, name
        await self.fire(
            "entity_registry_updated",
            {"action": "update", "entity_id": entity_id, "changes": {"name": old}},
        )

    async def fire(self, event_type: str, data: dict[str, Any]) -> None:
        """Send an event to every connection subscribed to ``event_type``."""
        now = datetime.datetime.now(datetime.UTC).isoformat()
        for ws, subscriptions in list(self._subscriptions.items()):
            for number, wanted in subscriptions.items():
                if wanted == event_type:
                    event = {
                        "event_type": event_type,
                        "data": data,
                        "origin": "LOCAL",
                        "time_fired": now,
                        "context": {"id": "x", "parent_id": None, "user_id": None},
                    }
                    with contextlib.suppress(ConnectionClosed):
                        await ws.send(json.dumps({"id": number, "type": "event", "event": event}))

    # ---------------------------------------------------------------- protocol

    async def _handle(self, ws: ServerConnection) -> None:
        self.connections += 1
        self._live.add(ws)
        try:
            await ws.send(json.dumps({"type": "auth_required", "ha_version": VERSION}))
            auth = json.loads(await asyncio.wait_for(ws.recv(), 10))
            self.commands.append("auth")
            if auth.get("access_token") != self.token:
                msg = {"type": "auth_invalid", "message": "Invalid access token or password"}
                await ws.send(json.dumps(msg))
                return
            await ws.send(json.dumps({"type": "auth_ok", "ha_version": VERSION}))
            self._subscriptions[ws] = {}
            last = 0
            async for raw in ws:
                msg = json.loads(raw)
                number = msg.get("id")
                if not isinstance(number, int) or number <= last:
                    await self._error(ws, number, "id_reuse", "Identifier values have to increase.")
                    continue
                last = number
                self.commands.append(str(msg.get("type")))
                await self._command(ws, number, msg)
        except ConnectionClosed:
            pass
        finally:
            self._live.discard(ws)
            self._subscriptions.pop(ws, None)

    async def _command(self, ws: ServerConnection, number: int, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        if kind == "subscribe_events":
            self._subscriptions[ws][number] = str(msg.get("event_type"))
            await self._result(ws, number, None)
        elif kind == "homeassistant/expose_entity/list":
            if not self.admin:
                await self._error(ws, number, "unauthorized", "Unauthorized")
                return
            exposed = {
                e.entity_id: {"conversation": True} for e in self.entities.values() if e.exposed
            }
            await self._result(ws, number, {"exposed_entities": exposed})
        elif kind == "get_states":
            await self._result(ws, number, [self._state(e) for e in self.entities.values()])
        elif kind == "config/entity_registry/get_entries":
            ids = msg.get("entity_ids") or []
            found = {i: self._entry(self.entities[i]) if i in self.entities else None for i in ids}
            await self._result(ws, number, found)
        elif kind == "config/device_registry/list":
            await self._result(ws, number, list(self.devices.values()))
        elif kind == "config/area_registry/list":
            await self._result(ws, number, [self._area(a) for a in self.areas.values()])
        elif kind == "config/floor_registry/list" and self.floors_supported:
            floors = [
                {
                    "floor_id": f.floor_id,
                    "name": f.name,
                    "aliases": f.aliases,
                    "icon": None,
                    "level": None,
                    "created_at": 0.0,
                    "modified_at": 0.0,
                }
                for f in self.floors.values()
            ]
            await self._result(ws, number, floors)
        elif kind == "conversation/process":
            text, language = str(msg.get("text")), msg.get("language")
            self.conversations.append((text, language))
            await self._result(ws, number, self._processed(text, language))
        else:
            await self._error(ws, number, "unknown_command", "Unknown command.")

    @staticmethod
    def _processed(text: str, language: object) -> dict[str, Any]:
        """The built-in agent's answer shape (``action_done``, a spoken text)."""
        return {
            "response": {
                "response_type": "action_done",
                "language": language or "en",
                "speech": {"plain": {"speech": f"Done: {text}", "extra_data": None}},
                "data": {"targets": [], "success": [], "failed": []},
            },
            "conversation_id": None,
            "continue_conversation": False,
        }

    @staticmethod
    def _state(e: Entity) -> dict[str, Any]:
        return {
            "entity_id": e.entity_id,
            "state": "off",
            "attributes": {"friendly_name": e.name},
            "last_changed": "",
            "last_updated": "",
            "context": {"id": "x"},
        }

    @staticmethod
    def _entry(e: Entity) -> dict[str, Any]:
        return {
            "entity_id": e.entity_id,
            "name": e.name,
            "original_name": None,
            "aliases": e.aliases,
            "area_id": e.area_id,
            "device_id": e.device_id,
            "disabled_by": "user" if e.disabled else None,
            "has_entity_name": False,
            "platform": "fake",
            "options": {"conversation": {"should_expose": e.exposed}},
        }

    @staticmethod
    def _area(a: Area) -> dict[str, Any]:
        return {
            "area_id": a.area_id,
            "name": a.name,
            "aliases": a.aliases,
            "floor_id": a.floor_id,
            "icon": None,
            "labels": [],
            "picture": None,
        }

    @staticmethod
    async def _result(ws: ServerConnection, number: int, result: object) -> None:
        await ws.send(
            json.dumps({"id": number, "type": "result", "success": True, "result": result})
        )

    @staticmethod
    async def _error(ws: ServerConnection, number: object, code: str, message: str) -> None:
        await ws.send(
            json.dumps(
                {
                    "id": number,
                    "type": "result",
                    "success": False,
                    "error": {"code": code, "message": message},
                }
            )
        )
