"""GPU check: every engine on CUDA, and Willow Inference Server's benchmark row.

Loads ASR, TTS and the LLM with ``device: cuda`` and says which engine fell back
to the CPU, why, and the command that fixes it. Then times Whisper on a 3.84 s
clip with beam 5 (WIS's row: large-v2, plus tiny and base) beside the numbers WIS
publishes. large-v2 and base are downloaded when ``asr.allow_download`` is on and
the network answers; offline, the check says so and times what is on disk (the
embedded tiny.en).

Run: make gpu-check (or .venv/bin/python -m bench.gpu [--config config.yaml] [--write])
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime

import numpy as np

from bench.harness import ROOT, arguments, machine, median, timed, write_section
from daemon.audio.pcm import RATE
from daemon.config import AsrModelConfig, Config, load_config
from daemon.engines.asr.base import TranscribeOptions
from daemon.engines.hardware import EngineRequest, plan, probe
from daemon.engines.models import resolve_whisper
from daemon.engines.tts.base import SynthesisOptions
from daemon.errors import HearthError

CLIP_S = 3.84
BEAM = 5
RUNS = 5
SENTENCE = "Please turn on the kitchen lights and set the thermostat to twenty one degrees."
# Willow Inference Server's published large-v2, beam 5 times for a 3.84 s clip.
WIS = {"large-v2": "RTX 4090: 140 ms; H100: 294 ms"}
MODELS = ("tiny.en", "base.en", "large-v2")


def on_cuda(config: Config) -> Config:
    """The config with every engine asking for CUDA."""
    models = {n: dataclasses.replace(m, device="cuda") for n, m in config.asr.models.items()}
    return dataclasses.replace(
        config,
        asr=dataclasses.replace(config.asr, models=models),
        tts=dataclasses.replace(config.tts, device="cuda"),
        llm=dataclasses.replace(config.llm, device="cuda"),
    )


def clip(config: Config) -> np.ndarray:
    """A 3.84 s utterance in the embedded voice (padded or cut), float32 at 16 kHz."""
    from daemon.runtime.loading import load_engines

    engines = load_engines(config, probe(), asr=False, llm=False)
    assert engines.tts is not None

    async def speak() -> bytes:
        opts = SynthesisOptions(sample_rate=RATE, noise_scale=0.0, noise_w_scale=0.0)
        return b"".join([b.pcm async for b in engines.tts.stream(SENTENCE, opts)])

    pcm = np.frombuffer(asyncio.run(speak()), np.int16).astype(np.float32) / 32768
    engines.close()
    out = np.zeros(int(CLIP_S * RATE), np.float32)
    out[: min(len(out), len(pcm))] = pcm[: len(out)]
    return out


def engine_rows(config: Config) -> list[str]:
    """Every engine loaded with device: cuda: where it ended up, and why."""
    from daemon.runtime.loading import load_engines

    rows = ["| engine | device | compute type | why | to fix |", "| --- | --- | --- | --- | --- |"]
    try:
        engines = load_engines(on_cuda(config), probe())
    except HearthError as exc:
        return [f"Loading the engines failed: {exc.code}: {exc}"]
    for s in engines.status:
        why = "; ".join(s.reasons).replace("|", "/")
        rows.append(f"| {s.name} | {s.device} | {s.compute_type} | {why} | {s.fix or '-'} |")
    engines.close()
    return rows


def asr_rows(config: Config, audio: np.ndarray) -> tuple[list[str], list[str]]:
    """WIS's row per model: median decode time of the clip, beam 5; and notes."""
    from daemon.engines.asr.whisper import WhisperAsr

    report = probe()
    rows = [
        f"| model | device | compute type | beam | {CLIP_S} s clip, median of {RUNS} "
        "| WIS published | transcript |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    notes: list[str] = []
    for name in MODELS:
        try:
            path = resolve_whisper(name, config.models_path, config.asr.allow_download)
        except HearthError as exc:
            offline = "" if config.asr.allow_download else " (asr.allow_download is off)"
            notes.append(f"{name}: not run{offline}: {exc}")
            rows.append(f"| {name} | - | - | {BEAM} | not on disk | {WIS.get(name, '-')} | - |")
            continue
        placement = plan([EngineRequest(f"asr:{name}", "asr", "cuda")], report)[0]
        try:
            model = WhisperAsr(
                name,
                path,
                device=placement.device,
                device_index=placement.device_index,
                compute_type=placement.compute_type,
            )
        except Exception as exc:  # noqa: BLE001 - reported, then the CPU is timed
            notes.append(f"{name}: failed on {placement.label} ({exc}); timed on the CPU")
            placement.to_cpu(str(exc))
            model = WhisperAsr(name, path, compute_type=placement.compute_type)
        if placement.device == "cpu":
            notes.append(f"{name} on the CPU: {'; '.join(placement.reasons)}")
        options = TranscribeOptions(beam_size=BEAM)
        text = model.transcribe(audio, options).text  # warm-up (beam search: the same text)
        times = timed(lambda m=model, o=options: m.transcribe(audio, o), RUNS)
        ms = median(times) * 1000
        rows.append(
            f"| {name} | {model.device} | {placement.compute_type} | {BEAM} | {ms:.0f} ms "
            f"| {WIS.get(name, '-')} | {text} |"
        )
    return rows, notes


def main() -> None:
    parser = arguments(__doc__, write=False)
    parser.add_argument("--config", default=str(ROOT / "config.yaml"))
    parser.add_argument("--write", action="store_true", help="record in bench/RESULTS.md")
    args = parser.parse_args()
    config = load_config(args.config)
    if "tiny.en" not in config.asr.models:
        models = {**config.asr.models, "tiny.en": AsrModelConfig()}
        config = dataclasses.replace(config, asr=dataclasses.replace(config.asr, models=models))
    report = probe()
    if not report.gpus:
        print("No NVIDIA card answers nvidia-smi: every engine will fall back to the CPU.\n")
    engines = engine_rows(config)
    rows, notes = asr_rows(config, clip(config))
    text = "\n".join(
        [
            "## GPU check",
            "",
            f"Machine: {machine()}. Date: {datetime.date.today().isoformat()}. "
            "Run with `make gpu-check`.",
            "",
            "Every engine asked for CUDA:",
            "",
            *engines,
            "",
            f"Willow Inference Server's benchmark row ({CLIP_S} s of speech, beam {BEAM}):",
            "",
            *rows,
            "",
            *(f"- {note}" for note in notes),
        ]
    )
    print(text)
    if args.write:
        write_section("gpu", text)


if __name__ == "__main__":
    main()
