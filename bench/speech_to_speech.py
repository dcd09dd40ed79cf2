"""Speech to speech: from the end of speech to the first word of the reply, before and after.

Two source trees, this one and a git revision checked out into a temporary worktree,
each run a real ``hearth serve`` on the embedded models with the same configuration;
the two daemons take turns, request by request, so load on the machine falls on both
alike.
Home commands are spoken by Hearth's Piper voice and by eSpeak NG voices (the Debian
package), at real time. Measured, as medians and p90:

- hands-free speech to speech over WebRTC (aiortc client): end of speech -> first reply
  audio frame at the client; and in the reply, the longest run of quiet (10 ms frames
  under -40 dBFS between its first and last word) and the longest wait between two audio
  frames, against a comma's pause in the same voice: a first phrase spoken early must
  not leave a hole before the rest;
- ``/api/sts`` push-to-talk (a Willow-style upload at real time that ends 150 ms after
  the last word): the body's last byte -> the first byte of reply audio;
- Wyoming at real time (10 ms chunks), Hearth ending the turn: end of speech ->
  ``voice-stopped``, on a long finished command.

Then, in this process, the budget: hands-free turns through the same session and reply
code the daemon runs, with each step's end in ms after the end of speech, from
timestamps taken inside (the worker pools' calls and the events).

Run: .venv/bin/python -m bench.speech_to_speech [--before main] [--runs 3] [--no-write]
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.harness import (
    HOME_COMMANDS,
    ROOT,
    InTurn,
    Samples,
    arguments,
    handsfree_clients,
    machine,
    percentile,
    piper_speech,
    publish,
    real_time,
    revision,
    serving,
    worktree,
)
from bench.willow import HEADERS
from daemon.audio.pcm import RATE, resample_pcm
from daemon.engines.tts.text import FIRST_WORDS
from tests.daemon import Daemon
from tests.helpers import espeak_pcm, trimmed
from tests.webrtc_client import RtcClient

COMMANDS = HOME_COMMANDS
ESPEAK = ("en-us", "en-gb+f3")
ESPEAK_COMMANDS = (
    "Set the living room light to four percent.",
    "Turn off the bedroom fan.",
    "What time is it?",
    "Is the garage door closed?",
)
LONG_COMMAND = "Turn on the kitchen lights and set the thermostat to 72 degrees."
WAIT_S = 120.0
QUIET_DBFS = -40.0


def _levels(pcm: np.ndarray) -> np.ndarray:
    frames = pcm[: len(pcm) // 160 * 160].astype(np.float32).reshape(-1, 160) / 32768
    return 20 * np.log10(np.sqrt((frames**2).mean(axis=1)) + 1e-9)


def longest_quiet_s(pcm: np.ndarray) -> float:
    """The longest run of quiet 10 ms frames between the first and last loud one."""
    loud = _levels(pcm) > QUIET_DBFS
    idx = np.flatnonzero(loud)
    if idx.size < 2:
        return 0.0
    inner = ~loud[idx[0] : idx[-1] + 1]
    best = run = 0
    for quiet in inner:
        run = run + 1 if quiet else 0
        best = max(best, run)
    return best * 0.01


# ---------------------------------------------------------------- one request each


async def webrtc_turn(client: RtcClient, speech: np.ndarray) -> dict[str, float] | None:
    """Speak hands-free; end of speech -> first reply frame, and the reply's holes."""
    client.reply_frames_at.clear()
    client.reply_pcm.clear()
    lead = np.zeros(int(0.3 * RATE), np.int16)
    began = time.monotonic()
    speech_end = began + (lead.size + speech.size) / RATE
    await client.speak(np.concatenate([lead, speech, np.zeros(int(2.5 * RATE), np.int16)]))
    deadline = time.monotonic() + WAIT_S
    text = ""
    while time.monotonic() < deadline:
        message = await client.expect("reply", timeout=WAIT_S)
        if message["obj"].get("done"):
            text = message["obj"].get("text", "")
            break
    await asyncio.sleep(1.5)  # the reply's last frames
    frames = [t for t in client.reply_frames_at if t > speech_end]
    if not frames:
        return None
    pcm = np.frombuffer(resample_pcm(bytes(client.reply_pcm), client.reply_rate, RATE), np.int16)
    waits = np.diff(np.array(frames)) if len(frames) > 1 else np.zeros(1)
    REPLIES.append((client.url, text, pcm))
    return {
        "first": frames[0] - speech_end,
        "quiet": longest_quiet_s(pcm),
        "frame_wait": float(waits.max()),
    }


REPLIES: list[tuple[str, str, np.ndarray]] = []
"""Every reply heard: the daemon's URL, its text and its audio (16 kHz)."""


def reply_wer(daemons: dict[str, Daemon]) -> dict[str, float]:
    """Each daemon's replies heard back by Whisper (tiny.en), against their own text."""
    from faster_whisper import WhisperModel

    from daemon.engines.models import embedded_whisper
    from tests.helpers import word_error_rate

    folder = embedded_whisper("tiny.en")
    assert folder is not None
    model = WhisperModel(str(folder), device="cpu", compute_type="int8")
    out: dict[str, list[float]] = {}
    for name, daemon in daemons.items():
        for url, text, pcm in REPLIES:
            if url != daemon.url or not text.strip():
                continue
            segments, _ = model.transcribe(pcm.astype(np.float32) / 32768, beam_size=1)
            heard = " ".join(seg.text for seg in segments)
            out.setdefault(name, []).append(word_error_rate(text, heard))
    return {name: float(np.mean(v)) for name, v in out.items()}


def sts_turn(daemon: Daemon, speech: np.ndarray) -> float | None:
    """A push-to-talk upload at real time: its last byte -> the first reply audio."""
    pcm = (
        np.concatenate(
            [np.zeros(int(0.3 * RATE), np.int16), speech, np.zeros(int(0.15 * RATE), np.int16)]
        )
        .astype("<i2")
        .tobytes()
    )
    step = int(RATE * 0.02) * 2
    last = [0.0]

    url = f"{daemon.url}/api/sts?format=pcm"
    with httpx.stream(
        "POST", url, content=real_time(pcm, step, last), headers=HEADERS, timeout=WAIT_S
    ) as resp:
        if resp.status_code != 200:
            return None
        for chunk in resp.iter_bytes():
            if chunk:
                return time.perf_counter() - last[0]
    return None


async def wyoming_voice_stopped(daemon: Daemon, speech: np.ndarray) -> float | None:
    """Wyoming at real time, Hearth ending the turn: end of speech -> ``voice-stopped``."""
    from wyoming.asr import Transcribe
    from wyoming.audio import AudioChunk, AudioStart
    from wyoming.client import AsyncTcpClient

    host, port = daemon.wyoming_uri.removeprefix("tcp://").rsplit(":", 1)
    pcm = np.concatenate([np.zeros(int(0.3 * RATE), np.int16), speech]).astype("<i2").tobytes()
    tail = np.zeros(int(3.0 * RATE), np.int16).astype("<i2").tobytes()
    step = int(RATE * 0.01) * 2
    stopped: list[float] = []
    speech_end = [0.0]
    async with AsyncTcpClient(host, int(port)) as client:
        await client.write_event(Transcribe(language="en").event())
        await client.write_event(AudioStart(RATE, 2, 1).event())

        async def read() -> None:
            while (event := await client.read_event()) is not None:
                if event.type == "voice-stopped" and not stopped:
                    stopped.append(time.perf_counter())
                if event.type == "transcript":
                    return

        reader = asyncio.ensure_future(read())
        began = time.perf_counter()
        data = pcm + tail
        for i in range(0, len(data), step):
            if i == len(pcm):
                speech_end[0] = time.perf_counter()
            if reader.done():
                break
            chunk = AudioChunk(RATE, 2, 1, data[i : i + step])
            await client.write_event(chunk.event())
            await asyncio.sleep(max(0.0, began + (i + step) / (RATE * 2) - time.perf_counter()))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(reader, 10)
    return stopped[0] - speech_end[0] if stopped and speech_end[0] else None


# ---------------------------------------------------------------- the daemons


async def measure(daemons: dict[str, Daemon], speech: dict[str, np.ndarray], runs: int) -> Samples:
    """Values by measure and tree, the daemons taking turns request by request."""
    turns = InTurn(daemons)
    note, each = turns.note, turns.each

    async with handsfree_clients(daemons) as clients:
        for _ in range(runs):
            for label, utterance in speech.items():
                if label == "long":
                    continue
                voice = "piper" if label.startswith("piper") else "espeak"
                for name, client in clients.items():
                    turn = await webrtc_turn(client, utterance)
                    if turn is None:
                        continue
                    note(f"hands-free, {voice}", name, turn["first"])
                    note("reply: longest quiet inside", name, turn["quiet"])
                    note("reply: longest wait between frames", name, turn["frame_wait"])
                if voice == "piper":
                    await each("sts", lambda d, u=utterance: asyncio.to_thread(sts_turn, d, u))
            await each(
                "wyoming voice-stopped",
                lambda d: wyoming_voice_stopped(d, speech["long"]),
            )
    return turns.samples


# ---------------------------------------------------------------- the budget, in process


VARIANTS = ("a short first phrase", "the first sentence whole")
"""The budget's configurations, taking turns utterance by utterance in one process."""


def _variant(name: str) -> None:
    """Switch the reply's first piece to one of :data:`VARIANTS`."""
    from daemon.speech import pipeline

    pipeline.FIRST_WORDS = None if name == VARIANTS[1] else FIRST_WORDS  # type: ignore[misc]


async def budget(
    utterances: list[np.ndarray], runs: int, history: bool = False
) -> dict[str, dict[str, list[float]]]:
    """Each step's end in ms after the end of speech, from inside (this tree's code), for
    each of :data:`VARIANTS`; with ``history`` each variant's turns are one conversation
    (as a WebRTC client's are), else each turn starts a new one."""
    from daemon.config import parse_config
    from daemon.engines.hardware import probe
    from daemon.engines.tts.base import SynthesisOptions
    from daemon.runtime.loading import load_engines
    from daemon.speech.session import SessionOptions

    steps: dict[str, dict[str, list[float]]] = {v: {} for v in VARIANTS}
    with tempfile.TemporaryDirectory() as state:
        config = parse_config(
            f"state_dir: {state}\nllm:\n  temperature: 0.0\n  max_tokens: 24\n", "bench"
        )
        engines = await asyncio.to_thread(load_engines, config, probe())
        assert engines.pipeline is not None and engines.chat is not None
        await engines.chat.warm_up()
        calls: list[tuple[str, float, float]] = []

        def observe(pool: str, seconds: float) -> None:
            now = time.perf_counter()
            calls.append((pool, now - seconds, now))

        for pool in (engines.asr_pool, engines.turn_pool, engines.tts_pool):
            pool.observer = observe
        for r in range(runs):
            for i, speech in enumerate(utterances):
                for variant in VARIANTS:
                    _variant(variant)
                    calls.clear()
                    marks = await _budget_turn(
                        engines,
                        speech,
                        f"budget-{variant}" if history else f"budget{r}-{i}-{variant}",
                        SessionOptions,
                        SynthesisOptions,
                    )
                    _marks_from_calls(marks, calls)
                    for name, at in marks.items():
                        steps[variant].setdefault(name, []).append(at * 1000)
        _variant(VARIANTS[0])
        engines.close()
    return steps


async def _budget_turn(
    engines: Any, speech: np.ndarray, conversation: str, session_options: Any, synthesis: Any
) -> dict[str, float]:
    """One hands-free turn at real time: each step's time, relative to the end of speech
    (the pools' calls are added by :func:`_marks_from_calls`)."""
    from daemon.audio.pcm import AudioFormat
    from daemon.speech.events import FinalTranscript, ReplyChunk, SpeechAudio

    marks: dict[str, float] = {}
    session = engines.new_session(options=session_options(partials=False, hands_free=True))
    replies = engines.pipeline.replies(conversation, True, synthesis(sample_rate=RATE))

    async def listen() -> None:
        async for event in session.events():
            await replies.observe(event)
            if isinstance(event, FinalTranscript) and event.text.strip():
                marks.setdefault("turn decided, the reply starts", time.perf_counter())
                async for out in replies.start(event).events():
                    if isinstance(out, ReplyChunk):
                        marks.setdefault("the LLM's first token", time.perf_counter())
                    if isinstance(out, SpeechAudio):
                        marks.setdefault("first reply audio", time.perf_counter())
                return

    reader = asyncio.ensure_future(listen())
    lead, tail = np.zeros(int(0.3 * RATE), np.int16), np.zeros(int(2.2 * RATE), np.int16)
    audio = np.concatenate([lead, speech, tail])
    session.start(AudioFormat(RATE, 2, 1))
    step = int(RATE * 0.02)
    began = time.perf_counter()
    speech_end = began + 0.3 + len(speech) / RATE
    for k in range(0, len(audio), step):
        await session.feed(audio[k : k + step].tobytes())
        await asyncio.sleep(max(0.0, began + (k + step) / RATE - time.perf_counter()))
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(reader, 30)
    await session.close()
    await replies.close()
    marks["_end"] = speech_end
    return marks


def _marks_from_calls(marks: dict[str, float], calls: list[tuple[str, float, float]]) -> None:
    """Add the worker pools' calls after the end of speech to ``marks``, then make every
    mark relative to the end of speech (seconds)."""
    speech_end = marks.pop("_end")
    after = [c for c in calls if c[1] > speech_end - 0.05]
    decodes = [c for c in after if c[0] == "asr"]
    checks = [c for c in after if c[0] == "turn"]
    voices = [c for c in after if c[0] == "tts"]
    if decodes:
        marks["the speculative decode starts"] = decodes[-1][1]
        marks["the speculative decode ends"] = decodes[-1][2]
    if checks:
        marks["the turn check starts"] = checks[-1][1]
        marks["the turn check ends"] = checks[-1][2]
    if voices:
        marks["the first phrase goes to the voice"] = voices[0][1]
        marks["the first phrase is synthesized"] = voices[0][2]
    for name in list(marks):
        marks[name] -= speech_end


ORDER = (
    "the speculative decode starts",
    "the turn check starts",
    "the turn check ends",
    "the speculative decode ends",
    "turn decided, the reply starts",
    "the LLM's first token",
    "the first phrase goes to the voice",
    "the first phrase is synthesized",
    "first reply audio",
)


# ---------------------------------------------------------------- the report


def _ms(values: list[float], q: float | None = None, scale: float = 1000) -> str:
    if not values:
        return "-"
    value = statistics.median(values) if q is None else percentile(values, q)
    return f"{value * scale:.0f} ms"


def report(
    samples: Samples,
    steps: dict[str, dict[str, list[float]]],
    revision: str,
    runs: int,
    comma_s: float,
    heard: dict[str, float],
) -> str:
    names = ("before", "after")
    lines = [
        "## Half a second: end of speech to the first word of the reply"
        " (`bench/speech_to_speech.py`)",
        "",
        f"{datetime.date.today()}, {machine()}. Two daemons on loopback, the embedded models,"
        f" `llm.temperature: 0`, taking turns request by request; `before` is {revision}."
        f" {runs} runs of {len(COMMANDS)} Piper commands (Hearth's voice, no noise) and"
        f" {len(ESPEAK_COMMANDS)} eSpeak NG commands in {len(ESPEAK)} voices"
        f" ({', '.join(ESPEAK)}), at real time. Median (p90).",
        "",
        "| measure | before | after | after / before | samples |",
        "|---|---|---|---|---|",
    ]
    rows = (
        (
            "hands-free, piper",
            "hands-free over WebRTC, Piper commands: end of speech -> first reply frame",
        ),
        ("hands-free, espeak", "hands-free over WebRTC, eSpeak NG commands: the same"),
        ("sts", "`/api/sts` push-to-talk: last byte -> first reply audio"),
        (
            "wyoming voice-stopped",
            f'Wyoming at real time, Hearth ends the turn: "{LONG_COMMAND}", end -> voice-stopped',
        ),
        ("reply: longest quiet inside", "reply audio: longest quiet run inside"),
        ("reply: longest wait between frames", "reply audio: longest wait between two frames"),
    )
    for key, title in rows:
        got = samples.get(key)
        if not got:
            continue
        before, after = got[names[0]], got[names[1]]
        ratio = (
            f"{statistics.median(after) / statistics.median(before):.2f}"
            if before and after
            else "-"
        )
        lines.append(
            f"| {title} | {_ms(before)} ({_ms(before, 0.9)}) | {_ms(after)} ({_ms(after, 0.9)}) |"
            f" {ratio} | {len(before)} / {len(after)} |"
        )
    if heard:
        was, now = heard.get("before", float("nan")), heard.get("after", float("nan"))
        lines.append(
            "| reply audio heard back by Whisper (tiny.en) against the reply's text: word error"
            f" rate | {was:.1%} | {now:.1%} | - | - |"
        )
    lines += [
        "",
        "A comma's pause in Hearth's voice (\"Yes, the lights are on.\"):"
        f" {comma_s * 1000:.0f} ms.",
        "",
        "The budget after the change: hands-free turns in this process through the daemon's"
        " session and reply code (Piper commands), each step's end in ms after the end of"
        " speech, from the worker pools' call times and the events; the reply's first piece a"
        " short phrase (the change) or the first sentence whole, taking turns utterance by"
        " utterance. Median (p90).",
        "",
        "| step | " + " | ".join(VARIANTS) + " |",
        "|---|" + "---|" * len(VARIANTS),
    ]
    for name in ORDER:
        cells = []
        for variant in VARIANTS:
            values = steps.get(variant, {}).get(name, [])
            cells.append(f"{_ms(values, scale=1)} ({_ms(values, 0.9, scale=1)})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def comma_pause() -> float:
    pcm = piper_speech(("Yes, the lights are on.",))[0]
    return longest_quiet_s(pcm)


def main() -> None:
    parser = arguments(__doc__, runs=3, before="main")
    parser.add_argument("--budget-runs", type=int, default=2)
    parser.add_argument("--budget-only", action="store_true", help="only the in-process budget")
    parser.add_argument(
        "--history", action="store_true", help="the budget's turns as one conversation each"
    )
    args = parser.parse_args()
    before_rev = revision(args.before)
    piper = piper_speech(COMMANDS + (LONG_COMMAND,))
    speech = {f"piper {i}": trimmed(p) for i, p in enumerate(piper[:-1])}
    speech["long"] = trimmed(piper[-1])
    if shutil.which("espeak-ng"):
        for voice in ESPEAK:
            for i, text in enumerate(ESPEAK_COMMANDS):
                speech[f"espeak {voice} {i}"] = trimmed(espeak_pcm(voice, 160, text))
    long = speech.pop("long")
    comma_s = comma_pause()
    piper_only = [s for k, s in speech.items() if k.startswith("piper")]
    if args.budget_only:
        steps = asyncio.run(budget(piper_only, args.budget_runs, args.history))
        print(report({}, steps, before_rev, 0, comma_s, {}))
        return
    with worktree(before_rev) as before, tempfile.TemporaryDirectory() as work:
        with (
            serving(before, Path(work) / "before", (21600, 21699)) as old,
            serving(ROOT, Path(work) / "after", (21700, 21799)) as new,
        ):
            speech_all = dict(speech) | {"long": long}
            daemons = {"before": old, "after": new}
            samples = asyncio.run(measure(daemons, speech_all, args.runs))
            heard = reply_wer(daemons)
    steps = asyncio.run(budget(piper_only, args.budget_runs))
    table = report(samples, steps, before_rev, args.runs, comma_s, heard)
    publish("half-second", table, not args.no_write)


if __name__ == "__main__":
    main()
