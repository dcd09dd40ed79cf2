"""Decode window: the speed table, today's 30 s window against the window cut to the utterance.

Two real ``hearth serve`` daemons run at once on free loopback ports: "today" with the
settings before the window (padding 120 ms, Willow speculating after 60 ms, no saved
LLM system prompt) and
``asr.models.tiny.en.window: 30`` (Whisper's own 30 s decode window) and "new" with
``window: auto`` (the window cut to the utterance). Each row measures both, and the
peer the issue names, taking turns run by run so that load on the machine falls on
all alike. The rows reuse the other benches' clients:

- ``wyoming``: Wyoming ``transcribe``, the whole 4.0 s utterance + 0.7 s of silence
  written at once in 10 ms chunks (no pacing); audio-stop -> transcript, against
  wyoming-faster-whisper 3.8.1 (bench/.ref-venv, same tiny.en folder). Target: Hearth
  / reference <= 0.35. Transcripts must hold the key words and not loop.
- ``concurrent``: 10 Wyoming clients at once at real time (``wyoming_bench``);
  p50/p95 of audio-stop -> transcript, p95 / reference p95 <= 0.40.
- ``willow``: 8 Willow devices uploading at once (``willow.concurrent``); last byte
  -> response p50/p95, new p95 / today p95 <= 0.5.
- ``ptt``: WebRTC push-to-talk let go 150 ms after the last word (``webrtc_bench``):
  stop -> ``infer`` / the WIS way (the same buffer decoded whole on the same daemon),
  <= 0.30.
- ``speech``: hands-free speech to speech over WebRTC (``handsfree_webrtc``): end of
  speech -> first reply audio frame at the client, <= 600 ms.

At the end each daemon's ``/metrics`` (``hearth_asr_window_decodes``) tells how many
windowed decodes the guard sent back to the 30 s window during the run.

``--today-config`` / ``--new-config`` replace the ``asr:`` YAML appended to each
daemon's config (``\\n`` may be written for newlines); both daemons also get
handsfree_webrtc's ``llm:`` and ``webrtc:`` sections, so the extra YAML must not
repeat those keys (YAML keeps the last of two equal keys).

Run (about 12-15 minutes on 2 busy cores with the defaults; ``--runs 1 --rounds 1``
takes about 5):

    .venv/bin/python -m bench.window_speed [--runs 5] [--rounds 3] [--only wyoming,ptt]
        [--today-config YAML] [--new-config YAML] [--output bench/RESULTS.md] [--no-write]
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np

from bench import handsfree_webrtc, webrtc_bench, willow, wyoming_bench
from bench.harness import (
    ROOT,
    SERVE_CONFIG,
    arguments,
    machine,
    ms,
    percentile,
    piper_speech,
    write_section,
)
from daemon.audio.pcm import resample_pcm
from tests.daemon import Daemon
from tests.helpers import free_port, words
from tests.webrtc_client import RtcClient

ROWS = ("wyoming", "concurrent", "willow", "ptt", "speech")
TODAY = (
    "asr:\n  models:\n    tiny.en:\n      window: 30\n"
    "vad:\n  padding_ms: 120\n"
    "willow:\n  speculative_silence_ms: 60\n  padding_ms: 120\n"
)
"""The settings before the window: Whisper's 30 s, and the paddings chosen with it."""
NEW = "asr:\n  models:\n    tiny.en:\n      window: auto\n"
WEBRTC_PORTS = {"today": (23400, 23449), "new": (23450, 23499)}
"""Disjoint UDP ranges, apart from those of the tests and the other benches."""
BURST_SAMPLES = 160  # 10 ms at 16 kHz, as Home Assistant sends
KEY_WORDS = {"kitchen", "lights", "blinds"}
CLIENTS = 10
DEVICES = 8
RELEASE_MS = 150
NAMES = ("today", "new")


@dataclass
class Latencies:
    """Seconds per configuration (and the reference), and what was heard."""

    times: dict[str, list[float]] = field(default_factory=dict)
    texts: dict[str, set[str]] = field(default_factory=dict)
    wrong: dict[str, int] = field(default_factory=dict)
    total: dict[str, int] = field(default_factory=dict)

    def add(
        self, name: str, seconds: float | None, text: str | None = None, ok: bool = True
    ) -> None:
        self.times.setdefault(name, [])
        self.total[name] = self.total.get(name, 0) + 1
        self.wrong.setdefault(name, 0)
        if text is not None:
            self.texts.setdefault(name, set()).add(text.strip())
        if not ok or seconds is None:
            self.wrong[name] += 1
        else:
            self.times[name].append(seconds)

    def median(self, name: str) -> float:
        values = self.times.get(name, [])
        return statistics.median(values) if values else float("nan")

    def p(self, name: str, q: float) -> float:
        return percentile(self.times.get(name, []), q)

    def correct(self, name: str) -> str:
        total = self.total.get(name, 0)
        return f"{total - self.wrong.get(name, 0)}/{total}"

    def spread(self, name: str) -> str:
        """A concurrent row's cell: p50 / p95; how many were right."""
        return f"{ms(self.p(name, 0.5))} / {ms(self.p(name, 0.95))}; {self.correct(name)}"


def right(text: str, sentence: str = wyoming_bench.UTTERANCE) -> bool:
    """The key words are there and the transcript does not loop (at most 2x the words)."""
    heard = words(text)
    return KEY_WORDS <= set(heard) and len(heard) <= 2 * len(words(sentence))


async def wyoming_pcm(server: wyoming_bench.Server) -> bytes:
    """wyoming_bench's utterance: Hearth's voice padded to 4.0 s, then 0.7 s of silence."""
    rate_16k = wyoming_bench.RATE
    _, _, rate, spoken = await wyoming_bench.synthesize(server, wyoming_bench.UTTERANCE)
    speech = np.frombuffer(resample_pcm(spoken, rate, rate_16k), dtype=np.int16)
    pad = max(0, int(wyoming_bench.UTTERANCE_S * rate_16k) - len(speech))
    audio = np.concatenate(
        [np.zeros(pad // 2, np.int16), speech, np.zeros(pad - pad // 2, np.int16)]
    )
    silence = np.zeros(int(wyoming_bench.TRAILING_S * rate_16k), np.int16)
    return np.concatenate([audio, silence]).tobytes()


def window_decodes(daemon: Daemon) -> dict[tuple[str, str], float]:
    """(window s, guard verdict) -> windowed decodes so far, from ``/metrics``."""
    from prometheus_client.parser import text_string_to_metric_families

    resp = httpx.get(f"{daemon.url}/metrics", timeout=30)
    resp.raise_for_status()
    counts: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(resp.text):
        if family.name != "hearth_asr_window_decodes":
            continue
        for sample in family.samples:
            if sample.name.endswith("_total"):
                key = (sample.labels.get("window", "?"), sample.labels.get("verdict", "?"))
                counts[key] = counts.get(key, 0) + sample.value
    return counts


class Bench:
    """The two daemons (and the reference server), measured row by row."""

    def __init__(
        self,
        daemons: dict[str, Daemon],
        reference: wyoming_bench.Server | None,
        runs: int,
        rounds: int,
        utterances: list[np.ndarray],
    ) -> None:
        self.daemons = daemons
        self.reference = reference
        self.runs = runs
        self.rounds = rounds
        self.utterances = utterances
        self.servers = {
            name: wyoming_bench.Server(f"Hearth {name}", d.wyoming_port, daemon=d)
            for name, d in daemons.items()
        }
        self.results: dict[str, Latencies] = {}
        self.parts: dict[str, dict[str, list[float]]] = {}
        """Hands-free turns in parts (see :func:`budget`), by configuration."""
        self.notes: list[str] = []
        self._pcm = b""

    async def pcm(self) -> bytes:
        if not self._pcm:
            self._pcm = await wyoming_pcm(self.servers["today"])
        return self._pcm

    def wyoming_servers(self) -> dict[str, wyoming_bench.Server]:
        assert self.reference is not None
        return {**self.servers, "reference": self.reference}

    async def wyoming(self) -> None:
        pcm = await self.pcm()
        result = Latencies()
        contenders = self.wyoming_servers()
        at_once = functools.partial(wyoming_bench.transcribe, paced=False, samples=BURST_SAMPLES)
        for server in contenders.values():
            await at_once(server, pcm)  # warm-up
        for _ in range(self.runs):
            for name, server in contenders.items():
                latency, text = await at_once(server, pcm)
                result.add(name, latency, text, right(text))
        self.results["wyoming"] = result

    async def concurrent(self) -> None:
        pcm = await self.pcm()
        result = Latencies()
        contenders = self.wyoming_servers()
        if "wyoming" not in self.results:
            for server in contenders.values():
                await wyoming_bench.transcribe(server, pcm)  # warm-up
        for _ in range(self.rounds):
            for name, server in contenders.items():
                good = await wyoming_bench.concurrent_round(server, pcm, CLIENTS)
                for latency in good:
                    result.add(name, latency)
                for _ in range(CLIENTS - len(good)):
                    result.add(name, None)
        self.results["concurrent"] = result

    async def willow(self) -> None:
        spoken = await asyncio.to_thread(willow.speech, self.daemons["today"].url)
        body = np.concatenate([spoken, np.zeros(int(0.3 * willow.RATE), np.int16)]).tobytes()
        result = Latencies()
        for name, daemon in self.daemons.items():  # warm-up, and a transcript to show
            _, text = await asyncio.to_thread(willow.device_upload, daemon.url, body)
            result.texts.setdefault(name, set()).add(text.strip())
        for _ in range(self.rounds):
            for name, daemon in self.daemons.items():
                latencies, ok, total = await asyncio.to_thread(
                    willow.concurrent, daemon.url, body, DEVICES, 1
                )
                result.times.setdefault(name, []).extend(latencies)
                result.total[name] = result.total.get(name, 0) + total
                result.wrong[name] = result.wrong.get(name, 0) + total - ok
        self.results["willow"] = result

    async def ptt(self) -> None:
        speech = await webrtc_bench.speak(self.daemons["today"])
        clients = {n: await RtcClient(d.url).connect() for n, d in self.daemons.items()}
        stream, whole = Latencies(), Latencies()

        async def attempt(into: Latencies, name: str, step: Callable[[], Awaitable[float]]) -> None:
            try:
                latency = await step()
            except RuntimeError as exc:  # the benches raise on a wrong transcript
                into.add(name, None, str(exc), ok=False)
            else:
                into.add(name, latency)

        try:
            for name, client in clients.items():  # warm-up
                await webrtc_bench.released(client, speech, 300)
                await webrtc_bench.whole_buffer(self.daemons[name].url, speech, 300)
            for _ in range(self.runs):
                for name, client in clients.items():
                    url = self.daemons[name].url
                    await attempt(
                        stream, name, lambda c=client: webrtc_bench.released(c, speech, RELEASE_MS)
                    )
                    await attempt(
                        whole, name, lambda u=url: webrtc_bench.whole_buffer(u, speech, RELEASE_MS)
                    )
        finally:
            for client in clients.values():
                await client.close()
        self.results["ptt"] = stream
        self.results["ptt-wis"] = whole

    async def speech(self) -> None:
        clients = {n: await RtcClient(d.url).connect() for n, d in self.daemons.items()}
        result = Latencies()
        parts: dict[str, dict[str, list[float]]] = {n: {} for n in self.daemons}
        try:
            for client in clients.values():
                client.send("listen", reply=True)
                await client.expect("state")
            for _ in range(self.runs):
                for speech in self.utterances:
                    for name, client in clients.items():  # turn by turn: load falls on both
                        seen = len(client.received)
                        began = time.monotonic()
                        latency = await handsfree_webrtc.one_turn(client, speech)
                        result.add(name, latency)
                        if latency is not None:
                            for part, value in budget(client, seen, began, latency).items():
                                parts[name].setdefault(part, []).append(value)
            for name, client in clients.items():
                for message in client.received:
                    if message.get("type") == "infer":
                        text = str(message.get("obj", {}).get("text", "")).strip()
                        result.texts.setdefault(name, set()).add(text)
        finally:
            for client in clients.values():
                await client.close()
        self.results["speech"] = result
        self.parts = parts


def budget(client: RtcClient, seen: int, began: float, total: float) -> dict[str, float]:
    """One hands-free turn's time from the end of speech, in parts (seconds).

    ``seen``: messages the client had before the turn; ``began``: when its audio
    started (0.3 s of silence, then the speech, as ``handsfree_webrtc.one_turn``).
    """
    times = list(zip(client.received[seen:], client.received_at[seen:], strict=True))
    infer = next((t for m, t in times if m.get("type") == "infer"), None)
    delta = next(
        (t for m, t in times if m.get("type") == "reply" and m.get("obj", {}).get("delta")),
        None,
    )
    frames = [t for t in client.reply_frames_at if t > began]
    if infer is None or delta is None or not frames:
        return {}
    speech_end = frames[0] - total
    return {
        "end of speech -> transcript": infer - speech_end,
        "transcript -> first reply words": delta - infer,
        "first reply words -> first audio": frames[0] - delta,
    }


def ratio(a: float, b: float) -> float:
    return a / b if b and b == b and a == a else float("nan")


def verdict(value: float, target: float) -> str:
    return "-" if value != value else ("met" if value <= target else "not met")


def both(values: dict[str, float], target: float, fmt: str = "{:.2f}") -> tuple[str, str]:
    """The ratio cell ("today x / new y") and the verdict cell (new's, today's beside it)."""
    cell = " / ".join(fmt.format(values[n]) if values[n] == values[n] else "-" for n in NAMES)
    judged = f"{verdict(values['new'], target)} (today: {verdict(values['today'], target)})"
    return cell, judged


def table(
    bench: Bench, rows: Sequence[str], windows: dict[str, dict[tuple[str, str], float]]
) -> str:
    r = bench.results
    lines = [
        "## Decode window: the speed table",
        "",
        f"Machine: {machine()}. Date: {datetime.date.today().isoformat()}. Two `hearth serve` "
        "daemons at once on loopback, the embedded models on the CPU: today with "
        "`asr.models.tiny.en.window: 30` (Whisper's 30 s window), new with `window: auto` "
        "(the window cut to the utterance). The configurations (and the peer) take turns "
        f"run by run. {bench.runs} runs, {bench.rounds} rounds for the concurrent rows. "
        "Two ratios in a cell read today / new, each against its own peer; the verdict judges "
        "new (today's in brackets). "
        "Run with `.venv/bin/python -m bench.window_speed`.",
        "",
        "| measure | today | new | peer/baseline | ratio | target | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    texts: list[str] = []
    if "wyoming" in rows:
        w = r["wyoming"]
        ref = w.median("reference")
        cell, judged = both({n: ratio(w.median(n), ref) for n in NAMES}, 0.35)
        lines.append(
            "| Wyoming, 4.0 s utterance + 0.7 s silence sent at once (10 ms chunks, no pacing): "
            f"audio-stop -> transcript, median; correct | {ms(w.median('today'))}; "
            f"{w.correct('today')} | {ms(w.median('new'))}; {w.correct('new')} "
            f"| wyoming-faster-whisper 3.8.1: {ms(ref)}; {w.correct('reference')} "
            f"| {cell} | <= 0.35 | {judged} |"
        )
        for name in (*NAMES, "reference"):
            seen = " | ".join(f'"{t}"' for t in sorted(w.texts.get(name, ())))
            texts.append(f"Wyoming at once, {name}: {seen}.")
    if "concurrent" in rows:
        c = r["concurrent"]
        ref95 = c.p("reference", 0.95)
        cell, judged = both({n: ratio(c.p(n, 0.95), ref95) for n in NAMES}, 0.40)
        lines.append(
            f"| {CLIENTS} Wyoming clients at once at real time: audio-stop -> transcript "
            f"p50 / p95; correct | {c.spread('today')} | {c.spread('new')} "
            f"| wyoming-faster-whisper: {c.spread('reference')} | {cell} (p95) | <= 0.40 "
            f"| {judged} |"
        )
    if "willow" in rows:
        wl = r["willow"]
        value = ratio(wl.p("new", 0.95), wl.p("today", 0.95))
        lines.append(
            f"| {DEVICES} Willow devices at once (`/api/willow`, real time): last byte -> "
            f"response p50 / p95; right text | {wl.spread('today')} | {wl.spread('new')} | today "
            f"| {value:.2f} (new p95 / today p95) | <= 0.50 | {verdict(value, 0.5)} |"
        )
        for name in NAMES:
            seen = " | ".join(f'"{t}"' for t in sorted(wl.texts.get(name, ())))
            texts.append(f"Willow, {name}: {seen}.")
    if "ptt" in rows:
        p, wis = r["ptt"], r["ptt-wis"]
        cell, judged = both({n: ratio(p.median(n), wis.median(n)) for n in NAMES}, 0.30)
        lines.append(
            f"| WebRTC push-to-talk let go {RELEASE_MS} ms after the last word: stop -> "
            f"`infer`, median; correct | {ms(p.median('today'))}; {p.correct('today')} "
            f"| {ms(p.median('new'))}; {p.correct('new')} | the WIS way on the same daemon: "
            f"today {ms(wis.median('today'))}, new {ms(wis.median('new'))} "
            f"| {cell} | <= 0.30 | {judged} |"
        )
        for name in NAMES:
            for bad in sorted(p.texts.get(name, set()) | wis.texts.get(name, set())):
                texts.append(f"Push-to-talk, {name}: {bad}.")
    if "speech" in rows:
        s = r["speech"]
        values = {n: s.median(n) for n in NAMES}

        def sc(name: str) -> str:
            return (
                f"{ms(s.median(name))} (p90 {ms(s.p(name, 0.9))}); "
                f"{len(s.times.get(name, []))}/{s.total.get(name, 0)} replies"
            )

        judged = f"{verdict(values['new'], 0.6)} (today: {verdict(values['today'], 0.6)})"
        lines.append(
            f"| Hands-free speech to speech over WebRTC ({len(bench.utterances)} household "
            "commands): end of speech -> first reply audio frame, median; replies "
            f"| {sc('today')} | {sc('new')} | today | {ratio(values['new'], values['today']):.2f} "
            f"(new / today) | <= 600 ms | {judged} |"
        )
        for name in NAMES:
            seen = " | ".join(f'"{t}"' for t in sorted(s.texts.get(name, ())))
            texts.append(f"Hands-free, {name}: {seen}.")
            shares = bench.parts.get(name, {})
            if shares:
                shown = "; ".join(
                    f"{part} {ms(statistics.median(v))}" for part, v in shares.items()
                )
                texts.append(f"Hands-free budget, {name} (medians): {shown}.")
    lines.append("")
    for name in NAMES:
        counts = windows.get(name, {})
        redone = {k: v for k, v in counts.items() if k[1] != "ok" and v}
        total = sum(counts.values())
        detail = ", ".join(f"{w} s {v} {int(n)}" for (w, v), n in sorted(redone.items()))
        lines.append(
            f"Windowed decodes since start (warm-ups included), {name}: {int(total)}, of which "
            f"{int(sum(redone.values()))} fell back to 30 s" + (f" ({detail})." if detail else ".")
        )
    if texts:
        lines += ["", "Transcripts seen:", "", *(f"- {t}" for t in texts)]
    return "\n".join(lines)


def extra_yaml(name: str, config: str) -> str:
    """The daemon's extra YAML: the harness's (:data:`SERVE_CONFIG`), and today's without
    the LLM's saved system prompt (``llm.prompt_cache``, new with the window)."""
    lo, hi = WEBRTC_PORTS[name]
    extra = SERVE_CONFIG.format(lo=lo, hi=hi)
    if name == "today":
        extra = extra.replace("llm:\n", "llm:\n  prompt_cache: false\n", 1)
    return extra + config


async def measure(bench: Bench, rows: Sequence[str]) -> None:
    waits = [asyncio.to_thread(d.wait_ready, 300) for d in bench.daemons.values()]
    if bench.reference is not None:
        waits.append(wyoming_bench.wait_ready(bench.reference, 300))
    await asyncio.gather(*waits)
    for row in ROWS:
        if row in rows:
            began = time.monotonic()
            await getattr(bench, row)()
            print(f"{row}: {time.monotonic() - began:.0f} s", flush=True)


def main() -> None:
    parser = arguments(__doc__, runs=5)
    parser.add_argument("--rounds", type=int, default=3, help="of the concurrent rows")
    parser.add_argument("--today-config", default=TODAY, help="extra YAML of today's daemon")
    parser.add_argument("--new-config", default=NEW, help="extra YAML of the new daemon")
    parser.add_argument("--only", default=",".join(ROWS), help=f"rows: {','.join(ROWS)}")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "RESULTS.md")
    args = parser.parse_args()
    rows = [r.strip() for r in args.only.split(",") if r.strip()]
    if unknown := set(rows) - set(ROWS):
        parser.error(f"unknown rows {', '.join(sorted(unknown))}; choose from {', '.join(ROWS)}")
    configs = {"today": args.today_config, "new": args.new_config}
    configs = {n: c.replace("\\n", "\n") for n, c in configs.items()}
    configs = {n: c if c.endswith("\n") else c + "\n" for n, c in configs.items()}

    began = time.monotonic()
    utterances = piper_speech(handsfree_webrtc.COMMANDS) if "speech" in rows else []
    with tempfile.TemporaryDirectory(prefix="hearth-window-") as tmp:
        work = Path(tmp)
        daemons: dict[str, Daemon] = {}
        for name in NAMES:
            (work / name).mkdir()
            daemons[name] = Daemon(work / name, extra_yaml(name, configs[name]))
        reference = None
        if {"wyoming", "concurrent"} & set(rows):
            reference = wyoming_bench.Server("wyoming-faster-whisper", free_port())
            bin_dir = wyoming_bench.reference_venv()
            reference.proc = wyoming_bench.reference_asr(bin_dir, reference.port, work)
        try:
            for daemon in daemons.values():
                daemon.start(wait=False)
            bench = Bench(daemons, reference, args.runs, args.rounds, utterances)
            asyncio.run(measure(bench, rows))
            windows = {name: window_decodes(d) for name, d in daemons.items()}
        finally:
            for daemon in daemons.values():
                daemon.stop()
            if reference is not None and reference.proc is not None:
                reference.proc.terminate()
                reference.proc.wait(10)
    text = table(bench, rows, windows)
    print(text)
    print(f"\nWall time: {time.monotonic() - began:.0f} s", flush=True)
    if not args.no_write:
        write_section("window-speed", text, args.output)


if __name__ == "__main__":
    main()
