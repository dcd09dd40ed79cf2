"""Willow Inference Server chat: ``GET /api/chatbot`` and WebSocket ``/api/ws/chatbot``."""

from __future__ import annotations

import logging
import uuid

from fastapi import APIRouter, Depends, Query, Request, WebSocket, WebSocketDisconnect

from daemon.errors import HearthError
from daemon.runtime.api import Chat, Services
from protocols.http.auth import check_api_key, require_api_key
from protocols.http.common import ready_services, require, service_of

_LOGGER = logging.getLogger(__name__)
router = APIRouter(tags=["willow"])
END_OF_REPLY = ""
"""The WebSocket frame that ends each streamed reply."""


@router.get("/api/chatbot", summary="Ask the LLM", dependencies=[Depends(require_api_key)])
async def chatbot(
    request: Request,
    text: str = Query(..., description="the prompt"),
    conversation_id: str = Query("", max_length=128, description="keeps history across calls"),
    services: Services = Depends(ready_services),
) -> dict[str, str]:
    """``{"response": ...}``: the LLM's whole reply, within ``limits.request_timeout_s``."""
    require(services.chat.chats, "LLM")
    reply = "".join([piece async for piece in services.chat.chat(conversation_id, text)])
    return {"response": reply.strip()}


@router.websocket("/api/ws/chatbot")
async def ws_chatbot(websocket: WebSocket) -> None:
    """Text in, the reply streamed out as text frames, then an empty frame.

    The connection is one conversation: earlier exchanges are remembered. An error
    is sent as a frame ``error: <code>: <message>`` followed by the empty frame.
    Without a valid API key (when one is set) the handshake is refused (403).
    """
    try:
        check_api_key(websocket)
    except HearthError:
        await websocket.close(code=1008, reason="a valid API key is required")
        return
    # The connection keeps the engines it opened with (and so its conversation's LLM).
    service = service_of(websocket)
    services = service.services.pinned() if service.loaded else None
    if services is None or not services.chat.chats:
        await websocket.close(code=1013, reason="Hearth is still loading its engines")
        return
    await websocket.accept()
    conversation = uuid.uuid4().hex
    try:
        while True:
            text = await websocket.receive_text()
            try:
                await _reply(websocket, services.chat, conversation, text)
            except HearthError as exc:
                await websocket.send_text(f"error: {exc.code}: {exc.message}")
            await websocket.send_text(END_OF_REPLY)
    except WebSocketDisconnect:
        _LOGGER.debug("Chat WebSocket closed")


async def _reply(websocket: WebSocket, chat: Chat, conversation: str, text: str) -> None:
    """Stream one reply (the core's ``timeout`` past ``limits.request_timeout_s``)."""
    async for piece in chat.chat(conversation, text):
        await websocket.send_text(piece)
