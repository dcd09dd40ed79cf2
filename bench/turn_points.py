"""The speculative decode and the turn model's question: how soon after the end of speech.

The labelled turn set of ``bench/turn_bench.py`` (complete turns, and sentences with a
0.5-1.5 s pause after "for", "and", "to", "the" or a filler, in Piper and eSpeak NG
voices) through a speech session for each configuration. Reported for each: complete
turns the model ended (before the longest pause), early cuts on the pause set, and the
Whisper decodes per turn (a speculative decode that speech made moot is CPU spent for
nothing). Audio is fed faster than real time, each speculative decode and each turn
decision awaited, as on a machine that keeps up with the speaker.

Each configuration is ``speculate:early`` in ms: the silence at which the speculative
decode starts (with as much trailing audio, at most ``vad.padding_ms``), and the early
question (0: none).

    .venv/bin/python -m bench.turn_points [--configs 240:0,96:0,128:0,160:0,160:128] [--no-write]
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import shutil
import tempfile

from bench.harness import arguments, machine, write_section
from bench.turn_bench import ESPEAK_VOICES, PIPER_VOICES, bench_turns, make_set
from daemon.config import parse_config
from daemon.engines.hardware import probe
from daemon.runtime.loading import load_engines


async def main(configs: list[tuple[int, int]], write: bool) -> None:
    with tempfile.TemporaryDirectory() as state:
        config = parse_config(f"state_dir: {state}\n", "bench")
        engines = await asyncio.to_thread(load_engines, config, probe())
        if engines.turn is None:
            raise SystemExit("the turn model did not load: see the log above")
        voices = PIPER_VOICES + (ESPEAK_VOICES if shutil.which("espeak-ng") else [])
        clips = await make_set(engines, voices)
        base = engines.session_settings
        results = {}
        for speculate, early in configs:
            endpoint = dataclasses.replace(
                base.endpoint,
                speculative_silence_s=speculate / 1000,
                turn_early_check_s=early / 1000 or None,
            )
            settings = dataclasses.replace(
                base,
                endpoint=endpoint,
                speculative_padding_s=min(speculate / 1000, base.padding_s),
            )
            results[(speculate, early)] = await bench_turns(engines, clips, settings, keep_up=True)
            print(speculate, early, results[(speculate, early)], flush=True)
        engines.close()
    check_ms = base.endpoint.turn_check_s * 1000
    n_paused = int(next(iter(results.values()))["n_paused"])
    lines = [
        "## Speculative decode and turn model: how soon to start (`bench/turn_points.py`)",
        "",
        f"{datetime.date.today()}, {machine()}. {len(clips)} synthesized turns of"
        f" `bench/turn_bench.py` ({', '.join(v.name for v in voices)}); threshold"
        f" {config.vad.turn_threshold}, the words of the speculative decode joined"
        f" (`vad.turn_text`). The speculative decode starts at the silence named (no later"
        f" than the turn model's question), with as much trailing audio; the model is asked"
        f" at {check_ms:.0f} ms, and with an early question first, an incomplete answer is"
        f" asked again at {check_ms:.0f} ms; longest pause"
        f" {base.endpoint.max_pause_s * 1000:.0f} ms. Audio is fed faster than real time,"
        " each speculative decode and each decision awaited (a machine that keeps up with"
        ' the speaker); latencies at real time are under "Half a second".',
        "",
        "| speculative decode from | turn model asked at | complete turns ended by the model |"
        " early cuts (pause set) | decodes per turn |",
        "|---|---|---|---|---|",
    ]
    for (speculate, early), r in results.items():
        asked = f"{early} and {check_ms:.0f} ms" if early else f"{check_ms:.0f} ms"
        lines.append(
            f"| {speculate} ms | {asked} | {r['complete_ok']:.0%} | {r['cuts']:.0f}/{n_paused} |"
            f" {r['decodes']:.2f} |"
        )
    table = "\n".join(lines)
    print(table)
    if write:
        write_section("turn-points", table)


if __name__ == "__main__":
    parser = arguments(__doc__)
    parser.add_argument("--configs", default="240:0,96:0,128:0,160:0,160:128")
    args = parser.parse_args()
    pairs = [tuple(int(v) for v in c.split(":")) for c in args.configs.split(",")]
    asyncio.run(main([(a, b) for a, b in pairs], not args.no_write))
