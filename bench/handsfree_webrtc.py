"""Hands-free speech to speech over WebRTC, before and after a change of the code.

The conversation loop moved from the WebRTC adapter into the core's conversation
engine; this bench checks that the move did not cost time. Two source trees (this
one, and a git revision checked out into a temporary worktree) each run a real
``hearth serve`` on the embedded models; one aiortc client per daemon speaks the same
Piper utterances at real time into a hands-free session with spoken replies, and
measures end of speech -> first reply audio frame at the client. The two daemons
take turns, utterance by utterance, so load on the machine falls on both alike.

Run: .venv/bin/python -m bench.handsfree_webrtc [--before d22f624] [--runs 3] [--no-write]
"""

from __future__ import annotations

import asyncio
import datetime
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.harness import (
    HOME_COMMANDS,
    ROOT,
    arguments,
    handsfree_clients,
    machine,
    median,
    ms,
    percentile,
    piper_speech,
    publish,
    serving,
    worktree,
)
from daemon.audio.pcm import RATE
from tests.daemon import Daemon
from tests.webrtc_client import RtcClient

COMMANDS = HOME_COMMANDS
REPLY_WAIT_S = 60.0


async def one_turn(client: RtcClient, speech: np.ndarray) -> float | None:
    """Speak ``speech`` hands-free; seconds from its end to the first reply frame."""
    client.reply_frames_at.clear()
    lead = np.zeros(int(0.3 * RATE), np.int16)
    tail = np.zeros(int(2.5 * RATE), np.int16)
    began = time.monotonic()
    speech_end = began + (lead.size + speech.size) / RATE
    await client.speak(np.concatenate([lead, speech, tail]))
    deadline = time.monotonic() + REPLY_WAIT_S
    while time.monotonic() < deadline:
        message = await client.expect("reply", timeout=REPLY_WAIT_S)
        if message["obj"].get("done"):
            break
    await asyncio.sleep(0.5)  # the reply's last frames
    frames = [t for t in client.reply_frames_at if t > speech_end]
    return frames[0] - speech_end if frames else None


async def measure(daemons: dict[str, Daemon], utterances: list[np.ndarray], runs: int) -> dict:
    async with handsfree_clients(daemons) as clients:
        times: dict[str, list[float]] = {name: [] for name in daemons}
        missing = dict.fromkeys(daemons, 0)
        for _ in range(runs):
            for speech in utterances:
                for name, client in clients.items():  # turn by turn: load falls on both
                    latency = await one_turn(client, speech)
                    if latency is None:
                        missing[name] += 1
                    else:
                        times[name].append(latency)
        return {"times": times, "missing": missing}


def table(result: dict, before: str, runs: int, count: int) -> str:
    times, missing = result["times"], result["missing"]

    rows = [
        f"| {name} | {ms(median(times[name]))} | {ms(percentile(times[name], 0.9))} "
        f"| {len(times[name])} "
        f"| {missing[name]} |"
        for name in times
    ]
    old, new = (median(v) for v in times.values())
    return "\n".join(
        [
            "## Hands-free speech to speech before and after the conversation engine",
            "",
            f"{datetime.date.today()}, {machine()}. `bench/handsfree_webrtc.py`: {count} "
            f"Piper commands x {runs} runs, hands-free over WebRTC (aiortc client, loopback), "
            "spoken replies on, the embedded models; the two daemons take turns utterance by "
            "utterance. End of speech -> first reply audio frame at the client.",
            "",
            "| code | median | p90 | replies | no reply |",
            "|---|---|---|---|---|",
            *rows,
            "",
            f"After / before: **{new / old:.2f}** (target: no worse, 1.00 or less within noise). "
            f"`before` is {before}, where the WebRTC adapter ran the loop itself.",
        ]
    )


def main() -> None:
    parser = arguments(__doc__, runs=3, before="d22f624")
    args = parser.parse_args()
    utterances = piper_speech(COMMANDS)
    with worktree(args.before) as old, tempfile.TemporaryDirectory() as work:
        with (
            serving(old, Path(work) / "before", (22100, 22149)) as before,
            serving(ROOT, Path(work) / "after", (22150, 22199)) as after,
        ):
            result = asyncio.run(measure({"before": before, "after": after}, utterances, args.runs))
    text = table(result, args.before, args.runs, len(COMMANDS))
    publish("conversation-move", text, not args.no_write)


if __name__ == "__main__":
    main()
