"""A local quantized GGUF model through llama-cpp-python."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any, cast

from daemon.engines.llm.base import ChatMessage, LlmEngine, Sampling
from daemon.engines.workers import WorkerPool
from daemon.errors import PromptTooLong

_LOGGER = logging.getLogger(__name__)
MESSAGE_OVERHEAD = 8
"""Template tokens around each message (role markers, separators)."""


class LocalLlm(LlmEngine):
    """One llama.cpp context; completions are serialized (a context is not reentrant)."""

    def __init__(
        self,
        path: Path,
        pool: WorkerPool,
        context_tokens: int = 2048,
        gpu_layers: int = 0,
        threads: int = 0,
        name: str | None = None,
    ) -> None:
        from llama_cpp import Llama

        self.name = name or path.stem
        self.path = path
        self.pool = pool
        self.context_tokens = context_tokens
        self.device = "cuda" if gpu_layers else "cpu"
        self._lock = threading.Lock()
        self._llama = Llama(
            model_path=str(path),
            n_ctx=context_tokens,
            n_gpu_layers=gpu_layers,
            n_threads=threads or None,
            verbose=False,
        )

    def count_tokens(self, messages: list[ChatMessage]) -> int:
        """Exact token count with the model's tokenizer, plus template overhead (blocking)."""
        total = 0
        for message in messages:
            tokens = self._llama.tokenize(message.content.encode("utf-8"), add_bos=False)
            total += len(tokens) + MESSAGE_OVERHEAD
        return total

    def check_fits(self, messages: list[ChatMessage], sampling: Sampling) -> None:
        """Raise PromptTooLong unless the prompt plus the reply fit the context (blocking)."""
        used = self.count_tokens(messages)
        if used + sampling.max_tokens > self.context_tokens:
            raise PromptTooLong(
                f"prompt is {used} tokens; with {sampling.max_tokens} for the reply it "
                f"exceeds the model's {self.context_tokens}-token context"
            )

    async def stream_chat(
        self, messages: list[ChatMessage], sampling: Sampling
    ) -> AsyncIterator[str]:
        """Stream the reply; tokenizing and generating run in the LLM worker."""
        payload: Any = [asdict(m) for m in messages]

        def work() -> Iterator[str]:
            # Tokenizing the prompt is CPU work too: here, not on the event loop.
            self.check_fits(messages, sampling)
            with self._lock:
                stream = self._llama.create_chat_completion(
                    messages=payload,
                    stream=True,
                    temperature=sampling.temperature,
                    top_p=sampling.top_p,
                    max_tokens=sampling.max_tokens,
                    repeat_penalty=sampling.repeat_penalty,
                )
                for chunk in cast(Iterator[dict[str, Any]], stream):
                    piece = chunk["choices"][0]["delta"].get("content")
                    if piece:
                        yield str(piece)

        async for piece in self.pool.stream(work):
            yield piece
