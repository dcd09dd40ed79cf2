"""Words written after the end of speech: Whisper's invented last word.

Decoded at a pause, an unfinished sentence often comes back finished: "Set a timer
for it.", "Play the new". Whisper completes what it heard with a word the audio does
not hold, and the word hides the open ending the turn decision looks for. Whisper's
own word timestamps (the alignment of its cross-attention with the audio, as
faster-whisper's ``word_timestamps`` computes them) place such a word in the
silence after the last speech the VAD heard: "it." from 1.14 to 1.30 s when the
speech ended at 1.16 s. :func:`heard_text` drops the last words that lie mostly
after the end of speech (the alignment stretches a real last word a little into the
silence, "for..." from 0.90 to 1.24 s for speech that ended at 1.10 s, so a word is
kept while most of it is before the end), for the turn decision alone.
:func:`said_words` drops more, from the transcript itself: whole last sentences
written into the silence ("Turn on the reading lamp. We will see you next time."),
which would turn a command into chatter. :func:`align` gets the words' times from
an encoded window, reusing the decode's encoder output.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_LOGGER = logging.getLogger(__name__)

AFTER_SHARE = 0.6
"""A last word with at least this share of its time after the end of speech was not
said (invented words measured 0.81-0.87; real last words, stretched, up to 0.41)."""
SENTENCE_ENDS = (".", "!", "?", "…", "。", "！", "？")
"""What ends a sentence in Whisper's punctuation."""


@dataclass(frozen=True)
class TimedWord:
    """One word of a transcript and where Whisper placed its start (s)."""

    text: str
    """As Whisper wrote it, with its leading space (and its punctuation)."""
    start_s: float
    end_s: float

    def after_share(self, at_s: float) -> float:
        """The share of this word's time that lies after ``at_s``."""
        span = self.end_s - self.start_s
        if span <= 0:
            return 1.0 if self.start_s >= at_s else 0.0
        return min(1.0, max(0.0, (self.end_s - max(at_s, self.start_s)) / span))


def heard_text(words: Sequence[TimedWord], speech_end_s: float) -> str | None:
    """The transcript without its last words that lie mostly after ``speech_end_s``
    (:data:`AFTER_SHARE`); None when every word was heard (or there are none)."""
    kept = len(words)
    while kept > 0 and words[kept - 1].after_share(speech_end_s) >= AFTER_SHARE:
        kept -= 1
    if kept == len(words):
        return None
    return "".join(w.text for w in words[:kept]).strip()


def said_words(words: Sequence[TimedWord], speech_end_s: float) -> list[TimedWord]:
    """``words`` without the sentence Whisper wrote wholly into the silence after the
    end of speech: the last words that all start at or after ``speech_end_s``, from
    where a sentence begins among them (after a full stop, or at a capital letter).

    In a short window Whisper sometimes ends a command with a sentence of its own,
    "Turn on the reading lamp. We will see you next time." (or "turn on the reading
    lamp We will see you next time."); aligned with the audio, every word of it sits at
    or after the end of speech, in the padding (zero-length words at 1.42 s for speech
    that ended at 1.33 s), while a real last sentence starts before it. A word that
    goes on a sentence (lowercase, no full stop before it) stays: the turn decision has
    its own rule for those (:func:`heard_text`). The first word always stays: a
    transcript is never emptied here.
    """
    after = len(words)
    while after > 1 and words[after - 1].start_s >= speech_end_s:
        after -= 1
    for at in range(after, len(words)):
        if _ends_sentence(words[at - 1].text) or words[at].text.strip()[:1].isupper():
            return list(words[:at])
    return list(words)


def _ends_sentence(text: str) -> bool:
    return text.rstrip().rstrip("\"')»”").endswith(SENTENCE_ENDS)


def align(
    model: Any, tokenizer: Any, encoded: Any, texts: Sequence[str], frames: Sequence[int]
) -> list[list[TimedWord]]:
    """The words of each text and their start times, from the encoder output of a
    batch (one text per member) and each member's mel frames (faster-whisper's
    ``find_alignment``: one pass of the decoder over the given tokens)."""
    tokens = [tokenizer.encode(" " + text.strip()) for text in texts]
    if any(not t for t in tokens):
        return [[] for _ in texts]
    # One call serves the batch; the frames bound the attention to the real audio.
    found = model.find_alignment(tokenizer, tokens, encoded, max(frames))
    return [
        _joined([(str(w["word"]), float(w["start"]), float(w["end"])) for w in words])
        for words in found
    ]


def from_segments(segments: Sequence[Any]) -> list[TimedWord]:
    """The timed words of faster-whisper segments decoded with ``word_timestamps``."""
    return _joined(
        [
            (str(w.word), float(w.start), float(w.end))
            for segment in segments
            for w in (segment.words or ())
        ]
    )


def _joined(raw: list[tuple[str, float, float]]) -> list[TimedWord]:
    """Words with the punctuation that follows them joined on ("off" "." -> "off."):
    a full stop placed in the silence is no word of its own."""
    words: list[TimedWord] = []
    for text, start, end in raw:
        if not text.strip():
            continue
        if words and not any(ch.isalnum() for ch in text):
            last = words[-1]
            words[-1] = TimedWord(last.text + text, last.start_s, last.end_s)
            continue
        words.append(TimedWord(text, start, end))
    return words
