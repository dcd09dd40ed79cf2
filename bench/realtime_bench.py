"""OpenAI Realtime API: the same turn as Hearth's own WebRTC hands-free path, and idle cost.

One ``hearth serve`` (default config, embedded models) serves both clients in one run,
taking turns: the official ``openai`` client over ``/v1/realtime`` (``semantic_vad``,
so the turn model ends the turn as it does hands-free) and an aiortc client over
WebRTC (``listen`` with ``reply``), each in a fresh session, each sending the same
utterance at real time in 20 ms frames (0.3 s of silence, the speech, 2 s of silence).
From the end of speech: the end of the turn (``input_audio_buffer.speech_stopped`` /
``vad {speech: false}``), the transcript (``...transcription.completed`` / ``infer``)
and the first reply audio (the first ``response.output_audio.delta`` / the first
reply frame the client decodes). Target: the Realtime path within 10 % of WebRTC's.

Idle: an open Realtime WebSocket with no audio, every byte counted both ways by a TCP
proxy between the client and the daemon (WebSocket frames and their TCP payload; the
headers of TCP/IP are not counted).

With ``--voices`` (``piper``, ``espeak`` or both, comma-separated), eight held-back
home commands are said by each voice instead (Piper: Hearth's own voice; eSpeak NG: two
voices no setting was chosen on), each in a fresh session over both paths, and the
report gives each voice's medians and p90 of every step, the reply words, and what a
fresh Realtime session starts with next to what the WebRTC path uses.
``--instructions TEXT`` has each Realtime session set its own instructions, as a
client bringing its own persona does.

Run: .venv/bin/python -m bench.realtime_bench [--runs 5] [--idle-seconds 60] [--quick]
     .venv/bin/python -m bench.realtime_bench --voices piper,espeak [--paths realtime]
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness import arguments, hearth_speech, machine, publish, write_section
from bench.webrtc_bench import UTTERANCE, speak
from daemon.audio.pcm import resample_pcm
from tests.daemon import Daemon
from tests.helpers import espeak_pcm, free_port, words
from tests.webrtc_client import RtcClient

RATE = 16000
LEAD_S = 0.3
TAIL_S = 2.0
FRAME_S = 0.02
TURN_TIMEOUT_S = 120.0
SEMANTIC = {"type": "realtime", "audio": {"input": {"turn_detection": {"type": "semantic_vad"}}}}
COMMANDS = (
    "Set the living room light to 4%",
    "Turn off the bedroom fan at 10 30 pm",
    "What time is it?",
    "Add milk and eggs to my shopping list",
    "Is the front door locked?",
    "Dim the kitchen lights to half",
    "Remind me to water the plants tomorrow morning",
    "Play some quiet jazz in the study",
)
"""Held-back home commands (no setting was chosen on them)."""
ESPEAK_VOICES = (("en-us-nyc+m4", 175), ("en-gb-x-gbcwmd+f2", 165))
"""eSpeak NG voices and their words per minute (from the held-out set's unseen part)."""
VOICE_KINDS = ("piper", "espeak")


@dataclass
class Turn:
    """Seconds from the end of speech to each step of one turn."""

    stopped: float
    transcript: float
    first_audio: float
    text: str
    reply: str = ""
    said: str = ""
    ended: float = 0.0
    """The end of speech (``time.monotonic()``), to line a turn up with other logs."""


def framed(speech: np.ndarray) -> np.ndarray:
    silence = np.zeros(int(LEAD_S * RATE), np.int16)
    return np.concatenate([silence, speech, np.zeros(int(TAIL_S * RATE), np.int16)])


async def realtime_turn(
    url: str,
    speech: np.ndarray,
    instructions: str | None = None,
    fresh: dict[str, Any] | None = None,
) -> Turn:
    """One turn over /v1/realtime with the openai client (``instructions``: the
    session's own; ``fresh``: filled with the session object of ``session.created``)."""
    import openai

    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="bench", max_retries=0)
    pcm = resample_pcm(framed(speech).tobytes(), RATE, 24000)
    step = int(24000 * FRAME_S) * 2
    settings: dict[str, Any] = dict(SEMANTIC)
    if instructions is not None:
        settings["instructions"] = instructions
    async with client.realtime.connect(model="gpt-realtime") as conn:
        created = await until(conn, "session.created")
        if fresh is not None:
            fresh.update(created.session.model_dump(exclude_none=False))
        await conn.session.update(session=settings)  # type: ignore[arg-type]
        await until(conn, "session.updated")
        began = time.monotonic()
        ended = began + LEAD_S + len(speech) / RATE

        async def send() -> None:
            for i, offset in enumerate(range(0, len(pcm), step)):
                await asyncio.sleep(max(0.0, began + i * FRAME_S - time.monotonic()))
                chunk = base64.b64encode(pcm[offset : offset + step]).decode()
                await conn.input_audio_buffer.append(audio=chunk)

        sender = asyncio.ensure_future(send())
        seen: dict[str, float] = {}
        text = ""
        reply: list[str] = []
        try:
            async with asyncio.timeout(TURN_TIMEOUT_S):
                while True:
                    event = await conn.recv()
                    seen.setdefault(event.type, time.monotonic())
                    if event.type == "error":
                        raise RuntimeError(f"error event: {event.error}")
                    if event.type == "conversation.item.input_audio_transcription.completed":
                        text = event.transcript
                    if event.type == "response.output_audio_transcript.delta":
                        reply.append(event.delta)
                    if event.type == "response.done":
                        break
        finally:
            sender.cancel()
    return Turn(
        seen["input_audio_buffer.speech_stopped"] - ended,
        seen["conversation.item.input_audio_transcription.completed"] - ended,
        seen["response.output_audio.delta"] - ended,
        text,
        "".join(reply),
        ended=ended,
    )


async def until(conn: Any, kind: str, timeout: float = TURN_TIMEOUT_S) -> Any:
    """The next Realtime event of ``kind`` (an ``error`` event raises)."""
    async with asyncio.timeout(timeout):
        while (event := await conn.recv()).type != kind:
            if event.type == "error":
                raise RuntimeError(f"Realtime error event: {event.error}")
    return event


async def webrtc_turn(url: str, speech: np.ndarray) -> Turn:
    """The same turn over Hearth's WebRTC hands-free path."""
    client = await RtcClient(url).connect()
    try:
        client.send("listen", reply=True)
        await client.expect("state")
        began = time.monotonic()
        ended = began + LEAD_S + len(speech) / RATE
        client.mic.play(framed(speech).tobytes(), RATE)
        client.mic.flush()
        stopped = transcript = 0.0
        text = ""
        reply = ""
        async with asyncio.timeout(TURN_TIMEOUT_S):
            while not transcript:
                message = await client.messages.get()
                now = time.monotonic()
                if message["type"] == "vad" and not message["obj"]["speech"]:
                    stopped = stopped or now
                elif message["type"] == "infer":
                    transcript, text = now, message["obj"]["text"]
            while not client.reply_frames_at:
                await asyncio.sleep(0.002)
            first_audio = client.reply_frames_at[0]
            while True:  # the reply is written to its end before the next turn
                message = await client.messages.get()
                if message["type"] == "reply" and message["obj"].get("done"):
                    reply = str(message["obj"].get("text") or "")
                    break
    finally:
        await client.close()
    return Turn(stopped - ended, transcript - ended, first_audio - ended, text, reply, ended=ended)


def espeak(voice: str, wpm: int, text: str) -> np.ndarray:
    """eSpeak NG saying ``text``: 16 kHz int16, its own silence cut."""
    return trimmed(espeak_pcm(voice, wpm, text))


def trimmed(speech: np.ndarray) -> np.ndarray:
    """``speech`` without the synthesizer's leading and trailing silence (-50 dBFS):
    the end of the array is the end of speech."""
    loud = np.flatnonzero(np.abs(speech.astype(np.int32)) > 32768 * 10 ** (-50 / 20))
    return speech[loud[0] : loud[-1] + 1] if loud.size else speech


async def said(daemon: Daemon, kinds: list[str]) -> list[tuple[str, str, np.ndarray]]:
    """Each voice saying each command: (voice, command, 16 kHz speech)."""
    out: list[tuple[str, str, np.ndarray]] = []
    for kind in kinds:
        if kind == "piper":
            for text in COMMANDS:
                out.append(
                    ("piper (Hearth's voice)", text, trimmed(await hearth_speech(daemon, text)))
                )
        else:
            for voice, wpm in ESPEAK_VOICES:
                for text in COMMANDS:
                    out.append((f"espeak {voice}", text, espeak(voice, wpm, text)))
    return out


def p90(values: list[float]) -> float:
    return float(np.percentile(values, 90))


def _defaults_rows(fresh: dict[str, Any], config: Any) -> list[str]:
    """What a fresh Realtime session starts with, next to the WebRTC path's settings."""
    audio = fresh.get("audio") or {}
    detection = (audio.get("input") or {}).get("turn_detection")
    llm, vad = config.llm, config.vad
    return [
        "| setting | fresh Realtime session (`session.created`) | WebRTC hands-free |",
        "| --- | --- | --- |",
        f"| instructions | {_quoted(fresh.get('instructions'))} | `llm.system_prompt`: "
        f"{_quoted(llm.system_prompt)} |",
        f"| reply length | `max_output_tokens` {fresh.get('max_output_tokens')!r} | "
        f"`llm.max_tokens` {llm.max_tokens} |",
        f"| temperature | {fresh.get('temperature')!r} (Hearth's) | `llm.temperature` "
        f"{llm.temperature:g} |",
        f"| turn detection | `{detection}` (the bench sets `semantic_vad`) | the turn model "
        f"(threshold {vad.turn_threshold:g}, first asked after {vad.turn_check_ms} ms, at "
        f"most {vad.max_pause_ms} ms of pause) |",
        f"| voice | {(audio.get('output') or {}).get('voice')!r} | `tts.default_voice` "
        f"{config.tts.default_voice!r} |",
    ]


def _quoted(text: object) -> str:
    return "none" if text is None else '"' + str(text).replace("|", "\\|") + '"'


async def run_voices(
    kinds: list[str], paths: list[str], instructions: str | None, quick: bool
) -> str:
    """The held-back commands said by each voice, over each path (see the docstring)."""
    from daemon.config import load_config

    turns: dict[tuple[str, str], list[Turn]] = {}
    fresh: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        extra = "webrtc:\n  addresses: [127.0.0.1]\n  port_min: 23200\n  port_max: 23299\n"
        daemon = Daemon(Path(tmp), extra).start()
        try:
            config = load_config(daemon.config_path, environ={})
            clips = await said(daemon, kinds)
            if quick:
                clips = [c for c in clips if c[1] in COMMANDS[:3]]
            warm = clips[0][2]
            await realtime_turn(daemon.url, warm, instructions, fresh)  # warm-up, both ways
            if "webrtc" in paths:
                await webrtc_turn(daemon.url, warm)
            for voice, text, speech in clips:  # taking turns: both see the same machine
                for path in paths:
                    if path == "realtime":
                        turn = await realtime_turn(daemon.url, speech, instructions)
                    else:
                        turn = await webrtc_turn(daemon.url, speech)
                    turn.said = text
                    turns.setdefault((voice, path), []).append(turn)
                    print(
                        f"{voice} | {path} | {text!r} -> {turn.text!r}: stopped "
                        f"{turn.stopped * 1000:.0f} ms, transcript {turn.transcript * 1000:.0f} "
                        f"ms, first audio {turn.first_audio * 1000:.0f} ms; {turn.reply!r}",
                        flush=True,
                    )
        finally:
            daemon.stop()
    own = "none (Hearth's)" if instructions is None else _quoted(instructions)
    rows = [
        "## OpenAI Realtime API: held-back commands and voices",
        "",
        f"Machine: {machine()}. Date: "
        f"{datetime.date.today().isoformat()}. One `hearth serve` on loopback, default "
        "config (embedded models on the CPU). The official `openai` client over "
        "`/v1/realtime` (`semantic_vad`, session instructions: "
        f"{own}) and an aiortc client over WebRTC (`listen` with `reply`), a fresh session "
        f"per command, taking turns. {len(COMMANDS) if not quick else 3} held-back home "
        "commands said by each voice (its own silence cut), after "
        f"{LEAD_S:g} s of silence, sent at real time in 20 ms frames, then {TAIL_S:g} s of "
        "silence. Times from the end of speech, median (p90). Run with "
        "`.venv/bin/python -m bench.realtime_bench --voices piper,espeak`.",
        "",
        "| voice | path | turns | -> `speech_stopped` | -> transcript | -> first reply audio "
        "| transcript -> first audio | transcripts right |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (voice, path), got in turns.items():
        cells = []
        for values in (
            [t.stopped for t in got],
            [t.transcript for t in got],
            [t.first_audio for t in got],
            [t.first_audio - t.transcript for t in got],
        ):
            cells.append(f"{statistics.median(values) * 1000:.0f} ({p90(values) * 1000:.0f}) ms")
        right = sum(words(t.text) == words(t.said) for t in got)
        rows.append(f"| {voice} | {path} | {len(got)} | " + " | ".join(cells) + f" | {right} |")
    everything = [t for (_, path), got in turns.items() if path == "realtime" for t in got]
    if everything:
        first = [t.first_audio for t in everything]
        rows += [
            "",
            f"Realtime, all voices: end of speech -> first reply audio median "
            f"{statistics.median(first) * 1000:.0f} ms, p90 {p90(first) * 1000:.0f} ms "
            "(target: 500 ms, 700 ms).",
        ]
    rows += ["", "What a fresh session starts with:", "", *_defaults_rows(fresh, config), ""]
    rows += ["Replies (Realtime, the first voice):", ""]
    first_voice = next(iter(turns))[0]
    for turn in turns.get((first_voice, "realtime"), []):
        rows.append(f"- {turn.said!r} -> {turn.text!r}: {turn.reply!r}")
    return "\n".join(rows)


class CountingProxy:
    """A TCP proxy to the daemon that counts the bytes each way."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.listen_port = free_port()
        self.up = 0
        self.down = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.listen_port)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.port)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, up: bool) -> None:
            try:
                while data := await src.read(65536):
                    if up:
                        self.up += len(data)
                    else:
                        self.down += len(data)
                    dst.write(data)
                    await dst.drain()
            except ConnectionError:
                pass
            finally:
                dst.close()

        await asyncio.gather(
            pipe(reader, upstream_writer, True), pipe(upstream_reader, writer, False)
        )

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()


async def idle_cost(daemon: Daemon, seconds: float) -> tuple[float, float]:
    """Bytes per second each way over an open Realtime WebSocket that sends no audio."""
    import openai

    proxy = CountingProxy(daemon.http_port)
    await proxy.start()
    url = f"http://127.0.0.1:{proxy.listen_port}/v1"
    client = openai.AsyncOpenAI(base_url=url, api_key="bench", max_retries=0)
    try:
        async with client.realtime.connect(model="gpt-realtime") as conn:
            await until(conn, "session.created")
            await asyncio.sleep(1.0)
            up, down, began = proxy.up, proxy.down, time.monotonic()
            reader = asyncio.ensure_future(conn.recv())  # the client reads, as it would
            await asyncio.sleep(seconds)
            elapsed = time.monotonic() - began
            reader.cancel()
            return (proxy.up - up) / elapsed, (proxy.down - down) / elapsed
    finally:
        await proxy.close()


async def run(runs: int, idle_s: float, quick: bool = False) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        extra = "webrtc:\n  addresses: [127.0.0.1]\n  port_min: 23200\n  port_max: 23299\n"
        daemon = Daemon(Path(tmp), extra).start()
        try:
            speech = await speak(daemon)
            await realtime_turn(daemon.url, speech)  # warm-up, both ways
            await webrtc_turn(daemon.url, speech)
            realtime: list[Turn] = []
            webrtc: list[Turn] = []
            for _ in range(runs):  # taking turns: both see the same machine
                realtime.append(await realtime_turn(daemon.url, speech))
                webrtc.append(await webrtc_turn(daemon.url, speech))
            up, down = await idle_cost(daemon, idle_s)
        finally:
            daemon.stop()
    wrong = [t.text for t in realtime + webrtc if words(t.text) != words(UTTERANCE)]
    how = "`--quick`: one run, a check and not the record" if quick else f"Medians of {runs} runs"
    rows = [
        "## OpenAI Realtime API",
        "",
        f"Machine: {machine()}. Date: {datetime.date.today().isoformat()}. The official "
        "`openai` client over `/v1/realtime` (`semantic_vad`) and an aiortc client over "
        "WebRTC (`listen` with `reply`), taking turns against one `hearth serve` on "
        "loopback, default config (embedded models on the CPU), a fresh session per turn. "
        f"A {len(speech) / RATE:.1f} s utterance after {LEAD_S:g} s of silence, sent at real "
        f"time in 20 ms frames, then {TAIL_S:g} s of silence. {how}; times from the end of "
        "speech. Run with `.venv/bin/python -m bench.realtime_bench`.",
        "",
        "| end of speech -> | Realtime (openai client) | WebRTC hands-free | ratio | "
        "target: within 10 % |",
        "| --- | --- | --- | --- | --- |",
    ]
    for label, field in (
        ("`speech_stopped` / `vad {speech: false}`", "stopped"),
        ("transcript completed / `infer`", "transcript"),
        ("first reply audio (`response.output_audio.delta` / first frame)", "first_audio"),
    ):
        a = statistics.median(getattr(t, field) for t in realtime)
        b = statistics.median(getattr(t, field) for t in webrtc)
        ratio = a / b if b > 0 else float("nan")
        verdict = "met" if a <= b * 1.1 else "not met"
        row = f"| {label} | {a * 1000:.0f} ms | {b * 1000:.0f} ms | {ratio:.2f}x | {verdict} |"
        rows.append(row)
    rows += [
        "",
        f"Transcripts correct: {2 * runs - len(wrong)}/{2 * runs}"
        + (f" (heard: {wrong[:3]})" if wrong else "")
        + ".",
        "",
        "| idle Realtime WebSocket, no audio | client -> Hearth | Hearth -> client |",
        "| --- | --- | --- |",
        f"| {idle_s:.0f} s, bytes per second | {up:.2f} B/s | {down:.2f} B/s |",
        "",
        "Both paths run the same conversation (the turn model ends the turn; the transcript "
        "comes with the end of the turn, so the first two rows are one event apart). The "
        "Realtime reply's first audio leaves as soon as it is synthesized (later audio is "
        "paced 0.5 s ahead of playback); WebRTC's goes through the reply track's Opus "
        "encoder and the client's jitter buffer. An idle Realtime session sends no events: "
        "what is left is the WebSocket keepalive pings and pongs.",
    ]
    return "\n".join(rows)


def main() -> None:
    parser = arguments(__doc__, runs=5)
    parser.add_argument("--idle-seconds", type=float, default=None, help="60 (quick: 10)")
    parser.add_argument("--quick", action="store_true", help="one run, 10 s idle (a check)")
    parser.add_argument(
        "--voices", default="", help="held-back commands said by: piper, espeak or piper,espeak"
    )
    parser.add_argument(
        "--paths", default="realtime,webrtc", help="with --voices: realtime, webrtc or both"
    )
    parser.add_argument("--instructions", default=None, help="the Realtime sessions' own")
    args = parser.parse_args()
    if args.voices:
        kinds = [k for k in args.voices.split(",") if k]
        paths = [p for p in args.paths.split(",") if p]
        if not set(kinds) <= set(VOICE_KINDS) or not set(paths) <= {"realtime", "webrtc"}:
            parser.error("--voices takes piper and espeak; --paths realtime and webrtc")
        text = asyncio.run(run_voices(kinds, paths, args.instructions, args.quick))
        print(text)
        if not args.quick and not args.no_write:
            write_section("realtime-voices", text)
        return
    runs = 1 if args.quick else args.runs
    idle_s = args.idle_seconds or (10.0 if args.quick else 60.0)
    text = asyncio.run(run(runs, idle_s, args.quick))
    publish("realtime", text, not args.no_write)


if __name__ == "__main__":
    main()
