"""Commands understood: Home Assistant's own sentences through speech-to-text, with and
without the command-aware reading, on voices split into a choice half and a report half.

The set: command sentences sampled from Home Assistant's sentence templates
(``home-assistant-intents``, with the household's invented names in their slots: not
the intents repository's test sentences), every intent family, spoken by Piper and
eSpeak NG voices (US, GB, a female voice, a Scottish voice, at different rates), half
of them with noise; and ordinary held-out questions and chatter, which must come out
as said. Each clip is decoded in process with the embedded Whisper (tiny.en): the
plain reading (what a general speech server writes), and the reading against the
household's commands (the same model, the same audio, the candidates scored on it).

Success: Home Assistant's matcher (hassil) finds the sentence's own intent and slots in
the transcript. The margin is chosen on the choice half's voices (the most successes
with no command invented on ordinary speech) and reported on the report half's.

    .venv/bin/python -m bench.commands [--sentences 320] [--no-write]
"""

from __future__ import annotations

import asyncio
import datetime
import tempfile
import time
from dataclasses import dataclass

import numpy as np

from bench.harness import arguments, machine, median, percentile, write_section
from daemon.audio.pcm import RATE
from daemon.config import parse_config
from daemon.engines.asr.base import TranscribeOptions
from daemon.engines.asr.commands import (
    MARGIN,
    Scored,
    choose,
    near_enough,
    spoken,
    written,
)
from daemon.engines.hardware import probe
from daemon.engines.tts.base import SynthesisOptions
from daemon.house.commands import CANDIDATES, HouseCommands
from daemon.house.grammar import HouseGrammar, load_intents
from daemon.house.names import Household, HouseName, NameKind, Tier
from daemon.runtime.loading import load_engines
from tests.helpers import espeak_pcm

ENTITIES = [
    ("Reading Lamp", "light"), ("Ceiling Fan", "fan"), ("Porch Light", "light"),
    ("Garage Door", "cover"), ("Front Door Lock", "lock"), ("Bedroom Curtain", "cover"),
    ("Kitchen Window", "cover"), ("Coffee Maker", "switch"), ("Hallway Light", "light"),
    ("Desk Lamp", "light"), ("Patio Heater", "climate"), ("Living Room Blinds", "cover"),
    ("Nightstand Lamp", "light"), ("Attic Fan", "fan"), ("Back Door", "lock"),
]  # fmt: skip
AREAS = ["Kitchen", "Bedroom", "Living Room", "Office", "Garage", "Hallway", "Bathroom"]
FLOORS = ["Upstairs", "Downstairs", "Basement"]
ORDINARY = [
    "What is the meaning of life?",
    "Tell me a joke about cats.",
    "How far away is the moon?",
    "Who wrote the book Pride and Prejudice?",
    "I had a really long day at work today.",
    "Can you explain how a rainbow forms?",
    "My sister is coming to visit next week.",
    "What should I cook for dinner tonight?",
    "How many legs does a spider have?",
    "I think it might rain later this afternoon.",
    "Why is the sky blue?",
    "What is the capital of Australia?",
    "I love the smell of fresh bread in the morning.",
    "Do you know any good songs for a road trip?",
    "How do you say thank you in French?",
    "The children are playing in the garden.",
]


SCORED = 8
"""Candidates the bench scores (the daemon's CANDIDATES or more, to compare)."""


@dataclass(frozen=True)
class Voice:
    name: str
    half: str
    espeak: tuple[str, int] | None = None


VOICES = [
    Voice("piper", "choice"),
    Voice("espeak en-us 165", "choice", ("en-us", 165)),
    Voice("espeak en-gb 150", "report", ("en-gb", 150)),
    Voice("espeak en-us+f3 175", "report", ("en-us+f3", 175)),
    Voice("espeak en-gb-scotland 140", "report", ("en-gb-scotland", 140)),
]


@dataclass(frozen=True)
class Setup:
    """One language's household, ordinary sentences, voices and model."""

    language: str
    model: str
    entities: list[tuple[str, str]]
    areas: list[str]
    floors: list[str]
    ordinary: list[str]
    voices: list[Voice]


def _espeak_voices(lang: str) -> list[Voice]:
    return [
        Voice(f"espeak {lang} 160", "choice", (lang, 160)),
        Voice(f"espeak {lang}+f3 150", "report", (f"{lang}+f3", 150)),
        Voice(f"espeak {lang}+m3 175", "report", (f"{lang}+m3", 175)),
    ]


SETUPS = {
    "en": Setup("en", "tiny.en", ENTITIES, AREAS, FLOORS, ORDINARY, VOICES),
    "de": Setup(
        "de",
        "base",
        [("Leselampe", "light"), ("Deckenventilator", "fan"), ("Garagentor", "cover"),
         ("Rollladen", "cover"), ("Kaffeemaschine", "switch"), ("Haustür", "lock")],
        ["Küche", "Schlafzimmer", "Wohnzimmer", "Büro", "Flur"],
        ["Erdgeschoss", "Obergeschoss"],
        ["Wie weit ist der Mond entfernt?", "Erzähl mir einen Witz über Katzen.",
         "Meine Schwester kommt nächste Woche zu Besuch.", "Warum ist der Himmel blau?"],
        _espeak_voices("de"),
    ),
    "fr": Setup(
        "fr",
        "base",
        [("Lampe de lecture", "light"), ("Ventilateur", "fan"), ("Porte du garage", "cover"),
         ("Volet", "cover"), ("Cafetière", "switch"), ("Porte d'entrée", "lock")],
        ["Cuisine", "Chambre", "Salon", "Bureau", "Couloir"],
        ["Rez-de-chaussée", "Étage"],
        ["À quelle distance est la lune ?", "Raconte-moi une blague sur les chats.",
         "Ma sœur vient nous voir la semaine prochaine.", "Pourquoi le ciel est-il bleu ?"],
        _espeak_voices("fr"),
    ),
    "es": Setup(
        "es",
        "base",
        [("Lámpara de lectura", "light"), ("Ventilador", "fan"), ("Puerta del garaje", "cover"),
         ("Persiana", "cover"), ("Cafetera", "switch"), ("Puerta principal", "lock")],
        ["Cocina", "Dormitorio", "Salón", "Oficina", "Pasillo"],
        ["Planta baja", "Primer piso"],
        ["¿A qué distancia está la luna?", "Cuéntame un chiste sobre gatos.",
         "Mi hermana viene de visita la semana que viene.", "¿Por qué el cielo es azul?"],
        _espeak_voices("es"),
    ),
}  # fmt: skip


def household(setup: Setup) -> Household:
    names = [HouseName(n, NameKind.ENTITY, Tier.COMMON_DEVICE, d) for n, d in setup.entities]
    names += [HouseName(n, NameKind.AREA, Tier.COMMON_DEVICE) for n in setup.areas]
    names += [HouseName(n, NameKind.FLOOR, Tier.COMMON_DEVICE) for n in setup.floors]
    return Household(tuple(names), time.time(), 1)


def sample(grammar: HouseGrammar, count: int) -> list[str]:
    """``count`` sentences spread over the expansions (every intent family in turn)."""
    pool = grammar.expansions(50_000)
    step = max(1, len(pool) // (count * 3))
    chosen: list[str] = []
    seen: set[str] = set()
    for sentence in pool[::step]:
        key = sentence.lower()
        if key in seen or grammar.match(sentence) is None:
            continue
        seen.add(key)
        chosen.append(sentence)
        if len(chosen) == count:
            break
    return chosen


def wer(ref: str, hyp: str) -> tuple[int, int]:
    r = [w.strip(".,?!%").lower() for w in ref.split()]
    h = [w.strip(".,?!%").lower() for w in hyp.split()]
    d = list(range(len(h) + 1))
    for i in range(1, len(r) + 1):
        prev, d[0] = d[0], i
        for j in range(1, len(h) + 1):
            cur = min(d[j] + 1, d[j - 1] + 1, prev + (r[i - 1] != h[j - 1]))
            prev, d[j] = d[j], cur
    return d[len(h)], len(r)


class _Built:
    """One grammar built here, for the daemon's reader."""

    def __init__(self, built: HouseGrammar) -> None:
        self.built = built

    def grammar(self, language: str) -> HouseGrammar | None:
        return self.built


@dataclass
class Clip:
    text: str
    voice: Voice
    noisy: bool
    command: bool
    audio: np.ndarray


@dataclass
class Reading:
    first: str
    scored: list[Scored]
    """The first reading's score first, then each candidate's."""
    plain_s: float
    extra_s: float

    def chosen(self, margin: float, k: int | None = None) -> str:
        """The reading with ``margin``, scoring the ``k`` nearest candidates (None: all)."""
        rest = self.scored[1:] if k is None else self.scored[1 : 1 + k]
        if not rest:
            return self.first
        pick = choose(self.scored[0], rest, margin)
        return self.first if pick is None else pick.text


async def main(count: int, write: bool, language: str = "en") -> None:
    rng = np.random.default_rng(7)
    setup = SETUPS[language]
    voices = setup.voices
    with tempfile.TemporaryDirectory() as state:
        models = (
            ""
            if setup.model == "tiny.en"
            else (
                f"asr:\n  default_model: base\n  models:\n    base:\n      path: base\n"
                f"      language: {language}\n"
            )
        )
        config = parse_config(f"state_dir: {state}\n{models}", "bench")
        engines = await asyncio.to_thread(load_engines, config, probe())
        asr = engines.asr[engines.config.asr.default_model]
        intents = load_intents(language)
        assert intents is not None
        grammar = HouseGrammar(intents, household(setup))
        reader = HouseCommands(_Built(grammar), language, SCORED)
        daemon = HouseCommands(_Built(grammar), language)
        sentences = sample(grammar, count)
        clips: list[Clip] = []
        items = [(s, True) for s in sentences]
        items += [(s, False) for s in setup.ordinary * len(voices)]
        for i, (text, command) in enumerate(items):
            voice = voices[i % len(voices)]
            if voice.espeak is None:
                opts = SynthesisOptions(sample_rate=RATE)
                assert engines.tts is not None
                pcm = b"".join([b.pcm async for b in engines.tts.stream(text, opts)])
                speech = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768
            else:
                speech = espeak_pcm(*voice.espeak, text).astype(np.float32) / 32768
            noisy = i % 2 == 1
            audio = np.concatenate([np.zeros(4000, np.float32), speech, np.zeros(4000)])
            if noisy:
                level = 10 ** (-35 / 20)
                audio = audio + rng.normal(0, level, audio.size).astype(np.float32)
            clips.append(Clip(text, voice, noisy, command, audio.astype(np.float32)))
        opts = TranscribeOptions()
        readings: list[Reading] = []
        for clip in clips:
            began = time.perf_counter()
            first = await asyncio.to_thread(asr.transcribe, clip.audio, opts)
            plain_s = time.perf_counter() - began
            began = time.perf_counter()
            found = []
            found = [c for c in reader.candidates(first.text) if near_enough(first.text, c)]
            found = found[:SCORED]
            scored = [Scored(first.text, 0.0)]
            if found:
                texts = [first.text, *(spoken(c) for c in found)]
                scores = await asyncio.to_thread(asr.score_texts, clip.audio, opts, texts)
                assert scores is not None
                scored = [Scored(first.text, scores[0])]
                scored += [Scored(written(c), s) for c, s in zip(found, scores[1:], strict=True)]
            # The daemon's own path: one call, the cut window's encoder output reused.
            began = time.perf_counter()
            await asyncio.to_thread(asr.transcribe_hinted, clip.audio, opts, None, daemon)
            session_s = time.perf_counter() - began
            readings.append(Reading(first.text, scored, plain_s, session_s - plain_s))
        engines.close()

    def outcome(half: str, margin: float | None, k: int | None = None) -> dict[str, float]:
        ok = n = invented = words = errors = ord_words = ord_errors = 0
        for clip, reading in zip(clips, readings, strict=True):
            if clip.voice.half != half:
                continue
            text = reading.first if margin is None else reading.chosen(margin, k)
            if clip.command:
                n += 1
                want = grammar.match(clip.text)
                got = grammar.match(text)
                ok += got is not None and want is not None and got == want
                e, w = wer(clip.text, text)
                errors, words = errors + e, words + w
            else:
                invented += text != reading.first
                e, w = wer(clip.text, text)
                ord_errors, ord_words = ord_errors + e, ord_words + w
        return {
            "success": ok / max(1, n),
            "n": n,
            "wer": errors / max(1, words),
            "ordinary_wer": ord_errors / max(1, ord_words),
            "invented": invented,
        }

    margins = [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0]
    sweep = {m: outcome("choice", m) for m in margins}
    best = max(margins, key=lambda m: (sweep[m]["invented"] == 0, sweep[m]["success"]))
    if language != "en":
        best = MARGIN  # chosen on English; no setting is chosen on these voices
    extra = [r.extra_s for r in readings]
    plain = [r.plain_s for r in readings]
    lines = [
        "## Commands understood: Home Assistant's sentences through speech-to-text"
        f" (`bench/commands.py`{'' if language == 'en' else ', ' + language})",
        "",
        f"{datetime.date.today()}, {machine()}. `.venv/bin/python -m bench.commands"
        f" --sentences {count} --language {language}`: {len(sentences)} command sentences"
        " sampled from `home-assistant-intents`' templates with an invented household"
        f" ({len(setup.entities)} entities, {len(setup.areas)} areas, {len(setup.floors)}"
        f" floors), each said by one of {len(voices)} voices in turn, every second clip with"
        f" white noise at -35 dBFS; {len(setup.ordinary)} ordinary questions and sentences in"
        f" every voice. Whisper {setup.model} (int8) in process. Plain: the model's own"
        " reading (what a general speech server writes). Commands: the same, read against"
        f" the household's commands ({CANDIDATES} nearest sentences scored on the audio)."
        " Choice half: "
        + ", ".join(v.name for v in voices if v.half == "choice")
        + "; report half: "
        + ", ".join(v.name for v in voices if v.half == "report")
        + ".",
        "",
        "| half | reading | command success | command WER | ordinary WER |"
        " ordinary sentences turned into commands |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for half in ("report", "choice"):
        for label, margin in (("plain", None), (f"commands (margin {best})", best)):
            r = outcome(half, margin)
            lines.append(
                f"| {half} | {label} | {r['success']:.1%} of {r['n']} | {r['wer']:.1%} |"
                f" {r['ordinary_wer']:.1%} | {r['invented']} |"
            )
    lines += [
        "",
        "The margin on the choice half (the chosen one: the most successes with no"
        f" ordinary sentence turned into a command; the default in code is {MARGIN}):",
        "",
        "| margin | command success | ordinary turned into commands |",
        "| --- | --- | --- |",
    ]
    for m in margins:
        lines.append(f"| {m} | {sweep[m]['success']:.1%} | {sweep[m]['invented']} |")
    lines += [
        "",
        f"Candidates scored per utterance, on the choice half at margin {best} (each costs a"
        " forced decode of its tokens; the daemon scores"
        f" {CANDIDATES}, the bench scored up to {SCORED} to compare):",
        "",
        "| candidates scored | command success | ordinary turned into commands |",
        "| --- | --- | --- |",
    ]
    for k in (1, 2, 3, 4, 6, SCORED):
        r = outcome("choice", best, k)
        lines.append(f"| {k} | {r['success']:.1%} | {r['invented']} |")
    lines += [
        "",
        f"Time: the plain reading median {median(plain) * 1000:.0f} ms; the daemon's reading"
        f" with the commands (one call, {CANDIDATES} candidates, the cut window's encoder"
        f" output reused) adds median {median(extra) * 1000:.0f} ms (p90"
        f" {percentile(extra, 0.9) * 1000:.0f} ms) per utterance, every clip of this set"
        " (commands and ordinary sentences), the plain reading's own run-to-run variation"
        " included.",
        "",
        "Still wrong on the report half (said -> written):",
        "",
    ]
    wrong = 0
    for clip, reading in zip(clips, readings, strict=True):
        if clip.voice.half == "report" and clip.command and wrong < 12:
            text = reading.chosen(best)
            if grammar.match(text) != grammar.match(clip.text):
                wrong += 1
                lines.append(f"- {clip.voice.name}: {clip.text!r} -> {text!r}")
    text = "\n".join(lines) + "\n"
    print(text)
    if write:
        write_section("commands" if language == "en" else f"commands-{language}", text)


if __name__ == "__main__":
    parser = arguments(__doc__)
    parser.add_argument("--sentences", type=int, default=320)
    parser.add_argument("--language", default="en", choices=sorted(SETUPS))
    args = parser.parse_args()
    asyncio.run(main(args.sentences, not args.no_write, args.language))
