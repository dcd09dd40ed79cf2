"""Words written after the end of speech are not taken as heard (pure)."""

from __future__ import annotations

from types import SimpleNamespace

from daemon.engines.asr.base import Transcript
from daemon.engines.asr.tail import TimedWord, from_segments, heard_text

# Whisper's alignment of "Set a Tyler for it." (eSpeak NG en-us; the speech ended at 1.16 s).
TIMER = [
    TimedWord(" Set", 0.0, 0.48),
    TimedWord(" a", 0.48, 0.80),
    TimedWord(" Tyler", 0.80, 0.94),
    TimedWord(" for", 0.94, 1.14),
    TimedWord(" it.", 1.14, 1.30),
]


def test_a_word_placed_in_the_silence_is_left_out() -> None:
    assert heard_text(TIMER, speech_end_s=1.16) == "Set a Tyler for"


def test_every_word_heard_gives_none() -> None:
    assert heard_text(TIMER, speech_end_s=1.30) is None
    assert heard_text([], speech_end_s=0.5) is None


def test_a_real_last_word_stretched_into_the_silence_stays() -> None:
    # "for..." aligned from 0.90 to 1.24 s, speech ended at 1.10 s: 41 % after the end.
    words = [TimedWord(" timer", 0.76, 0.90), TimedWord(" for...", 0.90, 1.24)]
    assert heard_text(words, speech_end_s=1.10) is None


def test_only_the_tail_is_cut_never_a_word_inside() -> None:
    # A word placed late inside the sentence (a misalignment) does not cut what follows.
    words = [TimedWord(" Turn", 0.1, 0.3), TimedWord(" on", 0.9, 1.0), TimedWord(" it", 0.5, 0.6)]
    assert heard_text(words, speech_end_s=0.7) is None


def test_a_word_of_no_length_counts_by_where_it_starts() -> None:
    words = [TimedWord(" Open", 0.1, 0.4), TimedWord(" door", 0.8, 0.8)]
    assert heard_text(words, speech_end_s=0.6) == "Open"
    assert heard_text(words, speech_end_s=0.9) is None


def test_the_transcript_says_what_was_heard() -> None:
    plain = Transcript("Set a timer for it.", "en", 1.3)
    assert plain.heard == "Set a timer for it."
    cut = Transcript("Set a timer for it.", "en", 1.3, heard_text="Set a timer for")
    assert cut.heard == "Set a timer for"


def test_words_come_from_faster_whisper_segments_with_their_punctuation() -> None:
    word = SimpleNamespace
    segments = [
        SimpleNamespace(
            words=[word(word=" Turn", start=0.1, end=0.3), word(word=" off", start=0.3, end=0.6)]
        ),
        SimpleNamespace(words=[word(word=".", start=0.7, end=0.9), word(word=" ", start=1, end=1)]),
        SimpleNamespace(words=None),
    ]
    words = from_segments(segments)
    assert [w.text for w in words] == [" Turn", " off."]
    assert heard_text(words, speech_end_s=0.62) is None  # the full stop is no word
