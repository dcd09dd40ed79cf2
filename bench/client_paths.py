"""Every client's path through the core, before and after, side by side.

Every client's speech now enters the core's conversation, every reply leaves through
one sentence speaker and one player, and a Realtime turn with tools offered is one
generation. This bench checks that the move costs no time, and that the tools turn is
faster. Two source trees, this one and a git revision checked out into a temporary
worktree, each run a real ``hearth serve`` on the embedded models with the same
configuration; the two daemons take turns, request by request, so load
on the machine falls on both alike. Measured, as medians (and p90):

- hands-free speech to speech over WebRTC (aiortc client): end of speech -> first
  reply audio frame at the client;
- a Wyoming transcription, sent at real time and all at once: ``audio-stop`` ->
  ``transcript``;
- a Willow upload (chunked PCM at real time): the body's last byte -> the answer;
- a Realtime turn with tools offered that the model answers in words (a typed user
  item, then ``response.create``): the request -> ``response.done``, and -> its first
  audio.

It also counts, in each tree, the lines of the adapters (``protocols/``, per changed
file and in all) and the core modules the adapters import (``tests/import_graph.py``
of that tree). ``--static`` prints only those counts (no daemon runs).

Run: .venv/bin/python -m bench.client_paths [--before main] [--runs 3] [--static]
[--section narrow-core] [--no-write]
"""

from __future__ import annotations

import asyncio
import datetime
import importlib.util
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.handsfree_webrtc import one_turn
from bench.harness import (
    HOME_COMMANDS,
    ROOT,
    InTurn,
    Samples,
    arguments,
    handsfree_clients,
    machine,
    piper_speech,
    real_time,
    revision,
    serving,
    spread,
    worktree,
    write_section,
    wyoming_audio,
)
from bench.realtime_bench import until
from bench.willow import HEADERS
from daemon.audio.pcm import RATE
from tests.daemon import Daemon

COMMANDS = HOME_COMMANDS[:3]
QUESTIONS = ("Tell me a short fact about the moon.", "How are you today?")
"""Typed Realtime questions no offered tool answers: the model answers in words."""
LIGHT = {
    "type": "function",
    "name": "turn_on_light",
    "description": "Turn on the light in a room.",
    "parameters": {
        "type": "object",
        "properties": {"room": {"type": "string"}},
        "required": ["room"],
    },
}
CHUNK_S = 0.02
"""Audio per Wyoming chunk and per Willow body chunk (Home Assistant sends 10-20 ms)."""
WAIT_S = 120.0


# ---------------------------------------------------------------- the trees


def adapter_lines(tree: Path) -> dict[str, int]:
    """Lines of each adapter module (``protocols/**.py``) in ``tree``."""
    return {
        str(path.relative_to(tree)): len(path.read_text().splitlines())
        for path in sorted((tree / "protocols").rglob("*.py"))
    }


def core_imports(tree: Path) -> set[str]:
    """The core modules ``tree``'s adapters import (by its own ``tests/import_graph.py``)."""
    spec = importlib.util.spec_from_file_location(
        f"graph_{id(tree)}", tree / "tests/import_graph.py"
    )
    assert spec is not None and spec.loader is not None
    graph: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(graph)
    graph.ROOT = tree
    found: set[str] = set()
    for path in graph.sources():
        if graph.module_name(path).startswith("protocols"):
            found |= {t for t in graph.imports_of(path) if graph.room_of(t) != "protocols"}
    return found


def static_section(before: Path, revision: str) -> str:
    """The adapters' lines and core imports, before and after."""
    old, new = adapter_lines(before), adapter_lines(ROOT)
    changed = sorted(name for name in old.keys() | new.keys() if old.get(name) != new.get(name))
    rows = [f"| `{name}` | {old.get(name, '-')} | {new.get(name, '-')} |" for name in changed]
    was, now = core_imports(before), core_imports(ROOT)

    def modules(names: set[str]) -> int:
        packages = {"daemon", "daemon.speech"}  # a package imported for a module in it
        return len(names - packages)

    return "\n".join(
        [
            f"Adapters (`protocols/`): **{sum(old.values())}** lines before, "
            f"**{sum(new.values())}** after ({sum(new.values()) - sum(old.values()):+d}). "
            f"Core modules the adapters import: **{modules(was)}** before, "
            f"**{modules(now)}** after (packages not counted); gone: "
            f"{', '.join(f'`{m}`' for m in sorted(was - now)) or 'none'}; new: "
            f"{', '.join(f'`{m}`' for m in sorted(now - was)) or 'none'}. `before` is "
            f"{revision}.",
            "",
            "| adapter module | lines before | lines after |",
            "|---|---|---|",
            *rows,
        ]
    )


# ---------------------------------------------------------------- the requests


async def wyoming_transcript(daemon: Daemon, pcm: bytes, paced: bool) -> float:
    """``audio-stop`` -> ``transcript`` (s) for one Wyoming request."""
    from wyoming.asr import Transcribe
    from wyoming.client import AsyncTcpClient

    async with AsyncTcpClient("127.0.0.1", daemon.wyoming_port) as c:
        await c.write_event(Transcribe(language="en").event())
        stopped = await wyoming_audio(c, pcm, int(RATE * CHUNK_S), paced)
        while True:
            event = await asyncio.wait_for(c.read_event(), WAIT_S)
            if event is None or event.type == "error":
                raise RuntimeError(f"Wyoming: {event.data if event else 'closed'}")
            if event.type == "transcript":
                return time.perf_counter() - stopped


def willow_upload(daemon: Daemon, pcm: bytes) -> float:
    """A device's real-time chunked upload: the body's last byte -> the answer (s)."""
    step = int(RATE * CHUNK_S) * 2
    last = [0.0]

    resp = httpx.post(
        f"{daemon.url}/api/willow",
        content=real_time(pcm, step, last),
        headers=HEADERS,
        timeout=WAIT_S,
    )
    done = time.perf_counter()
    resp.raise_for_status()
    return done - last[0]


async def realtime_tools_turn(daemon: Daemon, question: str) -> tuple[float, float, int]:
    """A typed question with tools offered: ``response.create`` -> ``response.done`` and
    -> its first audio (s), and the words of the spoken reply (a longer reply takes
    longer to speak whatever the path)."""
    import openai

    client = openai.AsyncOpenAI(base_url=f"{daemon.url}/v1", api_key="bench", max_retries=0)
    async with client.realtime.connect(model="gpt-realtime") as conn:
        await until(conn, "session.created", WAIT_S)
        session = {"type": "realtime", "tools": [LIGHT], "tool_choice": "auto"}
        session["audio"] = {"input": {"turn_detection": None}}
        await conn.session.update(session=session)
        await until(conn, "session.updated", WAIT_S)
        content = [{"type": "input_text", "text": question}]
        item = {"type": "message", "role": "user", "content": content}
        await conn.conversation.item.create(item=item)  # type: ignore[arg-type]
        await until(conn, "conversation.item.done", WAIT_S)
        began = time.monotonic()
        await conn.response.create()
        first = 0.0
        said: list[str] = []
        async with asyncio.timeout(WAIT_S):
            while (event := await conn.recv()).type != "response.done":
                if event.type == "error":
                    raise RuntimeError(f"Realtime: {event.error}")
                if event.type == "response.output_audio.delta" and not first:
                    first = time.monotonic() - began
                if event.type == "response.output_audio_transcript.delta":
                    said.append(event.delta)
        return time.monotonic() - began, first, len("".join(said).split())


# ---------------------------------------------------------------- the run


async def measure(daemons: dict[str, Daemon], speech: list[np.ndarray], runs: int) -> Samples:
    """Seconds, by measure and tree, the daemons taking turns request by request."""
    turns = InTurn(daemons)
    note, each = turns.note, turns.each

    async with handsfree_clients(daemons) as clients:
        for _ in range(runs):
            for utterance in speech:
                lead = np.zeros(int(0.3 * RATE), np.int16)
                tail = np.zeros(int(0.6 * RATE), np.int16)
                pcm = np.concatenate([lead, utterance, tail]).astype("<i2").tobytes()
                for name, client in clients.items():
                    note("hands-free speech to speech", name, await one_turn(client, utterance))
                await each(
                    "Wyoming transcription, real time",
                    lambda d, pcm=pcm: wyoming_transcript(d, pcm, paced=True),
                )
                await each(
                    "Wyoming transcription, all at once",
                    lambda d, pcm=pcm: wyoming_transcript(d, pcm, paced=False),
                )
                await each(
                    "Willow upload", lambda d, pcm=pcm: asyncio.to_thread(willow_upload, d, pcm)
                )
            for question in QUESTIONS:
                pairs: dict[str, tuple[float, float, int]] = {}

                async def tools_turn(
                    d: Daemon, q: str = question, pairs: dict[str, tuple[float, float, int]] = pairs
                ) -> float:
                    whole, first, words = await realtime_tools_turn(d, q)
                    pairs[d.url] = (whole, first, words)
                    return whole

                await each("Realtime turn with tools offered (to response.done)", tools_turn)
                for name, daemon in daemons.items():
                    if daemon.url in pairs and pairs[daemon.url][1]:
                        note("Realtime turn with tools offered (to first audio)", name,
                             pairs[daemon.url][1])  # fmt: skip
                    if daemon.url in pairs and pairs[daemon.url][2]:
                        whole, _, words = pairs[daemon.url]
                        note("Realtime turn with tools offered (to response.done, per word said)",
                             name, whole / words)  # fmt: skip
    return turns.samples


def table(times: Samples, revision: str, runs: int) -> str:
    rows = []
    for what, by in times.items():
        old, new = by.get("before", []), by.get("after", [])
        ratio = f"{statistics.median(new) / statistics.median(old):.2f}" if old and new else "-"
        rows.append(
            f"| {what} | {spread(old)} | {spread(new)} | {ratio} | {len(old)} / {len(new)} |"
        )
    return "\n".join(
        [
            f"{datetime.date.today()}, {machine()}. `bench/client_paths.py`: {len(COMMANDS)} "
            f"Piper commands and {len(QUESTIONS)} typed questions x {runs} runs, the embedded "
            "models, the two daemons taking turns request by request. `before` is "
            f"{revision}. Median (p90).",
            "",
            "| measure | before | after | after / before | samples |",
            "|---|---|---|---|---|",
            *rows,
        ]
    )


SECTIONS = {
    "one-door": "One door: every client through the conversation, before and after",
    "narrow-core": "A narrow core: every client path before and after the services",
}
"""The RESULTS.md sections this bench writes (one per change it measured), and titles."""
TARGETS = {
    "one-door": "Targets: no slower (after / before 1.00 or less, within noise); the Realtime "
    "turn with tools offered faster (one generation, not two).",
    "narrow-core": "Target: no client path slower than noise (after / before about 1.00).",
}


def main() -> None:
    parser = arguments(__doc__, runs=3, before="main")
    parser.add_argument("--static", action="store_true", help="only count lines and imports")
    parser.add_argument(
        "--section", choices=sorted(SECTIONS), default="narrow-core", help="section to write"
    )
    args = parser.parse_args()
    before_rev = revision(args.before)
    with worktree(before_rev) as old:
        parts = [f"## {SECTIONS[args.section]}", ""]
        if not args.static:
            speech = piper_speech(COMMANDS)
            with tempfile.TemporaryDirectory() as work:
                with (
                    serving(old, Path(work) / "before", (22200, 22249)) as before,
                    serving(ROOT, Path(work) / "after", (22250, 22299)) as after,
                ):
                    daemons = {"before": before, "after": after}
                    times = asyncio.run(measure(daemons, speech, args.runs))
            parts += [table(times, before_rev, args.runs), "", TARGETS[args.section], ""]
        parts.append(static_section(old, before_rev))
    text = "\n".join(parts)
    print(text)
    if not args.no_write and not args.static:
        write_section(args.section, text)


if __name__ == "__main__":
    main()
