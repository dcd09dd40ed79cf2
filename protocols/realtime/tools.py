"""Function tools in a Realtime session: the same path as chat completions' tools.

A response that offers tools (the session's ``tools``, or its ``response.create``'s)
is one reply of the conversation with the tools in its chat options
(:attr:`~daemon.engines.llm.values.ChatOptions.tools`): the core generates once, speaks the
words as any reply's, and hands the calls over with the reply's end. A call becomes a
``function_call`` output item (its arguments as one
``response.function_call_arguments.delta`` and ``.done``); the client answers it with
a ``function_call_output`` item and asks for the next response, which the
conversation writes and speaks as any other reply, with the call and its output after
the question (:attr:`~daemon.engines.llm.values.ChatOptions.turns`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from daemon.errors import InvalidRequest
from daemon.runtime.api import ChatMessage, ToolCall, ToolSet, tool_set
from protocols.realtime.objects import Request, Response
from protocols.realtime.state import SessionState
from protocols.realtime.wire import Refused, event, new_id

CHOICES = ("auto", "none", "required")
"""The ``tool_choice`` words; any other value names a function."""


def offered(tools: object, choice: object, param: str) -> ToolSet | None:
    """The tools a session or response offers, checked (None: none to call)."""
    if not tools:
        return None
    if isinstance(choice, str) and choice not in CHOICES:
        choice = {"type": "function", "name": choice}
    try:
        found = tool_set(list(tools) if isinstance(tools, tuple) else tools, choice)
    except InvalidRequest as exc:
        raise Refused(exc.message, "invalid_value", param) from None
    return found if found.usable() else None


async def respond(session: SessionState, request: Request, text: str, tools: ToolSet) -> None:
    """Answer ``text`` with ``tools`` offered: the conversation writes the reply once; its
    words are spoken as any reply's, and its calls become items (:func:`called`)."""
    waiting = session.tool_turns
    waiting.clear()
    waiting.question = text
    response = request.response
    response.asked = True
    chat = replace(request.chat, tools=tools)
    await session.conversation.ask(text, response.speak, request.tts, chat)


async def called(
    session: SessionState, response: Response, text: str, calls: list[ToolCall]
) -> None:
    """The reply called ``calls``: each becomes a ``function_call`` item, and the
    question waits for their outputs."""
    session.tool_turns.called(session.tool_turns.question, text, calls)
    for call in calls:
        await send_call(session, response, call)


async def answer_results(session: SessionState, request: Request, said: str = "") -> None:
    """The response after the client's function outputs: spoken by the conversation
    (``said``: user words added since, which it answers too)."""
    waiting = session.tool_turns
    after = [ChatMessage("user", said)] if said else []
    chat = replace(request.chat, turns=(*waiting.turns, *after))
    question = waiting.question
    waiting.clear()
    request.response.asked = True
    response = request.response
    await session.conversation.ask(question, response.speak, request.tts, chat)


async def send_call(session: SessionState, response: Response, call: ToolCall) -> None:
    """One call as a ``function_call`` output item and its argument events."""
    user = session.user
    index = len(response.calls) + (1 if response.begun else 0)  # after its message
    item_id = new_id("item")
    item = call_item(item_id, call, "in_progress", "")
    response.calls.append(call_item(item_id, call, "completed", call.arguments))
    previous = user.last_item
    user.remember(item_id, "function_call")
    where = {"response_id": response.id, "output_index": index}
    place = where | {"item_id": item_id, "call_id": call.id}
    await session.send(event("response.output_item.added", **where, item=item))
    await session.send(event("conversation.item.added", previous_item_id=previous, item=item))
    await session.send(
        event("response.function_call_arguments.delta", **place, delta=call.arguments)
    )
    await session.send(
        event(
            "response.function_call_arguments.done",
            **place,
            name=call.name,
            arguments=call.arguments,
        )
    )
    done = response.calls[-1]
    await session.send(event("response.output_item.done", **where, item=done))
    await session.send(event("conversation.item.done", item=done))


def call_item(item_id: str, call: ToolCall, status: str, arguments: str) -> dict[str, Any]:
    """A ``function_call`` item as OpenAI writes it."""
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "function_call",
        "status": status,
        "name": call.name,
        "call_id": call.id,
        "arguments": arguments,
    }


async def add_output(session: SessionState, item: dict[str, Any]) -> None:
    """``conversation.item.create`` of a ``function_call_output``: a call's result."""
    call_id, output = item.get("call_id"), item.get("output")
    if not isinstance(call_id, str) or not isinstance(output, str):
        raise Refused("a function_call_output has a string call_id and output", param="item")
    limit = session.services.house.limits.max_prompt_chars
    if len(output) > limit:
        raise Refused(f"the output is longer than {limit} characters", param="item.output")
    item_id = item.get("id") or new_id("item")
    if not isinstance(item_id, str) or len(item_id) > 64 or item_id in session.user.known:
        raise Refused("'item.id' must be a new id of at most 64 characters", param="item.id")
    session.tool_turns.answered(call_id, output)
    user = session.user
    previous = user.last_item
    user.remember(item_id, "function_call_output")
    body = {
        "id": item_id,
        "object": "realtime.item",
        "type": "function_call_output",
        "status": "completed",
        "call_id": call_id,
        "output": output,
    }
    await session.send(event("conversation.item.added", previous_item_id=previous, item=body))
    await session.send(event("conversation.item.done", item=body))
