"""Cutting a reply that starts repeating itself.

Small models loop ("La femme de France, la femme de la France, la femme de la
France, ...") until ``max_tokens``. :class:`RepetitionGuard` watches the reply as
it streams, word by word: as soon as a phrase of ``ngram`` words comes again, it
stops the reply right before the repeat, so the listener hears the first
occurrence once and a clean ending, never half of the repeated phrase.

Streaming stays prompt: only the words that could be the start of a repeat (those
that continue a word sequence already seen) are held back, usually none or one; a
new word passes on as soon as it arrives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

DEFAULT_NGRAM = 5
"""Words in a phrase whose second occurrence ends the reply."""
_WORD = re.compile(r"\S+")
_KEY_DROP = re.compile(r"[^\w]+")
_SOFT_END = " \t\r\n,;:-\u2013\u2014"
"""Trailing characters dropped at a cut (spaces, commas, dashes)."""
_SENTENCE_END = ".!?\u2026\u3002\uff01\uff1f"
_CLAUSE_END = _SENTENCE_END + ",;:\uff0c"


@dataclass
class RepetitionGuard:
    """Feed it the reply's pieces; it returns what may be passed on now.

    ``feed`` returns the text that is safe to emit; once ``stopped`` is True the
    reply has started repeating and the caller should stop generating and emit
    ``finish()`` (the clean ending). When the model ends by itself, ``finish()``
    returns the text still held back.
    """

    ngram: int = DEFAULT_NGRAM
    stopped: bool = False
    text: str = ""
    """Everything fed so far."""
    _emitted: int = 0
    """Characters of ``text`` consumed (passed on, or dropped at a cut)."""
    _passed: str = ""
    _keys: list[str] = field(default_factory=list)
    """Normalized complete words."""
    _words: set[str] = field(default_factory=set)
    """Distinct words in ``_keys``."""
    _starts: list[int] = field(default_factory=list)
    """Where each word in ``_keys`` starts in ``text``."""
    _ends: list[int] = field(default_factory=list)
    """Where each word in ``_keys`` ends in ``text``."""
    _scanned: int = 0
    """Offset in ``text`` up to which complete words were read."""
    _first: dict[tuple[str, ...], int] = field(default_factory=dict)
    """Each word sequence of 1..ngram words: the index of its first word, first time."""
    _cut: int = -1

    def __post_init__(self) -> None:
        if self.ngram < 2:
            raise ValueError("ngram must be at least 2")

    def feed(self, piece: str) -> str:
        """Take the next piece of the reply; return the text to pass on now."""
        if self.stopped or not piece:
            return ""
        self.text += piece
        self._scan(final=False)
        if self.stopped:
            return ""
        return self._release(self._safe_until())

    def finish(self) -> str:
        """The end of the reply: the held-back text, or the clean ending of a cut."""
        if not self.stopped:
            self._scan(final=True)
        if not self.stopped:
            return self._release(len(self.text))
        tail = self.text[self._emitted : max(self._cut, self._emitted)].rstrip(_SOFT_END)
        self._emitted = len(self.text)
        ending = (self._passed + tail).rstrip()
        if ending and ending[-1] not in _SENTENCE_END and ending[-1].isalnum():
            tail += "."
        self._passed += tail
        return tail

    @property
    def reply(self) -> str:
        """The text passed on so far (the whole reply after ``finish``)."""
        return self._passed

    def _release(self, until: int) -> str:
        if until <= self._emitted:
            return ""
        out = self.text[self._emitted : until]
        self._emitted = until
        self._passed += out
        return out

    def _scan(self, final: bool) -> None:
        """Read the words completed since the last scan; stop at a repeat."""
        for match in _WORD.finditer(self.text, self._scanned):
            if match.end() == len(self.text) and not final:
                break  # the word may go on in the next piece
            self._scanned = match.end()
            key = _KEY_DROP.sub("", match.group().lower())
            if not key:
                continue
            self._keys.append(key)
            self._words.add(key)
            self._starts.append(match.start())
            self._ends.append(match.end())
            if self._add_word():
                return

    def _add_word(self) -> bool:
        """Index the sequences ending at the newest word; True on a repeat."""
        keys, k = self._keys, len(self._keys) - 1
        if k + 1 >= self.ngram:
            start = k - self.ngram + 1
            phrase = tuple(keys[start:])
            earlier = self._first.get(phrase)
            if earlier is not None and earlier < start:
                self.stopped = True
                self._cut = self._cut_at(start)
                return True
        for length in range(1, min(self.ngram, k + 1) + 1):
            self._first.setdefault(tuple(keys[k - length + 1 :]), k - length + 1)
        return False

    def _cut_at(self, start: int) -> int:
        """Where to end a reply whose repeat begins at word ``start``: before it, or
        after it when that one word closes a clause the loop is out of step with
        ("la femme de France, la femme de la France, la femme de la ..." ends after
        the second "France")."""
        if start == 0 or self.text[self._ends[start - 1] - 1] in _CLAUSE_END:
            return self._starts[start]
        if self.text[self._ends[start] - 1] in _CLAUSE_END:
            return self._ends[start]
        return self._starts[start]

    def _safe_until(self) -> int:
        """Offset up to which the text cannot be part of a repeat to come."""
        keys, k = self._keys, len(self._keys) - 1
        held = self._scanned
        # The earliest of the last ngram-1 words that begins a sequence seen before.
        for start in range(max(0, k - self.ngram + 2), k + 1):
            if self._first.get(tuple(keys[start:]), start) < start:
                held = self._starts[start]
                break
        else:
            # The word in progress waits only if it may turn out to be a word seen
            # before (the start of a repeat); a new word passes at once.
            partial = _WORD.search(self.text, self._scanned)
            held = len(self.text)
            if partial is not None:
                key = _KEY_DROP.sub("", partial.group().lower())
                if not key or any(word.startswith(key) for word in self._words):
                    held = partial.start()
        # Commas and spaces before the held words wait too: a cut there drops them.
        while held > self._emitted and self.text[held - 1] in _SOFT_END:
            held -= 1
        return held
