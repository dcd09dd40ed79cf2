"""The command-aware reading's rules, and the generic reading with a fake model (pure)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from daemon.engines.asr.base import AsrModel, TranscribeOptions, Transcript
from daemon.engines.asr.commands import Scored, choose, near_enough, written


def test_a_template_sentence_is_written_as_whisper_writes_one() -> None:
    assert written("turn on the kitchen light") == "Turn on the kitchen light."
    assert written("what time is it?") == "What time is it?"
    assert written("  ") == ""


def test_a_command_replaces_the_reading_only_within_the_margin() -> None:
    first = Scored("Top oil my timers.", -3.2)
    close = Scored("Stop all my timers.", -0.4)
    assert choose(first, [close, Scored("Stop my timer.", -2.0)]) == close
    chatter = Scored("What is the meaning of life?", -0.1)
    assert choose(chatter, [Scored("What is the temperature?", -3.0)]) is None
    assert choose(Scored("x", -1.0), [Scored("y", -1.9)], margin=1.0) == Scored("y", -1.9)
    assert choose(Scored("x", -1.0), [Scored("y", -2.1)], margin=1.0) is None
    assert choose(first, []) is None
    # However poor the first reading, a command the audio hardly supports is not taken.
    assert choose(Scored("noise", -4.0), [Scored("y", -3.5)]) is None
    assert choose(Scored("noise", -4.0), [Scored("y", -2.9)]) == Scored("y", -2.9)


def test_a_command_for_only_part_of_what_was_said_is_no_reading_of_it() -> None:
    assert near_enough("Closer kitchen windows.", "close the kitchen windows")
    said = "turn on the lights and tell me a long story about dragons please"
    assert not near_enough(said, "turn on the lights")


class Fake(AsrModel):
    name = "fake"
    languages = ("en",)
    device = "cpu"

    def __init__(self, text: str, scores: dict[str, float] | None) -> None:
        self.text = text
        self.scores = scores

    def transcribe(self, audio: np.ndarray, options: TranscribeOptions) -> Transcript:
        return Transcript(self.text, "en", 1.0)

    def score_texts(
        self, audio: np.ndarray, options: TranscribeOptions, texts: Sequence[str]
    ) -> list[float] | None:
        return None if self.scores is None else [self.scores[t] for t in texts]


class Reader:
    def __init__(self, found: list[str]) -> None:
        self.found = found
        self.asked: list[str] = []

    def candidates(self, heard: str) -> Sequence[str]:
        self.asked.append(heard)
        return self.found


AUDIO = np.zeros(16000, np.float32)


def test_the_reading_becomes_the_command_the_audio_supports() -> None:
    model = Fake("Top oil my timers.", {"Top oil my timers.": -3.2, "Stop all my timers.": -0.4})
    got = model.transcribe_hinted(AUDIO, TranscribeOptions(), None, Reader(["stop all my timers"]))
    assert got.text == "Stop all my timers."


def test_a_reading_stays_when_the_audio_does_not_support_a_command() -> None:
    scores = {"What is the meaning of life?": -0.1, "What is the temperature?": -3.0}
    model = Fake("What is the meaning of life?", scores)
    reader = Reader(["what is the temperature"])
    got = model.transcribe_hinted(AUDIO, TranscribeOptions(), None, reader)
    assert got.text == "What is the meaning of life?" and reader.asked


def test_a_model_that_cannot_score_keeps_its_reading() -> None:
    model = Fake("Top oil my timers.", None)
    got = model.transcribe_hinted(AUDIO, TranscribeOptions(), None, Reader(["stop all my timers"]))
    assert got.text == "Top oil my timers."


def test_a_failing_reader_keeps_the_reading() -> None:
    class Broken:
        def candidates(self, heard: str) -> Sequence[str]:
            raise RuntimeError("gone")

    model = Fake("Top oil my timers.", {})
    got = model.transcribe_hinted(AUDIO, TranscribeOptions(), None, Broken())
    assert got.text == "Top oil my timers."
