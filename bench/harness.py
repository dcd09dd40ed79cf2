"""What every benchmark shares: its arguments, the machine, repeated runs, a tree from
another revision served beside this one, and its own section of bench/RESULTS.md.

Every benchmark runs from the repository root as ``python -m bench.<name>``.

- :func:`arguments`: the arguments every benchmark has (``--runs``, ``--before``,
  ``--no-write``), each only where it applies;
- :func:`machine`: the CPU, cores, GPU and Python version, for the record;
- :func:`timed`, :func:`median`, :func:`percentile`, :func:`ms`, :func:`spread`,
  :func:`rss_mb`: repeated runs and what is reported of them; :class:`InTurn`: several
  daemons measured in turn, request by request;
- :func:`real_time`, :func:`wyoming_audio`, :func:`hearth_speech`,
  :func:`handsfree_clients`: the clients' pieces several benches share;
- :func:`worktree`: a git revision checked out beside this tree (the one way a
  benchmark compares with a revision), :func:`serving`: ``hearth serve`` from a given
  tree, and :func:`piper_speech` of :data:`HOME_COMMANDS`: what both trees hear;
- :func:`publish` and :func:`write_section`: one benchmark's section of
  bench/RESULTS.md, printed and written, the others kept.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    import numpy as np

    from tests.daemon import Daemon
    from tests.webrtc_client import RtcClient

ROOT = Path(__file__).resolve().parents[1]
"""The repository root: the tree being measured (the "after")."""
RESULTS = Path(__file__).with_name("RESULTS.md")
ORDER = ("headline", "core", "wyoming", "willow", "webrtc")
"""Sections appear in this order; unknown ones go last. ``headline`` holds the few
numbers a reader looks for first, each with a link to its section."""
TITLE = "# Benchmark results"
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


# ---------------------------------------------------------------- arguments


def arguments(
    doc: str | None,
    *,
    runs: int | None = None,
    runs_help: str = "runs",
    before: str | bool | None = None,
    write: bool = True,
) -> argparse.ArgumentParser:
    """The argument parser a benchmark starts from: its docstring's first line as the
    description, and the shared options it asks for. ``runs``: ``--runs`` with that
    default (``runs_help`` saying what one run is); ``before``: ``--before``, the git
    revision to compare with (that default, or required when ``True``); ``write``:
    ``--no-write`` (print only, RESULTS.md left as it is). A benchmark adds its own
    options to what it returns."""
    out = argparse.ArgumentParser(
        prog=f"python -m bench.{Path(sys.argv[0]).stem}",
        description=(doc or "").strip().split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if runs is not None:
        out.add_argument("--runs", type=int, default=runs, help=f"{runs_help} (default {runs})")
    if before is True:
        out.add_argument("--before", required=True, help="git revision to compare with")
    elif before:
        out.add_argument(
            "--before", default=before, help=f"git revision to compare with (default {before})"
        )
    if write:
        out.add_argument(
            "--no-write", action="store_true", help="print only, do not write bench/RESULTS.md"
        )
    return out


# ---------------------------------------------------------------- the machine


def machine() -> str:
    """CPU model, cores, GPU and Python version, for the record."""
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from daemon.engines.hardware import probe

    gpu = ", ".join(g.name for g in probe().gpus) or "no GPU"
    return f"{cpu}, {os.cpu_count()} cores, {gpu}, Python {platform.python_version()}"


# ---------------------------------------------------------------- bench/RESULTS.md


def _sections(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    rest = text
    while (start := rest.find("<!-- ")) != -1:
        head_end = rest.find(" -->", start)
        tag = rest[start + 5 : head_end]
        if not tag.endswith(":start"):
            rest = rest[head_end + 4 :]
            continue
        name = tag[: -len(":start")]
        end_marker = f"<!-- {name}:end -->"
        stop = rest.find(end_marker, head_end)
        if stop == -1:
            break
        out[name] = rest[head_end + 4 : stop].strip("\n")
        rest = rest[stop + len(end_marker) :]
    return out


def write_section(name: str, markdown: str, path: Path = RESULTS) -> None:
    """Replace (or add) section ``name`` of the results file, keeping the others."""
    sections = _sections(path.read_text(encoding="utf-8")) if path.exists() else {}
    sections[name] = markdown.strip("\n")
    names = [n for n in ORDER if n in sections] + sorted(n for n in sections if n not in ORDER)
    body = f"{TITLE}\n\n{contents([sections[n] for n in names])}\n\n" + "\n\n".join(
        f"<!-- {n}:start -->\n{sections[n]}\n<!-- {n}:end -->" for n in names
    )
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as tmp:
        tmp.write(body + "\n")
    os.replace(tmp.name, path)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as
    hyphens (a repeated one gets -1, -2...: see :func:`contents`)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def contents(sections: list[str]) -> str:
    """The table of contents: a link to the first ``##`` heading of each section, with
    the anchors GitHub gives (every heading of the page counted, the title's too)."""
    seen: Counter[str] = Counter()

    def anchor(text: str) -> str:
        base = slug(text)
        seen[base] += 1
        return f"{base}-{seen[base] - 1}" if seen[base] > 1 else base

    anchor(TITLE.lstrip("# "))
    anchor("Contents")
    entries = []
    for section in sections:
        first = None
        fenced = False
        for line in section.splitlines():
            if _FENCE.match(line):
                fenced = not fenced
                continue
            if fenced or not (match := _HEADING.match(line)):
                continue
            target = anchor(match.group(2))
            if first is None and match.group(1) == "##":
                first = f"- [{match.group(2)}](#{target})"
        if first is not None:
            entries.append(first)
    return "## Contents\n\n" + "\n".join(entries)


# ---------------------------------------------------------------- repeated runs


def timed(job: Callable[[], Any], runs: int, warmup: int = 0) -> list[float]:
    """Seconds of each of ``runs`` calls of ``job`` (after ``warmup`` untimed ones); a
    coroutine function is run to its end on its own event loop each time."""

    def once() -> float:
        began = time.perf_counter()
        result = job()
        if asyncio.iscoroutine(result):
            asyncio.run(result)
        return time.perf_counter() - began

    for _ in range(warmup):
        once()
    return [once() for _ in range(runs)]


def median(values: list[float]) -> float:
    """The median, or NaN for no values."""
    return statistics.median(values) if values else float("nan")


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..1), or NaN for no values."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def ms(seconds: float) -> str:
    """Seconds as whole milliseconds, ``-`` for NaN."""
    return "-" if seconds != seconds else f"{seconds * 1000:.0f} ms"


def spread(values: list[float], q: float = 0.9) -> str:
    """``median (p90)`` of seconds, in milliseconds; ``-`` for no values."""
    if not values:
        return "-"
    return f"{ms(median(values))} ({ms(percentile(values, q))})"


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children, MB; NaN when it is gone."""
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
        return sum(p.memory_info().rss for p in procs) / 1e6
    except psutil.Error:
        return float("nan")


Samples = dict[str, dict[str, list[float]]]
"""What was measured -> whom it was measured on (a tree, a server) -> the values."""
T = TypeVar("T")


class InTurn(Generic[T]):
    """Several trees or servers measured in turn, request by request, so that load on the
    machine falls on all of them alike; the values in :attr:`samples`."""

    def __init__(self, targets: dict[str, T]) -> None:
        self.targets = targets
        self.samples: Samples = {}

    def note(self, what: str, name: str, value: float | None) -> None:
        """One value of ``what`` on ``name`` (``None``: no sample)."""
        if value is not None:
            self.samples.setdefault(what, {n: [] for n in self.targets})[name].append(value)

    async def each(self, what: str, job: Callable[[T], Any]) -> None:
        """``job`` on every target in turn; a failure is a missing sample, said on stderr."""
        for name, target in self.targets.items():
            try:
                self.note(what, name, await job(target))
            except Exception as exc:  # noqa: BLE001 - one failure is a missing sample
                print(f"{what} ({name}) failed: {exc!r}", file=sys.stderr)


# ---------------------------------------------------------------- clients


def real_time(pcm: bytes, chunk: int, sent: list[float], rate: int = 16000) -> Iterator[bytes]:
    """s16 mono ``pcm`` in ``chunk``-byte pieces at real time, as a device uploads it (a
    request body); when the last piece has gone, its time (``time.perf_counter``) is put
    in ``sent[0]``."""
    began = time.perf_counter()
    for i in range(0, len(pcm), chunk):
        yield pcm[i : i + chunk]
        time.sleep(max(0.0, began + (i + chunk) / (rate * 2) - time.perf_counter()))
    sent[0] = time.perf_counter()


async def wyoming_audio(client: Any, pcm: bytes, samples: int, paced: bool = True) -> float:
    """``pcm`` (16 kHz s16 mono) to a Wyoming ``client``: ``audio-start``, ``audio-chunk``
    events of ``samples`` each, sent at real time (``paced``: against the clock, so that
    slow writes do not add up) or all at once, and ``audio-stop``; when that went
    (``time.perf_counter``)."""
    from wyoming.audio import AudioChunk, AudioStart, AudioStop

    rate = 16000
    await client.write_event(AudioStart(rate=rate, width=2, channels=1).event())
    step = samples * 2
    began = time.perf_counter()
    for index, offset in enumerate(range(0, len(pcm), step)):
        chunk = AudioChunk(rate=rate, width=2, channels=1, audio=pcm[offset : offset + step])
        await client.write_event(chunk.event())
        if paced:
            await asyncio.sleep(
                max(0.0, began + (index + 1) * samples / rate - time.perf_counter())
            )
    await client.write_event(AudioStop().event())
    return time.perf_counter()


async def hearth_speech(daemon: Daemon, text: str) -> np.ndarray:
    """``text`` spoken by the daemon's own TTS (over Wyoming), 16 kHz int16."""
    import numpy as np
    from wyoming.client import AsyncTcpClient
    from wyoming.tts import Synthesize

    from daemon.audio.pcm import RATE, resample_pcm

    pcm, rate = bytearray(), RATE
    async with AsyncTcpClient("127.0.0.1", daemon.wyoming_port) as c:
        await c.write_event(Synthesize(text=text).event())
        while (event := await c.read_event()) is not None and event.type != "audio-stop":
            if event.type == "audio-start":
                rate = int(event.data["rate"])
            elif event.type == "audio-chunk":
                pcm += event.payload or b""
    return np.frombuffer(resample_pcm(bytes(pcm), rate, RATE), dtype=np.int16)


@contextlib.asynccontextmanager
async def handsfree_clients(daemons: dict[str, Daemon]) -> AsyncIterator[dict[str, RtcClient]]:
    """One aiortc client per daemon, each in a hands-free session with spoken replies
    (``listen`` with ``reply``); closed afterwards."""
    from tests.webrtc_client import RtcClient

    clients = {name: await RtcClient(d.url).connect() for name, d in daemons.items()}
    try:
        for client in clients.values():
            client.send("listen", reply=True)
            await client.expect("state")
        yield clients
    finally:
        for client in clients.values():
            await client.close()


# ---------------------------------------------------------------- before and after


def revision(name: str) -> str:
    """``name`` (a branch, tag or hash) as a short commit hash."""
    return subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", name],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@contextlib.contextmanager
def worktree(name: str) -> Iterator[Path]:
    """Revision ``name`` checked out in a temporary git worktree beside this tree (removed
    afterwards): the "before" of every benchmark that compares with a revision. It runs
    on this tree's venv."""
    path = Path(tempfile.mkdtemp(prefix="hearth-before-"))
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(path),
                    name], check=True)  # fmt: skip
    try:
        yield path
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)])


HOME_COMMANDS = (
    "Turn on the kitchen lights.",
    "What time is it?",
    "Set a timer for ten minutes.",
    "Close the blinds in the living room.",
    "What is the weather like tomorrow?",
)
"""The home commands the before-and-after benches speak (:func:`piper_speech`)."""

SERVE_CONFIG = (
    "llm:\n  temperature: 0.0\n  max_tokens: 24\n"
    "webrtc:\n  addresses: [127.0.0.1]\n  port_min: {lo}\n  port_max: {hi}\n"
)
"""What :func:`serving` adds to a daemon's configuration: a short, deterministic reply,
and WebRTC on loopback in the given UDP ports (so that two daemons never share one)."""


@contextlib.contextmanager
def serving(
    tree: Path, workdir: Path, ports: tuple[int, int], timeout: float = 300
) -> Iterator[Daemon]:
    """``hearth serve`` from the sources in ``tree`` (``python -m`` reads the cwd first),
    configured with :data:`SERVE_CONFIG` in the UDP ``ports``."""
    from tests.daemon import Daemon

    here = Path.cwd()
    workdir.mkdir(parents=True, exist_ok=True)
    extra = SERVE_CONFIG.format(lo=ports[0], hi=ports[1])
    daemon = Daemon(workdir, extra, env={"PYTHONPATH": str(tree)})
    os.chdir(tree)
    try:
        daemon.start(timeout=timeout)
    finally:
        os.chdir(here)
    try:
        yield daemon
    finally:
        daemon.stop()


def piper_speech(texts: tuple[str, ...]) -> list[np.ndarray]:
    """Piper's deterministic speech of each text (the embedded voice, its noise off),
    16 kHz int16."""
    import numpy as np

    from daemon.audio.pcm import RATE
    from daemon.config import parse_config
    from daemon.engines.hardware import probe
    from daemon.engines.tts.base import SynthesisOptions
    from daemon.runtime.loading import load_engines

    state = tempfile.mkdtemp(prefix="hearth-bench-")
    engines = load_engines(
        parse_config(f"state_dir: {state}\n", "bench"), probe(), asr=False, llm=False
    )

    async def one(text: str) -> np.ndarray:
        assert engines.tts is not None
        opts = SynthesisOptions(noise_scale=0.0, noise_w_scale=0.0, sample_rate=RATE)
        pcm = b"".join([b.pcm async for b in engines.tts.stream(text, opts)])
        return np.frombuffer(pcm, np.int16).copy()

    try:
        return [asyncio.run(one(t)) for t in texts]
    finally:
        engines.close()


def publish(name: str, text: str, write: bool = True, path: Path = RESULTS) -> None:
    """Print a bench's section, and write it as section ``name`` of ``path`` unless
    ``write`` is false (``--no-write``)."""
    print(text, flush=True)
    if write:
        write_section(name, text, path)
