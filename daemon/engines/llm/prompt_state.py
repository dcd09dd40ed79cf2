"""The evaluated state of a chat's system turn, kept and put back into llama.cpp.

A plain reply starts from the saved state of its system turn when one is kept
(:mod:`daemon.engines.llm.prompt_cache`): only the conversation after it is evaluated.
:meth:`PromptStates.prime` prepares the configured system prompt's state at load
time (from disk when saved there). llama.cpp then evaluates the prompt from where the
context's tokens stop matching it, rounded down to a block boundary
(:data:`ALIGN_TOKENS`): the reply is the one a cold context gives, token for token.

Every method but :meth:`PromptStates.plan` runs holding the model's lock.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from typing import Any

from daemon.engines.llm.base import ChatMessage, ToolSet
from daemon.engines.llm.local_tools import ChatTemplate
from daemon.engines.llm.prompt_cache import PromptCache, SavedPrefix, common_prefix

_LOGGER = logging.getLogger(__name__)

ALIGN_TOKENS = 8
"""Evaluation resumes only at a multiple of this many prompt tokens.

llama.cpp's CPU kernels multiply a batch's rows in groups of four and the rows left
over one by one, with sums in another order: a row's logits depend on where its
batch began. Resuming at a block boundary keeps every row in the group it has when
the whole prompt is evaluated at once, so a reply from a saved state is the one a
cold context gives, token for token (at most this many tokens are evaluated again).
"""
MIN_PREFIX_TOKENS = ALIGN_TOKENS
"""A shorter system turn is not worth saving."""
PRIME_QUESTION = "Hello."
"""A user turn after the system prompt, to find where that turn ends in the template."""


class PromptStates:
    """Saved system-turn states of one llama.cpp context."""

    reused_tokens = 0
    """Prompt tokens the last plain reply started from, evaluated before it."""

    def __init__(self, llama: Any, template: ChatTemplate, cache: PromptCache | None) -> None:
        self.llama = llama
        self.template = template
        self.cache = cache
        """Saved states (None: off; :meth:`plan` then says there is nothing to do)."""

    def prime(self, system_prompt: str, lock: threading.Lock) -> bool:
        """Have ``system_prompt``'s turn evaluated, from disk when saved (blocking).

        The first reply then evaluates only its own turn. A state evaluated here is
        written to disk (when a folder is set); those of other system turns (a speaker
        named, a client's own instructions) are kept in memory only. Returns whether a
        state is kept (False: prompt caching is off, or there is no system prompt).
        """
        if not system_prompt:
            return False
        plan = self.plan(
            [ChatMessage("system", system_prompt), ChatMessage("user", PRIME_QUESTION)]
        )
        if plan is None:
            return False
        cache = self.cache
        assert cache is not None
        with lock:
            saved = self.take(*plan)
        path = cache.path(plan[1])
        if path is not None and not path.exists():
            saved = saved or cache.get(plan[1])  # evaluated by a reply before
            if saved is not None:
                cache.write(saved)
        return True

    def tokens(self, messages: list[ChatMessage]) -> list[int]:
        """The prompt chat completions give the model for ``messages``, as tokens."""
        assert self.template is not None
        prompt = self.template.render(messages, ToolSet())
        return list(self.llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))

    def plan(self, messages: list[ChatMessage]) -> tuple[list[int], list[int]] | None:
        """The prompt's tokens and its system turn's (None: nothing to save or restore).

        The system turn's tokens are what the prompt shares with the system messages
        rendered alone: the template's text up to where the next turn begins.
        """
        if self.cache is None:
            return None
        count = next((i for i, m in enumerate(messages) if m.role != "system"), len(messages))
        if count == 0 or count == len(messages):
            return None
        try:
            prompt = self.tokens(messages)
            alone = self.tokens(messages[:count])
        except Exception as exc:  # noqa: BLE001 - the reply goes on without a saved state
            _LOGGER.debug("No system-turn state for this prompt: %s", exc)
            return None
        shared = _aligned(min(common_prefix(prompt, alone), len(prompt) - 1))
        if shared < MIN_PREFIX_TOKENS:
            return None
        return prompt, prompt[:shared]

    def held(self, tokens: list[int]) -> int:
        """How many leading ``tokens`` the context holds evaluated now."""
        llama = self.llama
        return common_prefix(llama.input_ids[: llama.n_tokens].tolist(), tokens)

    def take(self, prompt: list[int], prefix: list[int]) -> SavedPrefix | None:
        """Leave the context holding ``prefix`` evaluated (under the lock).

        From the context itself, a saved state (memory, then disk), or evaluated here
        (from the saved state sharing most of it). Returns a state evaluated here and
        not written to disk yet.
        """
        cache = self.cache
        assert cache is not None
        unsaved: SavedPrefix | None = None
        held = self.held(prefix)
        if held < len(prefix):
            saved = cache.get(prefix)
            if saved is None or not self._restore(saved):
                unsaved = self._evaluate(prefix, _aligned(held))
        # The reply's own tokens are evaluated from a block boundary (see ALIGN_TOKENS);
        # the prefix is held now, and it ends on one.
        keep = _aligned(min(self.held(prompt), len(prompt) - 1))
        self.llama.n_tokens = keep
        self.reused_tokens = keep
        return unsaved

    def _evaluate(self, prefix: list[int], held: int) -> SavedPrefix | None:
        """Evaluate ``prefix`` after its first ``held`` tokens, or after a kept state
        sharing more; keep the result in memory and return it."""
        cache = self.cache
        assert cache is not None
        closest, shared = cache.best_match(prefix)
        shared = _aligned(shared)
        if closest is not None and shared > held:
            held = shared if self._restore(closest) else 0
        llama = self.llama
        if held == 0:
            llama.reset()
        llama.n_tokens = held  # eval() drops what the context holds beyond this
        llama.eval(prefix[held:])
        saved = self._capture(prefix)
        if saved is not None:
            cache.put(saved, disk=False)
        return saved

    def _capture(self, tokens: list[int]) -> SavedPrefix | None:
        """The context's state, holding ``tokens`` evaluated.

        Like ``Llama.save_state`` without its copy of the logits of every prompt token
        (``n_tokens`` x vocabulary floats, unused when sampling without logprobs).
        """
        import llama_cpp

        ctx = self.llama.ctx
        size = int(llama_cpp.llama_state_get_size(ctx))
        buffer = (ctypes.c_uint8 * size)()
        written = int(llama_cpp.llama_state_get_data(ctx, buffer, size))
        if written <= 0 or written > size:
            _LOGGER.warning("Could not save the prompt state (%d of %d bytes)", written, size)
            return None
        return SavedPrefix(tuple(tokens), ctypes.string_at(buffer, written))

    def _restore(self, saved: SavedPrefix) -> bool:
        """Put ``saved`` into the context (False: it did not fit, the context is reset).

        Like ``Llama.load_state``, without touching the logits array or the seed: the
        next generation evaluates at least one token, and samples as it would have.
        """
        import llama_cpp

        llama = self.llama
        size = len(saved.state)
        buffer = (ctypes.c_uint8 * size).from_buffer_copy(saved.state)
        if int(llama_cpp.llama_state_set_data(llama.ctx, buffer, size)) != size:
            _LOGGER.warning("A saved prompt state did not load; evaluating the prompt")
            llama.reset()
            return False
        count = len(saved.tokens)
        llama.input_ids[:count] = saved.tokens
        llama.n_tokens = count
        llama._requires_eval = True  # its logits are not the live ones
        return True


def _aligned(count: int) -> int:
    """``count`` rounded down to a multiple of ALIGN_TOKENS."""
    return count - count % ALIGN_TOKENS
