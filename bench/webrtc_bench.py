"""WebRTC: idle cost of a paused session, end of speech -> transcript, concurrency.

An aiortc client (the same one the tests use, standing in for a browser) talks to a
real ``hearth serve`` over loopback. Every UDP datagram of the session's socket is
counted in both directions (payload bytes; on-wire adds 28 bytes of IPv4+UDP
header per packet).

Push-to-talk released like a person does (150, 300 and 500 ms after the last word):
``stop`` -> ``infer`` beside the WIS way in the same run, where the whole buffer is
decoded after the stop (the same audio posted to ``/api/asr``, whose answer comes only
after a decode of the complete buffer).

Run: .venv/bin/python -m bench.webrtc_bench [--runs 5] [--idle-seconds 120] [--release-only]
"""

from __future__ import annotations

import asyncio
import datetime
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.harness import arguments, hearth_speech, machine, percentile, publish
from tests.daemon import Daemon
from tests.helpers import wav, words
from tests.webrtc_client import RtcClient

UTTERANCE = "Please turn on the kitchen lights and close the blinds."
RATE = 16000


@dataclass
class Counter:
    sent_bytes: int = 0
    sent_packets: int = 0
    received_bytes: int = 0
    received_packets: int = 0

    def snapshot(self) -> tuple[int, int, int, int]:
        return (self.sent_bytes, self.sent_packets, self.received_bytes, self.received_packets)


def count_udp(client: RtcClient) -> Counter:
    """Wrap the client's ICE sockets so every datagram is counted."""
    counter = Counter()
    connection: Any = client.pc.getTransceivers()[0].sender.transport.transport._connection
    for protocol in connection._protocols:
        transport = protocol.transport
        send, receive = transport.sendto, protocol.datagram_received

        def sendto(data: bytes, addr: Any = None, _send: Any = send) -> None:
            counter.sent_bytes += len(data)
            counter.sent_packets += 1
            _send(data, addr)

        def datagram_received(data: bytes, addr: Any, _receive: Any = receive) -> None:
            counter.received_bytes += len(data)
            counter.received_packets += 1
            _receive(data, addr)

        transport.sendto = sendto
        protocol.datagram_received = datagram_received
    return counter


async def utterance(client: RtcClient, speech: np.ndarray, hands_free: bool) -> float:
    """One utterance; seconds from the end of speech (ptt: the stop) to ``infer``."""
    silence = np.zeros(int(0.3 * RATE), np.int16)
    if hands_free:
        await client.speak(np.concatenate([silence, speech]))
        ended = time.perf_counter()
        client.mic.play(np.zeros(int(1.5 * RATE), np.int16).tobytes(), RATE)
        client.mic.flush()
    else:
        client.send("start")
        await client.expect("state")
        await client.speak(np.concatenate([silence, speech, silence]))
        client.send("stop")
        ended = time.perf_counter()
    infer = await client.expect("infer")
    latency = time.perf_counter() - ended
    if words(infer["obj"]["text"]) != words(UTTERANCE):
        raise RuntimeError(f"wrong transcript: {infer['obj']['text']!r}")
    return latency


RELEASES_MS = (150, 300, 500)
"""When the button is let go, after the last word (ms)."""


async def released(client: RtcClient, speech: np.ndarray, release_ms: int) -> float:
    """Push-to-talk let go ``release_ms`` after the last word; seconds from stop to infer."""
    lead = np.zeros(int(0.3 * RATE), np.int16)
    tail = np.zeros(int(release_ms * RATE / 1000), np.int16)
    client.send("start", partials=False)
    await client.expect("state")
    await client.speak(np.concatenate([lead, speech, tail]))
    client.send("stop")
    ended = time.perf_counter()
    infer = await client.expect("infer")
    latency = time.perf_counter() - ended
    if words(infer["obj"]["text"]) != words(UTTERANCE):
        raise RuntimeError(f"wrong transcript: {infer['obj']['text']!r}")
    return latency


async def whole_buffer(url: str, speech: np.ndarray, release_ms: int) -> float:
    """The WIS way: the complete buffer, decoded after the stop (seconds)."""
    lead = np.zeros(int(0.3 * RATE), np.int16)
    tail = np.zeros(int(release_ms * RATE / 1000), np.int16)
    data = wav(np.concatenate([lead, speech, tail]))
    async with httpx.AsyncClient(timeout=120) as http:
        began = time.perf_counter()
        resp = await http.post(f"{url}/api/asr", files={"audio_file": ("u.wav", data)})
        latency = time.perf_counter() - began
    resp.raise_for_status()
    if words(resp.json()["text"]) != words(UTTERANCE):
        raise RuntimeError(f"wrong transcript: {resp.json()['text']!r}")
    return latency


async def release_rows(runs: int) -> str:
    """Push-to-talk stop -> infer by release time, beside the WIS way, in one run."""
    with tempfile.TemporaryDirectory() as tmp:
        extra = "webrtc:\n  addresses: [127.0.0.1]\n  port_min: 23100\n  port_max: 23199\n"
        daemon = Daemon(Path(tmp), extra).start()
        try:
            speech = await speak(daemon)
            client = await RtcClient(daemon.url).connect()
            await released(client, speech, 300)  # warm-up
            await whole_buffer(daemon.url, speech, 300)
            ptt: dict[int, list[float]] = {ms: [] for ms in RELEASES_MS}
            wis: dict[int, list[float]] = {ms: [] for ms in RELEASES_MS}
            for _ in range(runs):  # interleaved, so both ways see the same machine state
                for ms in RELEASES_MS:
                    ptt[ms].append(await released(client, speech, ms))
                    wis[ms].append(await whole_buffer(daemon.url, speech, ms))
            await client.close()
        finally:
            daemon.stop()
    rows = [
        "## WebRTC push-to-talk release",
        "",
        f"Machine: {machine()}. Date: {datetime.date.today().isoformat()}. An aiortc client "
        "and `hearth serve` on loopback, default config (tiny.en int8 on CPU), partials off. "
        f"A {len(speech) / RATE:.1f} s utterance after 300 ms of silence; the button is let "
        "go the given time after the last word. WIS way: the same audio decoded whole after "
        "the stop (`/api/asr`, same daemon, interleaved with the WebRTC runs). Medians of "
        f"{runs} runs. Run with `.venv/bin/python -m bench.webrtc_bench --release-only`.",
        "",
        "| released after the last word | stop -> `infer` | WIS way | ratio | target 0.3x |",
        "| --- | --- | --- | --- | --- |",
    ]
    for ms in RELEASES_MS:
        a, b = statistics.median(ptt[ms]), statistics.median(wis[ms])
        rows.append(
            f"| {ms} ms | {a * 1000:.0f} ms | {b * 1000:.0f} ms | {a / b:.2f}x "
            f"| {'met' if a <= 0.3 * b else 'not met'} |"
        )
    rows += [
        "",
        "Push-to-talk speculates after `vad.push_to_talk_silence_ms` (90 ms) of silence, "
        "with that much trailing audio; the release keeps that decode when no speech "
        "followed (`infer` says `speculative: true`). Before, it waited for the daemon-wide "
        "240 ms plus 240 ms of padding, and stop -> `infer` was 946 / 944 / 570 ms. The "
        "server hears the silence about 100 ms after the client sends it (Opus framing and "
        "the receiver's jitter buffer), and tiny.en takes about 400 ms to decode this "
        "utterance on 2 cores, so a release 150-300 ms after the last word still waits for "
        "most of one decode. Speculating after 40 ms was worse (471 / 430 / 271 ms): pauses "
        "between words started decodes that were thrown away and held the one ASR worker.",
    ]
    return "\n".join(rows)


async def run(runs: int, idle_s: float) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        extra = "webrtc:\n  addresses: [127.0.0.1]\n  port_min: 23000\n  port_max: 23099\n"
        daemon = Daemon(Path(tmp), extra).start()
        try:
            speech = await speak(daemon)
            client = await RtcClient(daemon.url).connect()
            await utterance(client, speech, hands_free=False)  # warm-up
            ptt = [await utterance(client, speech, hands_free=False) for _ in range(runs)]
            client.send("listen")
            await client.expect("state")
            hands_free = [await utterance(client, speech, hands_free=True) for _ in range(runs)]
            client.send("mute")
            await client.expect("state")

            # Idle: the track paused as a browser does it (with a BYE), nothing said.
            counter = count_udp(client)
            client.pause()
            await client.send_bye()
            await asyncio.sleep(5.0)  # let the last media drain
            start, began = counter.snapshot(), time.perf_counter()
            await asyncio.sleep(idle_s)
            end, elapsed = counter.snapshot(), time.perf_counter() - began
            client.resume()
            after_idle = await utterance(client, speech, hands_free=False)
            await client.close()

            clients = [await RtcClient(daemon.url).connect() for _ in range(4)]
            results = await asyncio.gather(
                *(utterance(c, speech, hands_free=False) for c in clients),
                return_exceptions=True,
            )
            for c in clients:
                await c.close()
        finally:
            daemon.stop()

    sent_b, sent_p = (end[0] - start[0]) / elapsed, (end[1] - start[1]) / elapsed
    recv_b, recv_p = (end[2] - start[2]) / elapsed, (end[3] - start[3]) / elapsed
    payload = (end[0] - start[0]) + (end[2] - start[2])
    packets = (end[1] - start[1]) + (end[3] - start[3])
    wire_kbps = (payload + 28 * packets) * 8 / elapsed / 1000
    ok = [r for r in results if not isinstance(r, BaseException)]

    rows = [
        "## WebRTC",
        "",
        f"Machine: {machine()}. Date: {datetime.date.today().isoformat()}. An aiortc client "
        "(the tests' browser stand-in) and `hearth serve` on loopback, default config, "
        f"partial transcripts off (CPU). Medians of {runs} runs. "
        "Run with `.venv/bin/python -m bench.webrtc_bench`.",
        "",
        "| measure | result | target | verdict |",
        "| --- | --- | --- | --- |",
        f"| Idle paused session over {elapsed:.0f} s, client -> Hearth | {sent_b:.1f} B/s, "
        f"{sent_p:.2f} packets/s | - | - |",
        f"| Idle paused session, Hearth -> client | {recv_b:.1f} B/s, {recv_p:.2f} packets/s "
        "| - | - |",
        f"| Idle total on the wire (both directions, IPv4+UDP headers included) "
        f"| {wire_kbps:.2f} kbps | <= 2 kbps (Willow: about 5 kbps, 5 packets/s) "
        f"| {'met' if wire_kbps <= 2 else 'not met'} |",
        f"| Push-to-talk: stop -> `infer` ({len(speech) / RATE:.1f} s utterance) "
        f"| {statistics.median(ptt) * 1000:.0f} ms | - | - |",
        f"| Hands-free: end of speech -> `infer` (700 ms of trailing silence ends it) "
        f"| {statistics.median(hands_free) * 1000:.0f} ms | - | - |",
        f"| First utterance after {elapsed:.0f} s paused (session kept, BYE ignored) "
        f"| {after_idle * 1000:.0f} ms, transcript correct | works | met |",
        f"| 4 sessions at once, push-to-talk: correct / p50 / p95 | {len(ok)}/4 / "
        f"{percentile(ok, 0.5) * 1000:.0f} ms / {percentile(ok, 0.95) * 1000:.0f} ms | all succeed "
        f"| {'met' if len(ok) == 4 else 'not met'} |",
        "",
        "While paused, the browser sends no RTP and Hearth's reply track sends nothing "
        "(it produces frames only while a reply is spoken), so what remains is ICE consent "
        "checks (STUN, every few seconds each way) and RTCP reports. The data-channel "
        "keepalive ping of the /rtc page (every 30 s) adds a few bytes per second.",
    ]
    return "\n".join(rows)


async def speak(daemon: Daemon) -> np.ndarray:
    """The utterance, spoken by Hearth's own TTS (over Wyoming), at 16 kHz."""
    return await hearth_speech(daemon, UTTERANCE)


def main() -> None:
    parser = arguments(__doc__, runs=5)
    parser.add_argument("--idle-seconds", type=float, default=120.0)
    parser.add_argument("--release-only", action="store_true", help="only the release table")
    args = parser.parse_args()
    release = asyncio.run(release_rows(args.runs))
    publish("webrtc-release", release, not args.no_write)
    if args.release_only:
        return
    text = asyncio.run(run(args.runs, args.idle_seconds))
    publish("webrtc", text, not args.no_write)


if __name__ == "__main__":
    main()
