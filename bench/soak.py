"""Months of uptime, in minutes: does the daemon's memory grow with the requests it serves?

One ``hearth serve`` on the embedded defaults, a few clients in a loop, for a set time,
either every kind of request mixed (as a household's satellites, announcements and apps
make them) or one kind alone, so that a slope belongs to a kind:

  wyoming-stt  Wyoming transcribe (10 ms chunks, sent as fast as taken)
  wyoming-tts  Wyoming synthesize, every text new
  willow       /api/willow uploads (PCM, chunked)
  wis-tts      WIS /api/tts, every text new
  openai-stt   /v1/audio/transcriptions (WAV files)
  openai-tts   /v1/audio/speech, every text new
  chat         /v1/chat/completions, short and new each time
  realtime     /v1/realtime: one spoken turn with a reply, a new session each time

With ``--held-session`` one more client holds a single Realtime session for the whole
soak, one spoken turn with a reply of at most 24 tokens after another (a browser page or a
dashboard card that stays open for days): its turns are counted apart, with their latency
at the start and the end of the soak. ``--samples FILE`` keeps every sample (JSON), for
the minute-by-minute curve.

Every few seconds it reads the daemon's resident set (its process tree) and, from
``/metrics``, the native heap. It reports the requests served and failed, the resident
set idle, after warm-up (the first 30 % of the run) and at the end, and the slope over the
last half as MB per 1000 requests (least squares), and each kind's median latency.

    .venv/bin/python -m bench.soak [--minutes 10] [--kinds mixed|KIND[,KIND]|each]
        [--clients 4] [--held-session] [--samples FILE] [--env NAME=VALUE]
        [--label TEXT] [--no-write]
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import itertools
import json
import os
import random
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.harness import arguments, machine, rss_mb, write_section
from daemon.audio.pcm import encode, resample_pcm
from tests.daemon import Daemon

KINDS = (
    "wyoming-stt", "wyoming-tts", "willow", "wis-tts", "openai-stt", "openai-tts", "chat",
    "realtime",
)  # fmt: skip
SENTENCES = (
    "Turn on the kitchen lights.",
    "Set a timer for ten minutes.",
    "What is the weather like tomorrow morning?",
    "Play some quiet music in the living room and turn the volume down a little.",
    "Is the front door locked?",
)
SAMPLE_S = 2.0
HELD_MAX_TOKENS = 24
"""The held session's replies are short, as a spoken command's answer is: the soak's two
hours then hold about two thousand of its turns."""
"""How often the resident set is read."""
RATE = 16000


@dataclass
class Sample:
    """The daemon at one moment."""

    at_s: float
    requests: int
    rss_mb: float
    heap_mb: float


@dataclass
class Load:
    """What the clients did."""

    done: int = 0
    failed: int = 0
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)
    held_turns: list[float] = field(default_factory=list)
    """Each turn of the held session: seconds from commit to ``response.done``."""
    held_failed: int = 0


class Clients:
    """One request of each kind against one daemon."""

    def __init__(self, daemon: Daemon, clips: list[bytes]) -> None:
        self.daemon = daemon
        self.clips = clips
        # A new connection per request, as Home Assistant and Willow devices make them (a
        # pooled one the server closed after its keep-alive wait fails the next request
        # by chance, a race of HTTP, not a fault of either side).
        limits = httpx.Limits(max_keepalive_connections=0)
        self.http = httpx.AsyncClient(base_url=daemon.url, timeout=120, limits=limits)
        self.counter = itertools.count(1)

    def text(self) -> str:
        n = next(self.counter)
        return f"Reminder number {n}: the bins go out on {random.choice(['Monday', 'Tuesday'])}."

    def clip(self) -> bytes:
        return random.choice(self.clips)

    async def wyoming_stt(self) -> None:
        from wyoming.asr import Transcribe
        from wyoming.audio import AudioChunk, AudioStart, AudioStop
        from wyoming.client import AsyncTcpClient

        pcm = self.clip()
        async with AsyncTcpClient("127.0.0.1", self.daemon.wyoming_port) as c:
            await c.write_event(Transcribe(language="en").event())
            await c.write_event(AudioStart(rate=RATE, width=2, channels=1).event())
            for i in range(0, len(pcm), 320):
                chunk = AudioChunk(rate=RATE, width=2, channels=1, audio=pcm[i : i + 320])
                await c.write_event(chunk.event())
            await c.write_event(AudioStop().event())
            await self._read_until(c, "transcript")

    async def wyoming_tts(self) -> None:
        from wyoming.client import AsyncTcpClient
        from wyoming.tts import Synthesize

        async with AsyncTcpClient("127.0.0.1", self.daemon.wyoming_port) as c:
            await c.write_event(Synthesize(text=self.text()).event())
            await self._read_until(c, "audio-stop")

    @staticmethod
    async def _read_until(client: object, kind: str) -> None:
        while True:
            event = await asyncio.wait_for(client.read_event(), 120)  # type: ignore[attr-defined]
            if event is None or event.type == "error":
                raise RuntimeError(f"{kind}: {event.data if event else 'closed'}")
            if event.type == kind:
                return

    async def willow(self) -> None:
        headers = {
            "x-audio-sample-rate": "16000", "x-audio-bits": "16", "x-audio-channel": "1",
            "x-audio-codec": "pcm", "content-type": "audio/pcm",
        }  # fmt: skip
        pcm = self.clip()

        async def body() -> object:
            for i in range(0, len(pcm), 3200):
                yield pcm[i : i + 3200]

        response = await self.http.post("/api/willow", content=body(), headers=headers)
        response.raise_for_status()

    async def wis_tts(self) -> None:
        response = await self.http.get("/api/tts", params={"format": "WAV", "text": self.text()})
        response.raise_for_status()

    async def openai_stt(self) -> None:
        files = {"file": ("command.wav", encode(self.clip(), RATE, "wav"), "audio/wav")}
        response = await self.http.post(
            "/v1/audio/transcriptions", files=files, data={"model": "whisper-1"}
        )
        response.raise_for_status()

    async def openai_tts(self) -> None:
        body = {"model": "tts-1", "input": self.text(), "voice": "alloy", "response_format": "wav"}
        response = await self.http.post("/v1/audio/speech", json=body)
        response.raise_for_status()

    async def chat(self) -> None:
        n = next(self.counter)
        body = {
            "model": "hearth",
            "messages": [{"role": "user", "content": f"What is {n} plus two? One short sentence."}],
            "max_tokens": 24,
        }
        response = await self.http.post("/v1/chat/completions", json=body)
        response.raise_for_status()

    async def realtime(self) -> None:
        async with self.realtime_session() as conn:
            await self.realtime_turn(conn)

    @contextlib.asynccontextmanager
    async def realtime_session(self, max_tokens: int | None = None) -> AsyncIterator[Any]:
        """One Realtime session, turn detection off (the client commits each turn)."""
        import openai

        client = openai.AsyncOpenAI(base_url=f"{self.daemon.url}/v1", api_key="soak", max_retries=0)
        async with client.realtime.connect(model="gpt-realtime") as conn:
            session: dict[str, Any] = {
                "type": "realtime", "audio": {"input": {"turn_detection": None}},
            }  # fmt: skip
            if max_tokens is not None:
                session["max_output_tokens"] = max_tokens
            await conn.session.update(session=session)
            yield conn

    async def realtime_turn(self, conn: Any) -> None:
        """One spoken turn, sent at once, and the reply to its end."""
        pcm = resample_pcm(self.clip() + bytes(2 * RATE), RATE, 24000)
        for offset in range(0, len(pcm), 9600):
            audio = base64.b64encode(pcm[offset : offset + 9600]).decode()
            await conn.input_audio_buffer.append(audio=audio)
        await conn.input_audio_buffer.commit()
        await conn.response.create()
        async with asyncio.timeout(120):
            while (event := await conn.recv()).type != "response.done":
                if event.type == "error":
                    raise RuntimeError(f"realtime: {event.error}")

    def call(self, kind: str) -> Callable[[], Awaitable[None]]:
        return getattr(self, kind.replace("-", "_"))  # type: ignore[no-any-return]


async def heap_mb(http: httpx.AsyncClient) -> float:
    """The native heap in use and held (glibc), from /metrics; NaN when not there."""
    try:
        text = (await http.get("/metrics", timeout=10)).text
    except httpx.HTTPError:
        return float("nan")
    total = 0.0
    for line in text.splitlines():
        if line.startswith("hearth_native_heap_bytes{") and 'kind="in_use"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total / 1e6 if total else float("nan")


def slope_per_1000(samples: list[Sample]) -> float:
    """Least-squares MB per 1000 requests over ``samples``."""
    xs = np.array([s.requests for s in samples], dtype=float)
    ys = np.array([s.rss_mb for s in samples], dtype=float)
    if len(xs) < 3 or np.ptp(xs) == 0:
        return float("nan")
    return float(np.polyfit(xs, ys, 1)[0] * 1000)


async def soak(
    daemon: Daemon, kinds: tuple[str, ...], minutes: float, clients: int, held: bool = False
) -> tuple[Load, list[Sample], float]:
    """Run the load; the load, the samples and the idle resident set before it."""
    assert daemon.proc is not None
    pid = daemon.proc.pid
    http = httpx.AsyncClient(base_url=daemon.url, timeout=120)
    speech = Clients(daemon, [])
    for sentence in SENTENCES:  # the clips come from the daemon's own voice
        body = {"model": "tts-1", "input": sentence, "response_format": "pcm"}
        pcm24 = (await http.post("/v1/audio/speech", json=body)).content
        speech.clips.append(bytes(4800) + resample_pcm(pcm24, 24000, RATE) + bytes(9600))
    await asyncio.sleep(5)
    idle = rss_mb(pid)
    load = Load()
    samples: list[Sample] = []
    began = time.monotonic()
    stop_at = began + minutes * 60

    async def client(n: int) -> None:
        order = itertools.cycle(kinds[n % len(kinds) :] + kinds[: n % len(kinds)])
        while time.monotonic() < stop_at:
            kind = next(order)
            t0 = time.monotonic()
            try:
                await speech.call(kind)()
                load.done += 1
                load.latencies[kind].append(time.monotonic() - t0)
            except Exception as exc:  # noqa: BLE001 - counted, and the soak goes on
                load.failed += 1
                load.errors.append(f"{kind}: {exc!r:.200}")

    async def held_session() -> None:
        while time.monotonic() < stop_at:  # a new session only when one fails
            try:
                async with speech.realtime_session(HELD_MAX_TOKENS) as conn:
                    while time.monotonic() < stop_at:
                        t0 = time.monotonic()
                        await speech.realtime_turn(conn)
                        load.held_turns.append(time.monotonic() - t0)
            except Exception as exc:  # noqa: BLE001 - counted, and the soak goes on
                load.held_failed += 1
                load.errors.append(f"held session: {exc!r:.200}")

    async def sampler() -> None:
        while time.monotonic() < stop_at:
            samples.append(
                Sample(time.monotonic() - began, load.done, rss_mb(pid), await heap_mb(http))
            )
            await asyncio.sleep(SAMPLE_S)

    async def progress() -> None:
        while time.monotonic() < stop_at:
            await asyncio.sleep(60)
            last = samples[-1] if samples else None
            if last is not None:
                print(
                    f"  {last.at_s / 60:4.1f} min: {last.requests} requests, "
                    f"{load.failed} failed, RSS {last.rss_mb:.0f} MB, "
                    f"held session {len(load.held_turns)} turns",
                    flush=True,
                )

    jobs = [sampler(), progress(), *(client(n) for n in range(clients))]
    if held:
        jobs.append(held_session())
    await asyncio.gather(*jobs)
    samples.append(Sample(time.monotonic() - began, load.done, rss_mb(pid), await heap_mb(http)))
    await http.aclose()
    await speech.http.aclose()
    return load, samples, idle


@dataclass
class Row:
    """One soak's line in the table."""

    label: str
    load: Load
    samples: list[Sample]
    idle: float

    def at(self, share: float) -> Sample:
        cut = self.samples[-1].at_s * share
        return next(s for s in self.samples if s.at_s >= cut)

    def cells(self) -> str:
        warm, end = self.at(0.3), self.samples[-1]
        half = [s for s in self.samples if s.at_s >= self.samples[-1].at_s / 2]
        heap = end.heap_mb
        latency = ", ".join(
            f"{k} {statistics.median(v) * 1000:.0f}" for k, v in sorted(self.load.latencies.items())
        )
        return (
            f"| {self.label} | {self.load.done} | {self.load.failed} | {self.idle:.0f} | "
            f"{warm.rss_mb:.0f} | {end.rss_mb:.0f} | {end.rss_mb - warm.rss_mb:+.0f} | "
            f"{slope_per_1000(half):.1f} | {heap:.0f} | {latency} |"
        )

    def curve(self) -> list[str]:
        """Resident memory at each tenth of the run, and the held session's turns."""
        lines = ["", "| at | " + " | ".join(f"{k * 10} %" for k in range(1, 11)) + " |"]
        lines.append("| --- |" + " --- |" * 10)
        points = [self.at(k / 10) for k in range(1, 11)]
        lines.append("| minute | " + " | ".join(f"{p.at_s / 60:.0f}" for p in points) + " |")
        lines.append("| requests | " + " | ".join(str(p.requests) for p in points) + " |")
        lines.append("| RSS (MB) | " + " | ".join(f"{p.rss_mb:.0f}" for p in points) + " |")
        turns = self.load.held_turns
        if turns:
            tenth = max(1, len(turns) // 10)
            lines += [
                "",
                f"Held Realtime session: {len(turns)} turns on one connection, "
                f"{self.load.held_failed} failed; commit -> `response.done` median "
                f"{statistics.median(turns[:tenth]) * 1000:.0f} ms over its first tenth, "
                f"{statistics.median(turns[-tenth:]) * 1000:.0f} ms over its last.",
            ]
        return lines


def row_json(row: Row) -> dict[str, Any]:
    """A soak's samples and held-session turns, for a curve drawn later."""
    return {
        "label": row.label,
        "samples": [[s.at_s, s.requests, s.rss_mb, s.heap_mb] for s in row.samples],
        "held_turns_s": row.load.held_turns,
        "held_failed": row.load.held_failed,
    }


HEADER = (
    "| soak | requests | failures | RSS idle (MB) | RSS after 30 % (MB) | RSS at the end (MB) "
    "| end - warm-up (MB) | slope, last half (MB per 1000) | native heap in use (MB) "
    "| median latency by kind (ms) |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
)


def run_one(
    kinds: tuple[str, ...],
    minutes: float,
    clients: int,
    env: dict[str, str],
    label: str,
    held: bool = False,
) -> Row:
    with tempfile.TemporaryDirectory() as tmp:
        extra = "limits:\n  max_queue: 256\n"
        with Daemon(Path(tmp), extra, env=env) as daemon:
            load, samples, idle = asyncio.run(soak(daemon, kinds, minutes, clients, held))
    row = Row(label, load, samples, idle)
    print(HEADER.splitlines()[0])
    print(row.cells(), flush=True)
    for error in load.errors[:5]:
        print("  failed:", error)
    return row


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--kinds", default="mixed", help="mixed, each, or KIND[,KIND]")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--held-session", action="store_true", help="one Realtime session more")
    parser.add_argument("--samples", type=Path, default=None, help="every sample, as JSON")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--label", default="")
    parser.add_argument("--section", default="soak")
    args = parser.parse_args()
    env = dict(item.split("=", 1) for item in args.env)
    if args.kinds == "each":
        plans = [((kind,), kind) for kind in KINDS]
    elif args.kinds == "mixed":
        plans = [(KINDS, "mixed")]
    else:
        chosen = tuple(args.kinds.split(","))
        unknown = set(chosen) - set(KINDS)
        if unknown:
            raise SystemExit(f"unknown kinds {sorted(unknown)}; known: {', '.join(KINDS)}")
        plans = [(chosen, "+".join(chosen))]
    rows = [
        run_one(
            kinds, args.minutes, args.clients, env, f"{label} {args.label}".strip(),
            args.held_session,
        )
        for kinds, label in plans
    ]  # fmt: skip
    if args.samples is not None:
        args.samples.write_text(json.dumps([row_json(row) for row in rows], indent=1))
    table = "\n".join(
        [
            f"## Soak: memory against requests served (`bench/soak.py`, {args.kinds})",
            "",
            f"{machine()}; {datetime.date.today().isoformat()}; {args.minutes:g} minutes each, "
            f"{args.clients} clients in a loop{'; ' + ' '.join(args.env) if args.env else ''}.",
            "",
            HEADER,
            *(row.cells() for row in rows),
            *(line for row in rows for line in row.curve()),
        ]
    )
    print(table)
    if not args.no_write:
        write_section(args.section, table)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
