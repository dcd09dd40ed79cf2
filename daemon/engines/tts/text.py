"""Sentence splitting for streamed text (LLM replies) and TTS input."""

from __future__ import annotations

import re

from daemon.errors import InvalidText

# End of a sentence: terminal punctuation (optionally closing quotes/brackets),
# then whitespace; or a line end (a list item, a heading). Abbreviations like "Dr."
# are kept whole by the word check.
_END = re.compile(r"([.!?…]+[\"')\]]*(?=\s)|\n+)(\s*)")
# A clause end: where a spoken reply may start before its first sentence is done.
_CLAUSE = re.compile(r"([,;:—–]|\s-)(\s+)")
# Words a phrase starts with: the first short piece of a reply may end before one.
_JOINERS = frozenset(
    "and or but so to in on at for with from of by because when if that which until "
    "while before after than".split()
)
_WORD = re.compile(r"\S+(?=\s)")
_ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "st", "vs", "etc", "e.g", "i.e", "no", "jr", "sr"}


def _is_abbreviation(text: str, end: int) -> bool:
    words = text[:end].rstrip(".").split()
    return bool(words) and words[-1].lower().strip("(\"'") in _ABBREVIATIONS


MAX_PIECE_CHARS = 240
"""Longest piece of text synthesized in one engine call. A synthesizer's memory grows
with the square of its input (attention over every phoneme): one 2000-character
run-on took Piper to 2.5 GB, kept by the allocator afterwards."""

# Control characters (tab, newline and carriage return are whitespace) and lone
# surrogates: no voice can speak them, and some break the phonemizer mid-stream
# (a NUL is "embedded null character" in espeak), after the response has begun.
_UNSPEAKABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def check_speakable(text: str) -> None:
    """Raise InvalidText when ``text`` holds a control character or a lone surrogate."""
    found = _UNSPEAKABLE.search(text)
    if found is not None:
        raise InvalidText(
            f"text holds an unspeakable character U+{ord(found.group()):04X} "
            f"at position {found.start()}"
        )


# Markdown and emoji, which an LLM's reply is full of and a voice would read out
# ("asterisk asterisk") or stumble on. Each rule keeps the words and drops the markup.
_FENCE = re.compile(r"^\s*(```|~~~).*$", re.MULTILINE)
_IMAGE_OR_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")
_INLINE_CODE = re.compile(r"`([^`\n]*)`")
_EMPHASIS = re.compile(
    r"(\*\*|__|~~)(?=\S)(.+?)(?<=\S)\1|(?<![\w*])([*_])(?=\S)(.+?)(?<=\S)\3(?![\w*])"
)
_HEADING_QUOTE = re.compile(r"^[ \t]*(#{1,6}|>+)[ \t]+", re.MULTILINE)
_BULLET = re.compile(r"^[ \t]*([-*+•]|\d{1,3}[.)])[ \t]+", re.MULTILINE)
_RULE = re.compile(r"^[ \t]*([-*_])([ \t]*\1){2,}[ \t]*$", re.MULTILINE)
_TABLE = re.compile(
    r"^[ \t]*\|?([ \t]*:?-+:?[ \t]*\|)+[ \t]*:?-*:?[ \t]*$|[ \t]*\|[ \t]*", re.MULTILINE
)
_EMOJI = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\ufe0e\ufe0f\u200d\u20e3]")


def spoken(text: str) -> str:
    """``text`` as a voice should say it: Markdown marks and emoji dropped, words kept.

    Headings, quotes, bullets and numbers of list items, rules, code fences and table
    rules go; emphasis, inline
    code and links keep their words (a link its text, not its address); list items
    and table cells stay on their own lines, so they are spoken as separate phrases.
    Plain text comes back unchanged.
    """
    text = _FENCE.sub("", text)
    text = _IMAGE_OR_LINK.sub(r"\1", text)
    text = _INLINE_CODE.sub(r"\1", text)
    for _ in range(2):  # nested emphasis: ***both***
        text = _EMPHASIS.sub(lambda m: m.group(2) or m.group(4), text)
    text = _RULE.sub("", text)
    text = _HEADING_QUOTE.sub("", text)
    text = _BULLET.sub("", text)
    text = _TABLE.sub(lambda m: "" if m.group(1) else ", ", text)
    text = _EMOJI.sub("", text)
    text = re.sub(r"[ \t]+([,.!?;:])", r"\1", re.sub(r"[ \t]{2,}", " ", text))
    lines = [line.strip(" ,") for line in text.split("\n")]
    lines = [line for line in lines if line]
    # A line with no closing mark (a list item, a heading) is a phrase of its own.
    return "\n".join(
        line if i == len(lines) - 1 or line[-1] in ".!?:;…" else f"{line},"
        for i, line in enumerate(lines)
    )


def bound_pieces(sentences: list[str], max_chars: int = MAX_PIECE_CHARS) -> list[str]:
    """Split sentences longer than ``max_chars``: at clause marks, then between words.

    A single word longer than ``max_chars`` is cut where the limit falls.
    """
    out: list[str] = []
    for sentence in sentences:
        if len(sentence) <= max_chars:
            out.append(sentence)
            continue
        pieces = [piece for clause in _clauses(sentence) for piece in _by_words(clause, max_chars)]
        out.extend(_merge_short(pieces, max_chars))
    return out


def _clauses(sentence: str) -> list[str]:
    parts: list[str] = []
    start = 0
    for match in _CLAUSE.finditer(sentence):
        parts.append(sentence[start : match.end(1)].strip())
        start = match.end()
    parts.append(sentence[start:].strip())
    return [part for part in parts if part]


def _by_words(clause: str, max_chars: int) -> list[str]:
    out: list[str] = []
    line = ""
    for word in clause.split():
        while len(word) > max_chars:  # no space to split at: cut
            if line:
                out.append(line)
                line = ""
            out.append(word[:max_chars])
            word = word[max_chars:]
        if line and len(line) + 1 + len(word) > max_chars:
            out.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        out.append(line)
    return out


def _merge_short(pieces: list[str], max_chars: int) -> list[str]:
    """Join neighbouring short clause pieces again, so a long sentence is not spoken
    as a string of two-word fragments."""
    out: list[str] = []
    for piece in pieces:
        if out and len(out[-1]) + 1 + len(piece) <= max_chars:
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


FIRST_WORDS = (3, 5)
"""The first piece of speech: this many words (fewest, most), at a natural break
where one comes, so that the voice starts on a short phrase."""
_BREAK = re.compile(r"[.!?…,;:—–\"')\]]$")


def first_phrase(pieces: list[str], words: tuple[int, int] = FIRST_WORDS) -> list[str]:
    """``pieces`` with the first one's opening phrase split off (see
    :class:`SentenceSplitter`'s ``first_words``) when more follows it in that piece."""
    if not pieces:
        return pieces
    splitter = SentenceSplitter(first_words=words)
    head = splitter.feed(pieces[0])
    rest = splitter.flush()
    if not head or not rest:
        return pieces
    return [*head, *rest, *pieces[1:]]


def ends_phrase(piece: str) -> bool:
    """Whether a piece ends at punctuation (a pause belongs after it), not inside a
    phrase (cut between words: the next piece goes on at once)."""
    return bool(_BREAK.search(piece))


def split_sentences(text: str) -> list[str]:
    """Split complete text into sentences (whitespace-normalized, none empty)."""
    splitter = SentenceSplitter()
    out = splitter.feed(text)
    out.extend(splitter.flush())
    return out


class SentenceSplitter:
    """Incremental splitter: feed text pieces, get sentences as soon as they end.

    With ``first_words`` (fewest, most) the first piece is that many words, so that
    speech can begin before the LLM has finished its first sentence: it ends at a
    clause mark (a comma, colon, semicolon or dash) after the fewest, else before a word
    that starts a phrase ("and", "to", "for", ...), else after the most (or the last
    word before them that does not lead into the next).
    """

    def __init__(
        self,
        min_chars: int = 12,
        first_words: tuple[int, int] | None = None,
    ) -> None:
        self.min_chars = min_chars
        self.first_words = first_words
        self._buf = ""
        self._emitted = 0
        self._rest = False
        """The first phrase was cut inside a sentence: its rest ends at the sentence's
        end, however short."""

    def feed(self, piece: str) -> list[str]:
        """Add text; return the sentences completed by it."""
        self._buf += piece
        out = self._sentences()
        if not out and not self._emitted and self.first_words is not None:
            out = self._first_words(*self.first_words)
        self._emitted += len(out)
        return out

    def _first_words(self, fewest: int, most: int) -> list[str]:
        words = list(_WORD.finditer(self._buf))  # words something already follows
        bare = [w.group().lower().strip("\"'()[]") for w in words]
        cut: int | None = None
        for k in range(fewest, min(len(words), most) + 1):
            if _CLAUSE.match(words[k - 1].group()[-1] + " "):
                cut = k  # a clause mark ends the k-th word
                break
            if k < len(words) and bare[k] in _JOINERS and bare[k - 1] not in _JOINERS:
                cut = k  # the next word starts a phrase
                break
        if cut is None and len(words) > most:
            leads = [k for k in range(fewest, most + 1) if bare[k - 1] not in _JOINERS]
            cut = leads[-1] if leads else most
        if cut is None:
            return []
        end = words[cut - 1].end()
        piece = " ".join(self._buf[:end].split())
        self._buf = self._buf[end:].lstrip()
        self._rest = True
        return [piece]

    def _sentences(self) -> list[str]:
        out: list[str] = []
        start = 0
        for match in _END.finditer(self._buf):
            end = match.end(1)
            candidate = self._buf[start:end].strip()
            if "." in match.group(1) and _is_abbreviation(self._buf, match.start(1) + 1):
                continue
            if len(candidate) < self.min_chars and "\n" not in match.group(1) and not self._rest:
                continue
            if candidate:
                out.append(" ".join(candidate.split()))
                self._rest = False
            start = match.end()
        self._buf = self._buf[start:]
        return out

    def flush(self) -> list[str]:
        """Return whatever text remains as a last sentence."""
        rest = " ".join(self._buf.split())
        self._buf = ""
        self._emitted += bool(rest)
        return [rest] if rest else []
