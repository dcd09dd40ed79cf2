"""Tool calls written as text, the way local models make them.

Models trained on the Hermes convention (Qwen, Hermes, many others) are shown the
tools inside ``<tools></tools>`` in the system turn and answer a call as
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``. Small ones often drop
the tags and answer the bare JSON object. :class:`ToolCallParser` splits such a
streamed reply into text and calls; :func:`hermes_messages` describes the tools in the
system turn for a model whose chat template cannot.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import replace
from typing import Any

from daemon.engines.llm.values import (
    ChatMessage,
    ReplyPiece,
    Sampling,
    ToolCall,
    ToolCallDelta,
    ToolSet,
)

_LOGGER = logging.getLogger(__name__)
OPEN = "<tool_call>"
CLOSE = "</tool_call>"
_FENCE = "```"


def new_call_id() -> str:
    """A fresh id for a call a local model made (OpenAI's ``call_`` form)."""
    return f"call_{uuid.uuid4().hex[:24]}"


class ToolCallParser:
    """Feed it a reply's text pieces; it returns text and the calls found in it.

    A call is a ``<tool_call>`` block, or, when the reply begins with ``{`` or a code
    fence, the whole reply as one bare JSON call (or several). A block that does not
    parse stays text. So does one that names a function not in ``names``, or JSON
    that is no call beside the calls, unless the parser is ``strict``: then they are
    dropped and counted in :attr:`dropped` (small models invent functions, and echo
    results). Text streams on at once, except what may be the start of a
    ``<tool_call>`` tag and trailing spaces (dropped before a call).
    """

    def __init__(self, names: Iterable[str], inside: bool = False, strict: bool = False) -> None:
        """``inside``: the reply starts within a ``<tool_call>`` block (the prompt ended
        with the opening tag, as when a call is forced)."""
        self.names = frozenset(names)
        self.strict = strict
        self.dropped = 0
        """JSON values dropped (strict): calls of unknown functions, stray objects."""
        self._buffer = ""
        self._state = "call" if inside else "start"
        self._calls = 0

    @property
    def calls(self) -> int:
        """Calls found so far."""
        return self._calls

    def feed(self, piece: str) -> list[ReplyPiece]:
        """Take the next piece of text; return what may be passed on now."""
        if not self.names:
            return [piece] if piece else []
        self._buffer += piece
        out: list[ReplyPiece] = []
        while True:
            if self._state == "start":
                stripped = self._buffer.lstrip()
                if not stripped:
                    return out
                self._state = "whole" if stripped[0] in "{`" else "text"
            if self._state == "whole":
                return out  # decided at the end
            if self._state == "text":
                at = self._buffer.find(OPEN)
                if at < 0:
                    keep = _held_back(self._buffer)
                    out += self._text(self._buffer[: len(self._buffer) - keep])
                    self._buffer = self._buffer[len(self._buffer) - keep :]
                    return out
                out += self._text(self._buffer[:at].rstrip())
                self._buffer = self._buffer[at + len(OPEN) :]
                self._state = "call"
            end = self._buffer.find(CLOSE)
            if end < 0:
                return out
            out += self._block(self._buffer[:end])
            self._buffer = self._buffer[end + len(CLOSE) :]
            self._state = "text"

    def finish(self) -> list[ReplyPiece]:
        """The end of the reply: what was held back, and a call left open."""
        if not self.names:
            return []
        rest, self._buffer = self._buffer, ""
        if self._state == "call":
            # No closing tag: the model stopped after the JSON (or wrote nothing).
            return self._block(rest) if rest.strip() else []
        if self._state == "whole":
            calls = self._parse(rest)
            return calls if calls is not None else self._text(rest)
        return self._text(rest.rstrip())

    def _text(self, text: str) -> list[ReplyPiece]:
        # Spaces and line breaks between calls are not part of the answer.
        if not text or (self._calls and not text.strip()):
            return []
        return [text]

    def _block(self, block: str) -> list[ReplyPiece]:
        calls = self._parse(block)
        if calls is None:
            _LOGGER.info("The model wrote a tool call that does not parse; kept as text")
            return self._text(f"{OPEN}{block}{CLOSE}")
        return calls

    def _parse(self, blob: str) -> list[ReplyPiece] | None:
        values = _json_values(blob)
        if not values:
            return None
        calls = [self._call(value) for value in values]
        strays = sum(call is None for call in calls)
        if strays and not self.strict:
            return None
        self.dropped += strays
        out: list[ReplyPiece] = []
        for call in calls:
            if call is not None:
                out.append(ToolCallDelta(self._calls, new_call_id(), *call))
                self._calls += 1
        return out

    def _call(self, value: Any) -> tuple[str, str] | None:
        """A known function's name and arguments JSON (None: not such a call)."""
        if not isinstance(value, dict) or value.get("name") not in self.names:
            return None
        arguments = value.get("arguments", value.get("parameters", {}))
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments or "{}")
            except ValueError:
                return None
        if not isinstance(arguments, dict):
            return None
        return str(value["name"]), json.dumps(arguments, ensure_ascii=False)


def _held_back(text: str) -> int:
    """Characters at the end of ``text`` that may begin a ``<tool_call>`` tag, with the
    spaces before them."""
    keep = 0
    for size in range(min(len(OPEN) - 1, len(text)), 0, -1):
        if OPEN.startswith(text[-size:]):
            keep = size
            break
    return len(text) - len(text[: len(text) - keep].rstrip())


def _json_values(blob: str) -> list[Any]:
    """The JSON values in ``blob`` (a code fence around them is dropped); [] when any
    part of it is not JSON."""
    text = blob.strip()
    if text.startswith(_FENCE):
        text = text[len(_FENCE) :]
        text = text[text.find("\n") + 1 :] if "\n" in text else ""
        text = text.rstrip().removesuffix(_FENCE).strip()
    decoder = json.JSONDecoder()
    values: list[Any] = []
    at = 0
    while at < len(text):
        try:
            value, at = decoder.raw_decode(text, at)
        except ValueError:
            return []
        values += value if isinstance(value, list) else [value]
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
    return values


def tool_prompt(tools: ToolSet) -> str:
    """The Hermes description of the usable tools, for the end of a system turn."""
    lines = "\n".join(json.dumps(t.to_openai(), ensure_ascii=False) for t in tools.usable())
    text = (
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n"
        f"<tools>\n{lines}\n</tools>\n\n"
        "For each function call, return a json object with function name and arguments "
        "within <tool_call></tool_call> XML tags:\n"
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    )
    if tools.choice.mode == "function":
        text += f"\n\nCall the function {tools.choice.name} now."
    elif tools.choice.mode == "required":
        text += "\n\nAnswer with a function call."
    return text


def call_text(call: ToolCall) -> str:
    """A call as a Hermes model writes it."""
    body = {"name": call.name, "arguments": call.parsed_arguments()}
    return f"{OPEN}\n{json.dumps(body, ensure_ascii=False)}\n{CLOSE}"


def hermes_messages(messages: list[ChatMessage], tools: ToolSet) -> list[ChatMessage]:
    """``messages`` with the tools in the system turn and calls and results as text
    (roles system, user and assistant only), for any chat template."""
    out: list[ChatMessage] = []
    if tools.usable():
        prompt = tool_prompt(tools)
        if messages and messages[0].role == "system":
            prompt = f"{messages[0].content}\n\n{prompt}"
            messages = messages[1:]
        out.append(ChatMessage("system", prompt))
    for message in messages:
        if message.role == "tool":
            result = f"<tool_response>\n{message.content}\n</tool_response>"
            if out and out[-1].role == "user" and out[-1].content.startswith("<tool_response>"):
                out[-1] = ChatMessage("user", f"{out[-1].content}\n{result}")
            else:
                out.append(ChatMessage("user", result))
        elif message.tool_calls:
            parts = [message.content] if message.content else []
            parts += [call_text(call) for call in message.tool_calls]
            out.append(ChatMessage("assistant", "\n".join(parts)))
        else:
            out.append(message)
    return out


async def parse_calls(
    pieces: AsyncIterator[str], parser: ToolCallParser
) -> AsyncIterator[ReplyPiece]:
    """The text and calls of a streamed reply (the source is closed at the end)."""
    try:
        async for piece in pieces:
            for item in parser.feed(piece):
                yield item
        for item in parser.finish():
            yield item
    finally:
        aclose = getattr(pieces, "aclose", None)
        if aclose is not None:
            await aclose()


def hermes_reply(
    stream_chat: Callable[[list[ChatMessage], Sampling], AsyncIterator[str]],
    messages: list[ChatMessage],
    sampling: Sampling,
    tools: ToolSet,
) -> AsyncIterator[ReplyPiece]:
    """A reply with tools described in the system turn and calls read from the text
    that ``stream_chat`` (an engine's) writes."""
    names = [t.name for t in tools.usable()]
    text = stream_chat(hermes_messages(messages, tools), sampling)
    return parse_calls(text, ToolCallParser(names))


def call_key(name: str, arguments: str) -> tuple[str, str]:
    """A call's function and arguments, the same however the JSON was spaced."""
    try:
        return name, json.dumps(json.loads(arguments), sort_keys=True)
    except ValueError:
        return name, arguments


def _since_user(messages: list[ChatMessage]) -> int:
    """Index of the first turn after the last user turn."""
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    return users[-1] + 1 if users else 0


def answered_calls(messages: list[ChatMessage]) -> set[tuple[str, str]]:
    """The calls made since the last user turn whose results came back (:func:`call_key`)."""
    tail = messages[_since_user(messages) :]
    answered = {m.tool_call_id for m in tail if m.role == "tool"}
    return {call_key(c.name, c.arguments) for m in tail for c in m.tool_calls if c.id in answered}


def results_as_text(messages: list[ChatMessage]) -> list[ChatMessage]:
    """``messages`` with the calls and results since the last user turn told in plain
    turns, and a request to answer: small models that cannot read a tool result in
    their template's form (they repeat the call) answer from this.

    The assistant turn names no call: Qwen2.5-Coder-0.5B repeats such a turn as its
    answer ("I called set_timer(...)"); with "One moment." it answered all five
    results it was tried on.
    """
    start = _since_user(messages)
    tail = messages[start:]
    names = {c.id: c.name for m in tail for c in m.tool_calls}
    results = "\n".join(
        f"{names.get(m.tool_call_id, 'The function')} returned: {m.content}"
        for m in tail
        if m.role == "tool"
    )
    return messages[:start] + [
        ChatMessage("assistant", "One moment."),
        ChatMessage("user", f"{results}\nNow answer my request in one short sentence."),
    ]


def _squash(text: str) -> str:
    return "".join(text.split())


class FollowUpGuard:
    """Watches a reply to tool results for what small models do instead of answering:
    calling a function whose result is there again, or repeating a result.

    ``feed`` passes the reply on, less such calls (later calls renumbered) and less
    text while it may still be a result repeated; ``finish`` says whether nothing but
    those came, so that the model should be asked again in words
    (:func:`results_as_text`).
    """

    def __init__(self, messages: list[ChatMessage]) -> None:
        tail = messages[_since_user(messages) :]
        self.answered = answered_calls(messages)
        self.results = [_squash(m.content) for m in tail if m.role == "tool" and m.content.strip()]
        self.active = any(m.role == "tool" for m in tail)
        """Whether the reply follows tool results (else it passes untouched)."""
        self._held = ""
        self._calls = 0
        self._passed = False
        self._dropped = False

    def feed(self, item: ReplyPiece) -> list[ReplyPiece]:
        """The next piece of the reply; returns what may be passed on now."""
        if isinstance(item, str):
            self._held += item
            held = _squash(self._held)
            if any(result.startswith(held) for result in self.results):
                return []
            return self._flush()
        if call_key(item.name, item.arguments) in self.answered:
            self._dropped = True
            return []
        out = self._flush() + [replace(item, index=self._calls)]
        self._calls += 1
        self._passed = True
        return out

    def finish(self) -> tuple[list[ReplyPiece], bool]:
        """The text still held, and whether to ask again in words."""
        if self._held and _squash(self._held) in self.results:
            self._held, self._dropped = "", True
        out = self._flush()
        return out, self._dropped and not self._passed

    def _flush(self) -> list[ReplyPiece]:
        text, self._held = self._held, ""
        if not text:
            return []
        self._passed = True
        return [text]
