"""Home Assistant's websocket API, as its documentation describes it: the handshake
(``auth_required``, ``auth``, ``auth_ok``), commands with increasing ids answered by a
``result``, and the ``event`` messages of ``subscribe_events``.

Every wait has a limit: connecting and authenticating ``connect_timeout_s``, each
command ``request_timeout_s``; a message over ``max_bytes`` ends the connection, and a
quiet one is pinged. Errors carry Home Assistant's code only (``unauthorized``,
``unknown_command``...): its messages may quote entity ids, which are the household's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import WebSocketException

from daemon import __version__
from daemon.house.endpoint import Endpoint

_LOGGER = logging.getLogger(__name__)

PING_INTERVAL_S = 30.0
"""A quiet connection is pinged this often (Home Assistant answers pings)."""
PARSE_IN_THREAD_BYTES = 256 * 1024
"""Messages larger than this (``get_states`` of a house) are parsed in a worker thread."""


class HaError(Exception):
    """Home Assistant refused a command, or the connection did not go as its API says."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class AuthFailed(HaError):
    """Home Assistant (or the Supervisor) refused the token."""


class HaConnection:
    """One authenticated websocket: commands and their answers, and whether a
    subscribed event has come since :meth:`clear_change`."""

    def __init__(self, ws: ClientConnection, request_timeout_s: float) -> None:
        self._ws = ws
        self._timeout_s = request_timeout_s
        self._next_id = 1
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._subscriptions: set[int] = set()
        self._changed = asyncio.Event()
        self._closed = False
        self._reader = asyncio.create_task(self._read(), name="homeassistant-reader")

    @classmethod
    async def open(
        cls,
        endpoint: Endpoint,
        *,
        connect_timeout_s: float,
        request_timeout_s: float,
        max_bytes: int,
    ) -> HaConnection:
        """Connect and authenticate, within ``connect_timeout_s`` in all.

        Raises:
            AuthFailed: the token was refused.
            HaError: the server did not speak Home Assistant's handshake.
            TimeoutError, OSError, WebSocketException: it could not be reached.
        """
        async with asyncio.timeout(connect_timeout_s):
            ws = await connect(
                endpoint.url,
                open_timeout=None,  # the timeout around covers it, the handshake included
                ping_interval=PING_INTERVAL_S,
                ping_timeout=connect_timeout_s,
                close_timeout=2.0,
                max_size=max_bytes,
                proxy=None,  # Home Assistant is on the LAN (or the Supervisor's network)
                user_agent_header=f"Hearth/{__version__}",
            )
            try:
                await _handshake(ws, endpoint.token)
            except BaseException:
                await ws.close()
                raise
        return cls(ws, request_timeout_s)

    async def call(self, kind: str, **params: Any) -> Any:
        """Send one command and return its ``result`` (HaError with Home Assistant's code
        when it fails; TimeoutError after ``request_timeout_s``)."""
        return await self._call(kind, params, subscribe=False)

    async def subscribe(self, event_type: str) -> None:
        """Follow ``event_type``: each of its events marks a change."""
        await self._call("subscribe_events", {"event_type": event_type}, subscribe=True)

    async def _call(self, kind: str, params: dict[str, Any], subscribe: bool) -> Any:
        if self._closed:
            raise ConnectionError("the Home Assistant connection is closed")
        number = self._next_id
        self._next_id += 1  # Home Assistant refuses an id that does not increase
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[number] = future
        if subscribe:
            self._subscriptions.add(number)  # its events may follow the result at once
        try:
            await self._ws.send(json.dumps({"id": number, "type": kind, **params}))
            async with asyncio.timeout(self._timeout_s):
                return await future
        except BaseException:
            self._subscriptions.discard(number)
            raise
        finally:
            self._waiting.pop(number, None)

    async def wait_change(self) -> None:
        """Wait for an event of a subscription (ConnectionError when the connection ends)."""
        await self._changed.wait()
        if self._closed:
            raise ConnectionError("Home Assistant closed the connection")

    def clear_change(self) -> None:
        """Forget the events so far: the next :meth:`wait_change` waits for a new one."""
        if not self._closed:
            self._changed.clear()

    async def close(self) -> None:
        """Close the connection (safe to call more than once)."""
        self._closed = True
        with contextlib.suppress(Exception):
            await self._ws.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader

    async def _read(self) -> None:
        problem: BaseException = ConnectionError("Home Assistant closed the connection")
        try:
            async for message in self._ws:
                if isinstance(message, str):
                    for item in await _parse(message):
                        self._dispatch(item)
        except (WebSocketException, OSError, ValueError) as exc:
            problem = ConnectionError(f"the Home Assistant connection failed: {type(exc).__name__}")
        finally:
            self._closed = True
            self._changed.set()  # a waiter wakes and finds the connection closed
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(problem)

    def _dispatch(self, message: object) -> None:
        if not isinstance(message, dict):
            return
        number = message.get("id")
        kind = message.get("type")
        if kind == "event" and number in self._subscriptions:
            self._changed.set()
        elif kind == "result" and isinstance(number, int):
            future = self._waiting.get(number)
            if future is None or future.done():
                return
            if message.get("success") is True:
                future.set_result(message.get("result"))
            else:
                future.set_exception(HaError(_code(message.get("error"))))


async def _handshake(ws: ClientConnection, token: str) -> None:
    """``auth_required``, then the token, then ``auth_ok`` (AuthFailed on ``auth_invalid``)."""
    first = await _message(ws)
    if first.get("type") != "auth_required":
        raise HaError("not-home-assistant")
    await ws.send(json.dumps({"type": "auth", "access_token": token}))
    answer = await _message(ws)
    if answer.get("type") == "auth_invalid":
        raise AuthFailed("auth_invalid")
    if answer.get("type") != "auth_ok":
        raise HaError("not-home-assistant")
    _LOGGER.debug("Home Assistant %s: authenticated", str(answer.get("ha_version", "?"))[:32])


async def _message(ws: ClientConnection) -> dict[str, Any]:
    raw = await ws.recv()
    if not isinstance(raw, str):
        raise HaError("not-home-assistant")
    items = await _parse(raw)
    if len(items) != 1 or not isinstance(items[0], dict):
        raise HaError("not-home-assistant")
    return items[0]


async def _parse(raw: str) -> list[object]:
    """A message's JSON (a list when Home Assistant coalesces several), parsed in a
    worker thread when it is large: a house's states run to megabytes."""
    if len(raw) > PARSE_IN_THREAD_BYTES:
        value = await asyncio.to_thread(json.loads, raw)
    else:
        value = json.loads(raw)
    return value if isinstance(value, list) else [value]


def _code(error: object) -> str:
    code = error.get("code") if isinstance(error, dict) else None
    return code[:64] if isinstance(code, str) and code else "unknown_error"
