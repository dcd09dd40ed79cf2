"""The remote LLM over several endpoints: failover, local fallback, and coming back.

llama.cpp's own server serves the embedded SmolLM2 on loopback; a second endpoint
is a port nothing listens on."""

from __future__ import annotations

import asyncio
import time

import pytest

from daemon.config import parse_config
from daemon.engines.hardware import HardwareReport
from daemon.runtime.loading import load_engines
from tests.helpers import free_port
from tests.remote_servers import LlamaServer

pytestmark = pytest.mark.e2e


async def reply(engines, conversation: str, text: str) -> str:
    async with asyncio.timeout(120):
        return "".join([p async for p in engines.chat.chat(conversation, text)])


async def test_failover_fallback_and_recovery(tmp_path, state_dir):
    server = LlamaServer(tmp_path).start()
    dead = f"http://127.0.0.1:{free_port()}/v1"
    config = parse_config(
        f"state_dir: {state_dir}\nllm:\n  backend: remote\n  max_tokens: 16\n"
        f"  remote:\n    base_url: {dead}\n    base_urls: [{server.base_url}]\n"
        "    model: smollm2\n    retry_s: 0.3\n    timeout_s: 60\n    fallback: embedded\n",
        "remote.yaml",
    )
    engines = load_engines(config, HardwareReport(cpu_count=2), asr=False, tts=False)
    llm = engines.llm
    try:
        assert (await reply(engines, "c1", "Name a color.")).strip()
        assert (await reply(engines, "c1", "And another?")).strip()
        live = next(e for e in llm.endpoints.endpoints if e.url == server.base_url)
        assert live.requests >= 2 and not llm.endpoints.endpoints[0].healthy
        assert llm.endpoints.fallbacks.total() == 0

        server.stop()
        assert (await reply(engines, "c2", "Say hi.")).strip()  # the local SmolLM2
        assert llm.endpoints.fallbacks.total() == 1
        gauges = engines.gauges().remote
        assert any(kind == "llm" and n == 1 for kind, _, _, n in gauges.fallbacks)

        server.start()
        deadline = time.monotonic() + 30
        while not live.healthy:
            assert time.monotonic() < deadline, "the server never came back into use"
            await asyncio.sleep(0.1)
        sent = live.requests
        assert (await reply(engines, "c3", "Say bye.")).strip()
        assert live.requests == sent + 1 and llm.endpoints.fallbacks.total() == 1
    finally:
        await llm.close()
        engines.close()
        server.stop()
