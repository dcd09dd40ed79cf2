"""The second reading: kept only when it writes a name the first did not."""

from __future__ import annotations

import numpy as np

from daemon.engines.asr.base import AsrModel, TranscribeOptions, Transcript
from daemon.engines.asr.hints import Hint, keeps, writes


def test_writes_matches_whole_names_with_accents_case_and_punctuation_aside():
    assert writes("Pádraig's Office", "turn off the lights in pádraigs office.")
    assert not writes("Padraig's Office", "Turn off Pádraig's Office")  # accents count
    assert not writes("Stube", "the Stuben")
    assert not writes("", "anything")


def test_a_second_reading_is_kept_only_for_a_new_name():
    names = ("Obergeschoss", "Dachboden")
    assert keeps("lights in the over gush-hoss", "lights in the Obergeschoss", names)
    # Only other words moved: what a prompt does to ordinary speech.
    assert not keeps("Pause the music.", "I pause for the music.", names)
    # Saying it again, cut short: the guard's checks miss it, the length does not.
    first, looped = "Turn on Karen's lamp.", "Turn on Ciarán's Lamp. Turn on Ciarán"
    assert not keeps(first, looped, ("Ciarán's Lamp",))
    assert keeps(first, "Turn on Ciarán's Lamp.", ("Ciarán's Lamp",))
    # The name for the whole sentence: the rest of what was said is lost.
    long = "Turn on Karen's lamp and the kitchen light, please."
    assert not keeps(long, "Ciarán's Lamp.", ("Ciarán's Lamp",))
    assert keeps("Turn on the light in the dark, golden.", "Turn on the light in the Dachboden.",
                 ("Dachboden",))  # fmt: skip
    assert writes("Niamh's Lamp", "Turn on Niamh’s lamp")  # a typographic apostrophe
    # Written already by the first reading: nothing gained.
    assert not keeps("the Obergeschoss light", "the Obergeschoss Light,", names)


def test_hint_never_shows_its_names():
    hint = Hint("Niamh's Lamp.", ("Niamh's Lamp",))
    assert "Niamh" not in repr(hint) and "1 names" in repr(hint)


class Scripted(AsrModel):
    """Writes the name only when its prompt holds it."""

    name = "scripted"
    languages = ("en",)
    device = "cpu"

    def __init__(self, heard: str, prompted: str) -> None:
        self.heard, self.prompted = heard, prompted
        self.prompts: list[str | None] = []

    def transcribe(self, audio: np.ndarray, options: TranscribeOptions) -> Transcript:
        self.prompts.append(options.initial_prompt)
        prompt = options.initial_prompt or ""
        return Transcript(self.prompted if "Mamó" in prompt else self.heard, "en", 1.0)


class Hinter:
    def __init__(self, hint: Hint | None) -> None:
        self.given = hint
        self.heard: list[str] = []

    def hint(self, heard: str) -> Hint | None:
        self.heard.append(heard)
        return self.given


def test_the_default_reads_twice_and_keeps_the_name():
    model = Scripted("Turn on Mammals Lap.", "Turn on Mamó's Lamp.")
    hinter = Hinter(Hint("Ada. Mamó's Lamp.", ("Mamó's Lamp",)))
    options = TranscribeOptions(initial_prompt="Ada.")
    got = model.transcribe_hinted(np.zeros(16000, np.float32), options, hinter)
    assert got.text == "Turn on Mamó's Lamp."
    assert model.prompts == ["Ada.", "Ada. Mamó's Lamp."] and hinter.heard == [
        "Turn on Mammals Lap."
    ]


class Failing(Scripted):
    def transcribe(self, audio: np.ndarray, options: TranscribeOptions) -> Transcript:
        if options.initial_prompt:
            raise ConnectionError("the remote server went away")
        return super().transcribe(audio, options)


def test_a_second_reading_that_fails_leaves_the_first(caplog):
    model = Failing("Turn on Mammals Lap.", "")
    hinter = Hinter(Hint("Mamó's Lamp.", ("Mamó's Lamp",)))
    got = model.transcribe_hinted(np.zeros(16000, np.float32), TranscribeOptions(), hinter)
    assert got.text == "Turn on Mammals Lap." and "ConnectionError" in caplog.text


def test_no_hint_is_one_reading_and_a_second_without_the_name_is_dropped():
    model = Scripted("Pause the music.", "I pause for the music.")
    once = model.transcribe_hinted(np.zeros(16000, np.float32), TranscribeOptions(), Hinter(None))
    assert once.text == "Pause the music." and model.prompts == [None]
    hinter = Hinter(Hint("Mamó's Lamp.", ("Mamó's Lamp",)))
    twice = model.transcribe_hinted(np.zeros(16000, np.float32), TranscribeOptions(), hinter)
    assert twice.text == "Pause the music."  # the second reading wrote no name
