"""A second reading's prompt: the client's own words first, then the household's names
that resemble what the first reading heard, within the model's budget.

Whisper reads its prompt as the text said just before the audio, so a name there is
written as the house spells it ("Niamh's Lamp", not "Neve's lamp"). The rules:

- The client's prompt (Wyoming's ``transcript_names`` and ``transcript_terms``, an
  OpenAI ``prompt``) comes first, as it is; a household name it already holds is not
  repeated.
- Then the household's names, in the order given (the most alike first). :func:`rank`
  marks the names Whisper already writes right by itself: a name whose every word is a
  single token of the model's vocabulary ("Kitchen", "Ceiling Light") gains nothing
  from a prompt, while "Glimmerbox" (four tokens) or "Przedpokój" (six) do; only those
  are looked for (:mod:`daemon.house.match`).
- The whole prompt stays within the model's budget: at most ``max_chars`` characters
  (the client prompt's own cap) and, for a model that long prompts harm
  (Distil-Whisper is damaged by 52 tokens or more), at most ``max_tokens`` tokens,
  counted with the model's tokenizer.

Pure functions; the store (:mod:`daemon.house.store`) keeps each model's matcher.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from daemon.house.names import HouseName

TokenCounter = Callable[[str], int]
"""How many tokens a text takes in a model's prompt (its tokenizer, no special tokens)."""


@dataclass(frozen=True)
class PromptBudget:
    """What one model's prompt may hold."""

    key: str
    """The model's name: the household's ranking is kept per model."""
    max_chars: int
    max_tokens: int | None = None
    """None: the characters alone bound it."""
    count_tokens: TokenCounter | None = None
    """The model's tokenizer (None: unknown, a remote model; tokens are then estimated)."""


@dataclass(frozen=True)
class Ranked:
    """A household name as one model's prompt sees it."""

    text: str
    tokens: int
    """Tokens it takes in the prompt, its leading space included."""
    plain: bool
    """Every word is a single token of the model's vocabulary: Whisper writes it right
    without being told."""


def estimate_tokens(text: str) -> int:
    """A generous guess of a text's tokens when no tokenizer is at hand (wyoming-faster-
    whisper's: two characters a token)."""
    return len(text) // 2 + 1


_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


def rank(names: Sequence[HouseName], count: TokenCounter | None) -> tuple[Ranked, ...]:
    """``names`` (ranked most likely first) in the order a prompt takes them: those the
    model would not write right by itself first, then the plain ones, each group in
    the order given. Without a tokenizer the order is kept and tokens are estimated."""
    if count is None:
        return tuple(Ranked(n.text, estimate_tokens(n.text), False) for n in names)
    words: dict[str, bool] = {}

    def single(word: str) -> bool:
        if word not in words:
            variants = {word, word.lower(), word.capitalize()}
            words[word] = min(count(" " + v) for v in variants) == 1
        return words[word]

    ranked = [
        Ranked(n.text, count(" " + n.text), all(single(w) for w in _WORD.findall(n.text)))
        for n in names
    ]
    return tuple([r for r in ranked if not r.plain] + [r for r in ranked if r.plain])


def compose(client: str | None, ranked: Sequence[Ranked], budget: PromptBudget) -> str | None:
    """The prompt: ``client`` (None: none), then as many of ``ranked`` as fit ``budget``.

    A name that does not fit is passed over for a shorter one after it. Returns
    ``client`` itself when no name fits or there are none.
    """
    head = (client or "").strip()
    if head and head[-1] not in ".,:;!?":
        head += "."
    count = budget.count_tokens or estimate_tokens
    chars = len(head)
    tokens = count(" " + head) if head else 0
    present = {part.strip().casefold() for part in re.split(r"[,.;:!?]", head)}
    kept: list[str] = []
    for name in ranked:
        key = name.text.casefold()
        # ", " before it (or " " after the client's words), "." at the end.
        more_chars = len(name.text) + 2 + (0 if kept or head else -1)
        if key in present or chars + more_chars > budget.max_chars:
            continue
        if budget.max_tokens is not None and tokens + name.tokens + 1 > budget.max_tokens:
            continue
        present.add(key)
        kept.append(name.text)
        chars += more_chars
        tokens += name.tokens + 1
    while kept:
        prompt = f"{head} {', '.join(kept)}.".lstrip()
        if budget.max_tokens is None or budget.count_tokens is None:
            return prompt
        if budget.count_tokens(" " + prompt) <= budget.max_tokens:
            return prompt
        kept.pop()  # the sum of the parts was a token or two short: exact now
    return client
