"""Remote servers on loopback for the remote-engine tests and benchmarks.

:class:`WhisperServer` runs faster-whisper-server, an OpenAI-compatible
transcription server that is not Hearth, over the embedded tiny.en folder (offline).
:class:`BadServer` answers every OpenAI path of its base URL badly, chosen by the
first path segment: ``/garbage/v1`` (200 with no JSON), ``/hang/v1`` (never
answers), ``/500/v1`` (500) and ``/huge/v1`` (200 with 8 MB). :class:`ToolServer`
answers chat completions with a streamed tool call.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from daemon.engines.models import EMBEDDED_ASR, embedded_path
from tests.helpers import free_port


class WhisperServer:
    """faster-whisper-server on a fixed loopback port; can be stopped and started again."""

    def __init__(self, logdir: Path, port: int = 0) -> None:
        self.port = port or free_port()
        self.logdir = logdir
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 90) -> WhisperServer:
        model = embedded_path(EMBEDDED_ASR["tiny.en"])
        assert model is not None, "the embedded tiny.en model is not installed"
        log = (self.logdir / f"fws-{time.monotonic_ns()}.log").open("wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "faster_whisper_server",
                str(model),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"faster-whisper-server exited: {log.name}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2).is_success:
                    return self
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "faster-whisper-server did not start"
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=20)
        self.proc = None


class _BadHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        self._answer()

    def _answer(self) -> None:
        mode = self.path.strip("/").split("/")[0]
        if mode == "hang":
            time.sleep(30)
            return
        status, body = {
            "garbage": (200, b"<html>surprise</html>"),
            "500": (500, b'{"error": "out of memory"}'),
            "huge": (200, b'{"text": "' + b"a" * (8 << 20) + b'"}'),
        }.get(mode, (404, b"{}"))
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass  # the client gave up reading: what a bad server sees


class BadServer:
    """A loopback HTTP server that answers garbage, hangs, fails or floods."""

    def __init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _BadHandler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, mode: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{mode}/v1"

    def __enter__(self) -> BadServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


class LlamaServer:
    """llama.cpp's own OpenAI-compatible server over the embedded LLM's GGUF."""

    def __init__(self, logdir: Path, port: int = 0) -> None:
        self.port = port or free_port()
        self.logdir = logdir
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 90) -> LlamaServer:
        from daemon.engines.models import EMBEDDED_LLM, embedded_gguf

        log = (self.logdir / f"llama-{time.monotonic_ns()}.log").open("wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(embedded_gguf(EMBEDDED_LLM)),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--n_ctx",
                "2048",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"llama.cpp server exited: {log.name}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "llama.cpp server did not start"
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=20)
        self.proc = None


class _ToolHandler(BaseHTTPRequestHandler):
    # HTTP/1.0: a streamed answer ends when the connection closes (no chunking needed).
    protocol_version = "HTTP/1.0"
    server: _ToolHTTPServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._send(200, b'{"object": "list", "data": [{"id": "fake-tools"}]}', "application/json")

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self.server.bodies.append(body)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for delta in _tool_deltas(body):
            chunk = {"id": "x", "object": "chat.completion.chunk", "choices": [delta]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")

    def _send(self, status: int, body: bytes, media: str) -> None:
        self.send_response(status)
        self.send_header("content-type", media)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _tool_deltas(body: dict[str, Any]) -> list[dict[str, Any]]:
    """What :class:`ToolServer` streams for a request ``body``: a call of the named (else
    the first) tool, its arguments in two pieces; words after a tool result."""
    tools = body.get("tools") or []
    choice = body.get("tool_choice")
    if body["messages"][-1]["role"] == "tool" or not tools or choice == "none":
        words = ["The kitchen", " lights are", " on."]
        deltas = [{"index": 0, "delta": {"content": w}, "finish_reason": None} for w in words]
        return deltas + [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    name = tools[0]["function"]["name"]
    if isinstance(choice, dict):
        name = choice["function"]["name"]
    first = {"index": 0, "id": "call_remote1", "type": "function"}
    first["function"] = {"name": name, "arguments": ""}
    pieces = ['{"room": ', '"kitchen"}']
    deltas = [{"index": 0, "delta": {"role": "assistant", "tool_calls": [first]}}]
    for piece in pieces:
        call = {"index": 0, "function": {"arguments": piece}}
        deltas.append({"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None})
    return deltas + [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]


class _ToolHTTPServer(ThreadingHTTPServer):
    bodies: list[dict[str, Any]]


class ToolServer:
    """An OpenAI-compatible chat server on loopback that answers with a tool call.

    It streams a call of the tool ``tool_choice`` names (else the first tool) with
    arguments ``{"room": "kitchen"}``, in OpenAI's streamed ``tool_calls`` deltas;
    after a ``tool`` result, or without tools, it streams a sentence. Every request
    body is kept in :attr:`bodies`.
    """

    def __init__(self) -> None:
        self.server = _ToolHTTPServer(("127.0.0.1", 0), _ToolHandler)
        self.server.daemon_threads = True
        self.server.bodies = []
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return self.server.bodies

    def __enter__(self) -> ToolServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
