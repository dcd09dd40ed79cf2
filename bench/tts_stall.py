"""TTS under a stalled reader, and memory after maximal requests (a real daemon).

Phase 1: ``--clients`` concurrent ``/api/tts`` clients for ``--seconds``. Phase 2: the
same with one more client that asks for long speech and then reads nothing. The
stalled reader may add at most 10 % to p95. Then ``--maximal`` requests of 1,999
characters with no sentence break to ``/v1/audio/speech``, and the daemon's RSS.
Run with ``.venv/bin/python -m bench.tts_stall``.
"""

from __future__ import annotations

import asyncio
import datetime
import socket
import tempfile
import time
from pathlib import Path

import httpx
import psutil

from bench.harness import arguments, machine, percentile, write_section
from tests.daemon import Daemon

TIMEOUT_S = 8.0
"""An answer slower than this counts as a failure (what the probe's clients waited)."""
WORDS = "lamp door kitchen window garden coffee morning evening music table".split()


async def client(url: str, index: int, until: float, out: list[float], failed: list[int]) -> None:
    # Clients wait longer than TIMEOUT_S, so that a slow answer is measured rather than
    # retried at once (retries of abandoned requests would pile up and measure those).
    async with httpx.AsyncClient(timeout=60.0) as http:
        n = 0
        while time.monotonic() < until:
            n += 1
            text = f"The {WORDS[(index + n) % 10]} number {index} {n} is ready."
            began = time.perf_counter()
            try:
                resp = await http.get(f"{url}/api/tts", params={"text": text, "nocache": "true"})
                if resp.status_code != 200 or resp.content[:4] != b"RIFF":
                    failed.append(resp.status_code)
                    continue
            except httpx.HTTPError:
                failed.append(0)
                continue
            took = time.perf_counter() - began
            out.append(took)
            if took > TIMEOUT_S:
                failed.append(200)


def stalled_reader(url: str) -> socket.socket:
    """A client that asks for long speech and never reads a byte of it."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    text = " ".join(f"Item {i} is on." for i in range(125)).replace(" ", "%20")
    sock.sendall(f"GET /api/tts?nocache=true&text={text} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    return sock


async def phase(url: str, clients: int, seconds: float) -> tuple[list[float], list[int]]:
    latencies: list[float] = []
    failed: list[int] = []
    until = time.monotonic() + seconds
    await asyncio.gather(*(client(url, i, until, latencies, failed) for i in range(clients)))
    return latencies, failed


def maximal(url: str, count: int, proc: psutil.Process) -> tuple[float, float, float]:
    """(RSS before, peak, after) in MB around ``count`` requests of 1,999 characters."""
    before = proc.memory_info().rss / 1e6
    peak = before
    text = ("word " * 400)[:1999]
    with httpx.Client(timeout=600) as http:
        for _ in range(count):
            resp = http.post(
                f"{url}/v1/audio/speech", json={"input": text, "response_format": "wav"}
            )
            assert resp.status_code == 200, resp.text
            peak = max(peak, proc.memory_info().rss / 1e6)
    return before, peak, proc.memory_info().rss / 1e6


def row(name: str, values: list[float], failed: list[int]) -> str:
    p50 = percentile(values, 0.50) * 1000
    p95 = percentile(values, 0.95) * 1000
    return f"| {name} | {len(values)} | {p50:.0f} | {p95:.0f} | {len(failed)} |"


def main(clients: int, seconds: float, count: int, write: bool = True) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        daemon = Daemon(Path(tmp)).start(timeout=180)
        try:
            assert daemon.proc is not None
            proc = psutil.Process(daemon.proc.pid)
            asyncio.run(phase(daemon.url, 2, 3))  # warm-up
            base, base_failed = asyncio.run(phase(daemon.url, clients, seconds))
            sock = stalled_reader(daemon.url)
            try:
                time.sleep(1.0)
                stalled, stalled_failed = asyncio.run(phase(daemon.url, clients, seconds))
            finally:
                sock.close()
            memory = maximal(daemon.url, count, proc)
        finally:
            daemon.stop()
    ratio = percentile(stalled, 0.95) / percentile(base, 0.95)
    # The bound is on p95; failures are reported beside it, since on a small machine
    # the baseline alone may already answer slower than TIMEOUT_S.
    verdict = "pass" if ratio <= 1.10 else "FAIL"
    text = (
        "## TTS under a stalled reader\n\n"
        f"Machine: {machine()}. Date: {datetime.date.today()}. A real `hearth serve` "
        f"(Piper `en_US-joe-medium`, `tts.workers: 1`). {clients} clients call `/api/tts` "
        f"(a short sentence, `nocache=true`, {TIMEOUT_S:g} s limit each) for {seconds:g} s, "
        "then again while one more client asks for 125 sentences (1,900 characters) and "
        "reads nothing. Failures: errors, and answers slower than 8 s. "
        f"Run with `.venv/bin/python -m bench.tts_stall`.\n\n"
        "| run | answers | p50 ms | p95 ms | failures |\n| --- | --- | --- | --- | --- |\n"
        f"{row('baseline', base, base_failed)}\n"
        f"{row('with a stalled reader', stalled, stalled_failed)}\n\n"
        f"p95 with the stalled reader / without: {ratio:.2f} (at most 1.10): **{verdict}**.\n\n"
        f"Memory: RSS {memory[0]:.0f} MB before {count} requests of 1,999 characters with no "
        f"sentence break to `/v1/audio/speech`, peak {memory[1]:.0f} MB, {memory[2]:.0f} MB "
        "after (text is synthesized in pieces of at most 240 characters).\n"
    )
    print(text)
    if write:
        write_section("tts-stall", text)


if __name__ == "__main__":
    parser = arguments(__doc__)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--maximal", type=int, default=20)
    args = parser.parse_args()
    main(args.clients, args.seconds, args.maximal, not args.no_write)
