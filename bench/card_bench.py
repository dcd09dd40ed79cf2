"""Home Assistant card in headless Chromium: answer latency and idle cost.

The card runs in the tests' stand-in dashboard (its own origin, a stub ``hass``
that answers at once, a fake microphone playing Piper speech) against a real
``hearth serve`` over loopback. Per run, a push-to-talk utterance is timed in the
page: release -> the transcript reaching Home Assistant's stub, and the stub's
answer -> its first loud samples arriving at the page's Web Audio graph over the
card's WebRTC session (``say``). Baseline in the same run: fetching the same kind
of answer as a whole WAV from ``POST /v1/audio/speech``, which is what a card
without the spoken reply track would wait for before it could play. Every answer
text is new, so the TTS cache never helps either side. The idle cost is read from
Chromium's own transport counters (``getStats``) while the card sits paused.

Run: .venv/bin/python -m bench.card_bench [--runs 5] [--idle-seconds 60]
"""

from __future__ import annotations

import asyncio
import datetime
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.harness import arguments, machine, median, publish
from bench.webrtc_bench import speak
from tests.browser import chrome, wait_for, write_wav
from tests.daemon import Daemon
from tests.dashboard import Dashboard, hold_to_talk, load_card
from tests.helpers import silence, words

KEY = "bench-key"
ANSWERS = [  # three sentences, as conversation agents with an LLM tend to answer
    "The kitchen lights are on. I also dimmed the hallway to forty percent, as you "
    "usually like it in the evening. Number {i}, anything else?",
    "Done, the blinds are closing. The living room will be dark in about half a minute, "
    "so mind the stairs. That was request {i}.",
]

TRANSPORT_JS = """const done = arguments[arguments.length - 1];
card.client.pc.getStats().then((stats) => {
  for (const r of stats.values()) {
    if (r.type === 'transport') {
      return done([r.bytesSent, r.bytesReceived, r.packetsSent, r.packetsReceived,
                   performance.now()]);
    }
  }
  done(null);
});"""


JITTER_JS = """const done = arguments[arguments.length - 1];
card.client.pc.getStats().then((stats) => {
  for (const r of stats.values()) {
    if (r.type === 'inbound-rtp' && r.jitterBufferEmittedCount) {
      return done(1000 * r.jitterBufferDelay / r.jitterBufferEmittedCount);
    }
  }
  done(null);
});"""


def run(runs: int, idle_s: float) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        wav = folder / "mic.wav"  # written below, once Hearth can speak it
        dashboard = Dashboard(wav)
        extra = (
            f"auth:\n  api_key: {KEY}\n"
            "webrtc:\n  addresses: [127.0.0.1]\n  port_min: 22300\n  port_max: 22399\n"
        )
        cors = f"  cors_origins: ['{dashboard.origin}']\n"
        daemon = Daemon(folder, extra, http=cors).start()
        utterance = asyncio.run(speak(daemon))
        write_wav(wav, np.concatenate([silence(0.3), utterance, silence(0.9)]))
        driver = chrome()
        try:
            return measure(driver, daemon, dashboard, runs, idle_s)
        finally:
            driver.quit()
            daemon.stop()
            dashboard.close()


def measure(driver: Any, daemon: Daemon, dashboard: Dashboard, runs: int, idle_s: float) -> str:
    load_card(driver, dashboard.page(config={"url": daemon.https_url, "api_key": KEY}))
    heard_ok = 0
    to_ha, to_audio, to_packet, total, baseline = [], [], [], [], []
    with httpx.Client(base_url=daemon.url, headers={"X-API-Key": KEY}, timeout=60) as http:
        for i in range(runs + 1):  # the first run warms up and is not counted
            answer = ANSWERS[i % 2].format(i=i)
            driver.execute_script("window.answer = arguments[0];", answer)
            calls = driver.execute_script("return calls.length")
            released = hold_to_talk(driver)
            wait_for(driver, f"return calls.length > {calls}", timeout=60)
            called = driver.execute_script("return callTimes[callTimes.length - 1]")
            text = driver.execute_script("return calls[calls.length - 1].input.text")
            first = wait_for(driver, "return received.firstAt", timeout=60)
            packet = wait_for(driver, "return received.firstPacketAt", timeout=10)
            time.sleep(4.0)  # let the answer finish before the next question
            start = time.perf_counter()
            reply = http.post(
                "/v1/audio/speech",
                json={
                    "model": "tts-1",
                    "input": answer.replace("Number", "Item"),
                    "response_format": "wav",
                },
            )
            whole_wav = (time.perf_counter() - start) * 1000
            reply.raise_for_status()
            if i == 0:
                continue
            heard_ok += words(text) == words(
                "Please turn on the kitchen lights and close the blinds."
            )
            to_ha.append(called - released)
            to_audio.append(first - called)
            to_packet.append(packet - called)
            total.append(first - released)
            baseline.append(whole_wav)

    jitter_ms = driver.execute_async_script(JITTER_JS)

    # Idle: the card paused (push-to-talk, nobody talking), Chromium's own counters.
    windows = []
    for _ in range(runs):
        before = driver.execute_async_script(TRANSPORT_JS)
        time.sleep(idle_s)
        after = driver.execute_async_script(TRANSPORT_JS)
        seconds = (after[4] - before[4]) / 1000
        sent, received = after[0] - before[0], after[1] - before[1]
        packets = (after[2] - before[2]) + (after[3] - before[3])
        windows.append((sent / seconds, received / seconds, packets / seconds, seconds))
    sent_bps = median([w[0] for w in windows])
    received_bps = median([w[1] for w in windows])
    packets_ps = median([w[2] for w in windows])
    # Counters are payload bytes (ICE, DTLS, SRTP, SCTP); add IPv4+UDP headers for the wire.
    wire_kbps = (sent_bps + received_bps + 28 * packets_ps) * 8 / 1000

    say_ratio = median(to_packet) / median(baseline)
    rows = [
        "## Home Assistant card",
        "",
        f"Machine: {machine()}. Date: {datetime.date.today()}. Headless Chromium "
        "(Debian's), the card in the tests' stand-in dashboard on its own origin, "
        "`hearth serve` on loopback over HTTPS, default config (partial transcripts off "
        f"on CPU). Medians of {runs} runs after one warm-up. Run with "
        "`.venv/bin/python -m bench.card_bench`.",
        "",
        "| measure | result | baseline (same run) | ratio |",
        "| --- | --- | --- | --- |",
        f"| Push-to-talk release -> transcript at Home Assistant's stub | "
        f"{median(to_ha):.0f} ms ({heard_ok}/{runs} transcripts correct) | - | - |",
        f"| Stub's answer -> first answer RTP packet at Chromium (`say` over the session) | "
        f"{median(to_packet):.0f} ms | whole WAV from `POST /v1/audio/speech` "
        f"(Python client): {median(baseline):.0f} ms | {say_ratio:.2f} |",
        f"| Stub's answer -> first answer audio at the page's Web Audio graph | "
        f"{median(to_audio):.0f} ms | - | - |",
        f"| Release -> first answer audio | {median(total):.0f} ms | - | - |",
        f"| Chromium's jitter buffer on the answers, mean over all {runs + 1} | "
        f"{jitter_ms:.0f} ms | - | - |",
        f"| Idle paused card over {idle_s:.0f} s, browser -> Hearth | {sent_bps:.1f} B/s | - | - |",
        f"| Idle paused card, Hearth -> browser | {received_bps:.1f} B/s | - | - |",
        f"| Idle total on the wire (both directions, IPv4+UDP headers added) | "
        f"{wire_kbps:.2f} kbps, {packets_ps:.2f} packets/s | Willow device: about 5 kbps | "
        f"{wire_kbps / 5:.2f} |",
        "",
        "The first packet of the answer leaves once its first sentence is synthesized; "
        "the baseline waits for all three. The stub answers 20 ms after it is called. "
        "From the first packet to sound at the page is Chromium's playout (its jitter "
        "buffer, shown above, plus the audio output's buffering in headless Chromium), "
        "which any way of playing the answer in the page would pay. Before the reply "
        "track sent its own Opus timestamps, the jitter buffer grew with every answer "
        "(about 0.6 s after three) and the first audio came 1.7 s after the answer. Idle "
        "traffic is ICE consent checks, RTCP and the client's data-channel ping every 30 s.",
    ]
    return "\n".join(rows)


def main() -> None:
    parser = arguments(__doc__, runs=5)
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    args = parser.parse_args()
    text = run(args.runs, args.idle_seconds)
    publish("card", text, not args.no_write)


if __name__ == "__main__":
    main()
