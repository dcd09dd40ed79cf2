"""Whisper's decode window cut to the utterance against the 30 s window, on the held-out set.

Each clip of ``bench/heldout.py``'s set (home commands in voices the tests never use,
with noise, babble and pauses) is decoded as a whole file by the embedded tiny.en,
once with ``window: auto`` and once with ``window: 30``, taking turns clip by clip
(same process, same threads, greedy decoding so the two differ only by the window).
Reported: normalized WER of each, how often the guard sent a windowed decode back to
the 30 s window and why, and the median decode time per clip as a ratio.

    .venv/bin/python -m bench.asr_window [--clips N] [--formats all] [--no-write]
"""

from __future__ import annotations

import datetime
import functools
import io
import statistics
import tempfile
import time
from pathlib import Path

from bench.harness import arguments, machine, write_section
from bench.heldout import FORMATS, build_set, wav_file, wer


def main(count: int | None, formats: list[str], write: bool, part: str = "choice") -> None:
    from faster_whisper.audio import decode_audio

    from daemon.engines.asr.base import TranscribeOptions
    from daemon.engines.asr.whisper import WhisperAsr
    from daemon.engines.models import resolve_whisper

    clips = build_set(count, part)
    path = resolve_whisper("tiny.en", Path(tempfile.gettempdir()), allow_download=False)
    models = {w: WhisperAsr("tiny.en", path, window=w) for w in ("auto", "30")}
    for model in models.values():  # greedy: no random temperature fallback
        fw = model._model  # noqa: SLF001 - a benchmark's switch, not a daemon path
        fw.transcribe = functools.partial(fw.transcribe, temperature=0.0)  # type: ignore[method-assign]
    options = TranscribeOptions()
    rows = []
    for fmt in (f for f in FORMATS if f.label in formats):
        texts: dict[str, list[str]] = {"auto": [], "30": []}
        ratios = []
        times: dict[str, list[float]] = {"auto": [], "30": []}
        before = models["auto"].window_counts()
        for clip in clips:
            audio = decode_audio(io.BytesIO(wav_file(clip, fmt)), sampling_rate=16000)
            took = {}
            for window, model in models.items():
                began = time.perf_counter()
                texts[window].append(model.transcribe(audio, options).text)
                took[window] = time.perf_counter() - began
                times[window].append(took[window])
            ratios.append(took["auto"] / took["30"])
        after = models["auto"].window_counts()
        counts = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        redone = {k[1]: n for k, n in counts.items() if k[1] != "ok" and n}
        windows = {k[0] for k, n in counts.items() if n}
        w_auto = wer([(c.text, t) for c, t in zip(clips, texts["auto"], strict=True)])
        w_full = wer([(c.text, t) for c, t in zip(clips, texts["30"], strict=True)])
        rows.append(
            f"| {fmt.label} | {w_auto:.1f} % | {w_full:.1f} % | {w_auto - w_full:+.1f} |"
            f" {sum(redone.values())}/{len(clips)}"
            f" ({', '.join(f'{k} {n}' for k, n in sorted(redone.items())) or '-'}) |"
            f" {', '.join(sorted(windows, key=float))} s |"
            f" {statistics.median(times['auto']) * 1000:.0f} ms |"
            f" {statistics.median(times['30']) * 1000:.0f} ms | {statistics.median(ratios):.2f} |"
        )
        print(rows[-1], flush=True)
    lines = [
        "## Decode window: cut to the utterance against Whisper's 30 s"
        + ("" if part == "choice" else f", {part} part"),
        "",
        f"{datetime.date.today()}, {machine()}. `bench/asr_window.py`: {len(clips)} clips of the"
        f" held-out set's {part} part (`bench/heldout.py`), each decoded as a whole file by"
        " tiny.en (int8, greedy) with `window: auto` and `window: 30`, taking turns clip by"
        " clip. Redone: the windowed decodes the guard sent back to the 30 s window, by"
        " reason (their WER is the 30 s decode's). Time: median per clip, the guard's redos"
        " included; ratio: median of the per-clip ratios.",
        "",
        "| format | WER, auto | WER, 30 s | difference (points) | redone in 30 s | windows used |"
        " decode, auto | decode, 30 s | time ratio |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
    ]
    table = "\n".join(lines)
    print(table)
    if write:
        write_section("asr-window" if part == "choice" else f"asr-window-{part}", table)


if __name__ == "__main__":
    parser = arguments(__doc__)
    parser.add_argument("--clips", type=int, default=None)
    parser.add_argument("--formats", default="16 kHz s16 mono,8 kHz s16 mono,44.1 kHz s16 stereo")
    parser.add_argument("--part", choices=("choice", "unseen"), default="choice")
    args = parser.parse_args()
    main(args.clips, args.formats.split(","), not args.no_write, args.part)
