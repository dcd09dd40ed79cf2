"""One session, many turns: does a session get slower or heavier as it lives?

The browser page and the dashboard card hold one WebRTC session for days. This bench
holds one: one ``hearth serve`` on the embedded models, one aiortc client connected once,
``listen`` with ``reply`` (hands-free), and ``--turns`` spoken turns on it. Each turn is a
held-back home command (``bench/realtime_bench.py``'s eight, said by Hearth's Piper voice
and by an eSpeak NG voice no setting was chosen on, in turn) at real time after 0.3 s of
silence; the client then waits for the reply's end and for its audio to stop, as a person
listens to it, and speaks the next one.

Per turn, from the end of speech, at the client: the end of the turn (``vad`` false),
the transcript (``infer``), the reply's first words (the first ``reply`` message) and its
first audio frame; the reply's length. From the daemon's ``/metrics`` after every turn:
each worker pool's time in that turn (decode, turn check, LLM, voice; queue wait
included), and the daemon's resident memory.

The report compares the first ten turns with the last ten (``--window``), step by step,
as medians, and gives resident memory along the session.

Run: .venv/bin/python -m bench.long_session [--turns 200] [--window 10] [--no-write]
"""

from __future__ import annotations

import asyncio
import datetime
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np

from bench.harness import arguments, hearth_speech, machine, publish, rss_mb
from bench.realtime_bench import COMMANDS, ESPEAK_VOICES, espeak, framed, trimmed
from tests.daemon import Daemon
from tests.helpers import words
from tests.webrtc_client import RtcClient

RATE = 16000
TURN_TIMEOUT_S = 120.0
POOLS = ("asr", "turn", "llm", "tts")
MAX_TOKENS = 16
"""The replies' length: a spoken answer to a home command, so that two hundred turns
take about twenty minutes at real time."""


@dataclass
class Turn:
    """One turn: seconds from the end of speech to each step, and the daemon after it."""

    said: str
    text: str = ""
    stopped: float = float("nan")
    transcript: float = float("nan")
    first_words: float = float("nan")
    first_audio: float = float("nan")
    reply_words: int = 0
    pools: dict[str, float] = field(default_factory=dict)
    """Each pool's call time in this turn (seconds, summed)."""
    rss_mb: float = float("nan")


def pool_seconds(metrics: str) -> dict[str, float]:
    """Each pool's summed call time so far, from ``/metrics``."""
    out: dict[str, float] = {}
    for line in metrics.splitlines():
        if line.startswith("hearth_engine_latency_seconds_sum{"):
            engine = line.split('engine="', 1)[1].split('"', 1)[0]
            out[engine] = float(line.rsplit(" ", 1)[1])
    return out


async def one_turn(client: RtcClient, said: str, speech: np.ndarray) -> Turn:
    """Speak ``speech``; wait for the reply to be written and heard to its end."""
    turn = Turn(said)
    client.reply_frames_at.clear()
    while not client.messages.empty():
        client.messages.get_nowait()
    began = time.monotonic()
    ended = began + 0.3 + len(speech) / RATE
    client.mic.play(framed(speech).tobytes(), RATE)
    client.mic.flush()
    async with asyncio.timeout(TURN_TIMEOUT_S):
        while True:
            message = await client.messages.get()
            now = time.monotonic() - ended
            kind, obj = message["type"], message.get("obj") or {}
            if kind == "vad" and not obj.get("speech") and np.isnan(turn.stopped):
                turn.stopped = now
            elif kind == "infer" and str(obj.get("text", "")).strip():
                turn.transcript, turn.text = now, str(obj["text"])
            elif kind == "reply" and not np.isnan(turn.transcript):  # not an empty final's
                if np.isnan(turn.first_words) and (obj.get("delta") or obj.get("text")):
                    turn.first_words = now
                if obj.get("done"):
                    turn.reply_words = len(str(obj.get("text") or "").split())
                    break
        await client.settled(quiet_s=0.3, timeout=TURN_TIMEOUT_S)
    while client.mic.playing:  # the tail of silence is sent before the next turn
        await asyncio.sleep(0.02)
    heard = [t - ended for t in client.reply_frames_at if t > ended]
    turn.first_audio = heard[0] if heard else float("nan")
    return turn


async def session(turns: int) -> tuple[list[Turn], float]:
    """The whole session; its turns and the daemon's resident memory before the first."""
    extra = (
        "webrtc:\n  addresses: [127.0.0.1]\n  port_min: 23300\n  port_max: 23399\n"
        f"llm:\n  max_tokens: {MAX_TOKENS}\n"
    )
    with (
        tempfile.TemporaryDirectory() as tmp,
        Daemon(Path(tmp), extra).start(timeout=600) as daemon,
    ):  # slow to load on a busy machine
        assert daemon.proc is not None
        voice, wpm = ESPEAK_VOICES[0]
        clips: list[tuple[str, np.ndarray]] = []
        for text in COMMANDS:
            clips.append((text, trimmed(await hearth_speech(daemon, text))))
            clips.append((text, espeak(voice, wpm, text)))
        async with httpx.AsyncClient(base_url=daemon.url, timeout=30) as http:
            client = await RtcClient(daemon.url).connect()
            try:
                client.send("listen", reply=True)
                await client.expect("state")
                await one_turn(client, *clips[0])  # warm-up, not counted
                before = pool_seconds((await http.get("/metrics")).text)
                idle = rss_mb(daemon.proc.pid)
                out: list[Turn] = []
                for n in range(turns):
                    turn = await one_turn(client, *clips[n % len(clips)])
                    after = pool_seconds((await http.get("/metrics")).text)
                    turn.pools = {p: after.get(p, 0.0) - before.get(p, 0.0) for p in POOLS}
                    turn.rss_mb = rss_mb(daemon.proc.pid)
                    before = after
                    out.append(turn)
                    print(
                        f"turn {n + 1}: {turn.said!r} -> {turn.text!r}: stopped "
                        f"{turn.stopped * 1000:.0f}, transcript {turn.transcript * 1000:.0f}, "
                        f"words {turn.first_words * 1000:.0f}, audio "
                        f"{turn.first_audio * 1000:.0f} ms; {turn.reply_words} words; "
                        + ", ".join(f"{p} {s * 1000:.0f}" for p, s in turn.pools.items())
                        + f" ms; RSS {turn.rss_mb:.0f} MB",
                        flush=True,
                    )
            finally:
                await client.close()
    return out, idle


STEPS = (
    ("end of speech -> end of the turn (`vad` false)", lambda t: t.stopped),
    ("end of speech -> transcript (`infer`)", lambda t: t.transcript),
    ("end of speech -> the reply's first text message", lambda t: t.first_words),
    ("end of speech -> first reply audio at the client", lambda t: t.first_audio),
    ("transcript -> first reply audio", lambda t: t.first_audio - t.transcript),
    ("decode (asr pool) per turn", lambda t: t.pools.get("asr", float("nan"))),
    ("turn checks (turn pool) per turn", lambda t: t.pools.get("turn", float("nan"))),
    ("LLM (llm pool) per turn", lambda t: t.pools.get("llm", float("nan"))),
    ("voice (tts pool) per turn", lambda t: t.pools.get("tts", float("nan"))),
)


def _median_ms(values: list[float]) -> float:
    kept = [v for v in values if not np.isnan(v)]
    return statistics.median(kept) * 1000 if kept else float("nan")


def report(turns: list[Turn], idle: float, window: int) -> str:
    first, last = turns[:window], turns[-window:]
    n = len(turns)
    rows = [
        f"| step (median) | turns 1-{window} | turns {n - window + 1}-{n} | last / first |",
        "| --- | --- | --- | --- |",
    ]
    for name, get in STEPS:
        a, b = _median_ms([get(t) for t in first]), _median_ms([get(t) for t in last])
        ratio = f"{b / a:.2f}" if a > 0 else "-"
        rows.append(f"| {name} | {a:.0f} ms | {b:.0f} ms | {ratio} |")
    words_a = statistics.median(t.reply_words for t in first)
    words_b = statistics.median(t.reply_words for t in last)
    rows.append(f"| reply length | {words_a:g} words | {words_b:g} words | - |")
    right = sum(words(t.said) == words(t.text) for t in turns)
    tenths = [min(n - 1, max(0, round(n * k / 10) - 1)) for k in range(1, 11)]
    rss = [
        "| after turn | idle | " + " | ".join(str(i + 1) for i in tenths) + " |",
        "| --- | --- |" + " --- |" * 10,
        f"| RSS (MB) | {idle:.0f} | " + " | ".join(f"{turns[i].rss_mb:.0f}" for i in tenths) + " |",
    ]
    half = turns[n // 2 :]
    slope = (
        float(np.polyfit(np.arange(len(half)), [t.rss_mb for t in half], 1)[0]) * 1000
        if len(half) >= 3
        else float("nan")
    )
    return "\n".join(
        [
            "## One session, many turns (`bench/long_session.py`)",
            "",
            f"Machine: {machine()}, idle but for the bench. Date: "
            f"{datetime.date.today().isoformat()}. One `hearth serve` (embedded models, "
            f"`llm.max_tokens: {MAX_TOKENS}`), one aiortc WebRTC session held for {n} turns "
            "(`listen` with `reply`), each a held-back home command said by Piper or eSpeak "
            "NG in turn at real time, the next said once the reply is heard to its end. Pool "
            "times are each turn's summed worker calls from `/metrics` (queue wait "
            "included). Run with `.venv/bin/python -m bench.long_session "
            f"--turns {n} --window {window}`.",
            "",
            *rows,
            "",
            f"Transcripts with the words said: {right} of {n}. Resident memory along the "
            f"session (slope over its second half: {slope:+.1f} MB per 1000 turns):",
            "",
            *rss,
        ]
    )


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--window", type=int, default=10)
    args = parser.parse_args()
    if args.turns < 2 * args.window:
        raise SystemExit("--turns must be at least twice --window")
    turns, idle = asyncio.run(session(args.turns))
    table = report(turns, idle, args.window)
    publish("long-session", table, not args.no_write)


if __name__ == "__main__":
    main()
