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

Run: .venv/bin/python bench/realtime_bench.py [--runs 5] [--idle-seconds 60] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.results import machine, write_section  # noqa: E402
from bench.webrtc_bench import UTTERANCE, speak  # noqa: E402
from daemon.audio.pcm import resample_pcm  # noqa: E402
from tests.daemon import Daemon  # noqa: E402
from tests.helpers import free_port, words  # noqa: E402
from tests.webrtc_client import RtcClient  # noqa: E402

RATE = 16000
LEAD_S = 0.3
TAIL_S = 2.0
FRAME_S = 0.02
TURN_TIMEOUT_S = 120.0
SEMANTIC = {"type": "realtime", "audio": {"input": {"turn_detection": {"type": "semantic_vad"}}}}


@dataclass
class Turn:
    """Seconds from the end of speech to each step of one turn."""

    stopped: float
    transcript: float
    first_audio: float
    text: str


def framed(speech: np.ndarray) -> np.ndarray:
    silence = np.zeros(int(LEAD_S * RATE), np.int16)
    return np.concatenate([silence, speech, np.zeros(int(TAIL_S * RATE), np.int16)])


async def realtime_turn(url: str, speech: np.ndarray) -> Turn:
    """One turn over /v1/realtime with the openai client."""
    import openai

    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="bench", max_retries=0)
    pcm = resample_pcm(framed(speech).tobytes(), RATE, 24000)
    step = int(24000 * FRAME_S) * 2
    async with client.realtime.connect(model="gpt-realtime") as conn:
        await _until(conn, "session.created")
        await conn.session.update(session=SEMANTIC)
        await _until(conn, "session.updated")
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
        try:
            async with asyncio.timeout(TURN_TIMEOUT_S):
                while True:
                    event = await conn.recv()
                    seen.setdefault(event.type, time.monotonic())
                    if event.type == "error":
                        raise RuntimeError(f"error event: {event.error}")
                    if event.type == "conversation.item.input_audio_transcription.completed":
                        text = event.transcript
                    if event.type == "response.done":
                        break
        finally:
            sender.cancel()
    return Turn(
        seen["input_audio_buffer.speech_stopped"] - ended,
        seen["conversation.item.input_audio_transcription.completed"] - ended,
        seen["response.output_audio.delta"] - ended,
        text,
    )


async def _until(conn: Any, kind: str) -> Any:
    async with asyncio.timeout(TURN_TIMEOUT_S):
        while (event := await conn.recv()).type != kind:
            if event.type == "error":
                raise RuntimeError(f"error event: {event.error}")
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
                    break
    finally:
        await client.close()
    return Turn(stopped - ended, transcript - ended, first_audio - ended, text)


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
            await _until(conn, "session.created")
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
        "speech. Run with `.venv/bin/python bench/realtime_bench.py`.",
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--idle-seconds", type=float, default=None, help="60 (quick: 10)")
    parser.add_argument("--quick", action="store_true", help="one run, 10 s idle (a check)")
    args = parser.parse_args()
    runs = 1 if args.quick else args.runs
    idle_s = args.idle_seconds or (10.0 if args.quick else 60.0)
    text = asyncio.run(run(runs, idle_s, args.quick))
    print(text)
    write_section("realtime", text)


if __name__ == "__main__":
    main()
