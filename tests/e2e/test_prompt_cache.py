"""The embedded LLM from a saved system-prompt state: the same reply, fewer tokens."""

from pathlib import Path

import pytest

from daemon.config import LlmConfig
from daemon.engines.llm.base import ChatMessage, Sampling
from daemon.engines.llm.local import LocalLlm
from daemon.engines.llm.prompt_cache import PromptCache
from daemon.engines.llm.prompt_state import ALIGN_TOKENS
from daemon.engines.models import resolve_gguf
from daemon.engines.workers import WorkerPool

pytestmark = pytest.mark.e2e
QUESTION = "Give me a tip for sleeping better."


async def test_a_saved_system_prompt_gives_the_same_reply_with_fewer_tokens(tmp_path: Path):
    pool = WorkerPool("llm", 1, 4)
    llm = LocalLlm(resolve_gguf("", tmp_path), pool, cache_dir=tmp_path / "llm")
    assert llm.prompt_cache is not None
    identity = llm.prompt_cache.identity
    evaluated = 0
    real_eval = llm._llama.eval

    def counting_eval(tokens):
        nonlocal evaluated
        evaluated += len(tokens)
        return real_eval(tokens)

    llm._llama.eval = counting_eval
    messages = [ChatMessage("system", LlmConfig().system_prompt), ChatMessage("user", QUESTION)]
    sampling = Sampling(temperature=0.0, max_tokens=24)

    async def ask(cache: PromptCache | None) -> tuple[str, int]:
        """A reply from a fresh context (as a new process has), and the tokens evaluated."""
        nonlocal evaluated
        llm.prompt_cache = cache
        llm._llama.reset()
        evaluated = 0
        text = "".join([p async for p in llm.stream_chat(messages, sampling)])
        return text, evaluated

    plain, plain_tokens = await ask(None)
    cache = PromptCache(identity, tmp_path / "llm")
    cold, cold_tokens = await ask(cache)  # evaluates the system turn, then the rest
    warm, warm_tokens = await ask(cache)  # restores it from memory
    assert not list((tmp_path / "llm").glob("*.kv"))  # a reply writes nothing to disk

    # Priming writes it to disk; a new process (a new cache) reads it from there.
    llm.prompt_cache = PromptCache(identity, tmp_path / "llm")
    llm._llama.reset()
    assert llm.prime(LlmConfig().system_prompt)
    assert len(list((tmp_path / "llm").glob("*.kv"))) == 1
    from_disk, disk_tokens = await ask(PromptCache(identity, tmp_path / "llm"))
    assert plain.strip()
    assert cold == warm == from_disk == plain
    assert cold_tokens == plain_tokens
    assert warm_tokens == disk_tokens == plain_tokens - llm.reused_tokens
    assert llm.reused_tokens >= 16
    assert cache.ram_hits == 1 and llm.prompt_cache.disk_hits == 1

    # The prompt rendered here is the one chat completion gave the model.
    plan = llm.states.plan(messages)
    assert plan is not None
    prompt, prefix = plan
    assert llm._llama.input_ids[: len(prompt)].tolist() == prompt
    assert len(prefix) == llm.reused_tokens

    # Priming from memory: the context holds the system turn again.
    llm._llama.reset()
    assert llm.prime(LlmConfig().system_prompt)
    assert llm.states.held(prefix) == len(prefix) and llm.prompt_cache.ram_hits == 1

    # A speaker named after the configured prompt: its state is built from the primed
    # one (only the speaker's sentence evaluated), and the reply is still the same.
    named = [
        ChatMessage("system", LlmConfig().system_prompt + "\n\nThe person speaking is Anna."),
        ChatMessage("user", QUESTION),
    ]
    messages[:] = named
    primed = llm.prompt_cache
    anna, anna_tokens = await ask(None)
    llm._llama.reset()
    llm.prompt_cache = primed
    assert llm.prime(LlmConfig().system_prompt)
    evaluated = 0
    anna_cached = "".join([p async for p in llm.stream_chat(named, sampling)])
    assert anna_cached == anna
    # The configured prompt up to the block before the speaker's sentence is reused.
    assert evaluated <= anna_tokens - (len(prefix) - 2 * ALIGN_TOKENS)
    await llm.close()
    pool.close()
