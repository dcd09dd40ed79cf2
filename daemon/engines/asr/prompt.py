"""Words a client wants Whisper to expect, as a decoding prompt.

Home Assistant 2026 sends the names of its areas and devices (``transcript_names``)
and domain terms (``transcript_terms``) with each Wyoming request. Whisper reads a
prompt as the text that came before the audio, so listing them there makes the
decoder spell "Ada's lamp" or "Kaffeemaschine" as the house does. Names come first;
the list is bounded, because every prompt token is decoded for every utterance.
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_ITEMS = 200
"""Entries read from the client, names and terms together; the rest are ignored."""
MAX_ITEM_CHARS = 64
"""Longer entries are not names: skipped."""
MAX_PROMPT_CHARS = 400
"""About 100 tokens: the prompt stops before the entry that would pass this."""


def bias_prompt(names: object, terms: object) -> str | None:
    """A prompt listing ``names`` then ``terms`` (lists of strings from a client).

    Entries that are not short strings are skipped, duplicates are dropped (case
    aside), and the list ends before :data:`MAX_PROMPT_CHARS`. None: nothing to say.
    """
    seen: set[str] = set()
    kept: list[str] = []
    used = 0
    for item in _items(names, terms):
        word = " ".join(item.split())
        if not word or len(word) > MAX_ITEM_CHARS or word.casefold() in seen:
            continue
        if used + len(word) + 2 > MAX_PROMPT_CHARS:
            break
        seen.add(word.casefold())
        kept.append(word)
        used += len(word) + 2
    return ", ".join(kept) + "." if kept else None


def _items(*lists: object) -> Iterable[str]:
    count = 0
    for values in lists:
        if not isinstance(values, list):
            continue
        for value in values:
            if count >= MAX_ITEMS:
                return
            count += 1
            if isinstance(value, str):
                yield value
