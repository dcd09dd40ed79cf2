"""Words written after the end of speech are not taken as heard (pure)."""

from __future__ import annotations

from types import SimpleNamespace

from daemon.engines.asr.base import Transcript
from daemon.engines.asr.tail import TimedWord, from_segments, heard_text, said_words

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


# Whisper's alignment of "Turn on the reading lamp. We will see you next time." on the
# bundled voice's "Turn on the Reading Lamp." (the speech ended at 1.33 s).
INVENTED = [
    TimedWord(" Turn", 0.0, 0.36),
    TimedWord(" on", 0.36, 0.6),
    TimedWord(" the", 0.6, 0.78),
    TimedWord(" reading", 0.78, 1.0),
    TimedWord(" lamp.", 1.0, 1.4),
    TimedWord(" We", 1.42, 1.42),
    TimedWord(" will", 1.42, 1.42),
    TimedWord(" see", 1.42, 1.42),
    TimedWord(" you", 1.42, 1.42),
    TimedWord(" next", 1.42, 1.42),
    TimedWord(" time.", 1.42, 1.42),
]


def test_a_sentence_written_into_the_silence_is_dropped() -> None:
    said = said_words(INVENTED, speech_end_s=1.33)
    assert "".join(w.text for w in said).strip() == "Turn on the reading lamp."


def test_sentences_said_before_the_end_stay() -> None:
    # The same words with speech going on until 1.5 s: all of them were said.
    assert said_words(INVENTED, speech_end_s=1.5) == INVENTED
    # A last sentence begun before the end of speech stays, even if it ends after it.
    late = [*INVENTED[:5], TimedWord(" Thanks.", 1.3, 1.6)]
    assert said_words(late, speech_end_s=1.33) == late


def test_the_first_word_always_stays() -> None:
    alone = [TimedWord(" Thank", 1.4, 1.4), TimedWord(" you.", 1.4, 1.4)]
    assert said_words(alone, speech_end_s=1.33) == alone
    assert said_words([], speech_end_s=1.0) == []


def test_a_sentence_begun_without_a_full_stop_before_it_is_dropped_at_its_capital() -> None:
    words = [TimedWord(w.text.replace(".", "").lower(), w.start_s, w.end_s) for w in INVENTED[:5]]
    words += INVENTED[5:]
    assert said_words(words, speech_end_s=1.33) == words[:5]


def test_words_that_go_on_the_sentence_stay() -> None:
    # "for it." placed after the end: the turn decision's rule, not the transcript's.
    words = [TimedWord(" Set", 0.0, 0.5), TimedWord(" a", 0.5, 0.8), TimedWord(" timer", 0.8, 1.1)]
    words += [TimedWord(" for", 1.2, 1.3), TimedWord(" it.", 1.3, 1.4)]
    assert said_words(words, speech_end_s=1.15) == words


def test_every_invented_sentence_goes_and_an_unfinished_one_too() -> None:
    words = [
        *INVENTED[:5],
        TimedWord(" Thank", 1.42, 1.42),
        TimedWord(" you!", 1.42, 1.42),
        TimedWord(" Bye", 1.43, 1.43),
    ]
    assert said_words(words, speech_end_s=1.33) == INVENTED[:5]
