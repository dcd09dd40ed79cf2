"""Sentence splitting for streamed text (LLM replies) and TTS input."""

from __future__ import annotations

import re

# End of a sentence: terminal punctuation (optionally closing quotes/brackets),
# then whitespace. Abbreviations like "Dr." are kept whole by the word check.
_END = re.compile(r"([.!?…]+[\"')\]]*|[\n]{1,})(\s+)")
_ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "st", "vs", "etc", "e.g", "i.e", "no", "jr", "sr"}


def _is_abbreviation(text: str, end: int) -> bool:
    words = text[:end].rstrip(".").split()
    return bool(words) and words[-1].lower().strip("(\"'") in _ABBREVIATIONS


def split_sentences(text: str) -> list[str]:
    """Split complete text into sentences (whitespace-normalized, none empty)."""
    splitter = SentenceSplitter()
    out = splitter.feed(text)
    out.extend(splitter.flush())
    return out


class SentenceSplitter:
    """Incremental splitter: feed text pieces, get sentences as soon as they end."""

    def __init__(self, min_chars: int = 12) -> None:
        self.min_chars = min_chars
        self._buf = ""

    def feed(self, piece: str) -> list[str]:
        """Add text; return the sentences completed by it."""
        self._buf += piece
        out: list[str] = []
        start = 0
        for match in _END.finditer(self._buf):
            end = match.end(1)
            candidate = self._buf[start:end].strip()
            if "." in match.group(1) and _is_abbreviation(self._buf, match.start(1) + 1):
                continue
            if len(candidate) < self.min_chars and "\n" not in match.group(1):
                continue
            if candidate:
                out.append(" ".join(candidate.split()))
            start = match.end()
        self._buf = self._buf[start:]
        return out

    def flush(self) -> list[str]:
        """Return whatever text remains as a last sentence."""
        rest = " ".join(self._buf.split())
        self._buf = ""
        return [rest] if rest else []
