"""Append-only transcript chunks from revised partial hypotheses.

Wyoming's ``transcript-chunk`` events are appended by clients, so they must never
be retracted. Whisper's partials are whole hypotheses that may change; a word is
sent only once two hypotheses in a row agree on it and it is not the last word
(which may still be growing). The final transcript event is always authoritative.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\s*\S+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


class TranscriptChunker:
    """Turns partial and final transcripts into text deltas safe to append."""

    def __init__(self) -> None:
        self.sent = ""
        self._previous: list[str] = []

    def partial(self, text: str) -> str | None:
        """The new stable text after this partial hypothesis, if any."""
        words = _words(text)
        agreed = 0
        for a, b in zip(self._previous, words, strict=False):
            if a != b:
                break
            agreed += 1
        self._previous = words
        stable = "".join(words[: min(agreed, len(words) - 1)])
        return self._advance(stable)

    def final(self, text: str) -> str | None:
        """The rest of the final transcript, or None when nothing is left to send or
        earlier chunks disagree with it (the final ``transcript`` event corrects)."""
        return self._advance(text)

    def _advance(self, text: str) -> str | None:
        if len(text) <= len(self.sent) or not text.startswith(self.sent):
            return None
        delta, self.sent = text[len(self.sent) :], text
        return delta
