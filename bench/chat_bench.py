"""Time to the first spoken clause of a chat reply, with and without the saved system prompt.

The embedded LLM (or ``--llm-model``), the configured system prompt and sampling
(``llm.*`` defaults), a handful of questions a household asks. The first clause is
the first piece the speech pipeline hands to TTS: the same
:class:`~daemon.engines.tts.text.SentenceSplitter` with the pipeline's first-clause
length (a sentence end, or a comma, colon, semicolon or dash once that long), else
the first six words, else the whole reply. Timed from the request to that piece.

In one process, alternating per question:

- uncached: ``llm.prompt_cache`` off and the context reset before each request, as
  a fresh ``hearth chat`` process has it: the whole prompt is evaluated;
- cached: the system prompt's saved state restored (the context reset first, so
  nothing else is reused): only the question's turn is evaluated.

Then whole ``hearth chat`` processes (fewer runs): cold (an empty cache folder) and
warm (the state saved by the run before, read from disk), wall time from the start
of the process to the first clause on its standard output (model loading included).

Target: cached / uncached <= 0.5 (medians).

Usage::

    .venv/bin/python -m bench.chat_bench [--runs 5] [--cli-runs 2] [--llm-model PATH]
        [--output bench/RESULTS.md] [--no-write]
"""

from __future__ import annotations

import asyncio
import datetime
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

from bench.harness import ROOT, arguments, machine, median, publish
from daemon.config import LlmConfig
from daemon.engines.llm.base import ChatMessage, Sampling
from daemon.engines.llm.local import LocalLlm
from daemon.engines.models import resolve_gguf
from daemon.engines.tts.text import FIRST_WORDS, SentenceSplitter
from daemon.engines.workers import WorkerPool

QUESTIONS = (
    "What time is it in Tokyo?",
    "Give me a tip for sleeping better.",
    "How long should I boil an egg?",
    "What can I cook with rice and spinach?",
    "Why is the sky blue?",
    "How do I get a red wine stain out of a carpet?",
)


class FirstClause:
    """Feed reply text; ``done`` once the first clause TTS would get is complete."""

    def __init__(self) -> None:
        self.splitter = SentenceSplitter(first_words=FIRST_WORDS)
        self.text = ""
        self.done = False

    def feed(self, piece: str) -> bool:
        self.text += piece
        if self.splitter.feed(piece) or len(self.text.split()) > FIRST_WORDS[1]:
            self.done = True
        return self.done


async def first_clause(pieces: AsyncIterator[str], began: float) -> float:
    """Seconds from ``began`` to the first clause (to the end when the reply is shorter)."""
    clause = FirstClause()
    async for piece in pieces:
        if clause.feed(piece):
            break
    return time.perf_counter() - began


async def settle(pool: WorkerPool) -> None:
    """Wait until the worker has stopped the reply that was left early."""
    while not pool.idle:
        await asyncio.sleep(0.01)


async def bench_in_process(path: Path, runs: int) -> dict[str, dict[str, list[float]]]:
    """Per question: uncached and cached seconds to the first clause."""
    config = LlmConfig()
    pool = WorkerPool("llm", 1, 4)
    llm = LocalLlm(path, pool, context_tokens=config.context_tokens, threads=config.threads)
    cache = llm.prompt_cache
    if cache is None:
        raise SystemExit("this model has no chat template: nothing to cache")
    sampling = Sampling(config.temperature, config.top_p, config.max_tokens, config.repeat_penalty)
    assert llm.prime(config.system_prompt)
    times: dict[str, dict[str, list[float]]] = {
        q: {"uncached": [], "cached": []} for q in QUESTIONS
    }
    warm = [ChatMessage("system", config.system_prompt), ChatMessage("user", "Hello.")]
    await first_clause(llm.stream_chat(warm, sampling), time.perf_counter())  # page weights in
    await settle(pool)
    for run in range(runs):
        for n, question in enumerate(QUESTIONS):
            messages = [ChatMessage("system", config.system_prompt), ChatMessage("user", question)]
            order = ("uncached", "cached") if (run + n) % 2 == 0 else ("cached", "uncached")
            for mode in order:
                llm.prompt_cache = cache if mode == "cached" else None
                llm._llama.reset()  # nothing of an earlier request is reused
                began = time.perf_counter()
                seconds = await first_clause(llm.stream_chat(messages, sampling), began)
                times[question][mode].append(seconds)
                await settle(pool)
            print(
                f"run {run + 1} {question!r}: uncached {times[question]['uncached'][-1]:.2f} s, "
                f"cached {times[question]['cached'][-1]:.2f} s",
                file=sys.stderr,
            )
    await llm.close()
    pool.close()
    return times


def cli_first_clause(question: str, config: Path, llm_model: str) -> float:
    """Wall seconds from starting ``hearth chat`` to the first clause on its output."""
    env = {k: v for k, v in os.environ.items() if k not in ("CACHE_DIRECTORY", "HEARTH_CONFIG")}
    began = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "daemon.cli", "--config", str(config), "chat", question],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    assert process.stdout is not None
    clause = FirstClause()
    try:
        while not clause.done:
            data = os.read(process.stdout.fileno(), 256)
            if not data:
                break
            clause.feed(data.decode("utf-8", "replace"))
        seconds = time.perf_counter() - began
    finally:
        process.kill()
        process.wait()
    return seconds


def bench_cli(runs: int, llm_model: str) -> dict[str, list[float]]:
    """``hearth chat`` cold (empty cache folder) and warm (the state on disk)."""
    times: dict[str, list[float]] = {"cold": [], "warm": []}
    with tempfile.TemporaryDirectory(prefix="hearth-chat-bench-") as tmp:
        state = Path(tmp) / "state"
        config = Path(tmp) / "config.yaml"
        config.write_text(f"state_dir: {state}\nllm:\n  model: {llm_model!r}\n")
        cache = state / "cache" / "llm"
        for run in range(runs):
            question = QUESTIONS[run % len(QUESTIONS)]
            for f in cache.glob("*") if cache.is_dir() else ():
                f.unlink()
            times["cold"].append(cli_first_clause(question, config, llm_model))
            saved = len(list(cache.glob("*.kv"))) if cache.is_dir() else 0
            if not saved:
                print("warning: the cold run saved no prompt state", file=sys.stderr)
            times["warm"].append(cli_first_clause(question, config, llm_model))
            print(
                f"cli run {run + 1}: cold {times['cold'][-1]:.2f} s, "
                f"warm {times['warm'][-1]:.2f} s",
                file=sys.stderr,
            )
    return times


def report(
    path: Path, times: dict[str, dict[str, list[float]]], cli: dict[str, list[float]], runs: int
) -> str:
    uncached = [t for q in times.values() for t in q["uncached"]]
    cached = [t for q in times.values() for t in q["cached"]]
    ratio = median(cached) / median(uncached)
    lines = [
        "## Chat: time to the first clause",
        "",
        f"{datetime.date.today().isoformat()}, {machine()}. Model: `{path.name}`, the default "
        f"`llm.system_prompt` and sampling; {len(QUESTIONS)} questions x {runs} runs, "
        "alternating. First clause: what the speech pipeline hands to TTS first (the "
        f"`SentenceSplitter` with `first_words={FIRST_WORDS}`, the pipeline's first "
        "phrase). Uncached: `llm.prompt_cache` off, the context reset before "
        "each request (a fresh `hearth chat`); cached: the system prompt's saved state "
        "restored. Produced by `bench/chat_bench.py`.",
        "",
        "| question | uncached median (s) | cached median (s) | cached / uncached |",
        "|---|---|---|---|",
    ]
    for question, t in times.items():
        u, c = median(t["uncached"]), median(t["cached"])
        lines.append(f"| {question} | {u:.2f} | {c:.2f} | {c / u:.2f} |")
    lines.append(
        f"| **all** | **{median(uncached):.2f}** | **{median(cached):.2f}** | **{ratio:.2f}** |"
    )
    verdict = "met" if ratio <= 0.5 else "not met"
    lines += ["", f"Target cached / uncached <= 0.5: {verdict} ({ratio:.2f})."]
    if cli["cold"]:
        cold, warm = median(cli["cold"]), median(cli["warm"])
        lines += [
            "",
            f"`hearth chat` as a whole process ({len(cli['cold'])} runs each, alternating; "
            "wall time from its start to the first clause on standard output, model "
            "loading included):",
            "",
            "| `hearth chat` | median (s) |",
            "|---|---|",
            f"| cold (empty cache folder) | {cold:.2f} |",
            f"| warm (system prompt read from disk) | {warm:.2f} |",
            f"| warm / cold | {warm / cold:.2f} |",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = arguments(__doc__, runs=5, runs_help="runs of every question")
    parser.add_argument("--cli-runs", type=int, default=2, help="hearth chat runs (0: none)")
    parser.add_argument("--llm-model", default="", help="a GGUF (default: the embedded model)")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "RESULTS.md")
    args = parser.parse_args()
    path = resolve_gguf(args.llm_model, Path(tempfile.gettempdir()) / "hearth-models")
    times = asyncio.run(bench_in_process(path, args.runs))
    cli = bench_cli(args.cli_runs, args.llm_model) if args.cli_runs else {"cold": [], "warm": []}
    text = report(path, times, cli, args.runs)
    publish("chat-first-clause", text, not args.no_write, args.output)


if __name__ == "__main__":
    main()
