"""A local quantized GGUF model through llama-cpp-python.

Plain replies go through llama-cpp-python's chat completion. Replies that may call
tools render the model's own chat template with the tools
(:mod:`daemon.engines.llm.local_tools`) and read the calls back from the text
(:class:`~daemon.engines.llm.toolcalls.ToolCallParser`).

A plain reply starts from the saved state of its system turn when one is kept
(:mod:`daemon.engines.llm.prompt_state`): only the conversation after it is evaluated,
and the reply is the one a cold context gives, token for token.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, cast

from daemon.engines.llm.base import (
    ChatMessage,
    LlmEngine,
    ReplyPiece,
    Sampling,
    ToolChoice,
    ToolSet,
)
from daemon.engines.llm.local_tools import ChatTemplate, call_grammar
from daemon.engines.llm.prompt_cache import PromptCache, model_identity
from daemon.engines.llm.prompt_state import PromptStates
from daemon.engines.llm.toolcalls import (
    OPEN,
    FollowUpGuard,
    ToolCallParser,
    parse_calls,
    results_as_text,
)
from daemon.engines.workers import WorkerPool
from daemon.errors import ModelUnavailable, PromptTooLong

_LOGGER = logging.getLogger(__name__)
MESSAGE_OVERHEAD = 8
"""Template tokens around each message (role markers, separators)."""


class LocalLlm(LlmEngine):
    """One llama.cpp context; completions are serialized (a context is not reentrant)."""

    states: PromptStates | None = None
    """Saved system-turn states (None: the model cannot use them)."""

    def __init__(
        self,
        path: Path,
        pool: WorkerPool,
        context_tokens: int = 2048,
        gpu_layers: int = 0,
        threads: int = 0,
        name: str | None = None,
        prompt_cache: bool = True,
        cache_dir: Path | None = None,
    ) -> None:
        """Load the model.

        Args:
            threads: threads to generate with (0: llama.cpp's choice, half the cores).
            prompt_cache: keep the evaluated state of system prompts (in memory).
            cache_dir: with ``prompt_cache``, also keep those states in this folder, so
                that a new process starts warm.
        """
        from daemon.engines.cpu import select_llama

        choice = select_llama()  # before llama_cpp loads a library this CPU cannot run
        if choice.build is None:
            raise ModelUnavailable(choice.reason)
        import llama_cpp
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
        self._template = ChatTemplate.of(self._llama)
        # Recurrent models cannot drop the end of a sequence: nothing to restore into.
        recurrent = getattr(self._llama, "_is_recurrent", False) or getattr(
            self._llama, "_is_hybrid", False
        )
        if self._template is not None and not recurrent:
            identity = model_identity(path, context_tokens, llama_cpp.__version__)
            cache = PromptCache(identity, cache_dir) if prompt_cache else None
            self.states = PromptStates(self._llama, self._template, cache)

    def count_tokens(self, messages: list[ChatMessage]) -> int:
        """Exact token count with the model's tokenizer, plus template overhead (blocking)."""
        total = 0
        for message in messages:
            text = message.content + "".join(c.name + c.arguments for c in message.tool_calls)
            tokens = self._llama.tokenize(text.encode("utf-8"), add_bos=False)
            total += len(tokens) + MESSAGE_OVERHEAD
        return total

    def check_fits(
        self, messages: list[ChatMessage], sampling: Sampling, prompt: str | None = None
    ) -> None:
        """Raise PromptTooLong unless the prompt plus the reply fit the context (blocking).

        ``prompt``: the rendered prompt, counted exactly (tool definitions included).
        """
        if prompt is None:
            used = self.count_tokens(messages)
        else:
            used = len(self._llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))
        if used + sampling.max_tokens > self.context_tokens:
            raise PromptTooLong(
                f"prompt is {used} tokens; with {sampling.max_tokens} for the reply it "
                f"exceeds the model's {self.context_tokens}-token context"
            )

    async def stream_chat(
        self, messages: list[ChatMessage], sampling: Sampling
    ) -> AsyncIterator[str]:
        """Stream the reply; tokenizing and generating run in the LLM worker."""
        payload: Any = [m.to_openai() for m in messages]

        def work() -> Iterator[str]:
            # Tokenizing the prompt is CPU work too: here, not on the event loop.
            self.check_fits(messages, sampling)
            states = self.states
            plan = None if states is None else states.plan(messages)
            with self._lock:
                if states is not None and plan is not None:
                    # A state evaluated here stays in memory: only prime() writes to disk.
                    states.take(*plan)
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

    @property
    def prompt_cache(self) -> PromptCache | None:
        """The saved states' store (None: prompt caching is off)."""
        return None if self.states is None else self.states.cache

    @prompt_cache.setter
    def prompt_cache(self, cache: PromptCache | None) -> None:
        if self.states is not None:
            self.states.cache = cache

    @property
    def reused_tokens(self) -> int:
        """Prompt tokens the last plain reply started from, evaluated before it."""
        return 0 if self.states is None else self.states.reused_tokens

    def prime(self, system_prompt: str) -> bool:
        """Have ``system_prompt``'s turn evaluated, from disk when saved (blocking).

        Returns whether a state is kept (False: prompt caching is off, or there is no
        system prompt).
        """
        return self.states is not None and self.states.prime(system_prompt, self._lock)

    def stream_tools(
        self, messages: list[ChatMessage], sampling: Sampling, tools: ToolSet
    ) -> AsyncIterator[ReplyPiece]:
        """Stream a reply that may call ``tools``, through the model's own template.

        Unless a call is forced, what small models answer instead of a call or words
        is dropped: calls of functions not offered, stray JSON, and after tool results
        a call repeated or a result echoed
        (:class:`~daemon.engines.llm.toolcalls.FollowUpGuard`). When nothing else came,
        the model is asked again without tools (the calls and results told in plain
        turns).
        """
        if self._template is None or not self._template.takes_tools:
            return super().stream_tools(messages, sampling, tools)
        return self._tool_reply(messages, sampling, tools)

    async def _tool_reply(
        self, messages: list[ChatMessage], sampling: Sampling, tools: ToolSet
    ) -> AsyncIterator[ReplyPiece]:
        names = [t.name for t in tools.usable()]
        parser = ToolCallParser(names, inside=tools.forced, strict=not tools.forced)
        pieces = self._generate(messages, sampling, tools, parser)
        if tools.forced:
            async for item in pieces:
                yield item
            return
        guard = FollowUpGuard(messages)
        passed = False
        async for item in pieces:
            for out in guard.feed(item):
                passed = True
                yield out
        rest, again = guard.finish()
        for out in rest:
            passed = True
            yield out
        if passed or not (again or parser.dropped):
            return
        # Nothing but an invented function, stray JSON, or a call or result repeated:
        # once more, in words.
        _LOGGER.info("The model answered no usable call or words; asking it for words")
        words = results_as_text(messages) if guard.active else messages
        none = ToolSet(tools.tools, ToolChoice("none"))
        async for item in self._generate(words, sampling, none, ToolCallParser(())):
            yield item

    def _generate(
        self,
        messages: list[ChatMessage],
        sampling: Sampling,
        tools: ToolSet,
        parser: ToolCallParser,
    ) -> AsyncIterator[ReplyPiece]:
        """One generation with the template: its text and the calls ``parser`` finds."""
        template = self._template
        assert template is not None
        usable = tools.usable()
        forced = tools.forced

        def work() -> Iterator[str]:
            # Rendering, tokenizing and compiling the grammar are CPU work: here.
            prompt = template.render(messages, tools) + (f"{OPEN}\n" if forced else "")
            self.check_fits(messages, sampling, prompt)
            grammar = call_grammar(usable) if forced else None
            with self._lock:
                stream = self._llama.create_completion(
                    prompt,
                    stream=True,
                    temperature=sampling.temperature,
                    top_p=sampling.top_p,
                    max_tokens=sampling.max_tokens,
                    # A forced call is JSON: its braces and quotes must not be penalized.
                    repeat_penalty=1.0 if forced else sampling.repeat_penalty,
                    stop=template.stop,
                    grammar=grammar,
                )
                for chunk in cast(Iterator[dict[str, Any]], stream):
                    piece = chunk["choices"][0]["text"]
                    if piece:
                        yield str(piece)

        return parse_calls(self.pool.stream(work), parser)
