"""Remote ASR: what a remote model adds, and many edges sharing one server.

Every process runs on this machine, on loopback. One ``hearth serve`` is the
"GPU server" (tiny.en, ``asr.max_batch`` 8, serving ``/v1/audio/transcriptions``);
four more are edges whose ``remote`` model points at it and whose ``tiny.en`` is
the same model decoded locally. Clients speak Wyoming to the edges, sending a 4 s
utterance plus 0.7 s of silence at real time; latency is audio-stop -> transcript.

- Overhead: one device at a time on edge 1, the remote model and the local one
  taking turns (median of N each).
- Many edges: 4 edges x 5 devices speaking at once through the remote model, beside
  the same 20 devices on one edge decoding locally with one worker (p50/p95).

Run: .venv/bin/python bench/remote_bench.py [--runs 8] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.results import machine, percentile, write_section  # noqa: E402
from bench.wyoming_bench import (  # noqa: E402
    CHUNK,
    RATE,
    TRAILING_S,
    UTTERANCE,
    UTTERANCE_S,
    Server,
    synthesize,
    wait_ready,
)
from daemon.audio.pcm import resample_pcm  # noqa: E402
from tests.daemon import Daemon  # noqa: E402
from tests.helpers import words  # noqa: E402

EDGES = 4
DEVICES = 5


async def transcribe(port: int, pcm: bytes, model: str) -> tuple[float, str]:
    """(audio-stop -> transcript s, text) through ``model``, audio sent at real time."""
    async with AsyncTcpClient("127.0.0.1", port) as c:
        await c.write_event(Transcribe(name=model, language="en").event())
        await c.write_event(AudioStart(rate=RATE, width=2, channels=1).event())
        step = CHUNK * 2
        began = time.perf_counter()
        for index, offset in enumerate(range(0, len(pcm), step)):
            chunk = AudioChunk(rate=RATE, width=2, channels=1, audio=pcm[offset : offset + step])
            await c.write_event(chunk.event())
            due = began + (index + 1) * CHUNK / RATE
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
        await c.write_event(AudioStop().event())
        stopped = time.perf_counter()
        while True:
            event = await asyncio.wait_for(c.read_event(), 120)
            assert event is not None, "the edge closed the connection"
            if event.type == "transcript":
                return time.perf_counter() - stopped, str(event.data["text"])
            if event.type == "error":
                raise RuntimeError(str(event.data))


async def crowd(targets: list[tuple[int, str]], pcm: bytes) -> tuple[list[float], int]:
    """Every (port, model) speaking at once: (latencies of correct transcripts, errors)."""
    results = await asyncio.gather(
        *(transcribe(port, pcm, model) for port, model in targets), return_exceptions=True
    )
    ok = [r for r in results if not isinstance(r, BaseException)]
    return [r[0] for r in ok if words(r[1]) == words(UTTERANCE)], len(results) - len(ok)


def edge_config(server: Daemon) -> str:
    return (
        "asr:\n  workers: 1\n  models:\n    tiny.en: {}\n    remote:\n      backend: remote\n"
        f"      remote:\n        base_url: {server.url}/v1\n        model: tiny.en\n"
    )


async def run(runs: int, rounds: int) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in ["server", *(f"edge{i}" for i in range(EDGES))]:
            (work / name).mkdir()
        server = Daemon(work / "server", extra="asr:\n  max_batch: 8\n  batch_window_ms: 5\n")
        server.start()
        edges = [Daemon(work / f"edge{i}", extra=edge_config(server)) for i in range(EDGES)]
        try:
            for edge in edges:
                edge.start(wait=False)
            ports = [edge.wyoming_port for edge in edges]
            await asyncio.gather(*(wait_ready(Server(f"edge{i}", p)) for i, p in enumerate(ports)))
            _, _, rate, spoken = await synthesize(Server("edge0", ports[0]), UTTERANCE)
            speech = np.frombuffer(resample_pcm(spoken, rate, RATE), dtype=np.int16)
            pad = max(0, int(UTTERANCE_S * RATE) - len(speech))
            audio = np.concatenate(
                [np.zeros(pad // 2, np.int16), speech, np.zeros(pad - pad // 2, np.int16)]
            )
            pcm = np.concatenate([audio, np.zeros(int(TRAILING_S * RATE), np.int16)]).tobytes()
            for port in ports:
                await transcribe(port, pcm, "remote")  # warm-up: connections, server
            await transcribe(ports[0], pcm, "tiny.en")

            single: dict[str, list[float]] = {"tiny.en": [], "remote": []}
            for _ in range(runs):  # interleaved so that drift hits both alike
                for model in single:
                    latency, text = await transcribe(ports[0], pcm, model)
                    if words(text) == words(UTTERANCE):
                        single[model].append(latency)

            remote_targets = [(p, "remote") for p in ports for _ in range(DEVICES)]
            local_targets = [(ports[0], "tiny.en")] * (EDGES * DEVICES)
            many: dict[str, list[float]] = {"remote": [], "local": []}
            errors = {"remote": 0, "local": 0}
            for _ in range(rounds):
                for name, targets in (("remote", remote_targets), ("local", local_targets)):
                    got, failed = await crowd(targets, pcm)
                    many[name] += got
                    errors[name] += failed
        finally:
            for edge in edges:
                edge.stop()
            server.stop()

    local_ms = statistics.median(single["tiny.en"]) * 1000
    remote_ms = statistics.median(single["remote"]) * 1000
    total = rounds * EDGES * DEVICES
    rows = [
        "## Remote ASR: overhead, and many edges on one server",
        "",
        f"Machine: {machine()}. Date: {datetime.date.today().isoformat()}. Everything on this "
        "one machine and on loopback: one `hearth serve` as the server (tiny.en int8 beam 1 on "
        "CPU, `asr.max_batch` 8) and four edges (`asr.workers` 1) whose model `remote` points "
        "at it; `tiny.en` on an edge is the same model decoded there. Wyoming clients send "
        f"{UTTERANCE_S} s of speech + {TRAILING_S} s of silence at real time; latency is "
        "audio-stop -> transcript, only correct transcripts count. On a GPU server the remote "
        "decode itself is far shorter; the overhead row is what the network path adds. Run "
        "with `.venv/bin/python bench/remote_bench.py`.",
        "",
        "| one device at a time | correct | median |",
        "| --- | --- | --- |",
        f"| local tiny.en on the edge | {len(single['tiny.en'])}/{runs} | {local_ms:.0f} ms |",
        f"| remote (same model on the server) | {len(single['remote'])}/{runs} "
        f"| {remote_ms:.0f} ms |",
        f"| **added by the remote path** (target <= 30 ms) | "
        f"| **{remote_ms - local_ms:+.0f} ms** |",
        "",
        f"| {EDGES * DEVICES} devices at once, {rounds} rounds | correct | errors | p50 | p95 |",
        "| --- | --- | --- | --- | --- |",
    ]
    labels = {
        "remote": f"{EDGES} edges x {DEVICES} devices -> one server (max_batch 8)",
        "local": f"{EDGES * DEVICES} devices on one edge, local, one worker",
    }
    for name, got in many.items():
        rows.append(
            f"| {labels[name]} | {len(got)}/{total} | {errors[name]} "
            f"| {percentile(got, 0.5) * 1000:.0f} ms | {percentile(got, 0.95) * 1000:.0f} ms |"
        )
    return "\n".join(rows)


def main() -> None:
    """Run the benchmark and write its section of bench/RESULTS.md."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    table = asyncio.run(run(args.runs, args.rounds))
    print(table)
    write_section("remote", table)


if __name__ == "__main__":
    main()
