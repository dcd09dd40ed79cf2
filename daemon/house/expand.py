"""Command sentences written out from Home Assistant's templates, a bounded number.

A template such as ``<close> [<the>] {area} {cover_classes:device_class}`` stands for
every sentence its choices make; with number ranges and a household's names, the
templates of one language stand for billions. :func:`expand` writes out at most
``limit`` of them, fairly: one sentence from each template in turn, round after
round, so a small template is written out whole and a large one gives up its share
of what is left. A template of a few sentences is enumerated by hassil's own
sampler; a larger one is drawn from at random, with a seed of its own text (the
same sentences on every run), the first of each set of choices (the canonical word,
"close" before "shut") more often than the others and every name and area equally.

Number ranges are cut to a few round values, written as digits (as Whisper writes
them); templates with a wildcard (a message, a list item) are left out, as hassil's
sampler leaves them. Pure: no I/O, no logging of names.
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Iterator, Mapping, Sequence

from hassil.errors import MissingListError, MissingRuleError
from hassil.expression import (
    Alternative,
    Expression,
    ListReference,
    Permutation,
    RuleReference,
    Sentence,
    TextChunk,
)
from hassil.expression import (
    Sequence as Seq,
)
from hassil.intents import (
    IntentData,
    Intents,
    RangeSlotList,
    SlotList,
    TextSlotList,
)
from hassil.sample import sample_expression

ENUMERATE_MAX = 32
"""A template of at most this many sentences is written out whole by hassil's sampler."""
MAX_REPEATS = 24
"""Draws in a row that only repeat what was drawn: the template is taken as spent."""
ROUND_NUMBERS = (1, 2, 3, 5, 10, 15, 20, 25, 30, 45, 50, 75, 100)
"""The values a number range is cut to (those in it), with its two ends."""

Rules = Mapping[str, Sentence]
"""Expansion rules by name."""


def expand(
    intents: Intents,
    lists: Mapping[str, SlotList],
    names: Sequence[tuple[str, str | None]],
    limit: int,
) -> list[str]:
    """At most ``limit`` distinct sentences of ``intents``' templates, in a fixed order.

    Args:
        intents: one language's intents.
        lists: slot lists added to (or replacing) the intents' own (``area``, ``floor``).
        names: the ``name`` list: each entity's name and domain (None: any domain);
            a block that requires a domain gets the names of that domain only.
        limit: the most sentences returned.

    Returns:
        Sentences, the first of each template first; each list a prefix of a longer one.
    """
    base = {name: _cut(slot_list) for name, slot_list in {**intents.slot_lists, **lists}.items()}
    streams: list[Iterator[str]] = []
    for intent in intents.intents.values():
        for block in intent.data:
            block_lists = {**base, **{k: _cut(v) for k, v in block.slot_lists.items()}}
            block_lists["name"] = TextSlotList.from_tuples(
                ((text, text) for text, domain in names if _allowed(block, domain)),
                allow_template=False,
            )
            rules = {**intents.expansion_rules, **block.expansion_rules}
            for sentence in block.sentences:
                streams.append(_stream(intent.name, sentence, block_lists, rules))
    found: dict[str, None] = {}
    while streams and len(found) < limit:
        alive = []
        for stream in streams:
            for text in stream:
                if text not in found:
                    found[text] = None
                    alive.append(stream)
                    break
            if len(found) >= limit:
                break
        streams = alive
    return list(found)


def _allowed(block: IntentData, domain: str | None) -> bool:
    """Whether a name of ``domain`` may fill ``{name}`` in this block's templates."""
    if domain is None:
        return True
    required = context_domains(block.requires_context.get("domain"))
    excluded = context_domains(block.excludes_context.get("domain"))
    return (not required or domain in required) and domain not in excluded


def context_domains(value: object) -> frozenset[str]:
    """The domains a block's ``requires_context``/``excludes_context`` value names."""
    if isinstance(value, Mapping):
        value = value.get("value")
    if isinstance(value, str):
        return frozenset((value,))
    if isinstance(value, list | tuple | set | frozenset):
        return frozenset(str(item) for item in value)
    return frozenset()


def _cut(slot_list: SlotList) -> SlotList:
    """A number range as a few of its round values (digits); other lists as they are."""
    if not isinstance(slot_list, RangeSlotList):
        return slot_list
    step = slot_list.step
    values = {slot_list.start, slot_list.stop} | {
        n
        for n in ROUND_NUMBERS
        if slot_list.start <= n <= slot_list.stop and (n - slot_list.start) % step == 0
    }
    return TextSlotList.from_strings([str(n) for n in sorted(values)], name=slot_list.name)


def _stream(
    intent: str, sentence: Sentence, lists: Mapping[str, SlotList], rules: Rules
) -> Iterator[str]:
    """One template's sentences: all of them when few, else seeded draws until spent."""
    expression = sentence.expression
    total = _count(expression, lists, rules)
    if total == 0:
        return
    if total <= ENUMERATE_MAX:
        try:
            texts = list(sample_expression(expression, dict(lists), dict(rules)))
        except (MissingListError, MissingRuleError):
            texts = []  # a choice names a list nobody gave: drawn from below instead
        # hassil writes a wildcard as its "{name}": no sentence anyone says.
        yield from (" ".join(text.split()) for text in texts if "{" not in text)
        if texts:
            return
    rng = random.Random(zlib.crc32(f"{intent}\n{sentence.text}".encode()))
    seen: set[str] = set()
    repeats = 0
    while len(seen) < total and repeats < MAX_REPEATS:
        try:
            text = " ".join(_draw(expression, lists, rules, rng).split())
        except _Unwritable:
            text = ""
        if not text or text in seen:
            repeats += 1
            continue
        repeats = 0
        seen.add(text)
        yield text


def _count(expression: Expression, lists: Mapping[str, SlotList], rules: Rules) -> int:
    """How many sentences ``expression`` stands for (0: it holds a wildcard or an
    unknown or empty list, and is left out)."""
    if isinstance(expression, TextChunk):
        return 1
    if isinstance(expression, Alternative):
        return sum(_count(item, lists, rules) for item in expression.items)
    if isinstance(expression, Permutation):
        inner = math.prod(_count(item, lists, rules) for item in expression.items)
        return math.factorial(len(expression.items)) * inner
    if isinstance(expression, Seq):
        return math.prod(_count(item, lists, rules) for item in expression.items)
    if isinstance(expression, RuleReference):
        rule = rules.get(expression.rule_name)
        return 0 if rule is None else _count(rule.expression, lists, rules)
    if isinstance(expression, ListReference):
        slot_list = lists.get(expression.list_name)
        if isinstance(slot_list, TextSlotList):
            return sum(_count(value.text_in, lists, rules) for value in slot_list.values)
        return 0  # a wildcard, or a list nobody gave
    return 0


def _draw(
    expression: Expression, lists: Mapping[str, SlotList], rules: Rules, rng: random.Random
) -> str:
    """One sentence of ``expression`` (spaces not yet collapsed)."""
    if isinstance(expression, TextChunk):
        return expression.original_text
    if isinstance(expression, Alternative):
        return _draw(_choose(expression.items, rng), lists, rules, rng)
    if isinstance(expression, Permutation):
        items = list(expression.items)
        rng.shuffle(items)
        return " ".join(_draw(item, lists, rules, rng) for item in items)
    if isinstance(expression, Seq):
        return "".join(_draw(item, lists, rules, rng) for item in expression.items)
    if isinstance(expression, RuleReference):
        rule = rules.get(expression.rule_name)
        if rule is None:
            raise _Unwritable
        return _draw(rule.expression, lists, rules, rng)
    if isinstance(expression, ListReference):
        slot_list = lists.get(expression.list_name)
        if not isinstance(slot_list, TextSlotList) or not slot_list.values:
            raise _Unwritable  # a wildcard in one of several choices: draw again
        return _draw(rng.choice(slot_list.values).text_in, lists, rules, rng)
    raise _Unwritable


class _Unwritable(Exception):
    """A draw chose a part no sentence can be written for (a wildcard)."""


def _choose(items: Sequence[Expression], rng: random.Random) -> Expression:
    """One of an alternative's items: the first more often (1, 1/2, 1/3...), and an
    optional part (the empty item) left out half the time."""
    words = [item for item in items if not (isinstance(item, TextChunk) and item.is_empty)]
    if len(words) < len(items) and rng.random() < 0.5:
        return TextChunk.empty()
    if len(words) <= 1:
        return words[0] if words else TextChunk.empty()
    return rng.choices(words, weights=[1 / (i + 1) for i in range(len(words))])[0]
