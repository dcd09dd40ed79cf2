"""Speech profiles: the turn settings, who ends a turn, a request's bounds, and
``vad_sensitivity``."""

from __future__ import annotations

from dataclasses import replace

import pytest

from daemon.config import Config, parse_config
from daemon.engines.asr.base import TranscribeOptions
from daemon.runtime.profiles import (
    AGGRESSIVE_PAUSES,
    RELAXED_PAUSES,
    REQUEST_SPEAKER_WAIT_S,
    SPEAKER_WAIT_S,
    Profile,
    Sensitivity,
    base_settings,
    session_profile,
    session_profiles,
    with_sensitivity,
)
from daemon.speech.turn_text import TurnPolicy


def config(text: str = "") -> Config:
    return parse_config(text, "test-config.yaml")


def test_every_profile_joins_the_words_to_the_turn_model_as_configured():
    default = base_settings(config())
    assert default.turn == TurnPolicy(threshold=None, text=True, text_threshold=0.5)
    tuned = config("vad:\n  turn_text: false\n  turn_text_threshold: 0.65\n")
    for chosen in session_profiles(tuned).values():
        assert chosen.settings.turn == TurnPolicy(text=False, text_threshold=0.65)


def test_a_server_ended_request_ends_its_own_turn_within_the_configured_limits():
    chosen = session_profile(
        config("vad:\n  max_utterance_ms: 12000\n  no_speech_ms: 5000\n"),
        Profile.SERVER_ENDED,
    )
    assert chosen.ends_turn
    endpoint = chosen.settings.endpoint
    assert (endpoint.max_utterance_s, endpoint.no_speech_s) == (12.0, 5.0)
    assert endpoint.turn and endpoint.max_pause_s == 1.6


def test_a_client_ended_request_keeps_the_daemon_wide_endpointing():
    settings = config()
    chosen = session_profile(settings, Profile.CLIENT_ENDED)
    assert not chosen.ends_turn
    assert chosen.settings == base_settings(settings)
    assert chosen.settings.endpoint.max_utterance_s is None
    assert chosen.settings.endpoint.no_speech_s is None


def test_only_the_server_ended_request_ends_turns_and_has_the_limits():
    for profile, chosen in session_profiles(config()).items():
        owns = profile is Profile.SERVER_ENDED
        assert chosen.ends_turn is owns, profile
        assert (chosen.settings.endpoint.no_speech_s is not None) is owns, profile
        assert (chosen.settings.endpoint.max_utterance_s is not None) is owns, profile


def test_the_profiles_are_named_by_what_they_do_never_by_a_protocol():
    for profile in Profile:
        assert not any(word in profile.name for word in ("WYOMING", "WILLOW", "REALTIME", "RTC"))


def test_a_request_carries_its_cap_deadline_and_speaker_wait():
    settings = config(
        "limits:\n  max_audio_s: 30\n  max_file_audio_s: 600\n  request_timeout_s: 45\n"
    )
    by = session_profiles(settings)
    for live in (Profile.CLIENT_ENDED, Profile.SERVER_ENDED):
        # A live stream is paced by its speaker: the deadline starts at its end.
        assert not by[live].deadline_counts_audio
        assert by[live].speaker_wait_s == REQUEST_SPEAKER_WAIT_S
        assert (by[live].max_audio_s, by[live].deadline_s) == (30.0, 45.0)
    for upload in (Profile.DEVICE_UPLOAD, Profile.DEVICE_TURN, Profile.PUSH_TO_TALK):
        assert by[upload].deadline_counts_audio
        assert by[upload].speaker_wait_s == SPEAKER_WAIT_S
    assert by[Profile.DEVICE_UPLOAD].settings.endpoint.turn is False
    assert by[Profile.DEVICE_TURN].settings.endpoint.turn is True
    file = by[Profile.FILE]
    assert (file.max_audio_s, file.deadline_s, file.speaker_wait_s) == (600.0, 45.0, None)


def test_the_default_sensitivity_changes_nothing():
    settings = base_settings(config())
    assert with_sensitivity(settings, Sensitivity.DEFAULT, 0.85) is settings


def test_relaxed_waits_longer_and_needs_a_surer_model():
    settings = base_settings(config())
    relaxed = with_sensitivity(settings, Sensitivity.RELAXED, 0.85)
    assert relaxed.turn.threshold == pytest.approx(0.925)
    assert relaxed.turn.text_threshold == pytest.approx(0.75)
    assert relaxed.turn.text is True
    assert relaxed.endpoint.max_pause_s == pytest.approx(1.6 * RELAXED_PAUSES)
    assert relaxed.endpoint.trailing_silence_s == pytest.approx(0.7 * RELAXED_PAUSES)
    # Nothing else moves: the model is asked at the same moment, speculation as before.
    assert relaxed.endpoint.turn_check_s == settings.endpoint.turn_check_s
    assert relaxed.endpoint.speculative_silence_s == settings.endpoint.speculative_silence_s
    assert relaxed.padding_s == settings.padding_s


def test_aggressive_ends_sooner_but_never_below_the_models_own_boundary():
    settings = base_settings(config())
    aggressive = with_sensitivity(settings, Sensitivity.AGGRESSIVE, 0.85)
    assert aggressive.turn.threshold == pytest.approx(0.675)
    assert aggressive.turn.text_threshold == pytest.approx(0.5)  # already at 0.5
    assert aggressive.endpoint.max_pause_s == pytest.approx(1.6 * AGGRESSIVE_PAUSES)
    assert aggressive.endpoint.trailing_silence_s == pytest.approx(0.7 * AGGRESSIVE_PAUSES)
    # A threshold set below the boundary is never raised by "aggressive".
    low = with_sensitivity(settings, Sensitivity.AGGRESSIVE, 0.4)
    assert low.turn.threshold == pytest.approx(0.4)


def test_sensitivities_order_the_end_of_turn():
    settings = session_profile(config(), Profile.SERVER_ENDED).settings
    by = {s: with_sensitivity(settings, s, 0.85) for s in Sensitivity}

    def threshold(s: Sensitivity) -> float:
        return by[s].turn.threshold if by[s].turn.threshold is not None else 0.85

    order = [Sensitivity.AGGRESSIVE, Sensitivity.DEFAULT, Sensitivity.RELAXED]
    assert [threshold(s) for s in order] == sorted(threshold(s) for s in order)
    assert [by[s].endpoint.max_pause_s for s in order] == sorted(
        by[s].endpoint.max_pause_s for s in order
    )
    # The limits a server-ended turn needs stay as configured.
    for s in order:
        assert by[s].endpoint.no_speech_s == 8.0 and by[s].endpoint.max_utterance_s == 15.0


def test_an_explicit_acoustic_threshold_is_the_one_moved():
    settings = base_settings(config())
    pinned = replace(settings, turn=TurnPolicy(threshold=0.7))
    relaxed = with_sensitivity(pinned, Sensitivity.RELAXED, 0.85)
    assert relaxed.turn.threshold == pytest.approx(0.85)


def test_a_language_the_default_does_not_speak_goes_to_a_model_that_does(tmp_path):
    from daemon.errors import UnsupportedLanguage
    from tests.fakes import FakeAsr, fake_config, fake_engines

    fakes = fake_engines(fake_config(tmp_path))
    engines = fakes.engines
    default = engines.asr_model(None)
    german = FakeAsr("base", languages=("en", "de", "fr"))
    engines.asr["base"] = german
    assert engines.asr_model(None, "de") is german  # Home Assistant names no model
    assert engines.asr_model(None, "DE") is german
    assert engines.asr_model(None, "en") is default  # the default speaks it: kept
    assert engines.asr_model(None, "auto") is default
    assert engines.asr_model(None) is default
    # A model named outright is that model, whatever the language.
    with pytest.raises(UnsupportedLanguage):
        options = TranscribeOptions(language="de")
        engines.asr_model(default.name, "de").check_options(options)
    # Nobody speaks it: the default refuses, naming what it speaks.
    with pytest.raises(UnsupportedLanguage):
        engines.asr_model(None, "ja").check_options(TranscribeOptions(language="ja"))
    fakes.close()
