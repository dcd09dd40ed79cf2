"""Willow Inference Server chat: ``GET /api/chatbot`` and WebSocket ``/api/ws/chatbot``."""

from __future__ import annotations

import asyncio
import logging
import uuid

from fastapi import APIRouter, Depends, Query, Request, WebSocket, WebSocketDisconnect

from daemon.errors import HearthError
from daemon.runtime.facade import Hearth
from protocols.http.auth import check_api_key, require_api_key
from protocols.http.common import config_of, ready_hearth, require, service_of
from protocols.http.errors import timed_out

_LOGGER = logging.getLogger(__name__)
router = APIRouter(tags=["willow"])
END_OF_REPLY = ""
"""The WebSocket frame that ends each streamed reply."""


@router.get("/api/chatbot", summary="Ask the LLM", dependencies=[Depends(require_api_key)])
async def chatbot(
    request: Request,
    text: str = Query(..., description="the prompt"),
    conversation_id: str = Query("", max_length=128, description="keeps history across calls"),
    hearth: Hearth = Depends(ready_hearth),
) -> dict[str, str]:
    """``{"response": ...}``: the LLM's whole reply, within ``limits.request_timeout_s``."""
    require(hearth.chats, "LLM")
    timeout_s = config_of(request).limits.request_timeout_s
    try:
        async with asyncio.timeout(timeout_s):
            reply = "".join([piece async for piece in hearth.chat(conversation_id, text)])
    except TimeoutError:
        raise timed_out(timeout_s) from None
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
    # The connection keeps the facade it opened with (and so its conversation's LLM).
    hearth = service_of(websocket).hearth
    if hearth is None or not hearth.chats:
        await websocket.close(code=1013, reason="Hearth is still loading its engines")
        return
    await websocket.accept()
    conversation = uuid.uuid4().hex
    try:
        while True:
            text = await websocket.receive_text()
            try:
                await _reply(websocket, hearth, conversation, text)
            except HearthError as exc:
                await websocket.send_text(f"error: {exc.code}: {exc.message}")
            await websocket.send_text(END_OF_REPLY)
    except WebSocketDisconnect:
        _LOGGER.debug("Chat WebSocket closed")


async def _reply(websocket: WebSocket, hearth: Hearth, conversation: str, text: str) -> None:
    """Stream one reply; ``timeout`` when it runs past ``limits.request_timeout_s``."""
    timeout_s = config_of(websocket).limits.request_timeout_s
    deadline = asyncio.get_running_loop().time() + timeout_s
    pieces = hearth.chat(conversation, text)
    while True:
        # Only the wait for the LLM is timed: a slow reader is the socket's business.
        try:
            async with asyncio.timeout_at(deadline):
                piece = await anext(pieces, None)
        except TimeoutError:
            raise timed_out(timeout_s) from None
        if piece is None:
            return
        await websocket.send_text(piece)
