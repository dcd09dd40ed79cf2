"""Wake-word cost and accuracy: detection rate, false accepts, latency, CPU and memory.

Spoken wake phrases come from Hearth's own Piper voice at several speeds and noise
scales, with speech before and after, clean and mixed with white and babble noise at
20 and 10 dB SNR. Non-wake audio is Piper reading varied sentences, near-words
included, over room noise. Runs the models in-process exactly as a stream in the
daemon does (the same WakeLibrary and WakeStream), fed 10 ms chunks in 40 ms batches.

    .venv/bin/python -m bench.wake_bench [--minutes 60] [--write]
"""

from __future__ import annotations

import argparse
import glob
import resource
import time
from pathlib import Path

import numpy as np

from bench.results import machine, median, percentile, write_section
from daemon.engines.wake import WakeLibrary, WakeModelSettings

RATE = 16000
BATCH = 640  # 40 ms
WAKE = {
    "okay_nabu": ["Okay Nabu.", "Okay, Nabu.", "OK Nabu"],
    "hey_jarvis": ["Hey Jarvis.", "Hey, Jarvis."],
    "alexa": ["Alexa.", "Alexa,"],
}
BEFORE = ["I was just saying", "Well then,", "So anyway,"]
AFTER = ["turn on the kitchen lights.", "what time is it?", "play some music."]
NEAR = [
    "Okay, no bother, I will do it later.",
    "Hey, Jarvis said he would come by at noon.",
    "She bought a mycroft kit for the garden.",
    "Okay, now you can open the window.",
    "Hey, Jarvis is a name from the movies.",
    "A lexical analysis of the text is needed.",
    "Hey, my craft project is almost done.",
    "Okay, nobody told me about the meeting.",
]
TEXT = [
    "The weather tomorrow will be cloudy with a chance of rain in the afternoon.",
    "Please remember to buy milk, eggs and bread on the way home.",
    "The children are playing in the garden while dinner is cooking.",
    "Did you see the football game last night? It was incredible.",
    "I think we should paint the living room a lighter color this spring.",
    "The train to the city leaves every twenty minutes on weekdays.",
    "Could you turn the music down a little, I am on the phone.",
    "Grandma called to say she will visit us next weekend.",
    "The recipe needs two cups of flour and a spoon of sugar.",
    "Our neighbor's dog keeps barking at the mail carrier every morning.",
]


def piper() -> object:
    from piper import PiperVoice

    onnx = sorted(
        glob.glob(".venv/lib/python3.11/site-packages/**/*joe*medium*.onnx", recursive=True)
    )
    return PiperVoice.load(onnx[0])


def say(voice: object, text: str, length: float, noise: float) -> np.ndarray:
    import soxr
    from piper.config import SynthesisConfig

    cfg = SynthesisConfig(length_scale=length, noise_scale=noise, noise_w_scale=noise)
    pcm = b"".join(c.audio_int16_bytes for c in voice.synthesize(text, syn_config=cfg))  # type: ignore[attr-defined]
    a = np.frombuffer(pcm, np.int16).astype(np.float32)
    return soxr.resample(a, voice.config.sample_rate, RATE)  # type: ignore[attr-defined]


def mix(signal: np.ndarray, noise: np.ndarray | None, snr_db: float | None) -> np.ndarray:
    if noise is None or snr_db is None:
        return signal
    noise = np.resize(noise, signal.shape)
    ps = np.mean(signal**2) + 1e-9
    pn = np.mean(noise**2) + 1e-9
    return signal + noise * np.sqrt(ps / (pn * 10 ** (snr_db / 10)))


def to16(a: np.ndarray) -> np.ndarray:
    return np.clip(a, -32768, 32767).astype(np.int16)


def babble(voice: object, seconds: float, rng: np.random.Generator) -> np.ndarray:
    parts = [say(voice, t, 1.0, 0.667) for t in TEXT[:6]]
    out = np.zeros(int(seconds * RATE), np.float32)
    for p in parts:
        start = int(rng.integers(0, max(1, len(out) - len(p))))
        out[start : start + len(p)] += p[: len(out) - start]
    return out


def run_stream(lib: WakeLibrary, name: str, audio: np.ndarray) -> tuple[list[int], float]:
    stream = lib.stream([name])
    hits: list[int] = []
    began = time.process_time()
    for i in range(0, len(audio), BATCH):
        hits += [h.end_sample for h in stream.process(audio[i : i + BATCH])]
    cpu = time.process_time() - began
    stream.close()
    return hits, cpu


def word_end(word: np.ndarray, offset: int) -> int:
    loud = np.flatnonzero(np.abs(word) > 0.02 * 32768)
    return offset + (int(loud[-1]) if loud.size else len(word))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    names = list(WAKE)
    lib = WakeLibrary({n: WakeModelSettings() for n in names}, Path("/nonexistent"), 2.0)
    voice = piper()
    white = rng.normal(0, 3000, RATE * 10).astype(np.float32)
    bab = babble(voice, 10, rng)
    noises = [("clean", None, None)] + [
        (f"{k} {snr} dB", n, snr)
        for k, n in (("white", white), ("babble", bab))
        for snr in (20, 10)
    ]
    rows = []
    latencies: list[float] = []
    cpu_total = audio_total = 0.0
    for name in names:
        for cond, noise, snr in noises:
            found = trials = 0
            for phrase in WAKE[name]:
                for length in (0.8, 1.0, 1.25):
                    for ns in (0.333, 0.667):
                        before = say(voice, BEFORE[trials % 3], 1.0, 0.667)
                        word = say(voice, phrase, length, ns)
                        after = say(voice, AFTER[trials % 3], 1.0, 0.667)
                        gap = np.zeros(int(0.3 * RATE), np.float32)
                        clip = np.concatenate([gap, before, gap, word, gap, after, gap])
                        offset = len(gap) + len(before) + len(gap)
                        end = word_end(word, offset)
                        hits, cpu = run_stream(lib, name, to16(mix(clip, noise, snr)))
                        cpu_total += cpu
                        audio_total += len(clip) / RATE
                        good = [h for h in hits if offset <= h <= end + RATE]
                        trials += 1
                        if good:
                            found += 1
                            # Audio time after the word's end, plus the batch it waits for.
                            latencies.append((good[0] - end) / RATE * 1000 + BATCH / RATE * 1000)
            rows.append((name, cond, found, trials))
    # False accepts: Piper reading non-wake text (near-words included) over room noise.
    pieces = []
    for text in NEAR + TEXT:
        for length in (0.85, 1.0, 1.2):
            pieces.append(say(voice, text, length, 0.667))
            pieces.append(np.zeros(int(rng.uniform(0.2, 1.5) * RATE), np.float32))
    base = np.concatenate(pieces)
    target = int(args.minutes * 60 * RATE)
    fa: dict[str, int] = {n: 0 for n in names}
    fa_cpu = {n: 0.0 for n in names}
    done = 0
    rounds = 0
    while done < target:
        room = rng.normal(0, 200 * (1 + rounds % 3), len(base)).astype(np.float32)
        shifted = np.roll(base, int(rng.integers(0, len(base)))) * rng.uniform(0.5, 1.2)
        chunk = to16(
            shifted + room + bab.mean() * 0 + np.resize(bab, len(base)) * 0.1 * (rounds % 2)
        )
        for n in names:
            hits, cpu = run_stream(lib, n, chunk)
            fa[n] += len(hits)
            fa_cpu[n] += cpu
        done += len(chunk)
        rounds += 1
    hours = done / RATE / 3600
    per_stream_cpu = sum(fa_cpu.values()) / len(names) / (done / RATE) * 100
    # Memory per stream: RSS growth over 50 open okay_nabu streams.
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    streams = [lib.stream(["okay_nabu"]) for _ in range(50)]
    for s in streams:
        s.process(np.zeros(RATE, np.int16))
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for s in streams:
        s.close()
    mem_kb = (rss1 - rss0) / 50
    lines = [
        f"Machine: {machine()}. Models in-process as in the daemon (40 ms batches). "
        f"Unique non-wake audio: {len(base) / RATE / 60:.1f} min, replayed shifted, "
        f"rescaled and over different room noise to {done / RATE / 60:.0f} min.",
        "",
        "| model | condition | detected |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {n} | {c} | {f}/{t} ({100 * f / t:.0f} %) |" for n, c, f, t in rows]
    total_f = sum(r[2] for r in rows)
    total_t = sum(r[3] for r in rows)
    lines += [
        "",
        f"- detection rate, all conditions: {total_f}/{total_t} ({100 * total_f / total_t:.1f} %)",
        "- false accepts per hour: "
        + ", ".join(f"{n} {fa[n] / hours:.2f}" for n in names)
        + f" ({hours:.2f} h each)",
        f"- latency after the word's end (audio time + batch): median {median(latencies):.0f} ms, "
        f"p90 {percentile(latencies, 90):.0f} ms",
        f"- CPU per stream: {per_stream_cpu:.2f} % of one core; 2 cores hold about "
        f"{int(200 / max(per_stream_cpu, 0.01))} streams in real time",
        f"- memory per okay_nabu stream: about {mem_kb:.0f} KiB",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section("wake", "## Wake words\n\n" + text + "\n")


if __name__ == "__main__":
    main()
