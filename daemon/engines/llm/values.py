"""The value types a chat model speaks in: turns, tools, calls, replies, sampling.

A reply streams as :data:`ReplyPiece` items: text, and, when the request offered
tools (:class:`ToolSet`), :class:`ToolCallDelta` pieces of the calls the model makes.
Tools are defined in OpenAI's function-calling JSON, which llama.cpp and every
OpenAI-compatible server speak: :func:`tool_set` reads and bounds it for every
adapter (chat completions, Realtime). The engine interface is in
:mod:`~daemon.engines.llm.base`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from daemon.errors import InvalidRequest

MAX_TOOLS = 128
"""Tools one request may offer (OpenAI's own limit)."""
MAX_TOOL_CHARS = 16_384
"""Characters of one tool's JSON definition."""
MAX_TOOLS_CHARS = 65_536
"""Characters of all tool definitions of one request together."""
MAX_SCHEMA_DEPTH = 16
"""Nesting of a parameters schema (objects and lists)."""
MAX_CALL_ID = 128
"""Characters of a tool call's id."""
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""OpenAI's rule for function names."""

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    """One call of a function, made by the model in an assistant turn."""

    id: str
    name: str
    arguments: str = "{}"
    """The arguments as JSON text (an object), as OpenAI carries them."""

    def to_openai(self) -> dict[str, Any]:
        """OpenAI's ``tool_calls`` item."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }

    def parsed_arguments(self) -> Any:
        """The arguments as a JSON value (the text itself when it is not JSON)."""
        try:
            return json.loads(self.arguments)
        except ValueError:
            return self.arguments


@dataclass(frozen=True)
class ChatMessage:
    """One chat turn."""

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    """Functions an assistant turn called."""
    tool_call_id: str = ""
    """The call a ``tool`` turn answers (its content is the function's result)."""

    def to_openai(self) -> dict[str, Any]:
        """The turn in OpenAI's chat shape (the fields it has, no empty extras)."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        if self.role == "tool":
            out["tool_call_id"] = self.tool_call_id
        return out

    @property
    def size(self) -> int:
        """Characters of text the turn carries (content and call arguments)."""
        return len(self.content) + sum(len(c.name) + len(c.arguments) for c in self.tool_calls)


@dataclass(frozen=True)
class ToolCallDelta:
    """A piece of a tool call in a streamed reply.

    The first piece of call ``index`` carries its ``id`` and ``name``; every piece
    may carry more of its ``arguments`` text (a local model sends each call whole, in
    one piece; a remote server as it generates).
    """

    index: int
    id: str = ""
    name: str = ""
    arguments: str = ""


ReplyPiece = str | ToolCallDelta
"""What a reply streams: text, or a piece of a tool call."""


@dataclass(frozen=True)
class Tool:
    """A function the model may call."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    """A JSON Schema of the arguments object."""
    wire: Mapping[str, Any] | None = None
    """The definition as the client sent it (OpenAI's chat shape), for remote servers."""

    def to_openai(self) -> dict[str, Any]:
        """OpenAI's chat-completions ``tools`` item: as sent, when it came in that shape."""
        if self.wire is not None:
            return dict(self.wire)
        function: dict[str, Any] = {"name": self.name, "parameters": dict(self.parameters)}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}


@dataclass(frozen=True)
class ToolChoice:
    """Whether a reply may, must or must not call a tool (OpenAI's ``tool_choice``)."""

    mode: Literal["auto", "none", "required", "function"] = "auto"
    name: str = ""
    """The one function to call (mode ``function``)."""

    def to_openai(self) -> str | dict[str, Any]:
        """OpenAI's chat-completions ``tool_choice``."""
        if self.mode == "function":
            return {"type": "function", "function": {"name": self.name}}
        return self.mode


@dataclass(frozen=True)
class ToolSet:
    """The tools a request offers, and the choice it makes among them."""

    tools: tuple[Tool, ...] = ()
    choice: ToolChoice = ToolChoice()
    parallel: bool | None = None
    """OpenAI's ``parallel_tool_calls`` as sent (None: not sent); remote servers only."""
    choice_sent: bool = True
    """Whether the client sent ``tool_choice`` (a remote server gets it only then)."""

    def usable(self) -> tuple[Tool, ...]:
        """The tools this reply may call: none, one (a named choice) or all."""
        if self.choice.mode == "none":
            return ()
        if self.choice.mode == "function":
            return tuple(t for t in self.tools if t.name == self.choice.name)
        return self.tools

    @property
    def forced(self) -> bool:
        """Whether the reply must be a call (``required`` or a named function)."""
        return self.choice.mode in ("required", "function") and bool(self.usable())


def tool_set(tools: object, tool_choice: object = None, parallel: object = None) -> ToolSet:
    """Tools and a choice in OpenAI's JSON, checked and bounded.

    Takes the chat-completions shape (``{"type": "function", "function": {...}}``) and
    the Realtime one (``{"type": "function", "name": ...}``); ``tool_choice`` is
    ``auto``, ``none``, ``required`` or a named function in either shape.

    Raises:
        InvalidRequest: a malformed or oversized definition; the message names it.
    """
    if tools is None:
        tools = []
    if not isinstance(tools, list):
        raise InvalidRequest("tools must be a list")
    if len(tools) > MAX_TOOLS:
        raise InvalidRequest(f"{len(tools)} tools; at most {MAX_TOOLS} are allowed")
    parsed = tuple(_tool(raw, f"tools[{i}]") for i, raw in enumerate(tools))
    total = sum(len(json.dumps(raw)) for raw in tools)
    if total > MAX_TOOLS_CHARS:
        raise InvalidRequest(f"the tools take {total} characters; the limit is {MAX_TOOLS_CHARS}")
    names = [t.name for t in parsed]
    for name in names:
        if names.count(name) > 1:
            raise InvalidRequest(f"two tools are named {name!r}")
    if parallel is not None and not isinstance(parallel, bool):
        raise InvalidRequest("parallel_tool_calls must be true or false")
    choice = _choice(tool_choice, names)
    return ToolSet(parsed, choice, parallel, tool_choice is not None)


def _tool(raw: object, where: str) -> Tool:
    if not isinstance(raw, dict):
        raise InvalidRequest(f"{where} must be an object")
    if raw.get("type") != "function":
        raise InvalidRequest(f"{where}.type must be 'function'")
    size = len(json.dumps(raw))
    if size > MAX_TOOL_CHARS:
        raise InvalidRequest(f"{where} takes {size} characters; the limit is {MAX_TOOL_CHARS}")
    nested = "function" in raw
    function = raw["function"] if nested else raw
    if nested:
        where += ".function"
        if not isinstance(function, dict):
            raise InvalidRequest(f"{where} must be an object")
    name = function.get("name")
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        raise InvalidRequest(f"{where}.name must be 1 to 64 letters, digits, '_' or '-'")
    description = function.get("description", "")
    if not isinstance(description, str):
        raise InvalidRequest(f"{where}.description must be a string")
    parameters = function.get("parameters")
    if parameters is None:
        parameters = {"type": "object", "properties": {}}
    if not isinstance(parameters, dict) or parameters.get("type", "object") != "object":
        raise InvalidRequest(f"{where}.parameters must be a JSON Schema of an object")
    if _depth(parameters) > MAX_SCHEMA_DEPTH:
        raise InvalidRequest(f"{where}.parameters nest deeper than {MAX_SCHEMA_DEPTH} levels")
    return Tool(name, description, parameters, raw if nested else None)


def _depth(value: object) -> int:
    """How deep objects and lists nest in ``value``, counted up to one past the limit
    (iteratively: a hostile schema must not exhaust the stack)."""
    deepest, level = 0, [value]
    while level and deepest <= MAX_SCHEMA_DEPTH:
        children: list[object] = []
        for item in level:
            if isinstance(item, dict):
                children += item.values()
            elif isinstance(item, list):
                children += item
        if not children and not any(isinstance(i, dict | list) for i in level):
            break
        deepest += 1
        level = children
    return deepest


def _choice(raw: object, names: list[str]) -> ToolChoice:
    if raw is None or raw in ("auto", "none"):
        return ToolChoice("none" if raw == "none" else "auto")
    if raw == "required":
        if not names:
            raise InvalidRequest("tool_choice 'required' needs tools")
        return ToolChoice("required")
    if isinstance(raw, dict) and raw.get("type") == "function":
        function = raw.get("function", raw)
        name = function.get("name") if isinstance(function, dict) else None
        if isinstance(name, str) and name in names:
            return ToolChoice("function", name)
        raise InvalidRequest(f"tool_choice names {str(name)[:64]!r}, which is not in tools")
    raise InvalidRequest(
        "tool_choice must be 'auto', 'none', 'required' or "
        '{"type": "function", "function": {"name": ...}}'
    )


@dataclass
class Reply:
    """A streamed reply put together: its text and its whole tool calls."""

    text: str = ""
    calls: dict[int, ToolCall] = field(default_factory=dict)

    def add(self, piece: ReplyPiece) -> None:
        """Add the next piece."""
        if isinstance(piece, str):
            self.text += piece
            return
        call = self.calls.get(piece.index) or ToolCall("", "", "")
        self.calls[piece.index] = ToolCall(
            call.id or piece.id, call.name or piece.name, call.arguments + piece.arguments
        )

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The calls in index order (arguments ``{}`` where none came)."""
        return [
            ToolCall(c.id, c.name, c.arguments or "{}")
            for _, c in sorted(self.calls.items(), key=lambda item: item[0])
        ]


@dataclass(frozen=True)
class Sampling:
    """Sampling settings for one completion."""

    temperature: float = 0.0
    top_p: float = 0.9
    max_tokens: int = 128
    repeat_penalty: float = 1.1
    """Penalty on tokens already in the context (1.0: none); local models only."""


@dataclass(frozen=True)
class ChatOptions:
    """One client's own instructions and limits for its replies (None: the configured).

    A client that brings its own persona (the Realtime API's ``instructions``) replaces
    the configured system prompt; the speaker's name is still added after it.
    """

    instructions: str | None = None
    """The system prompt to use instead of ``llm.system_prompt`` ("" : none)."""
    temperature: float | None = None
    max_tokens: int | None = None
    """The longest reply (tokens); None: ``llm.max_tokens``."""
    turns: tuple[ChatMessage, ...] = ()
    """Turns after the user's (a tool call and its results): the reply answers them."""
    tools: ToolSet | None = None
    """Functions the reply may call instead of (or beside) answering in words: its text
    and its calls come from the one generation (:meth:`ChatService.converse`)."""

    def __post_init__(self) -> None:
        if self.temperature is not None and not 0.0 <= self.temperature <= 2.0:
            raise InvalidRequest(f"temperature {self.temperature:g} is outside 0..2")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise InvalidRequest(f"max_tokens {self.max_tokens} is below 1")

    def sampling(self, base: Sampling) -> Sampling:
        """``base`` with this client's temperature and length where it sets them."""
        if self.temperature is None and self.max_tokens is None:
            return base
        return replace(
            base,
            temperature=base.temperature if self.temperature is None else self.temperature,
            max_tokens=base.max_tokens if self.max_tokens is None else self.max_tokens,
        )
