"""The remote LLM backend against a real OpenAI-compatible server: llama.cpp's own,
serving the embedded LLM on a free loopback port."""

import subprocess
import sys
import time

import httpx
import pytest

from daemon.config import parse_config
from daemon.engines.hardware import HardwareReport
from daemon.engines.models import EMBEDDED_LLM, embedded_gguf
from daemon.runtime.loading import load_engines
from tests.helpers import free_port

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    port = free_port()
    # A file, not a pipe: the server logs a lot, and a full pipe would stall it.
    log = (tmp_path_factory.mktemp("llama") / "server.log").open("w+")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(embedded_gguf(EMBEDDED_LLM)),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise AssertionError(log.read()[-2000:])
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "llama.cpp server did not start"
            time.sleep(0.2)
        yield base
    finally:  # a server that did not start is stopped too
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


async def test_chat_and_spoken_reply_through_a_remote_server(llama_server, state_dir):
    config = parse_config(
        f"state_dir: {state_dir}\nllm:\n  backend: remote\n  max_tokens: 48\n"
        f"  remote:\n    base_url: {llama_server}\n    model: smollm2\n",
        "remote.yaml",
    )
    engines = load_engines(config, HardwareReport(cpu_count=2), asr=False)
    try:
        assert engines.llm.device == "remote"
        pieces = [p async for p in engines.chat.chat("r1", "Name a color.")]
        assert len(pieces) > 1 and "".join(pieces).strip()
        assert len(engines.chat.conversations.history("r1")) == 2
        events = [e async for e in engines.pipeline.run(text="Say hello.", conversation_id="r2")]
        assert sum(len(e.pcm) for e in events if hasattr(e, "pcm")) > 8000
    finally:
        await engines.llm.close()
        engines.close()


def test_cli_chat_with_the_remote_backend(llama_server, tmp_path):
    config = tmp_path / "remote.yaml"
    config.write_text(f"llm:\n  backend: remote\n  remote:\n    base_url: {llama_server}\n")
    result = subprocess.run(
        [sys.executable, "-m", "daemon.cli", "--config", str(config), "chat", "Hello!"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
