"""The narrow interface the pipeline needs from a chat model.

An engine streams a reply's text (:meth:`LlmEngine.stream_chat`) and, when tools are
offered, its text and calls (:meth:`LlmEngine.stream_tools`). The value types it
speaks in (turns, tools, calls, sampling) are in :mod:`~daemon.engines.llm.values`,
re-exported here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator

from daemon.engines.llm.toolcalls import hermes_reply
from daemon.engines.llm.values import (
    MAX_CALL_ID,
    MAX_SCHEMA_DEPTH,
    MAX_TOOL_CHARS,
    MAX_TOOLS,
    MAX_TOOLS_CHARS,
    TOOL_NAME,
    ChatMessage,
    ChatOptions,
    Reply,
    ReplyPiece,
    Role,
    Sampling,
    Tool,
    ToolCall,
    ToolCallDelta,
    ToolChoice,
    ToolSet,
    tool_set,
)

__all__ = [
    "MAX_CALL_ID",
    "MAX_SCHEMA_DEPTH",
    "MAX_TOOLS",
    "MAX_TOOLS_CHARS",
    "MAX_TOOL_CHARS",
    "TOOL_NAME",
    "ChatMessage",
    "ChatOptions",
    "LlmEngine",
    "Reply",
    "ReplyPiece",
    "Role",
    "Sampling",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "ToolChoice",
    "ToolSet",
    "tool_set",
]


class LlmEngine(ABC):
    """A chat model; ``stream_chat`` yields text pieces as they are generated."""

    name: str
    device: str
    context_tokens: int
    """Context window in tokens (0 when unknown, e.g. remote)."""

    @abstractmethod
    def stream_chat(self, messages: list[ChatMessage], sampling: Sampling) -> AsyncIterator[str]:
        """Stream the assistant's reply to ``messages``."""

    def stream_tools(
        self, messages: list[ChatMessage], sampling: Sampling, tools: ToolSet
    ) -> AsyncIterator[ReplyPiece]:
        """Stream a reply that may call ``tools``: text pieces and tool-call deltas.

        By default the tools are described in the system turn in the Hermes format
        (``<tools>`` and ``<tool_call>`` tags, which Qwen, Hermes and many other models
        are trained on), and the calls are read back from the text. Engines with a
        native way (a chat template that takes tools, a remote server) override it.

        Args:
            messages: the conversation, tool calls and results included.
            sampling: sampling settings.
            tools: the tools offered and the choice among them.
        """
        return hermes_reply(self.stream_chat, messages, sampling, tools)

    def count_tokens(self, messages: list[ChatMessage]) -> int:
        """Tokens the prompt takes (an estimate where the model is remote)."""
        return sum(m.size // 3 + 8 for m in messages)

    async def close(self) -> None:  # noqa: B027 - optional hook, nothing to release by default
        """Release resources; safe to call more than once."""
