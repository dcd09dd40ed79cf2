"""The prompt that biases a decode towards a house's names and terms."""

from __future__ import annotations

from daemon.engines.asr.prompt import MAX_ITEMS, MAX_PROMPT_CHARS, bias_prompt


def test_names_come_before_terms_without_duplicates():
    prompt = bias_prompt(["Ada's lamp", "Kitchen", "kitchen"], ["thermostat", "Kitchen"])
    assert prompt == "Ada's lamp, Kitchen, thermostat."


def test_nothing_to_say_is_no_prompt():
    assert bias_prompt(None, None) is None
    assert bias_prompt([], ["", "   "]) is None


def test_what_a_client_sends_is_bounded():
    assert bias_prompt("Kitchen", {"a": 1}) is None  # not lists
    assert bias_prompt([1, None, "Hall", ["x"]], None) == "Hall."
    assert bias_prompt(["x" * 65, "Porch"], None) == "Porch."
    many = [f"Room {i}" for i in range(1000)]
    prompt = bias_prompt(many, ["never reached"])
    assert prompt is not None and len(prompt) <= MAX_PROMPT_CHARS
    assert prompt.startswith("Room 0, Room 1,") and "never" not in prompt
    assert bias_prompt(["a"] * MAX_ITEMS, ["Porch"]) == "a."  # past MAX_ITEMS: ignored
