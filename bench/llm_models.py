"""Which small GGUF model answers a home's questions best on this CPU.

Runs a fixed set of home-assistant questions and requests (facts, arithmetic, a
timer and a light request, a two-turn follow-up) through Hearth's own LLM path:
``LocalLlm`` (llama-cpp-python with the model's chat template), the chat service's
system prompt, history and repetition cut. Scores per model: answers with the
expected keywords, reply length in words, replies cut for repeating themselves,
replies that ran to ``max_tokens``, median time to the first piece and tokens/s.

Usage::

    python -m bench.llm_models                         # the embedded model
    python -m bench.llm_models --model qwen=/path/a.gguf --model smol=/path/b.gguf
    python -m bench.llm_models --model qwen=/path/a.gguf --sweep   # sampling grid

The machine's other load shifts the timings: compare models measured in one run
(the first ``--model`` is the baseline of the ratios).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from bench.harness import arguments
from daemon.config import LlmConfig
from daemon.engines.llm.base import LlmEngine, Sampling
from daemon.engines.llm.local import LocalLlm
from daemon.engines.llm.repetition import RepetitionGuard
from daemon.engines.models import EMBEDDED_LLM_NAME, resolve_gguf
from daemon.engines.workers import WorkerPool
from daemon.speech.chat import (
    ChatService,
    ChatSettings,
    ConversationStore,
    cut_repetition,
)


@dataclass(frozen=True)
class Item:
    """One scored exchange: earlier turns (not scored), then the scored question."""

    name: str
    turns: tuple[str, ...]
    expect: tuple[str, ...]
    """Any of these (lower case) in the last reply counts as correct."""


ITEMS = (
    Item("capital", ("What is the capital of France?",), ("paris",)),
    Item("multiply", ("What is 12 times 3?",), ("36", "thirty-six", "thirty six")),
    Item("add", ("What is 15 plus 27?",), ("42", "forty-two", "forty two")),
    Item("minutes", ("How many minutes are in two hours?",), ("120", "hundred and twenty")),
    Item(
        "abilities",
        ("What can you do?",),
        ("question", "timer", "light", "remind", "music", "weather", "answer", "home"),
    ),
    Item("timer", ("Set a timer for ten minutes.",), ("timer", "10 minute", "ten minute")),
    Item("light", ("Turn on the kitchen lights.",), ("light",)),
    Item("week", ("How many days are in a week?",), ("seven", "7")),
    Item("boiling", ("At what temperature does water boil in Celsius?",), ("100", "hundred")),
    Item("author", ("Who wrote Romeo and Juliet?",), ("shakespeare",)),
    Item("planet", ("What is the largest planet in our solar system?",), ("jupiter",)),
    Item("colors", ("What color do you get when you mix blue and yellow?",), ("green",)),
    Item(
        "dinner",
        ("Give me a quick idea for dinner tonight.",),
        tuple(
            "pasta chicken salad soup rice taco pizza stir fish curry sandwich vegetable egg "
            "bean burger noodle omelet salmon quesadilla wrap potato".split()
        ),
    ),
    Item("name", ("My name is Sam.", "What is my name?"), ("sam",)),
    Item("follow-up", ("What is the capital of Italy?", "And of Germany?"), ("berlin",)),
)


@dataclass
class Turn:
    """One measured reply."""

    item: str
    question: str
    reply: str
    words: int
    cut: bool
    tokens: int
    hit_max: bool
    first_s: float
    tokens_per_s: float
    correct: bool | None = None
    """None for a turn that is not scored (the first of a two-turn item)."""


@dataclass
class Result:
    """One model with one sampling setting over all items."""

    label: str
    sampling: dict[str, float]
    turns: list[Turn] = field(default_factory=list)

    timing: tuple[float, float] | None = None
    """Round-robin median first-piece ms and tokens/s (None: from the scored turns)."""

    def summary(self) -> dict[str, float]:
        scored = [t for t in self.turns if t.correct is not None]
        first_ms, tokens_per_s = self.timing or (
            1000 * statistics.median(t.first_s for t in self.turns),
            statistics.median(t.tokens_per_s for t in self.turns),
        )
        return {
            "correct": sum(bool(t.correct) for t in scored),
            "items": len(scored),
            "median_words": statistics.median(t.words for t in scored),
            "max_words": max(t.words for t in scored),
            "cut": sum(t.cut for t in self.turns),
            "hit_max": sum(t.hit_max for t in self.turns),
            "first_ms": first_ms,
            "tokens_per_s": tokens_per_s,
        }


async def timed(pieces: AsyncIterator[str], marks: list[float]) -> AsyncIterator[str]:
    """Record the arrival time of each raw piece from the model."""
    async for piece in pieces:
        marks.append(time.perf_counter())
        yield piece


async def ask(chat: ChatService, llm: LocalLlm, conversation: str, text: str) -> Turn:
    """One question through the chat service's messages and repetition cut."""
    messages = await chat.prepare_messages(conversation, text)
    sampling = chat.settings.sampling
    guard = RepetitionGuard(chat.settings.repeat_ngram)
    marks: list[float] = []
    began = time.perf_counter()
    first = 0.0
    parts: list[str] = []
    async for piece in cut_repetition(timed(llm.stream_chat(messages, sampling), marks), guard):
        if not first:
            first = time.perf_counter() - began
        parts.append(piece)
    reply = "".join(parts).strip()
    chat.remember(conversation, text, reply)
    tokens = len(llm._llama.tokenize(guard.text.encode(), add_bos=False))
    span = marks[-1] - marks[0] if len(marks) > 1 else 0.0
    return Turn(
        item="",
        question=text,
        reply=reply,
        words=len(reply.split()),
        cut=guard.stopped,
        tokens=tokens,
        hit_max=tokens >= sampling.max_tokens - 1,
        first_s=first or time.perf_counter() - began,
        tokens_per_s=(len(marks) - 1) / span if span else 0.0,
    )


async def run_items(label: str, llm: LocalLlm, settings: ChatSettings, seed: int) -> Result:
    """Every item, each in a fresh conversation."""
    chat = ChatService(llm, ConversationStore(8, 3600, 64), settings)
    result = Result(label, {k: float(v) for k, v in asdict(settings.sampling).items()})
    for n, item in enumerate(ITEMS):
        conversation = f"bench-{n}"
        for i, question in enumerate(item.turns):
            llm._llama.set_seed(seed)
            turn = await ask(chat, llm, conversation, question)
            turn.item = item.name
            if i == len(item.turns) - 1:
                turn.correct = any(k in turn.reply.lower() for k in item.expect)
            result.turns.append(turn)
    return result


TIMING = ("What is the capital of France?", "What is 12 times 3?", "Turn on the kitchen lights.")
"""Asked round-robin across the models: the machine's load then hits them alike."""


async def time_round_robin(
    models: list[tuple[str, LocalLlm]], settings: ChatSettings, rounds: int, seed: int
) -> dict[str, tuple[float, float]]:
    """Median first-piece ms and tokens/s per model, the models taking turns."""
    marks: dict[str, list[Turn]] = {label: [] for label, _ in models}
    for n in range(rounds):
        question = TIMING[n % len(TIMING)]
        for label, llm in models:
            chat = ChatService(llm, ConversationStore(1, 60, 1), settings)
            llm._llama.set_seed(seed)
            marks[label].append(await ask(chat, llm, "", question))
    return {
        label: (
            1000 * statistics.median(t.first_s for t in turns),
            statistics.median(t.tokens_per_s for t in turns),
        )
        for label, turns in marks.items()
    }


def load(path: Path, label: str, threads: int, chat_format: str) -> LocalLlm:
    """Hearth's local engine on ``path`` (a chat format only for a GGUF without one)."""
    llm = LocalLlm(path, WorkerPool("llm", 1, 4), context_tokens=2048, threads=threads)
    llm.name = label
    if chat_format:
        llm._llama.chat_format = chat_format
        llm._llama._chat_handlers.clear()
    return llm


async def warm(llm: LlmEngine, settings: ChatSettings) -> None:
    chat = ChatService(llm, ConversationStore(1, 60, 1), settings)
    await chat.warm_up()


def sweep_grid(base: Sampling) -> list[Sampling]:
    """Sampling settings tried by ``--sweep``."""
    grid = [base]
    for temperature in (0.0, 0.3, 0.7):
        for penalty in (1.0, 1.1, 1.2):
            candidate = replace(base, temperature=temperature, repeat_penalty=penalty)
            if candidate not in grid:
                grid.append(candidate)
    return grid


def table(results: list[Result]) -> str:
    """A markdown table, ratios against the first result."""
    head = (
        "| model | sampling (T / top_p / rep. pen. / max) | correct | median words (max) "
        "| cut for repeating | ran to max_tokens | first piece ms (ratio) | tokens/s (ratio) |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- |\n"
    )
    base = results[0].summary()
    rows = []
    for r in results:
        s = r.summary()
        sp = r.sampling
        rows.append(
            f"| {r.label} | {sp['temperature']:g} / {sp['top_p']:g} / "
            f"{sp['repeat_penalty']:g} / {sp['max_tokens']:g} "
            f"| {s['correct']:g}/{s['items']:g} | {s['median_words']:g} ({s['max_words']:g}) "
            f"| {s['cut']:g} | {s['hit_max']:g} "
            f"| {s['first_ms']:.0f} ({s['first_ms'] / base['first_ms']:.2f}) "
            f"| {s['tokens_per_s']:.1f} ({s['tokens_per_s'] / base['tokens_per_s']:.2f}) |"
        )
    return head + "\n".join(rows) + "\n"


async def main() -> None:
    parser = arguments(__doc__, write=False)
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="LABEL=PATH[:CHAT_FORMAT]",
        help="a GGUF to score (default: the embedded model); the first is the baseline",
    )
    defaults = LlmConfig()
    parser.add_argument("--system-prompt", default=defaults.system_prompt)
    parser.add_argument("--temperature", type=float, default=defaults.temperature)
    parser.add_argument("--top-p", type=float, default=defaults.top_p)
    parser.add_argument("--repeat-penalty", type=float, default=defaults.repeat_penalty)
    parser.add_argument("--max-tokens", type=int, default=defaults.max_tokens)
    parser.add_argument("--threads", type=int, default=defaults.threads)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--sweep", action="store_true", help="a sampling grid per model")
    parser.add_argument(
        "--rounds", type=int, default=9, help="round-robin timing requests per model (0: none)"
    )
    parser.add_argument("--json", type=Path, help="write every reply here")
    parser.add_argument("--quiet", action="store_true", help="no replies on stdout")
    args = parser.parse_args()

    specs = args.model or [f"{EMBEDDED_LLM_NAME}={resolve_gguf('', Path('.'), False)}"]
    base = Sampling(args.temperature, args.top_p, args.max_tokens, args.repeat_penalty)
    models: list[tuple[str, LocalLlm]] = []
    for spec in specs:
        label, _, where = spec.partition("=")
        path, _, chat_format = where.partition(":")
        models.append((label, load(Path(path), label, args.threads, chat_format)))
    results: list[Result] = []
    for label, llm in models:
        for sampling in sweep_grid(base) if args.sweep else [base]:
            settings = ChatSettings(system_prompt=args.system_prompt, sampling=sampling)
            await warm(llm, settings)
            result = await run_items(label, llm, settings, args.seed)
            results.append(result)
            print(table([results[0], result]).splitlines()[-1], flush=True)
            if not args.quiet:
                for t in result.turns:
                    mark = {True: "ok ", False: "BAD", None: "   "}[t.correct]
                    cut = " [cut]" if t.cut else ""
                    print(f"  {mark} {t.question!r} -> {t.reply!r}{cut}", flush=True)
    if args.rounds and not args.sweep:
        settings = ChatSettings(system_prompt=args.system_prompt, sampling=base)
        timings = await time_round_robin(models, settings, args.rounds, args.seed)
        for result in results:
            result.timing = timings[result.label]
    for _, llm in models:
        await llm.close()
        llm.pool.close()
    print()
    print(table(results))
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "label": r.label,
                        "sampling": r.sampling,
                        "summary": r.summary(),
                        "turns": [asdict(t) for t in r.turns],
                    }
                    for r in results
                ],
                indent=1,
            )
        )


if __name__ == "__main__":
    asyncio.run(main())
