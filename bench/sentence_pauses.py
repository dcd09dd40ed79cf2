"""The whole sentence: turns cut at a mid-sentence pause, and finished commands ended, before
and after, on voices split into a choice half and a report half.

The set: 24 sentences said with a pause inside (after "for", "to", "the", "and", "in
the", a filler, a number before its unit) and 24 finished commands, each in every
voice. Two ways of making the pause:

- **cut from the whole sentence**: the sentence is synthesized whole and cut at the word
  boundary (Whisper's word timestamps, the quietest 10 ms), so the words before the
  pause keep the intonation of a sentence that goes on; a pause of 0.4-1.2 s is put in;
- **falling**: the words before the pause are synthesized as a sentence of their own, so
  they end with the fall of a finished sentence (the turn model's hardest case).

Voices: the choice half (every setting was chosen on these) and the report half (none
was). Each clip is fed chunk by chunk faster than real time, each speculative decode
and turn decision awaited (a machine that keeps up with the speaker: the decisions do
not depend on this machine's speed); end of speech -> end of turn is the audio's
silence until the decision plus the decision's wall time.

"Before" is another revision of this repository (a git worktree, default: the commit
before the words were changed), run on the same clips in the same sitting; each arm is
its own process that imports its tree's code (this file run by its path, its tree first
on ``PYTHONPATH``: so an arm imports nothing from bench/harness.py, which an older tree
may lack).

Run: .venv/bin/python -m bench.sentence_pauses [--before REV] [--no-write]
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

COMPLETE = [
    "Turn on the kitchen lights.",
    "What is the weather like tomorrow?",
    "Set a timer for ten minutes.",
    "What time is it?",
    "Play some jazz in the living room.",
    "Lock the front door.",
    "How tall is the Eiffel Tower?",
    "Turn off all the lights downstairs.",
    "What is on my calendar today?",
    "Dim the bedroom lights to fifty percent.",
    "Is the garage door closed?",
    "Good night.",
    "Turn the lights on.",
    "Open the garage door.",
    "Set the thermostat to twenty degrees.",
    "Close the blinds in the bedroom.",
    "Start the vacuum.",
    "Turn off the fan.",
    "What is the temperature outside?",
    "Add eggs to the shopping list.",
    "Stop the music.",
    "Turn up the volume.",
    "Remind me to call my mother.",
    "Turn the heating off.",
]
PAUSED = [
    ("Set a timer for", "ten minutes."),
    ("Add milk and", "eggs to the shopping list."),
    ("Turn the thermostat up to", "seventy degrees."),
    ("Play the", "new album by Adele."),
    ("Remind me to", "call my mother tomorrow."),
    ("Turn on the lights in the", "living room."),
    ("What is the weather for", "the weekend?"),
    ("Open the", "garage door."),
    ("Turn on the, um,", "living room lamp."),
    ("What is the, uh,", "score of the game?"),
    ("Set an alarm for, um,", "seven tomorrow morning."),
    ("Close the blinds and", "turn off the fan."),
    ("Set a timer for ten", "minutes."),
    ("Turn off the lights in the", "kitchen and the hall."),
    ("Dim the lights in the", "bedroom to twenty percent."),
    ("Lock the front door and", "the back door."),
    ("Add bread to", "the shopping list."),
    ("Set the temperature to", "twenty one degrees."),
    ("Start a timer for", "five minutes."),
    ("Turn the volume down on the", "kitchen speaker."),
    ("Play some music by", "the Beatles."),
    ("Is the window in the", "bathroom open?"),
    ("Remind me in fifteen", "minutes to check the oven."),
    ("What is the weather like in the", "mountains this weekend?"),
]
PAUSES_S = (0.4, 0.6, 0.8, 1.0, 1.2)
LEAD_S = 0.3
TAIL_S = 2.2


@dataclass(frozen=True)
class Voice:
    name: str
    half: str
    """choice or report."""
    noise: tuple[float, float] | None = None
    espeak: tuple[str, int] | None = None
    """eSpeak NG voice and words per minute."""


VOICES = [
    Voice("piper 0.667/0.8", "choice", noise=(0.667, 0.8)),
    Voice("espeak en-us 165", "choice", espeak=("en-us", 165)),
    Voice("espeak en-gb+f3 150", "report", espeak=("en-gb+f3", 150)),
    Voice("espeak en-gb-scotland 180", "report", espeak=("en-gb-scotland", 180)),
    Voice("piper 0.3/0.4", "report", noise=(0.3, 0.4)),
]


# ---------------------------------------------------------------------------- the set


async def make_clips(path: Path) -> list[dict[str, Any]]:
    """Synthesize every clip; save the audio to ``path`` (npz) and return their labels."""
    from bench.turn_bench import Voice as TurnVoice
    from bench.turn_bench import _cut_after, _say, _silence, _trim
    from daemon.config import parse_config
    from daemon.engines.hardware import probe
    from daemon.runtime.loading import load_engines
    from tests.helpers import espeak_pcm

    labels: list[dict[str, Any]] = []
    arrays: dict[str, np.ndarray] = {}
    with tempfile.TemporaryDirectory() as state:
        config = parse_config(f"state_dir: {state}\n", "bench")
        engines = await asyncio.to_thread(load_engines, config, probe())
        whisper = getattr(engines.asr[engines.config.asr.default_model], "_model")  # noqa: B009
        lead = _silence(LEAD_S)
        for v, voice in enumerate(VOICES):
            say_as = TurnVoice(voice.name, voice.noise, voice.espeak[0] if voice.espeak else None)

            async def say(text: str, voice: Voice = voice, say_as: TurnVoice = say_as) -> Any:
                if voice.espeak is None:
                    return _trim(await _say(engines, say_as, text))
                return _trim(espeak_pcm(*voice.espeak, text))

            for text in COMPLETE:
                speech = await say(text)
                add(labels, arrays, voice, "complete", "", text, [lead, speech, _silence(TAIL_S)])
            for i, (head, tail) in enumerate(PAUSED):
                pause = PAUSES_S[(i + v) % len(PAUSES_S)]
                label = f"{head} ... {tail}"
                whole = await say(f"{head} {tail}")
                cut = await asyncio.to_thread(_cut_after, whisper, whole, len(head.split()))
                if cut is not None:
                    first, second = _trim(whole[:cut]), _trim(whole[cut:])
                    parts = [lead, first, _silence(pause), second, _silence(TAIL_S)]
                    add(labels, arrays, voice, "paused", "cut", label, parts, len(first), pause)
                else:
                    print(f"skipped ({voice.name}): no word boundary in {head} {tail}")
                first, second = await say(head), await say(tail)
                parts = [lead, first, _silence(pause), second, _silence(TAIL_S)]
                add(labels, arrays, voice, "paused", "falling", label, parts, len(first), pause)
        engines.close()
    np.savez(path, **arrays)
    return labels


def add(
    labels: list[dict[str, Any]],
    arrays: dict[str, np.ndarray],
    voice: Voice,
    kind: str,
    how: str,
    text: str,
    parts: list[np.ndarray],
    first: int = 0,
    pause: float = 0.0,
) -> None:
    key = f"c{len(labels)}"
    arrays[key] = np.concatenate(parts)
    rate = 16000
    speech = sum(len(p) for p in parts[1:-1])
    label: dict[str, Any] = {
        "key": key,
        "voice": voice.name,
        "half": voice.half,
        "kind": kind,
        "how": how,
        "text": text,
        "speech_end_s": LEAD_S + speech / rate,
    }
    if kind == "paused":
        start = LEAD_S + first / rate
        label["pause"] = [start, start + pause]
    labels.append(label)


# ---------------------------------------------------------------------------- one arm


async def run_arm(tree: Path, clips_path: Path, labels: list[dict[str, Any]]) -> list[dict]:
    """Every clip through ``tree``'s session code (its default settings)."""
    from bench.turn_bench import Clip, run_clip
    from daemon.config import parse_config
    from daemon.engines.hardware import probe
    from daemon.runtime.loading import load_engines

    audio = np.load(clips_path)
    out = []
    with tempfile.TemporaryDirectory() as state:
        config = parse_config(f"state_dir: {state}\n", "bench")
        engines = await asyncio.to_thread(load_engines, config, probe())
        settings = engines.session_settings
        for label in labels:
            pause = tuple(label["pause"]) if "pause" in label else None
            clip = Clip(label["kind"], label["text"], label["voice"], audio[label["key"]], 0, pause)
            result = await run_clip(engines, settings, clip, keep_up=True)
            out.append(
                {
                    "key": label["key"],
                    "ended_s": result.ended_s,
                    "decision_s": result.decision_s,
                    "decodes": result.decodes,
                }
            )
        engines.close()
    return out


# ---------------------------------------------------------------------------- the report


def score(labels: list[dict], results: list[dict], max_pause_s: float = 1.6) -> dict[str, Any]:
    by_key = {r["key"]: r for r in results}
    cuts = paused = complete = ended = 0
    ends: list[float] = []
    for label in labels:
        r = by_key[label["key"]]
        if label["kind"] == "paused":
            paused += 1
            cuts += r["ended_s"] is not None and r["ended_s"] < label["pause"][1] + 0.1
            continue
        complete += 1
        if r["ended_s"] is None:
            continue
        late = r["ended_s"] - label["speech_end_s"] + r["decision_s"]
        ends.append(late)
        ended += late < max_pause_s - 0.05
    return {"cuts": cuts, "paused": paused, "ended": ended, "complete": complete, "ends": ends}


def table(labels: list[dict], arms: dict[str, list[dict]], rev: str) -> str:
    from bench.harness import machine, median, percentile

    voices = {half: [v.name for v in VOICES if v.half == half] for half in ("choice", "report")}
    lines = [
        "## The whole sentence: pauses inside a sentence and finished commands"
        " (`bench/sentence_pauses.py`)",
        "",
        f"{datetime.date.today()}, {machine()}. `.venv/bin/python -m bench.sentence_pauses"
        f" --before {rev}`: {len(PAUSED)} sentences with a pause of 0.4-1.2 s inside and"
        f" {len(COMPLETE)} finished commands in each voice; before ({rev}) and after on the"
        " same clips, in the same sitting. Choice half (every setting was chosen on it): "
        + ", ".join(voices["choice"])
        + ". Report half (no setting was chosen on it): "
        + ", ".join(voices["report"])
        + ". A cut: the turn ended before the sentence's second part began. End of turn:"
        " end of speech to the decision (audio silence plus the decision's wall time; each"
        " decode and decision awaited, as on a machine that keeps up).",
        "",
        "| half | pause made | code | early cuts | finished commands ended by the decision"
        " | end of speech -> end of turn, finished: median (p90) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for half in ("report", "choice"):
        for how in ("cut", "falling"):
            for arm, results in arms.items():
                chosen = [
                    x
                    for x in labels
                    if x["half"] == half and (x["kind"] == "complete" or x["how"] == how)
                ]
                s = score(chosen, results)
                ends = s["ends"]
                end = (
                    f"{median(ends) * 1000:.0f} ms ({percentile(ends, 0.9) * 1000:.0f} ms)"
                    if ends
                    else "-"
                )
                lines.append(
                    f"| {half} | {how} | {arm} | {s['cuts']}/{s['paused']} |"
                    f" {s['ended']}/{s['complete']} | {end} |"
                )
    lines.append("")
    lines.append("Paused sentences still cut after the change (report half):")
    lines.append("")
    after = {r["key"]: r for r in arms["after"]}
    for x in labels:
        if x["half"] == "report" and x["kind"] == "paused":
            r = after[x["key"]]
            if r["ended_s"] is not None and r["ended_s"] < x["pause"][1] + 0.1:
                gap = x["pause"][1] - x["pause"][0]
                lines.append(f"- {x['voice']}, {x['how']}, {gap:.1f} s: {x['text']}")
    return "\n".join(lines) + "\n"


def arm() -> None:
    """One arm, in its own process: ``--arm TREE CLIPS OUT``."""
    tree, clips, out = (Path(a) for a in sys.argv[2:5])
    labels = json.loads((clips.with_suffix(".json")).read_text())
    results = asyncio.run(run_arm(tree, clips, labels))
    out.write_text(json.dumps(results))


def main() -> None:
    if sys.argv[1:2] == ["--arm"]:
        arm()
        return
    from bench.harness import ROOT, arguments, publish, worktree

    args = arguments(__doc__, before="58aa898").parse_args()
    with worktree(args.before) as before, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        clips = work / "clips.npz"
        labels = asyncio.run(make_clips(clips))
        clips.with_suffix(".json").write_text(json.dumps(labels))
        arms: dict[str, list[dict]] = {}
        for name, tree in {"before": before, "after": ROOT}.items():
            out = work / f"{name}.json"
            env = {**os.environ, "PYTHONPATH": str(tree)}
            command = [sys.executable, __file__, "--arm", str(tree), str(clips), str(out)]
            subprocess.run(command, check=True, env=env, cwd=tree)
            arms[name] = json.loads(out.read_text())
    text = table(labels, arms, args.before)
    publish("sentence-pauses", text, not args.no_write)


if __name__ == "__main__":
    main()
