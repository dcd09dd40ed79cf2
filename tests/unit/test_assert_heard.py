"""assert_heard: tolerant of a misheard word, strict about the sentence."""

import pytest

from tests.helpers import assert_heard, spoken_words, word_error_rate

TIMER = "Please set a timer for ten minutes and then play some quiet music in the hall."


def test_the_exact_words_pass():
    assert_heard("Turn on the kitchen lights.", "Turn on the kitchen lights.", "kitchen")
    assert_heard("turn on the kitchen lights", "Turn on the kitchen lights.", "kitchen", "lights")


def test_a_misheard_word_or_two_passes():
    heard = "Place at a timer for 10 minutes and then play some quiet music in the hall."
    assert word_error_rate(TIMER, heard) == pytest.approx(2 / 16)
    assert_heard(heard, TIMER, "timer", "minutes", "music")
    assert_heard("Turn on the kitchen light.", "Turn on the kitchen lights.", "kitchen")
    assert_heard("Goodnight.", "Good night.", "good")  # joined: the letters match


@pytest.mark.parametrize(
    "heard",
    [
        "",
        "   ",
        "What is the weather like tomorrow morning?",
        "Turn on the lights in the living room.",
        "kitchen",
        "The kitchen is on fire, call for help now.",
    ],
)
def test_empty_text_or_another_sentence_fails(heard):
    with pytest.raises(AssertionError, match="heard"):
        assert_heard(heard, "Turn on the kitchen lights.", "kitchen")


def test_a_missing_key_word_fails_even_when_the_rest_is_close():
    heard = "Please set a timer for ten minutes and then play some quiet music in the hole."
    assert_heard(heard, TIMER, "timer")
    with pytest.raises(AssertionError, match=r"missing \['hall'\]"):
        assert_heard(heard, TIMER, "timer", "hall")


def test_a_key_word_spelled_by_ear_passes_and_another_word_fails():
    spoken = "The front door is locked. The garage is closed."
    assert_heard("The front door is locked. The garash is closed.", spoken, "door", "garage")
    for other in ("garden", "carriage", "gate"):
        with pytest.raises(AssertionError, match=r"missing \['garage'\]"):
            assert_heard(f"The front door is locked. The {other} is closed.", spoken, "garage")
    with pytest.raises(AssertionError, match=r"missing \['lights'\]"):
        assert_heard("Turn on the kitchen nights.", "Turn on the kitchen lights.", "lights")


def test_long_sentences_fail_past_the_threshold():
    heard = "Please get a time for ten minutes and let me pay some quite music in a hole."
    assert word_error_rate(TIMER, heard) > 0.35
    with pytest.raises(AssertionError):
        assert_heard(heard, TIMER, "minutes")


def test_key_words_must_be_named_and_spoken():
    with pytest.raises(ValueError, match="at least one"):
        assert_heard("Turn on the kitchen lights.", "Turn on the kitchen lights.")
    with pytest.raises(ValueError, match="garage"):
        assert_heard("Turn on the kitchen lights.", "Turn on the kitchen lights.", "garage")


def test_numbers_are_compared_as_words():
    assert spoken_words("Set it for 10 minutes, not 25.") == [
        "set",
        "it",
        "for",
        "ten",
        "minutes",
        "not",
        "25",
    ]
    assert word_error_rate("ten minutes", "10 minutes") == 0
