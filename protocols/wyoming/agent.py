"""The Wyoming conversation agent: Home Assistant's ``transcript`` in, ``handled`` out.

Home Assistant sends ``transcript{text, language, context{conversation_id}}`` to a
``handle`` program; the answer streams as ``handled-start``, ``handled-chunk``... and
the whole ``handled``, then ``handled-stop``. The reply, its history and its deadline
are the core's chat.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from wyoming.event import Event
from wyoming.handle import Handled, HandledChunk, HandledStart, HandledStop

from daemon.errors import HearthError, InvalidRequest, InvalidText
from daemon.runtime.api import Chat
from protocols.wyoming.errors import Reported, error_event

_LOGGER = logging.getLogger(__name__)


async def handle_text(
    chat: Chat, write: Callable[[Event], Awaitable[None]], conn_id: str, event: Event
) -> None:
    """Answer one ``transcript`` with the LLM's reply, streamed."""
    if not chat.chats:
        raise InvalidRequest("the conversation agent (LLM) is not enabled")
    text = event.data.get("text")
    if not isinstance(text, str):
        raise InvalidText("transcript needs a 'text' string")
    raw_context = event.data.get("context")
    context: dict[str, Any] = raw_context if isinstance(raw_context, dict) else {}
    conversation_id = str(context.get("conversation_id") or "")[:128]
    stream = chat.chat(conversation_id, text)
    # The first piece validates the prompt: a bad one is an error before any output.
    first = await anext(stream, "")
    await write(HandledStart(context=context or None).event())
    parts: list[str] = []
    try:
        if first:
            parts.append(first)
            await write(HandledChunk(text=first).event())
        async for piece in stream:
            parts.append(piece)
            await write(HandledChunk(text=piece).event())
    except HearthError as exc:
        # Output has begun: the error, the stream's end, then the connection closes.
        _LOGGER.info("[%s] %s: %s", conn_id, exc.code, exc.message)
        await write(error_event(exc))
        await write(HandledStop().event())
        raise Reported(exc.code) from exc
    await write(Handled(text="".join(parts).strip(), context=context or None).event())
    await write(HandledStop().event())
