"""``/v1/realtime``: the OpenAI Realtime API's WebSocket, handed to a Realtime session.

Authentication is the other ``/v1`` routes': ``Authorization: Bearer KEY`` (or
``X-API-Key``), or, for browsers that cannot set headers on a WebSocket, the
subprotocol ``openai-insecure-api-key.KEY``. A refused or early handshake is closed
before it is accepted (403). The answer names the subprotocol ``realtime`` when the
client offered it (browsers fail a handshake that names none of theirs), never the
key. A client that says ``OpenAI-Beta: realtime=v1`` (header or subprotocol
``openai-beta.realtime-v1``) is answered in the 2024 beta's event names.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Query, WebSocket
from starlette.websockets import WebSocketDisconnect

from daemon.errors import HearthError
from daemon.runtime.facade import Hearth
from protocols.http.auth import check_api_key, key_matches, offered_keys
from protocols.http.common import config_of, service_of
from protocols.http.names import OPENAI_ASR_MODELS, OPENAI_VOICES
from protocols.realtime.session import RealtimeSession

_LOGGER = logging.getLogger(__name__)
router = APIRouter(tags=["openai"])
KEY_PROTOCOL = "openai-insecure-api-key."
BETA_PROTOCOL = "openai-beta.realtime-v1"
ANSWERED_PROTOCOLS = ("realtime", BETA_PROTOCOL)
"""Subprotocols Hearth may name in its answer, in order of preference."""


def subprotocols(websocket: WebSocket) -> list[str]:
    """The subprotocols the client offered."""
    header = websocket.headers.get("sec-websocket-protocol", "")
    return [p.strip() for p in header.split(",") if p.strip()]


def authorized(websocket: WebSocket, offered: list[str]) -> bool:
    """Whether the handshake carries the API key (always, when none is configured)."""
    expected = config_of(websocket).auth.api_key
    if not expected:
        return True
    keys = [p[len(KEY_PROTOCOL) :] for p in offered if p.startswith(KEY_PROTOCOL)]
    if keys:
        return key_matches(expected, offered_keys(websocket.headers) + keys)
    try:
        check_api_key(websocket)
    except HearthError:
        return False
    return True


class _Socket:
    """Starlette's WebSocket as the Realtime session reads and writes it."""

    def __init__(self, websocket: WebSocket) -> None:
        self._websocket = websocket

    async def receive(self) -> str | bytes | None:
        try:
            message = await self._websocket.receive()
        except (RuntimeError, WebSocketDisconnect):
            return None
        if message["type"] == "websocket.disconnect":
            return None
        text = message.get("text")
        return text if text is not None else message.get("bytes") or b""

    async def send(self, text: str) -> None:
        await self._websocket.send_text(text)


@router.websocket("/v1/realtime")
async def realtime(
    websocket: WebSocket,
    model: str = Query("", max_length=128, description="echoed back; Hearth has one LLM"),
) -> None:
    """A Realtime session (speech to speech) on the conversation engine."""
    offered = subprotocols(websocket)
    if not authorized(websocket, offered):
        await websocket.close(code=1008, reason="a valid API key is required")
        return
    first = service_of(websocket).hearth
    if first is None:
        await websocket.close(code=1013, reason="Hearth is still loading its engines")
        return
    beta = BETA_PROTOCOL in offered or "realtime=v1" in websocket.headers.get("openai-beta", "")
    answer = next((p for p in ANSWERED_PROTOCOLS if p in offered), None)
    await websocket.accept(subprotocol=answer)

    def current() -> Hearth:
        # A reload swaps the engines; the session's conversation moves to them.
        return service_of(websocket).hearth or first

    session = RealtimeSession(
        _Socket(websocket),
        current,
        model=model,
        beta=beta,
        voice_aliases=OPENAI_VOICES,
        asr_aliases=OPENAI_ASR_MODELS,
    )
    _LOGGER.info("Realtime session %s opened", session.id)
    try:
        await session.run()
    finally:
        _LOGGER.info("Realtime session %s closed", session.id)
