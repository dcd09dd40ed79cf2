"""Speaker verification: false accepts and rejects by threshold, and what a check costs.

Speakers (all synthetic: no package on the registries this project reaches carries
recorded speech of several people, so this is weak evidence of how real people
differ): the bundled Piper voice (en_US-joe-medium, its noise scales varied per
clip) and eSpeak NG voices with different voice variants (pitch, formants, breath:
``en-us+m1``, ``+m3``, ``+m7``, ``+f2``, ``+f4``). Each speaker says 8 home commands;
3 enroll them (their embeddings averaged, as ``hearth speakers enroll`` does) and the
other 5 are tested against every enrollment: the speaker's own (genuine trials) and
every other's (impostor trials).

Reported: the false accept rate (impostor trials at or over the threshold) and the
false reject rate (genuine trials under it) at several thresholds, the equal error
rate, the CPU and wall time of one embedding of a 3 s utterance (median), and what
``voice_auth=true`` adds to a Willow upload against the same upload without it,
through a real ``hearth serve`` (median of paired runs, real-time pacing).

    .venv/bin/python -m bench.speakers [--runs 5] [--no-write]
"""

from __future__ import annotations

import datetime
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.harness import arguments, machine, write_section
from daemon.audio.pcm import RATE, resample_pcm
from daemon.config import SpeakersConfig

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Please remind me to water the plants on Sunday.",
    "What is the weather going to be like this weekend?",
    "Turn on the kitchen lights.",
    "Set a timer for ten minutes.",
    "Lock the front door and turn off the porch light.",
    "Play some jazz in the living room, please.",
    "What time does the library close today?",
]
ENROLLED = 3
ESPEAK = ["en-us+m1", "en-us+m3", "en-us+m7", "en-us+f2", "en-us+f4"]
THRESHOLDS = (0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)


def piper_clips() -> list[np.ndarray]:
    from piper import PiperVoice, SynthesisConfig

    from daemon.engines.tts.voices import VoiceStore

    info = VoiceStore(Path("/nonexistent-user-voices")).get("en_US-joe-medium")
    voice = PiperVoice.load(info.model_path, info.config_path)
    clips = []
    for i, text in enumerate(SENTENCES):
        noise = SynthesisConfig(noise_scale=0.3 + 0.1 * i, noise_w_scale=0.4 + 0.08 * i)
        pcm = b"".join(c.audio_int16_bytes for c in voice.synthesize(text, syn_config=noise))
        audio = resample_pcm(pcm, voice.config.sample_rate, RATE)
        clips.append(np.frombuffer(audio, dtype="<i2").copy())
    return clips


def espeak_clips(variant: str) -> list[np.ndarray]:
    clips = []
    for text in SENTENCES:
        out = subprocess.run(
            ["espeak-ng", "-v", variant, "-s", "160", "--stdout", text],
            capture_output=True,
            check=True,
        ).stdout
        clips.append(np.frombuffer(resample_pcm(out[44:], 22050, RATE), dtype="<i2").copy())
    return clips


def rates(genuine: list[float], impostor: list[float], threshold: float) -> tuple[float, float]:
    far = sum(s >= threshold for s in impostor) / len(impostor)
    frr = sum(s < threshold for s in genuine) / len(genuine)
    return far, frr


def equal_error(genuine: list[float], impostor: list[float]) -> tuple[float, float]:
    """The equal error rate and the threshold where FAR and FRR meet (a fine sweep)."""
    best = min(
        (abs(far - frr), (far + frr) / 2, t)
        for t in np.linspace(0.3, 1.0, 701)
        for far, frr in [rates(genuine, impostor, float(t))]
    )
    return best[1], best[2]


def embedding_cost(encoder: object, clip: np.ndarray, runs: int = 9) -> tuple[float, float]:
    """Median thread CPU and wall time (ms) of one embedding of ``clip``."""
    cpu, wall = [], []
    embed = encoder.embed  # type: ignore[attr-defined]
    embed(clip)
    for _ in range(runs):
        c0, w0 = time.thread_time(), time.perf_counter()
        embed(clip)
        cpu.append(time.thread_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu) * 1000, statistics.median(wall) * 1000


def willow_cost(enrolled: np.ndarray, probe: np.ndarray, runs: int) -> tuple[float, float]:
    """Median last byte -> response (ms) of ``probe`` without and with voice_auth, paired
    runs, with ``enrolled`` as the only speaker."""
    from bench.willow import device_upload
    from daemon.cli.speakers import store_of
    from daemon.config import load_config
    from tests.daemon import Daemon

    with tempfile.TemporaryDirectory() as work:
        daemon = Daemon(Path(work))
        store_of(load_config(daemon.config_path)).save("Joe", enrolled, ENROLLED)
        pcm = np.concatenate([probe, np.zeros(int(0.3 * RATE), np.int16)]).tobytes()
        took: dict[bool, list[float]] = {False: [], True: []}
        with daemon:
            for r in range(runs + 1):
                for auth in (False, True) if r % 2 else (True, False):
                    query = "?voice_auth=true" if auth else ""
                    waited_s, _ = device_upload(daemon.url, pcm, query)
                    if r:  # the first round warms up
                        took[auth].append(waited_s * 1000)
    return statistics.median(took[False]), statistics.median(took[True])


def main(runs: int, write: bool) -> None:
    from daemon.engines.speaker import create_speaker_encoder, similarity

    encoder = create_speaker_encoder("")
    speakers = {"piper joe": piper_clips()} | {f"espeak {v}": espeak_clips(v) for v in ESPEAK}
    enrolled, tests = {}, {}
    for name, clips in speakers.items():
        embeddings = [encoder.embed(c) for c in clips]
        assert all(e is not None for e in embeddings), name
        mean = np.mean(embeddings[:ENROLLED], axis=0)
        enrolled[name] = mean / np.linalg.norm(mean)
        tests[name] = embeddings[ENROLLED:]
    genuine, impostor = [], []
    for owner, reference in enrolled.items():
        for speaker, embeddings in tests.items():
            scores = [similarity(reference, e) for e in embeddings]  # type: ignore[arg-type]
            (genuine if speaker == owner else impostor).extend(scores)
    eer, at = equal_error(genuine, impostor)
    three_s = next(c for c in speakers["piper joe"] if len(c) >= 2.5 * RATE)
    cpu_ms, wall_ms = embedding_cost(encoder, three_s[: 3 * RATE])
    probe = speakers["piper joe"][ENROLLED]
    plain_ms, auth_ms = willow_cost(enrolled["piper joe"], probe, runs)
    probe_s = len(probe) / RATE

    lines = [
        "## Speaker verification (`bench/speakers.py`)",
        "",
        f"{datetime.date.today()}, {machine()}. Encoder: GE2E (Resemblyzer's weights) in numpy."
        f" {len(speakers)} synthetic speakers: {', '.join(speakers)}; {len(SENTENCES)} commands"
        f" each, {ENROLLED} enrolled, {len(SENTENCES) - ENROLLED} tested against every"
        f" enrollment: {len(genuine)} genuine and {len(impostor)} impostor trials. **Synthetic"
        " voices only**: no package this project can install carries recorded speech of several"
        " people, so these numbers say little about how real people differ.",
        "",
        "| threshold | false accepts | false rejects |",
        "|---|---|---|",
    ]
    for t in THRESHOLDS:
        far, frr = rates(genuine, impostor, t)
        mark = " (default)" if abs(t - SpeakersConfig().threshold) < 1e-9 else ""
        lines.append(f"| {t:.2f}{mark} | {far:.1%} | {frr:.1%} |")
    lines += [
        "",
        f"Equal error rate: {eer:.1%} at {at:.2f}. Genuine scores {min(genuine):.2f}-"
        f"{max(genuine):.2f} (median {statistics.median(genuine):.2f}); impostor scores"
        f" {min(impostor):.2f}-{max(impostor):.2f} (median {statistics.median(impostor):.2f}).",
        "",
        f"Cost: one embedding of a 3 s utterance takes {cpu_ms:.0f} ms of CPU ({wall_ms:.0f} ms"
        f" wall), in the speaker worker. A Willow upload of a {probe_s:.1f}"
        f" s command at real time, last byte -> response, median of {runs}: {plain_ms:.0f} ms"
        f" without `voice_auth`, {auth_ms:.0f} ms with it: {auth_ms - plain_ms:+.0f} ms (target"
        " <= 50 ms).",
    ]
    table = "\n".join(lines)
    print(table)
    if write:
        write_section("speakers", table)


if __name__ == "__main__":
    parser = arguments(__doc__, runs=5)
    args = parser.parse_args()
    main(args.runs, not args.no_write)
