"""Home Assistant's names in a second reading: do they help with unusual names, and hurt
nothing?

Set: 45 home commands that name devices, areas, floors and aliases as a household would
(Irish, German, Polish and invented names: "Niamh's Lamp", "Przedpokój", "Glimmerbox"),
each said by four of the held-out set's voices (Piper joe with its noise, and faster;
eSpeak NG en-us and en-gb+f3). A speaker says a name as it sounds ("Niav's lamp", "pshed-
pokooy"), not as English letters read it; the reference is the command as Home Assistant
spells it. 16 kHz s16 mono (what Home Assistant and Willow send), 0.4 s before the
speech, 0.3 s after.

A fake Home Assistant (``tests/fake_ha.py``) holds those names and 200 others the commands
never mention (people's lamps and fans, sensors, unexposed entities, empty rooms), as
a real house does. Two real ``hearth serve`` on loopback: one reading the fake (a
second reading with the names alike to what the first heard), one without Home
Assistant. Each clip goes to both over Wyoming (10 ms chunks, as Home Assistant) and
Willow (``/api/willow``, 20 ms pieces), sent as fast as the connection takes them (the
decode is the same; real-time pacing only moves where the turn ends, measured in other
sections).

Scored: WER (normalized as the held-out set does, accents folded) and the share of
commands whose every name is written exactly (same letters and accents, case and
punctuation aside). Ordinary commands: the held-out set's choice part (120 clips with
noise, babble and pauses) through the same two daemons, the one without names twice
(its temperature fallback samples at random: the second pass shows how far a run moves
by itself). Decode time: tiny.en in process on 45 name clips and 60 ordinary ones, one
reading against the daemon's reading with the names (a second where a name is alike),
the shortest of three each.

Run: ``.venv/bin/python -m bench.house_names`` (about 15 minutes on 2 cores);
``--quick``: 12 commands, 2 voices, 30 ordinary clips; ``--voices 2 --ordinary 60``: every
command, Piper and eSpeak NG en-us, half the ordinary clips (a busy machine).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import statistics
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench import house_set
from bench.harness import ROOT, arguments, machine, publish
from bench.heldout import (
    FORMATS,
    MIX_RATE,
    VOICES,
    Clip,
    Condition,
    Voice,
    _espeak,
    _Piper,
    _speech_power,
    _trim,
    build_set,
    samples,
    wer,
)
from daemon.engines.asr.hints import writes

FORMAT = FORMATS[0]
"""16 kHz s16 mono: what Home Assistant and a Willow device send."""
NAME_VOICES = [VOICES[6], VOICES[7], VOICES[0], VOICES[1]]
"""Piper joe (noise 0.667/0.8, and 1.0/1.0 fast), eSpeak NG en-us and en-gb+f3."""


Log = Callable[[str], None]


@dataclass
class NameClip:
    clip: Clip
    """``clip.text``: the command as Home Assistant spells it."""
    names: tuple[str, ...]


def name_clips(commands: list[house_set.Command], voices: list[Voice]) -> list[NameClip]:
    """Every command said by every voice, as it sounds."""
    piper = _Piper()
    rng = np.random.default_rng(20260301)
    out = []
    for i, command in enumerate(commands):
        for voice in voices:
            raw = _espeak(voice, command.said) if voice.engine == "espeak" else None
            speech = _trim(raw if raw is not None else piper.speak(voice, command.said))
            level = 10 ** (float(rng.uniform(-30.0, -20.0)) / 20)
            speech = speech * (level / np.sqrt(_speech_power(speech)))
            lead = np.zeros(int(0.4 * MIX_RATE), np.float32)
            tail = np.zeros(int(0.3 * MIX_RATE), np.float32)
            mix = np.clip(np.concatenate([lead, speech, tail]), -0.98, 0.98).astype(np.float32)
            clip = Clip(f"{i:02d}", command.text, voice, Condition("clean"), mix)
            out.append(NameClip(clip, command.names))
    return out


# --------------------------------------------------------------------------- paths


def wyoming(port: int, pcm: bytes) -> str:
    """transcribe, audio-start, 10 ms audio-chunks, audio-stop; the transcript."""
    from wyoming.asr import Transcribe
    from wyoming.audio import AudioChunk, AudioStart, AudioStop
    from wyoming.client import AsyncTcpClient

    async def run() -> str:
        async with asyncio.timeout(120), AsyncTcpClient("127.0.0.1", port) as client:
            spec = {"rate": 16000, "width": 2, "channels": 1}
            await client.write_event(Transcribe(language="en").event())
            await client.write_event(AudioStart(**spec).event())
            for i in range(0, len(pcm), 320):
                await client.write_event(AudioChunk(audio=pcm[i : i + 320], **spec).event())
            await client.write_event(AudioStop().event())
            while (event := await client.read_event()) is not None:
                if event.type == "transcript":
                    return str(event.data["text"])
                if event.type == "error":
                    raise RuntimeError(f"Wyoming error: {event.data}")
            raise ConnectionError("closed before the transcript")

    return asyncio.run(run())


def willow(url: str, pcm: bytes) -> str:
    """A Willow device's upload: a chunked body of 20 ms pieces, ``x-audio-*`` headers."""
    import httpx

    headers = {
        "user-agent": "Willow/bench",
        "x-audio-codec": "pcm",
        "x-audio-sample-rate": "16000",
        "x-audio-bits": "16",
        "x-audio-channel": "1",
    }
    pieces = (pcm[i : i + 640] for i in range(0, len(pcm), 640))
    resp = httpx.post(f"{url}/api/willow", content=pieces, headers=headers, timeout=120)
    resp.raise_for_status()
    return str(resp.json()["text"])


# --------------------------------------------------------------------------- scoring


def folded(text: str) -> str:
    """Accents folded, for WER ("Siobhán" and "Siobhan" are one word)."""
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def name_scores(clips: list[NameClip], texts: list[str]) -> tuple[float, float, float]:
    """WER (%), commands with every name written exactly (%), names written exactly (%)."""
    pairs = [(folded(c.clip.text), folded(t)) for c, t in zip(clips, texts, strict=True)]
    whole = [all(writes(n, t) for n in c.names) for c, t in zip(clips, texts, strict=True)]
    each = [writes(n, t) for c, t in zip(clips, texts, strict=True) for n in c.names]
    return wer(pairs), 100.0 * sum(whole) / len(whole), 100.0 * sum(each) / len(each)


def invented_names(clips: list[Clip], texts: list[str], names: list[str]) -> int:
    """Clips whose transcript writes one of ``names`` that the speaker did not say."""
    return sum(
        any(writes(n, t) and not writes(n, c.text) for n in names)
        for c, t in zip(clips, texts, strict=True)
    )


# --------------------------------------------------------------------------- decode time


def household(fake_url: str) -> tuple[Any, list[str]]:
    """tiny.en's :class:`HouseHints` over the names read from the fake (as the daemon
    reads them), and every name the fake holds."""
    from daemon.config import HomeAssistantConfig
    from daemon.engines.asr.prompt import MAX_PROMPT_CHARS
    from daemon.engines.asr.whisper import WhisperAsr
    from daemon.engines.models import resolve_whisper
    from daemon.house.endpoint import Endpoint, websocket_url
    from daemon.house.prompt import PromptBudget
    from daemon.house.source import HomeAssistantSource
    from daemon.house.store import NameStore
    from daemon.runtime.sessions import HouseHints
    from tests.fake_ha import TOKEN

    asr = WhisperAsr("tiny.en", resolve_whisper("tiny.en", Path(tempfile.gettempdir()), False))
    store = NameStore()
    config = HomeAssistantConfig(url=fake_url, token=TOKEN)
    source = HomeAssistantSource(Endpoint(websocket_url(fake_url), TOKEN), config, store)
    asyncio.run(source.read_once())
    budget = PromptBudget(asr.name, MAX_PROMPT_CHARS, None, asr.token_counter())
    return HouseHints(store, None, budget), [n.text for n in store.current.names]


@dataclass
class Speed:
    plain_ms: float
    """Median decode time without the names (one reading)."""
    hinted_ms: float
    """Median with them (a second reading where a name is alike)."""
    mean_plain_ms: float
    mean_hinted_ms: float
    read_twice: int
    """Clips read a second time."""
    kept: int
    """Second readings kept."""
    clips: int


def decode_times(clips: list[Clip], hints: Any) -> Speed:
    """Decode time (ms) without and with the household's second reading: tiny.en in
    process, the daemon's options (window auto, beam 1), the shortest of three each."""
    from daemon.audio.pcm import RATE
    from daemon.engines.asr.base import TranscribeOptions
    from daemon.engines.asr.whisper import WhisperAsr
    from daemon.engines.models import resolve_whisper

    path = resolve_whisper("tiny.en", Path(tempfile.gettempdir()), False)
    asr = WhisperAsr("tiny.en", path, window="auto")
    options = TranscribeOptions(language="en")
    times: dict[bool, list[float]] = {False: [], True: []}
    for clip in clips:
        pcm = np.frombuffer(samples(clip, FORMAT), "<i2").astype(np.float32) / 32768
        assert len(pcm) > RATE // 4
        for hinted in (False, True):
            best = float("inf")
            for _ in range(3):
                began = time.perf_counter()
                if hinted:
                    asr.transcribe_hinted(pcm, options, hints)
                else:
                    asr.transcribe(pcm, options)
                best = min(best, time.perf_counter() - began)
            times[hinted].append(best * 1000)
    counts = asr.window_counts()
    twice = sum(n for (_, verdict), n in counts.items() if verdict == "reread")
    kept = sum(n for (_, verdict), n in counts.items() if verdict == "reread-kept")
    return Speed(
        statistics.median(times[False]), statistics.median(times[True]),
        statistics.mean(times[False]), statistics.mean(times[True]),
        twice // 3, kept // 3, len(clips),
    )  # fmt: skip


# --------------------------------------------------------------------------- run


COLUMNS = (
    "path", "WER, no names", "WER, names", "commands with every name exact, no names",
    "with names", "names exact, no names", "with names", "ordinary WER, no names (twice)",
    "ordinary WER, names", "ordinary: a house name written, not said (no names / names)",
)  # fmt: skip
HEADER = f"| {' | '.join(COLUMNS)} |\n|{' --- |' * len(COLUMNS)}"
TIME_COLUMNS = (
    "clips", "median, no names", "median, with names", "mean, no names / names",
    "read twice", "second reading kept",
)  # fmt: skip
TIME_HEADER = f"| {' | '.join(TIME_COLUMNS)} |\n|{' --- |' * len(TIME_COLUMNS)}"
Texts = dict[tuple[str, str, str], list[str]]
"""(daemon, path, set) -> one transcript per clip."""
PHASES = (
    (("names", "wyoming"), ("none", "wyoming")),
    (("names", "willow"), ("none", "willow")),
    (("none again", "wyoming"), ("none again", "willow")),
)
"""Runs two at a time (one process each, or two clients of one): the two cores busy."""


def run_daemons(fake_url: str, clips: list[NameClip], ordinary: list[Clip], log: Log) -> Texts:
    """Every clip through both daemons and both paths (ordinary ones twice without names)."""
    from tests.daemon import Daemon
    from tests.fake_ha import TOKEN

    texts: Texts = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("names", "none"):
            (Path(tmp) / name).mkdir()
        ha = f"homeassistant:\n  url: {fake_url}\n  token: {TOKEN}\n"
        named = Daemon(Path(tmp) / "names", ha).start(timeout=300)
        plain = Daemon(Path(tmp) / "none", "").start(timeout=300)

        def run(label: str, path: str) -> None:
            daemon = named if label == "names" else plain
            sets = [("ordinary", ordinary)]
            if label != "none again":
                sets.insert(0, ("names", [c.clip for c in clips]))
            for kind, items in sets:
                pcms = [samples(c, FORMAT) for c in items]
                if path == "wyoming":
                    texts[(label, path, kind)] = [wyoming(daemon.wyoming_port, p) for p in pcms]
                else:
                    texts[(label, path, kind)] = [willow(daemon.url, p) for p in pcms]

        try:
            named.wait_for_log("Home Assistant: ", timeout=60)
            for phase in PHASES:
                began = time.perf_counter()
                with ThreadPoolExecutor(len(phase)) as pool:
                    for done in [pool.submit(run, label, path) for label, path in phase]:
                        done.result()
                log(f"{phase}: {time.perf_counter() - began:.0f} s")
        finally:
            for daemon in (named, plain):
                out = daemon.stop()
                if "Traceback" in out:
                    log(out[-3000:])
    return texts


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--quick", action="store_true", help="12 commands, 2 voices, 30 clips")
    parser.add_argument("--voices", type=int, default=len(NAME_VOICES), help="voices (1-4)")
    parser.add_argument("--ordinary", type=int, default=120, help="ordinary clips (up to 120)")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "RESULTS.md")
    parser.add_argument("--load", default="", help="a note on other load during the run")
    parser.add_argument("--save", type=Path, default=None, help="keep the transcripts here")
    parser.add_argument("--replot", type=Path, default=None, help="the table from a --save file")
    args = parser.parse_args()

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    commands = house_set.COMMANDS[:12] if args.quick else house_set.COMMANDS
    voices = NAME_VOICES[::2] if args.quick or args.voices == 2 else NAME_VOICES[: args.voices]
    began = time.perf_counter()
    clips = name_clips(commands, voices)
    ordinary = build_set(30 if args.quick else args.ordinary, part="choice")
    log(f"{len(clips)} name clips, {len(ordinary)} ordinary: {time.perf_counter() - began:.0f} s")
    timed = {
        "names": [c.clip for c in clips[:: max(1, len(clips) // 45)]],
        "ordinary": ordinary[:: max(1, len(ordinary) // 60)],
    }
    if args.replot is not None:
        saved = json.loads(args.replot.read_text())
        texts = {tuple(k.split("|")): v for k, v in saved["texts"].items()}
        house_names = saved["names"]
        speed = {k: Speed(**v) for k, v in saved["speed"].items()}
    else:
        fake = house_set.fake_house()
        with fake.in_thread():
            hints, house_names = household(fake.url)
            texts = run_daemons(fake.url, clips, ordinary, log)
            speed = {kind: decode_times(items, hints) for kind, items in timed.items()}
    if args.save is not None:
        keyed = {"|".join(k): v for k, v in texts.items()}
        spent = {k: asdict(v) for k, v in speed.items()}
        args.save.write_text(json.dumps({"texts": keyed, "names": house_names, "speed": spent}))
    body = report(clips, ordinary, texts, house_names, speed)
    note = " ".join(x for x in (args.load, "Quick run." if args.quick else "") if x)
    body = body.replace("{note}", f" {note}" if note else "")
    publish("house-names", body, not args.no_write, args.output)


def report(
    clips: list[NameClip],
    ordinary: list[Clip],
    texts: Texts,
    house_names: list[str],
    speed: dict[str, Speed],
) -> str:
    """The section of bench/RESULTS.md."""
    mentioned = sorted({n for c in clips for n in c.names})
    ref = [c.text for c in ordinary]
    rows = []
    for path in ("wyoming", "willow"):
        named = name_scores(clips, texts[("names", path, "names")])
        plain = name_scores(clips, texts[("none", path, "names")])
        heard = {
            label: wer(list(zip(ref, texts[(label, path, "ordinary")], strict=True)))
            for label in ("names", "none", "none again")
        }
        invented = {
            label: invented_names(ordinary, texts[(label, path, "ordinary")], house_names)
            for label in ("names", "none")
        }
        ratio = f"{named[1] / plain[1]:.1f}x" if plain[1] else "from 0"
        rows.append(
            f"| {path} | {plain[0]:.1f} % | {named[0]:.1f} % | {plain[1]:.0f} % | "
            f"{named[1]:.0f} % ({ratio}) | {plain[2]:.0f} % | {named[2]:.0f} % | "
            f"{heard['none']:.1f} % / {heard['none again']:.1f} % | "
            f"{heard['names']:.1f} % ({heard['names'] - heard['none']:+.1f}) | "
            f"{invented['none']} / {invented['names']} |"
        )
    times = "\n".join(
        f"| {kind} ({s.clips}) | {s.plain_ms:.0f} ms | {s.hinted_ms:.0f} ms "
        f"({s.hinted_ms - s.plain_ms:+.0f}) | {s.mean_plain_ms:.0f} / {s.mean_hinted_ms:.0f} ms "
        f"| {s.read_twice} ({100 * s.read_twice / s.clips:.0f} %) | {s.kept} |"
        for kind, s in speed.items()
    )
    voices = len({c.clip.voice.label for c in clips})
    return f"""## Home Assistant's names: a second reading (`bench/house_names.py`)

Machine: {machine()}. Date: {datetime.date.today().isoformat()}.{{note}}
{len(clips)} clips: {len({c.clip.key for c in clips})} home commands with unusual names \
(Irish, German, Polish, invented; devices, areas, floors, aliases) said as they sound by \
{voices} voices, and {len(ordinary)} ordinary commands of the held-out set (choice part: \
noise, babble, pauses); 16 kHz s16 mono. A fake Home Assistant holds the commands' \
{len(mentioned)} names and 200 others ({len(house_names) - len(mentioned)} of them exposed to \
Assist, so read); two real daemons \
(tiny.en int8, the defaults), one reading it. The daemon with names reads each utterance \
without them first; where some of the house's names resemble what it heard, it reads \
the same audio again with those names (at most 8) in the prompt, and keeps that reading \
only if it writes one of them (`daemon/engines/asr/hints.py`, `daemon/house/match.py`). \
Run: `.venv/bin/python -m bench.house_names`.

{HEADER}
{chr(10).join(rows)}

Decode time, tiny.en in process (window auto, beam 1), the shortest of 3 each:

{TIME_HEADER}
{times}

Targets: every name exact at least twice as often with the names; ordinary commands no \
worse than +0.5 points. The ordinary commands through the daemon without names, twice, \
show how far a run moves by itself (its temperature fallback samples at random). The \
last column counts ordinary commands whose transcript writes a name of the house that \
was not said: what a prompt invents.
"""


if __name__ == "__main__":
    main()
