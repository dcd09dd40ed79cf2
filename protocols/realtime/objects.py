"""Realtime objects as OpenAI writes them: user items, responses, message items.

A :class:`UserItem` is a user message whose words may come later (a spoken turn, an
audio item); a :class:`Response` is one reply of the conversation as the client sees
it, with its assistant item (that item's one content part) and its function calls;
:class:`ToolTurns` is a question whose answer waits on function calls.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from daemon.runtime.api import (
    ChatMessage,
    ChatOptions,
    Deadline,
    SynthesisOptions,
    ToolCall,
    ToolSet,
)
from protocols.realtime.audio import WireFormat
from protocols.realtime.wire import Event, Refused, new_id


@dataclass
class UserItem:
    """A user message: spoken (its transcript comes later) or typed."""

    id: str
    audio: bool = True
    transcript: asyncio.Future[str] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    sent: str = ""
    """The transcript deltas sent so far."""

    def render(self, text: str | None = None) -> dict[str, Any]:
        """The item as OpenAI writes it (its audio is never echoed)."""
        if self.audio:
            content = {"type": "input_audio", "transcript": text}
        else:
            content = {"type": "input_text", "text": text}
        return message_item(self.id, "user", "completed", [content])

    def resolve(self, text: str) -> None:
        """The item's words are known."""
        if not self.transcript.done():
            self.transcript.set_result(text)


@dataclass
class Response:
    """One response: a reply of the conversation, as the client sees it."""

    id: str
    speak: bool
    format: WireFormat
    voice: str
    max_output_tokens: int | None = None
    item_id: str = field(default_factory=lambda: new_id("item"))
    created: bool = False
    asked: bool = False
    """The conversation was asked for its reply (a requested response)."""
    begun: bool = False
    """Its message item was announced (the reply's first words or audio)."""
    text: list[str] = field(default_factory=list)
    done_text: str | None = None
    rate: int = 24000
    audio_sent: bool = False
    error: dict[str, Any] | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    """The ``function_call`` items it made (after its message, when it had words)."""
    finished: bool = False
    deadline: Deadline | None = None
    """The core's request deadline, from its creation."""

    @property
    def transcript(self) -> str:
        """What the LLM wrote of the reply."""
        return self.done_text if self.done_text is not None else "".join(self.text).strip()

    def content(self) -> dict[str, Any]:
        """The assistant item's one content part."""
        if self.speak:
            return {"type": "output_audio", "transcript": self.transcript}
        return {"type": "output_text", "text": self.transcript}

    def render(self, status: str, details: dict[str, Any] | None, conversation: str) -> Event:
        """The response object of ``response.created`` and ``response.done``."""
        output = [message_item(self.item_id, "assistant", ITEM_STATUS[status], [self.content()])]
        return {
            "id": self.id,
            "object": "realtime.response",
            "status": status,
            "status_details": details,
            "output": (output if self.begun and status != "in_progress" else []) + self.calls,
            "conversation_id": conversation,
            "output_modalities": ["audio"] if self.speak else ["text"],
            "max_output_tokens": self.max_output_tokens or "inf",
            "audio": {"output": {"format": self.format.describe(), "voice": self.voice}},
            "usage": None if status == "in_progress" else USAGE,
            "metadata": None,
        }


ITEM_STATUS = {
    "in_progress": "in_progress",
    "completed": "completed",
    "cancelled": "incomplete",
    "failed": "incomplete",
    "incomplete": "incomplete",
}
USAGE = {"total_tokens": 0, "input_tokens": 0, "output_tokens": 0}
"""Hearth counts no tokens for a Realtime session: zeros, not a guess."""


def message_item(
    item_id: str, role: str, status: str, content: list[dict[str, Any]]
) -> dict[str, Any]:
    """A message item as OpenAI writes it."""
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "message",
        "status": status,
        "role": role,
        "content": content,
    }


def content_place(response: Response) -> dict[str, Any]:
    """Where a content event belongs: the response's one item and its one part."""
    return {
        "response_id": response.id,
        "item_id": response.item_id,
        "output_index": 0,
        "content_index": 0,
    }


@dataclass
class ToolTurns:
    """A question whose answer waits on function calls, and the turns since it."""

    question: str = ""
    turns: list[ChatMessage] = field(default_factory=list)
    open_calls: set[str] = field(default_factory=set)
    """Call ids the model made that no output has answered yet."""

    def called(self, question: str, text: str, calls: list[ToolCall]) -> None:
        """The model called ``calls`` in answer to ``question``."""
        self.question = question
        self.turns = [ChatMessage("assistant", text, tuple(calls))]
        self.open_calls = {call.id for call in calls}

    def answered(self, call_id: str, output: str) -> None:
        """The client's result of one call."""
        if call_id not in self.open_calls:
            raise Refused(
                "no function call awaits an output with that call_id", param="item.call_id"
            )
        self.open_calls.discard(call_id)
        self.turns.append(ChatMessage("tool", output, tool_call_id=call_id))

    @property
    def waiting(self) -> bool:
        """Whether results were given that the next response answers."""
        return any(turn.role == "tool" for turn in self.turns)

    def clear(self) -> None:
        """The exchange is over (answered, or a new question replaced it)."""
        self.question, self.turns, self.open_calls = "", [], set()


@dataclass
class Request:
    """A ``response.create``, checked, before the conversation is asked."""

    response: Response
    tts: SynthesisOptions | None
    chat: ChatOptions
    instructions: str | None
    """The response's own instructions (they are the question when nothing waits)."""
    tools: ToolSet | None = None
    """The tools it offers (the response's, else the session's; None: none)."""
