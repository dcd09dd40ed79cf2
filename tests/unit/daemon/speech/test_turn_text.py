"""The text turn signal and how it joins the acoustic model (pure)."""

from __future__ import annotations

import pytest

from daemon.speech.turn_text import (
    TextTurn,
    TurnPolicy,
    acoustic_complete,
    text_turn,
    turn_complete,
    wants_text,
)


@pytest.mark.parametrize(
    "text",
    [
        "Set a timer for",
        "Turn on the lights in the",
        "What is the weather like in the",
        "Add milk, eggs and",
        "Play some jazz, um",
        "Remind me to",
        "Set a timer for...",
        "Turn off the lights and…",
        "I need to buy milk,",
    ],
)
def test_words_a_command_cannot_end_with(text: str) -> None:
    assert text_turn(text) is TextTurn.INCOMPLETE


@pytest.mark.parametrize(
    "text",
    [
        "Set a timer for ten minutes.",
        "Turn the lights on",
        "Turn the kitchen lights off.",
        "Dim the bedroom lights to 50%.",
        "Set the temperature to 21",
        "What time is it?",
        "Turn up the volume",
        "Schalte das Licht in der Küche ein.",
    ],
)
def test_words_that_can_end_a_command(text: str) -> None:
    assert text_turn(text) is TextTurn.COMPLETE


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Set a timer for ten", "en"),
        ("Remind me in 5", "en"),
        ("What is the", "en"),
        ("Stell einen Timer für", "de"),
        ("Schalte das Licht im", "de"),
        ("Stell einen Timer für zehn", "de"),
        ("Mach das Licht in der, äh,", "de"),
        ("Allume la lumière de la", "fr"),
        ("Mets un minuteur pour", "fr"),
        ("Mets un minuteur pour dix", "fr"),
        ("Allume la lumière de l'", "fr"),
        ("Enciende la luz de la", "es"),
        ("Pon un temporizador para", "es"),
        ("Pon un temporizador por diez", "es"),
    ],
)
def test_each_language_has_its_open_endings(text: str, language: str) -> None:
    assert text_turn(text, language) is TextTurn.INCOMPLETE


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Set a timer for ten minutes.", "en"),
        ("Set the temperature to 21", "en"),
        ("Turn the lights on in five minutes", "en"),
        ("What is the weather like?", "en"),
        ("Mach das Licht an.", "de"),
        ("Schalte das Licht in der Küche ein", "de"),
        ("Mach die Tür auf", "de"),
        ("Stell einen Timer für zehn Minuten", "de"),
        ("Allume la lumière de la cuisine.", "fr"),
        ("Qu'est-ce que c'est ?", "fr"),
        ("Enciende la luz de la cocina.", "es"),
        ("¿Dónde está?", "es"),
    ],
)
def test_each_language_lets_a_finished_command_end(text: str, language: str) -> None:
    assert text_turn(text, language) is TextTurn.COMPLETE


def test_a_language_without_rules_says_nothing_but_a_trailing_mark() -> None:
    assert text_turn("Zet een timer voor", "nl") is TextTurn.UNKNOWN
    assert text_turn("Zet een timer voor...", "nl") is TextTurn.INCOMPLETE
    assert text_turn("Stell einen Timer für", "de-DE") is TextTurn.INCOMPLETE


@pytest.mark.parametrize("text", ["", "   ", "...", "?!", "♪"])
def test_no_words_say_nothing(text: str) -> None:
    assert text_turn(text) is TextTurn.UNKNOWN


POLICY = TurnPolicy(threshold=0.85, text=True, text_threshold=0.5)


def test_incomplete_words_veto_a_confident_model() -> None:
    assert acoustic_complete(POLICY, 0.98, True)
    assert not turn_complete(POLICY, 0.98, True, TextTurn.INCOMPLETE)


def test_complete_words_lower_the_bar_to_the_text_threshold() -> None:
    assert not acoustic_complete(POLICY, 0.6, False)
    assert turn_complete(POLICY, 0.6, False, TextTurn.COMPLETE)
    assert not turn_complete(POLICY, 0.4, False, TextTurn.COMPLETE)


def test_without_words_the_model_decides_alone() -> None:
    assert turn_complete(POLICY, 0.9, True, TextTurn.UNKNOWN)
    assert not turn_complete(POLICY, 0.6, False, TextTurn.UNKNOWN)


def test_text_off_is_the_acoustic_model_alone() -> None:
    off = TurnPolicy(threshold=0.85, text=False)
    assert turn_complete(off, 0.9, True, TextTurn.INCOMPLETE)
    assert not wants_text(off, 0.9, True)


def test_the_words_are_waited_for_only_when_they_could_change_the_answer() -> None:
    assert wants_text(POLICY, 0.9, True)  # could veto
    assert wants_text(POLICY, 0.6, False)  # could lower the bar
    assert not wants_text(POLICY, 0.3, False)  # incomplete whatever they say


def test_thresholds_outside_zero_to_one_are_refused() -> None:
    with pytest.raises(ValueError):
        TurnPolicy(threshold=1.5)
