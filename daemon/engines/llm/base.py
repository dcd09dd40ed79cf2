"""The narrow interface the pipeline needs from a chat model."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class ChatMessage:
    """One chat turn."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class Sampling:
    """Sampling settings for one completion."""

    temperature: float = 0.0
    top_p: float = 0.9
    max_tokens: int = 128
    repeat_penalty: float = 1.1
    """Penalty on tokens already in the context (1.0: none); local models only."""


class LlmEngine(ABC):
    """A chat model; ``stream_chat`` yields text pieces as they are generated."""

    name: str
    device: str
    context_tokens: int
    """Context window in tokens (0 when unknown, e.g. remote)."""

    @abstractmethod
    def stream_chat(self, messages: list[ChatMessage], sampling: Sampling) -> AsyncIterator[str]:
        """Stream the assistant's reply to ``messages``."""

    def count_tokens(self, messages: list[ChatMessage]) -> int:
        """Tokens the prompt takes (an estimate where the model is remote)."""
        return sum(len(m.content) // 3 + 8 for m in messages)

    async def close(self) -> None:  # noqa: B027 - optional hook, nothing to release by default
        """Release resources; safe to call more than once."""
