"""``session.update`` in both shapes, and the session object written back."""

from __future__ import annotations

from dataclasses import replace

import pytest

from daemon.runtime.profiles import Profile, Sensitivity
from protocols.realtime.audio import PCM, PCMA, PCMU
from protocols.realtime.config import (
    Defaults,
    SessionConfig,
    render,
    reply_instructions,
    updated,
)
from protocols.realtime.wire import Refused, beta_event, error

DEFAULTS = Defaults("Be helpful.", "en_US-joe-medium", "tiny.en", 700, 120)


def test_ga_and_beta_shapes_mean_the_same():
    ga = updated(
        SessionConfig(),
        {
            "type": "realtime",
            "output_modalities": ["text"],
            "audio": {
                "input": {"format": {"type": "audio/pcmu"}, "turn_detection": None},
                "output": {"format": {"type": "audio/pcma"}, "voice": "alloy", "speed": 1.2},
            },
            "max_output_tokens": 64,
        },
    )
    beta = updated(
        SessionConfig(),
        {
            "modalities": ["text"],
            "input_audio_format": "g711_ulaw",
            "output_audio_format": "g711_alaw",
            "turn_detection": None,
            "voice": "alloy",
            "speed": 1.2,
            "max_response_output_tokens": 64,
        },
    )
    assert ga == beta
    assert (ga.input_format, ga.output_format, ga.turn_detection) == (PCMU, PCMA, None)
    assert not ga.speaks and ga.max_output_tokens == 64 and ga.voice == "alloy"


def test_an_update_changes_only_what_it_names():
    first = updated(SessionConfig(), {"instructions": "Rhyme.", "temperature": 0.8})
    second = updated(first, {"audio": {"output": {"voice": "marin"}}})
    assert (second.instructions, second.temperature, second.voice) == ("Rhyme.", 0.8, "marin")
    assert second.input_format is PCM


@pytest.mark.parametrize(
    ("turn", "profile", "sensitivity"),
    [
        ({"type": "server_vad", "silence_duration_ms": 500}, Profile.HANDS_FREE_SILENCE, "default"),
        ({"type": "semantic_vad"}, Profile.HANDS_FREE, "default"),
        ({"type": "semantic_vad", "eagerness": "low"}, Profile.HANDS_FREE, "relaxed"),
        ({"type": "semantic_vad", "eagerness": "high"}, Profile.HANDS_FREE, "aggressive"),
    ],
)
def test_turn_detection_maps_to_a_profile_and_a_sensitivity(turn, profile, sensitivity):
    config = updated(SessionConfig(), {"audio": {"input": {"turn_detection": turn}}})
    assert config.turn_detection is not None
    assert config.turn_detection.profile is profile
    assert config.turn_detection.sensitivity is Sensitivity(sensitivity)


@pytest.mark.parametrize(
    "session",
    [
        {"audio": {"input": {"turn_detection": {"type": "magic"}}}},
        {"audio": {"input": {"turn_detection": {"type": "semantic_vad", "eagerness": "max"}}}},
        {"audio": {"output": {"speed": 3}}},
        {"audio": {"video": {}}},
        {"temperature": "hot"},
        {"max_output_tokens": 5000},
        {"instructions": 5},
        "not an object",
    ],
)
def test_bad_values_are_refused_with_the_parameter(session):
    with pytest.raises(Refused) as refused:
        updated(SessionConfig(), session)
    assert refused.value.message


def test_ignored_parameters_are_accepted():
    config = updated(SessionConfig(), {"tracing": "auto", "truncation": "auto", "include": None})
    assert config == SessionConfig()


def test_the_session_object_names_hearths_values():
    config = updated(SessionConfig(model="gpt-realtime"), {"audio": {"output": {"speed": 1.1}}})
    ga = render(config, DEFAULTS, "sess_1", beta=False)
    assert ga["instructions"] == "Be helpful."
    output = {"format": PCM.describe(), "voice": DEFAULTS.voice, "speed": 1.1}
    assert ga["audio"]["output"] == output
    detection = ga["audio"]["input"]["turn_detection"]
    assert detection["silence_duration_ms"] == 700 and detection["prefix_padding_ms"] == 120
    assert ga["audio"]["input"]["transcription"]["model"] == "tiny.en"
    beta = render(config, DEFAULTS, "sess_1", beta=True)
    assert beta["modalities"] == ["text", "audio"] and beta["input_audio_format"] == "pcm16"
    assert beta["max_response_output_tokens"] == "inf"


def test_system_items_follow_the_instructions():
    assert SessionConfig().chat_options([]).instructions is None
    assert SessionConfig().chat_options(["Note."], "Be helpful.").instructions == (
        "Be helpful.\n\nNote."
    )
    mine = SessionConfig(instructions="Mine.", temperature=0.5, max_output_tokens=9)
    options = mine.chat_options(["Note."], "Be helpful.")
    assert (options.instructions, options.temperature, options.max_tokens) == (
        "Be helpful.\n\nMine.\n\nNote.",
        0.5,
        9,
    )
    written = replace(mine, output_modalities=("text",))
    assert written.chat_options(["Note."], "Be helpful.").instructions == "Mine.\n\nNote."


def test_spoken_replies_keep_the_configured_prompt_before_the_clients():
    configured = "Answer briefly, for the voice."
    # Spoken: the configured prompt first (its evaluated state is the prompt's start).
    assert reply_instructions("Be a pirate.", [], configured, True) == (
        "Answer briefly, for the voice.\n\nBe a pirate."
    )
    # Written: the client's instructions alone, as OpenAI's API has them.
    assert reply_instructions("Be a pirate.", [], configured, False) == "Be a pirate."
    # A client sending back the instructions it was shown gets them once.
    shown = f"{configured} Be a pirate."
    assert reply_instructions(shown, [], configured, True) == shown
    # None or empty: the configured prompt (None), then the system messages.
    assert reply_instructions(None, [], configured, True) is None
    assert reply_instructions(" ", [], configured, True) is None
    assert reply_instructions("", [], configured, False) == ""
    assert reply_instructions(None, ["Note."], configured, True) == f"{configured}\n\nNote."


def test_errors_have_openais_shape_and_beta_names():
    body = error("unknown_event", "no", client_event="e1")
    assert body["type"] == "error" and body["event_id"].startswith("event_")
    assert body["error"] == {
        "type": "invalid_request_error",
        "code": "unknown_event",
        "message": "no",
        "param": None,
        "event_id": "e1",
    }
    item = {"type": "message", "content": [{"type": "output_audio", "transcript": "x"}]}
    renamed = beta_event({"type": "conversation.item.added", "item": item})
    assert renamed is not None and renamed["type"] == "conversation.item.created"
    assert renamed["item"]["content"][0]["type"] == "audio"
    assert beta_event({"type": "conversation.item.done"}) is None
