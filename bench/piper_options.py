"""Piper's onnxruntime options: speed and memory with the defaults against Hearth's.

Hearth runs Piper voices without onnxruntime's memory arena and per-input-length memory
plans (``daemon/engines/tts/piper.py``: ``session_options``), because with them memory
grows with every new sentence length. This bench checks the price in speed and the gain
in memory, on the embedded voice:

- speed: the same sentences through both sessions in one process, taking turns
  sentence by sentence, median synthesis time of each (and the ratio);
- memory: a fresh process per setting speaks ``--sentences`` new sentences of random
  length in a loop, glibc limited to two arenas and trimmed every 50 sentences as the
  daemon does; its resident set after every 100.

    .venv/bin/python -m bench.piper_options [--sentences 300] [--speed 40]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.harness import ROOT, arguments

WORDS = (
    "the bins go out on tuesday and the kitchen lights turn off at ten in the evening "
    "please remember to water the plants before the heating comes on"
).split()


def sentence(rng: random.Random, i: int) -> str:
    """A new sentence of 3 to 40 words."""
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40)))
    return f"Reminder number {i}: {words}."


def load(hearth: bool) -> Any:
    """The embedded voice, with Hearth's options or onnxruntime's defaults."""
    from piper import PiperVoice

    from daemon.engines.tts.piper import load_voice
    from daemon.engines.tts.voices import VoiceStore

    info = VoiceStore(Path("/nonexistent")).get("en_US-joe-medium")
    if hearth:
        return load_voice(info.model_path, info.config_path)
    return PiperVoice.load(info.model_path, info.config_path)


def speak(voice: Any, text: str) -> float:
    """Seconds to synthesize ``text``."""
    from piper import SynthesisConfig

    began = time.perf_counter()
    for _ in voice.synthesize(text, syn_config=SynthesisConfig()):
        pass
    return time.perf_counter() - began


def speed(count: int) -> dict[str, float]:
    """Median seconds per sentence of each setting, taking turns."""
    voices = {"defaults": load(False), "hearth": load(True)}
    rng = random.Random(7)
    times: dict[str, list[float]] = {name: [] for name in voices}
    for voice in voices.values():
        speak(voice, "Warm up, once.")
    for i in range(count):
        text = sentence(rng, i)
        order = list(voices.items()) if i % 2 else list(reversed(voices.items()))
        for name, voice in order:
            times[name].append(speak(voice, text))
    return {name: statistics.median(values) for name, values in times.items()}


def memory(hearth: bool, count: int) -> list[float]:
    """Resident MB after every 100 sentences (run in its own process)."""
    from daemon.ops import memory as allocator

    allocator.limit_arenas(allocator.ARENAS)
    voice = load(hearth)
    rng = random.Random(1)
    marks = []
    for i in range(count):
        speak(voice, sentence(rng, i))
        if i % 50 == 49:
            allocator.trim()
        if i % 100 == 99:
            marks.append(allocator.resident_bytes() / 1e6)
    return marks


def main() -> None:
    parser = arguments(__doc__, write=False)
    parser.add_argument("--sentences", type=int, default=300)
    parser.add_argument("--speed", type=int, default=40, help="sentences for the speed part")
    parser.add_argument("--memory-of", choices=["defaults", "hearth"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_of:
        print(json.dumps(memory(args.memory_of == "hearth", args.sentences)))
        return
    medians = speed(args.speed)
    ratio = medians["hearth"] / medians["defaults"]
    print(
        f"speed, median s per sentence ({args.speed} sentences): defaults "
        f"{medians['defaults']:.3f}, hearth {medians['hearth']:.3f} (x{ratio:.3f})",
        flush=True,
    )
    for name in ("defaults", "hearth"):
        out = subprocess.run(
            [sys.executable, "-m", "bench.piper_options", "--memory-of", name,
             "--sentences", str(args.sentences)],
            check=True, capture_output=True, text=True, cwd=ROOT,
        ).stdout  # fmt: skip
        marks = json.loads(out.strip().splitlines()[-1])
        print(f"memory, {name}: RSS MB after each 100 sentences {[round(m) for m in marks]}")


if __name__ == "__main__":
    main()
