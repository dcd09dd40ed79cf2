"""Which household names a first reading may have misheard: letter pairs of the names
Whisper would misspell against runs of the words it wrote."""

from __future__ import annotations

from daemon.house import match
from daemon.house.match import MAX_CANDIDATES, NameMatcher, letters
from daemon.house.prompt import Ranked


def ranked(*texts: str, plain: tuple[str, ...] = ()) -> list[Ranked]:
    return [Ranked(t, 3, t in plain) for t in texts]


HOUSE = ranked(
    "Niamh's Lamp", "Obergeschoss", "Pádraig's Office", "Mamó's Lamp", "Przedpokój",
    "Kitchen", "Ceiling Light", plain=("Kitchen", "Ceiling Light"),
)  # fmt: skip


def found(heard: str, names: list[Ranked] = HOUSE) -> list[str]:
    return [r.text for r in NameMatcher(names).candidates(heard)]


def test_letters_fold_accents_case_and_apostrophes():
    assert letters("Pádraig's  Office!") == "padraigs office"
    assert letters("Łazienka, Przedpokój") == "lazienka przedpokoj"
    assert letters("Straße") == "strasse"


def test_what_whisper_writes_for_a_name_finds_it():
    assert found("Turn off all the lights in the Oberge shas.") == ["Obergeschoss"]
    assert found("Turn on Mammals Lap.") == ["Mamó's Lamp"]
    assert found("Turn off the lights in Podridge office.") == ["Pádraig's Office"]
    # Both lamps are alike enough to try; the second reading's audio decides.
    assert set(found("Turn on Neve's lamp.")) == {"Niamh's Lamp", "Mamó's Lamp"}


def test_nothing_alike_and_plain_or_written_names_ask_for_nothing():
    assert found("What time is it?") == []
    assert found("") == []
    # Whisper writes a plain name itself; one already written gains nothing.
    assert "Kitchen" not in found("Turn on the kitchin light.")
    assert "Obergeschoss" not in found("Turn off the Obergeschoss, Oberge shas.")
    # Written without its accent: a second reading may give it back.
    assert found("Turn on the light in the Przedpokoj.") == ["Przedpokój"]


def test_at_most_a_few_the_most_alike_first_and_ties_in_the_rankings_order(monkeypatch):
    pairs = [a + b for a in "bcdfghjk" for b in "mnpqrstv"]
    many = ranked(*[f"Lampa {p}" for p in pairs])
    assert len(found("lampa", many)) == MAX_CANDIDATES
    assert found("lampa", many)[:2] == ["Lampa bm", "Lampa bn"]  # all as alike: ranking order
    monkeypatch.setattr(match, "RESEMBLANCE_MIN", 0.99)
    assert found("Turn on Mammals Lap.") == []


def test_a_long_transcript_is_bounded():
    heard = "word " * 10_000 + "Oberge shas"
    assert found(heard) == []  # only the first words are compared
