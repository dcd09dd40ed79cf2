"""Sentence splitting for streamed text (LLM replies) and TTS input."""

from __future__ import annotations

import re

# End of a sentence: terminal punctuation (optionally closing quotes/brackets),
# then whitespace. Abbreviations like "Dr." are kept whole by the word check.
_END = re.compile(r"([.!?…]+[\"')\]]*|[\n]{1,})(\s+)")
# A clause end: where a spoken reply may start before its first sentence is done.
_CLAUSE = re.compile(r"([,;:—–]|\s-)(\s+)")
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
    """Incremental splitter: feed text pieces, get sentences as soon as they end.

    With ``first_clause_chars`` the first piece may end at a clause boundary (a
    comma, colon, semicolon or dash) once it is that long, so that speech can begin
    before the LLM has finished its first sentence.
    """

    def __init__(self, min_chars: int = 12, first_clause_chars: int = 0) -> None:
        self.min_chars = min_chars
        self.first_clause_chars = first_clause_chars
        self._buf = ""
        self._emitted = 0

    def feed(self, piece: str) -> list[str]:
        """Add text; return the sentences completed by it."""
        self._buf += piece
        out = self._sentences()
        if not out and not self._emitted and self.first_clause_chars:
            out = self._first_clause()
        self._emitted += len(out)
        return out

    def _first_clause(self) -> list[str]:
        for match in _CLAUSE.finditer(self._buf):
            candidate = " ".join(self._buf[: match.end(1)].split())
            if len(candidate) >= self.first_clause_chars:
                self._buf = self._buf[match.end() :]
                return [candidate]
        return []

    def _sentences(self) -> list[str]:
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
        self._emitted += bool(rest)
        return [rest] if rest else []
