"""End of turn: the turn model against the fixed 700 ms silence, on a labelled turn set.

The set is made by synthesis: complete commands and questions; sentences with a
500-1,500 ms pause after "for", "and", "to" or "the"; and pauses after a filler
("um"). Voices: Hearth's Piper voice with its noise scales varied, plus espeak-ng
voices (the Debian package) when it is installed.

Reported for each configuration, measured in the same run:

- end-of-turn accuracy: complete turns ended by the turn model (before the longest
  pause), and pause turns kept whole;
- early cuts: pause turns split in two (the person was cut off mid-sentence);
- end of speech -> end of utterance (median), in audio time plus the decision's wall
  time (the audio is fed faster than real time and each decision is awaited);
- end of speech -> first reply audio (speech to speech, median), fed at real time
  through a hands-free session whose reply starts on the speculative transcript, as
  the WebRTC hands-free path does;
- the turn check's CPU time per decision (median, thread CPU time);
- with ``--variants``, the same turns through each way of running the int8 file:
  float32 (Hearth's, the same on every CPU), ONNX Runtime's integer kernels (what
  Pipecat runs; they differ between CPUs), and the QDQ graph as written
  (``ORT_DISABLE_ALL``, quantized activations in float).

    .venv/bin/python -m bench.turn_bench [--s2s-runs 3] [--variants] [--no-write]
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from faster_whisper import WhisperModel

from bench.harness import arguments, machine, median, percentile, write_section
from daemon.audio.pcm import RATE, AudioFormat, resample_pcm
from daemon.config import parse_config
from daemon.engines.hardware import probe
from daemon.engines.tts.base import SynthesisOptions
from daemon.engines.turn.base import TurnModel, TurnPrediction
from daemon.engines.turn.smart_turn import SmartTurn
from daemon.runtime.engines import Engines
from daemon.runtime.loading import load_engines
from daemon.speech.endpoint import EndpointState
from daemon.speech.events import FinalTranscript, SpeechAudio
from daemon.speech.pipeline import SpeculativeReplies
from daemon.speech.session import SessionOptions, SessionSettings, SpeechSession

CHUNK_S = 0.02
TAIL_S = 2.2
"""Silence after the last word: longer than the longest pause inside a turn."""

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
]
PAUSED = [
    ("Set a timer for", "ten minutes."),
    ("Add milk and", "eggs to the shopping list."),
    ("Turn the thermostat up to", "seventy degrees."),
    ("Play the", "new album by Adele."),
    ("Remind me to", "call my mother tomorrow."),
    ("Turn on the lights in the", "kitchen."),
    ("What is the weather for", "the weekend?"),
    ("Open the", "garage door."),
    ("Turn on the, um,", "living room lamp."),
    ("What is the, uh,", "score of the game?"),
    ("Set an alarm for, um,", "seven tomorrow morning."),
    ("Close the blinds and", "turn off the fan."),
]
PAUSES_S = (0.5, 1.0, 1.5)
S2S_TEXTS = COMPLETE[:5]


@dataclass(frozen=True)
class Voice:
    """How a clip is spoken: Piper with noise scales, or an espeak-ng voice."""

    name: str
    noise: tuple[float, float] | None = None
    espeak: str | None = None


PIPER_VOICES = [Voice("piper 0.667/0.8", noise=(0.667, 0.8)), Voice("piper 0.3/0.4", (0.3, 0.4))]
ESPEAK_VOICES = [Voice("espeak en-us", espeak="en-us"), Voice("espeak en-gb+f3", espeak="en-gb+f3")]


@dataclass
class Clip:
    kind: str
    """complete or paused."""
    text: str
    voice: str
    audio: np.ndarray
    speech_end_s: float
    """Where the last word ends (energy), in seconds."""
    pause: tuple[float, float] | None = None
    """The pause inside a paused turn: (start, end) in seconds."""


def _speech_bounds(audio: np.ndarray) -> tuple[float, float]:
    """First and last 10 ms frame louder than -40 dBFS."""
    frames = audio[: len(audio) // 160 * 160].astype(np.float32).reshape(-1, 160) / 32768
    loud = np.flatnonzero(np.sqrt((frames**2).mean(axis=1)) > 0.01)
    if loud.size == 0:
        return 0.0, 0.0
    return loud[0] * 0.01, (loud[-1] + 1) * 0.01


def _trim(audio: np.ndarray) -> np.ndarray:
    start, end = _speech_bounds(audio)
    return audio[int(start * RATE) : int(end * RATE)]


async def _say(engines: Engines, voice: Voice, text: str) -> np.ndarray:
    if voice.espeak is not None:
        wav = subprocess.run(
            ["espeak-ng", "-v", voice.espeak, "-s", "165", "--stdout", text],
            capture_output=True,
            check=True,
        ).stdout
        # espeak-ng writes a 22,050 Hz mono WAV with a 44-byte header.
        return np.frombuffer(resample_pcm(wav[44:], 22050, RATE), dtype="<i2").copy()
    assert engines.tts is not None and voice.noise is not None
    opts = SynthesisOptions(
        sample_rate=RATE, noise_scale=voice.noise[0], noise_w_scale=voice.noise[1]
    )
    pcm = b"".join([b.pcm async for b in engines.tts.stream(text, opts)])
    return np.frombuffer(pcm, dtype=np.int16).copy()


def _silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * RATE), dtype=np.int16)


def _cut_after(model: WhisperModel, speech: np.ndarray, words: int) -> int | None:
    """The sample between word ``words`` and the next one (quietest 10 ms there).

    Found with Whisper's word timestamps on the whole sentence, so that the pause is
    cut into speech whose intonation goes on, as a person's does when they stop to
    think (a TTS voice says a fragment on its own like a finished sentence).
    """
    segments, _ = model.transcribe(
        speech.astype(np.float32) / 32768, language="en", word_timestamps=True, beam_size=1
    )
    found = [w for seg in segments for w in (seg.words or [])]
    if len(found) <= words:
        return None
    lo, hi = found[words - 1].end - 0.08, found[words].start + 0.08
    a, b = int(max(0.0, lo) * 100), int(hi * 100)
    frames = speech[: len(speech) // 160 * 160].astype(np.float32).reshape(-1, 160)
    energy = (frames[a:b] ** 2).mean(axis=1)
    if energy.size == 0:
        return None
    return (a + int(np.argmin(energy))) * 160


async def make_set(engines: Engines, voices: list[Voice]) -> list[Clip]:
    clips: list[Clip] = []
    lead = _silence(0.3)
    asr = engines.asr[engines.config.asr.default_model]
    whisper: WhisperModel = getattr(asr, "_model")  # noqa: B009 - the loaded faster-whisper model
    for v, voice in enumerate(voices):
        for text in COMPLETE:
            speech = _trim(await _say(engines, voice, text))
            audio = np.concatenate([lead, speech, _silence(TAIL_S)])
            clips.append(Clip("complete", text, voice.name, audio, 0.3 + len(speech) / RATE))
        for i, (head, tail) in enumerate(PAUSED):
            whole = _trim(await _say(engines, voice, f"{head} {tail}"))
            cut = await asyncio.to_thread(_cut_after, whisper, whole, len(head.split()))
            if cut is None:
                print(f"skipped ({voice.name}): no word boundary found in {head} {tail}")
                continue
            first, second = _trim(whole[:cut]), _trim(whole[cut:])
            pause = PAUSES_S[(i + v) % len(PAUSES_S)]
            audio = np.concatenate([lead, first, _silence(pause), second, _silence(TAIL_S)])
            start = 0.3 + len(first) / RATE
            clips.append(
                Clip(
                    "paused",
                    f"{head} ... {tail}",
                    voice.name,
                    audio,
                    start + pause + len(second) / RATE,
                    (start, start + pause),
                )
            )
    return clips


class Recorder(TurnModel):
    """The loaded turn model, noting each check's probability and audio end time."""

    def __init__(self, model: TurnModel) -> None:
        self.model = model
        self.name = model.name
        self.window_s = model.window_s
        self.checks: list[float] = []

    def predict(self, audio: np.ndarray) -> TurnPrediction:
        verdict = self.model.predict(audio)
        self.checks.append(verdict.probability)
        return verdict


@dataclass
class Outcome:
    ended_s: float | None
    """Audio time at which the utterance ended (None: never)."""
    decision_s: float
    """Wall time the deciding turn check took (0 without one)."""
    checks: list[tuple[float, float]] = dataclasses.field(default_factory=list)
    """Every turn check: (audio time of the speech end it judged, probability)."""
    decodes: int = 0
    """Whisper decodes the session made (speculative ones that speech made moot included)."""


async def run_clip(
    engines: Engines, settings: SessionSettings, clip: Clip, keep_up: bool = False
) -> Outcome:
    """Feed a clip chunk by chunk (faster than real time), awaiting each turn decision;
    with ``keep_up`` also each speculative decode (as a machine that keeps up with real
    time would have it done), so that decodes do not pile up and crowd out turn checks."""
    session = engines.new_session(options=SessionOptions(partials=False), settings=settings)
    # Fed faster than real time, yet judged as the live speaker it stands for (a
    # recording's end is its client's to mark, and the turn model is not asked).
    session.intake.recording = lambda: False  # type: ignore[method-assign]
    session.start(AudioFormat(RATE, 2, 1))
    step = int(RATE * CHUNK_S)
    decision_s = 0.0
    checks: list[tuple[float, float]] = []
    turns = session.turns
    recorder = turns.model if turns is not None and isinstance(turns.model, Recorder) else None
    try:
        for start in range(0, len(clip.audio), step):
            await session.feed(clip.audio[start : start + step].tobytes())
            spec = session.decodes.spec
            if keep_up and spec is not None and not spec.task.done():
                await asyncio.wait({spec.task})
            task = turns.task if turns is not None else None  # wait for each decision
            if task is not None and not task.done():
                began = time.perf_counter()
                await task
                decision_s = time.perf_counter() - began
                if recorder is not None and recorder.checks:
                    checks.append((session.endpointer.speech_end_s or 0.0, recorder.checks[-1]))
            if session.endpointer.state is EndpointState.ENDED:
                return Outcome(session.endpointer.now_s, decision_s, checks, session.asr_calls)
        return Outcome(None, decision_s, checks, session.asr_calls)
    finally:
        await session.close()


def sweep(
    outcomes: list[tuple[Clip, Outcome]], max_pause_s: float, check_s: float
) -> list[tuple[float, float, int, float]]:
    """From the recorded probabilities (one check per pause): for each threshold,
    (threshold, complete turns ended by the model, early cuts, median end time)."""
    rows = []
    for threshold in (0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9):
        ok = cuts = 0
        ends = []
        for clip, out in outcomes:
            cut_before = clip.pause[1] if clip.pause else clip.speech_end_s - 0.1
            early = [p for at, p in out.checks if at < cut_before and p >= threshold]
            cuts += bool(early)
            if clip.kind == "complete" and not early:
                final = [p for at, p in out.checks if at >= clip.speech_end_s - 0.1]
                if final and final[0] >= threshold:
                    ok += 1
                    ends.append(check_s + out.decision_s)
                else:
                    ends.append(max_pause_s)
        n_complete = sum(c.kind == "complete" for c, _ in outcomes)
        rows.append((threshold, ok / n_complete, cuts, median(ends) * 1000))
    return rows


async def bench_turns(
    engines: Engines,
    clips: list[Clip],
    settings: SessionSettings,
    outcomes: list[tuple[Clip, Outcome]] | None = None,
    keep_up: bool = False,
) -> dict[str, float]:
    ends: list[float] = []
    decodes: list[int] = []
    complete_ok = paused_ok = cuts = 0
    n_complete = sum(c.kind == "complete" for c in clips)
    max_pause = settings.endpoint.max_pause_s if settings.endpoint.turn else None
    for clip in clips:
        out = await run_clip(engines, settings, clip, keep_up)
        decodes.append(out.decodes)
        if outcomes is not None:
            outcomes.append((clip, out))
        if clip.kind == "complete":
            if out.ended_s is not None:
                late = out.ended_s - clip.speech_end_s + out.decision_s
                ends.append(late)
                # The model ended it (before the longest pause); the baseline always does.
                if max_pause is None or late < max_pause - 0.05:
                    complete_ok += 1
        else:
            assert clip.pause is not None
            cut = out.ended_s is not None and out.ended_s < clip.pause[1] + 0.1
            cuts += cut
            paused_ok += not cut
    n_paused = len(clips) - n_complete
    return {
        "accuracy": (complete_ok + paused_ok) / len(clips),
        "complete_ok": complete_ok / n_complete,
        "cuts": cuts,
        "n_paused": n_paused,
        "end_ms": median(ends) * 1000,
        "end_p90_ms": percentile(ends, 0.9) * 1000,
        "decodes": sum(decodes) / len(decodes),
    }


async def bench_s2s(
    engines: Engines, utterances: list[np.ndarray], settings: SessionSettings, runs: int
) -> float:
    """Median end of speech -> first reply audio, hands-free at real time."""
    assert engines.pipeline is not None
    latencies = []
    for r in range(runs):
        for i, speech in enumerate(utterances):
            session = engines.new_session(
                options=SessionOptions(partials=False, hands_free=True), settings=settings
            )
            replies = engines.pipeline.replies(
                f"s2s{r}-{i}", True, SynthesisOptions(sample_rate=RATE)
            )
            first: float | None = None

            async def listen(
                session: SpeechSession = session, replies: SpeculativeReplies = replies
            ) -> None:
                nonlocal first
                reply_task: asyncio.Task[None] | None = None

                async def play(final: FinalTranscript) -> None:
                    nonlocal first
                    async for event in replies.start(final).events():
                        if isinstance(event, SpeechAudio) and first is None:
                            first = time.perf_counter()

                async for event in session.events():
                    await replies.observe(event)
                    if (
                        isinstance(event, FinalTranscript)
                        and event.text.strip()
                        and reply_task is None
                    ):
                        reply_task = asyncio.ensure_future(play(event))
                if reply_task is not None:
                    await reply_task

            reader = asyncio.ensure_future(listen())
            audio = np.concatenate([_silence(0.3), speech, _silence(TAIL_S)])
            session.start(AudioFormat(RATE, 2, 1))
            step = int(RATE * CHUNK_S)
            began = time.perf_counter()
            speech_end_at = began + 0.3 + len(speech) / RATE
            for k, start in enumerate(range(0, len(audio), step)):
                await session.feed(audio[start : start + step].tobytes())
                delay = began + (k + 1) * CHUNK_S - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                if first is not None:
                    break
            await session.close()
            await asyncio.wait_for(reader, 60)
            await replies.close()
            if first is not None:
                latencies.append(first - speech_end_at)
    return median(latencies) * 1000


def bench_check_cpu(engines: Engines, clips: list[Clip]) -> tuple[float, float]:
    """Median thread CPU and wall time of one turn decision (ms)."""
    assert engines.turn is not None
    cpu, wall = [], []
    for clip in clips:
        audio = clip.audio[: int((clip.speech_end_s + 0.2) * RATE)]
        engines.turn.predict(audio)  # warm
        c0, w0 = time.thread_time(), time.perf_counter()
        engines.turn.predict(audio)
        cpu.append(time.thread_time() - c0)
        wall.append(time.perf_counter() - w0)
    return median(cpu) * 1000, median(wall) * 1000


class FakeQuant(SmartTurn):
    """The int8 file's QDQ graph as written (``ORT_DISABLE_ALL``): no fused integer
    kernels, activations rounded to int8 and back in float."""

    def __init__(self, path: Path, threshold: float) -> None:
        import onnxruntime

        super().__init__(path, threshold, exact=False)
        opts = onnxruntime.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        self.session = onnxruntime.InferenceSession(
            str(path), sess_options=opts, providers=["CPUExecutionProvider"]
        )


def variants(model: TurnModel) -> dict[str, TurnModel]:
    """Each way of running the embedded int8 file, Hearth's first."""
    assert isinstance(model, SmartTurn)
    return {
        "float32 (Hearth)": model,
        "int8 kernels (ONNX Runtime's, this CPU)": SmartTurn(
            model.path, model.threshold, exact=False
        ),
        "QDQ as written (ORT_DISABLE_ALL)": FakeQuant(model.path, model.threshold),
    }


async def bench_variants(
    engines: Engines, clips: list[Clip], settings: SessionSettings
) -> list[str]:
    """Table rows: the turn bench through each variant, with its CPU per check."""
    assert engines.turn is not None
    model = engines.turn
    rows = []
    for name, variant in variants(model).items():
        engines.turn = variant
        r = await bench_turns(engines, clips, settings)
        cpu_ms, _ = bench_check_cpu(engines, [c for c in clips if c.kind == "complete"][:12])
        rows.append(
            f"| {name} | {r['complete_ok']:.0%} | {r['cuts']:.0f}/{r['n_paused']:.0f} |"
            f" {r['end_ms']:.0f} ms ({r['end_p90_ms']:.0f}) | {cpu_ms:.1f} ms |"
        )
    engines.turn = model
    return rows


async def main(s2s_runs: int, write: bool, with_variants: bool = False) -> None:
    with tempfile.TemporaryDirectory() as state:
        config = parse_config(f"state_dir: {state}\nllm:\n  temperature: 0.0\n", "bench")
        engines = await asyncio.to_thread(load_engines, config, probe())
        if engines.turn is None:
            raise SystemExit("the turn model did not load: see the log above")
        voices = PIPER_VOICES + (ESPEAK_VOICES if shutil.which("espeak-ng") else [])
        clips = await make_set(engines, voices)
        turn = engines.session_settings
        fixed = dataclasses.replace(turn, endpoint=dataclasses.replace(turn.endpoint, turn=False))
        assert engines.chat is not None
        await engines.chat.warm_up()
        model = engines.turn
        engines.turn = Recorder(model)
        outcomes: list[tuple[Clip, Outcome]] = []
        results = {
            "fixed 700 ms silence": await bench_turns(engines, clips, fixed),
            "turn model": await bench_turns(engines, clips, turn, outcomes),
        }
        engines.turn = model
        variant_rows = await bench_variants(engines, clips, turn) if with_variants else []
        rows = sweep(outcomes, turn.endpoint.max_pause_s, turn.endpoint.turn_check_s)
        cpu_ms, wall_ms = bench_check_cpu(engines, [c for c in clips if c.kind == "complete"])
        s2s_utts = [_trim(await _say(engines, PIPER_VOICES[0], text)) for text in S2S_TEXTS]
        await bench_s2s(engines, s2s_utts[:1], turn, 1)  # warm-up
        s2s = {
            "fixed 700 ms silence": await bench_s2s(engines, s2s_utts, fixed, s2s_runs),
            "turn model": await bench_s2s(engines, s2s_utts, turn, s2s_runs),
        }
        engines.close()

    ep = turn.endpoint
    n_paused = int(results["turn model"]["n_paused"])
    lines = [
        "## Turn-taking: the turn model against the fixed silence",
        "",
        f"{datetime.date.today()}, {machine()}. `bench/turn_bench.py`: {len(clips)} synthesized"
        f" turns ({len(COMPLETE)} complete and {len(PAUSED)} with a 0.5-1.5 s pause after"
        f' "for", "and", "to", "the" or a filler, each in {len(voices)} voices:'
        f" {', '.join(v.name for v in voices)}). Turn model: Smart Turn v3.2, checked after"
        f" {ep.turn_check_s * 1000:.0f} ms of silence, again every {ep.turn_recheck_s * 1000:.0f}"
        f" ms, longest pause {ep.max_pause_s * 1000:.0f} ms. Speech to speech: {len(S2S_TEXTS)}"
        f" commands x {s2s_runs} runs at real time, hands-free, the reply starting on the"
        " speculative transcript.",
        "",
        "| | fixed 700 ms silence | turn model | target |",
        "|---|---|---|---|",
    ]
    f, t = results["fixed 700 ms silence"], results["turn model"]
    lines += [
        f"| end-of-turn accuracy | {f['accuracy']:.0%} | {t['accuracy']:.0%} | - |",
        f"| complete turns ended before the longest pause | {f['complete_ok']:.0%} |"
        f" {t['complete_ok']:.0%} | - |",
        f"| early cuts (pause set) | {f['cuts']:.0f}/{n_paused} | {t['cuts']:.0f}/{n_paused} |"
        " no more than the baseline |",
        f"| end of speech -> end of utterance, median (p90) | {f['end_ms']:.0f} ms"
        f" ({f['end_p90_ms']:.0f}) | {t['end_ms']:.0f} ms ({t['end_p90_ms']:.0f}) | - |",
        f"| end of speech -> first reply audio, median | {s2s['fixed 700 ms silence']:.0f} ms |"
        f" {s2s['turn model']:.0f} ms | <= 450 ms |",
        f"| turn check, CPU per decision (wall) | - | {cpu_ms:.1f} ms ({wall_ms:.1f} ms) |"
        " <= 30 ms |",
    ]
    lines += [
        "",
        "The same checks' probabilities at other thresholds (one check per pause; a turn"
        " the model does not end waits for the longest pause):",
        "",
        "| threshold | complete turns ended by the model | early cuts | end of utterance, median |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {th:.2f} | {ok:.0%} | {cuts}/{len(clips)} | {end:.0f} ms |"
        for th, ok, cuts, end in rows
    ]
    if variant_rows:
        lines += [
            "",
            "The same turns through each way of running the int8 file (threshold"
            f" {config.vad.turn_threshold:.2f}, one check per pause):",
            "",
            "| model run as | complete turns ended by the model | early cuts |"
            " end of utterance, median (p90) | CPU per check |",
            "|---|---|---|---|---|",
            *variant_rows,
        ]
    lines += [
        "",
        "How the pause set is made: the whole sentence is synthesized and cut at the word"
        " boundary (Whisper's word timestamps, the quietest 10 ms there), so the speech before"
        " the pause keeps the intonation of a sentence that goes on. A fragment synthesized on"
        ' its own ("Set a timer for") is spoken like a finished sentence and the model calls it'
        " complete (0.96). Speech to speech starts the reply on the speculative transcript in"
        " both columns, so on a small CPU it waits for the decode, the LLM and the voice, not"
        " for the end of the turn.",
    ]
    table = "\n".join(lines)
    print(table)
    if write:
        write_section("turn", table)


if __name__ == "__main__":
    parser = arguments(__doc__)
    parser.add_argument("--s2s-runs", type=int, default=3)
    parser.add_argument("--variants", action="store_true", help="compare ways of running it")
    args = parser.parse_args()
    asyncio.run(main(args.s2s_runs, not args.no_write, args.variants))
