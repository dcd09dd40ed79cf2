"""The decode window and its guard: pure functions, no model."""

from __future__ import annotations

import numpy as np
import pytest

from daemon.engines.asr.window import (
    FULL_S,
    Decode,
    Verdict,
    choose_window,
    compression_ratio,
    echo_at,
    echoes_prompt,
    judge,
    narrowband,
    repeats,
    unloop,
)

LOOP = "What time is it? What time is it? What time is it? What time is it? What time is it?"
"""The failure a window cut close to the speech gives (faster-whisper #171, #1006)."""


def decode(text: str, **changes: object) -> Decode:
    fields: dict[str, object] = {
        "text": text,
        "tokens": len(text.split()) + 2,
        "audio_s": 2.0,
        "ended": True,
        "no_speech_prob": 0.01,
        "avg_logprob": -0.2,
    }
    fields.update(changes)
    return Decode(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("audio_s", "window_s"),
    [
        (0.5, 10.0),
        (8.9, 10.0),
        (9.1, 15.0),
        (14.0, 15.0),
        (18.5, 20.0),
        (19.5, FULL_S),
        (40, FULL_S),
    ],
)
def test_the_window_holds_the_audio_and_a_margin(audio_s: float, window_s: float) -> None:
    assert choose_window(audio_s) == window_s


def test_the_looping_transcript_is_caught() -> None:
    assert repeats(LOOP)
    assert judge(decode(LOOP)) is Verdict.REPEATS
    # Even where the decode ended on end-of-text and its scores look sure.
    assert judge(decode(LOOP, tokens=10, avg_logprob=-0.05)) is Verdict.REPEATS


def test_a_sentence_said_twice_in_a_row_is_a_loop() -> None:
    assert repeats("Turn on the kitchen lights. Turn on the kitchen lights.")


@pytest.mark.parametrize(
    "text",
    [
        "Turn on the kitchen lights.",
        "No, no, no.",
        "Turn it up, turn it up.",
        "Set a timer for 10 minutes and a timer for 20 minutes.",
        "Dim the lights in the living room and the lights in the kitchen.",
        "",
    ],
)
def test_ordinary_commands_pass(text: str) -> None:
    assert not repeats(text)
    assert judge(decode(text)) is Verdict.OK


def test_a_high_compression_ratio_is_a_loop() -> None:
    text = "la" * 60
    assert compression_ratio(text) > 2.4 and not repeats(text)
    assert judge(decode(text)) is Verdict.REPEATS


def test_a_decode_cut_at_the_length_limit_is_redone() -> None:
    assert judge(decode("Turn on the kitchen", ended=False)) is Verdict.NO_END


def test_more_tokens_than_speech_can_hold() -> None:
    text = "Please turn on the lights in the kitchen and the hall."
    assert judge(decode(text, tokens=20, audio_s=1.0)) is Verdict.TOO_MANY_TOKENS
    assert judge(decode(text, tokens=15, audio_s=1.0)) is Verdict.OK  # the floor
    assert judge(decode(text, tokens=100, audio_s=10.0)) is Verdict.OK


def test_whisper_hearing_no_speech_where_the_vad_did() -> None:
    assert judge(decode("Thank you.", no_speech_prob=0.9)) is Verdict.NO_SPEECH


def test_an_unsure_decode_goes_to_the_full_window() -> None:
    assert judge(decode("Turn on the kitchen lights.", avg_logprob=-1.3)) is Verdict.UNSURE


def _tone_mix(freqs: list[float], seconds: float = 1.0, noise: float = 0.0) -> np.ndarray:
    t = np.arange(int(16000 * seconds)) / 16000
    out = sum(np.sin(2 * np.pi * f * t) for f in freqs)
    rng = np.random.default_rng(1)
    return (np.asarray(out) + noise * rng.standard_normal(t.size)).astype(np.float32)


def test_telephone_band_audio_is_narrowband() -> None:
    assert narrowband(_tone_mix([300.0, 1200.0, 3400.0]))
    # Wideband speech has some energy above 4 kHz (fricatives, a microphone's noise).
    assert not narrowband(_tone_mix([300.0, 1200.0, 3400.0, 5000.0]))
    assert not narrowband(_tone_mix([300.0], noise=0.05))


def test_silence_and_scraps_are_not_called_narrowband() -> None:
    assert not narrowband(np.zeros(16000, np.float32))
    assert not narrowband(_tone_mix([300.0], seconds=0.05))


def test_a_loop_the_full_window_kept_is_cut_to_its_first_time() -> None:
    # The 30 s path's temperature fallback returned this on the held-out set.
    fortnite = "I'll tell you my fortnite, I'll tell you my fortnite, I'll tell you my fortnite"
    assert unloop(fortnite) == "I'll tell you my fortnite"
    assert unloop(LOOP) == "What time is it?"
    assert unloop("Set a timer. Play jazz please, play jazz please, play jazz please. Thanks.") == (
        "Set a timer. Play jazz please. Thanks."
    )
    assert not repeats(unloop(fortnite)) and not repeats(unloop(LOOP))


def test_the_start_of_a_sentence_again_after_it_is_a_loop_that_stopped() -> None:
    # tiny.en in a 10 s window, 0.16 s of silence after "Turn on the Reading Lamp."
    echo = "Turn on the reading lamp. Turn on the reading"
    assert echo_at(echo) == len("Turn on the reading lamp.")
    assert judge(decode(echo)) is Verdict.REPEATS
    assert unloop(echo) == "Turn on the reading lamp."
    assert unloop("What time is it? What time") == "What time is it?"


@pytest.mark.parametrize(
    "text",
    [
        "Turn on the lamp. Turn on the fan",  # another command, unfinished
        "Turn on the lamp. Turn on the lamp",  # the whole sentence again: a repeat, not an echo
        "Turn on the lamp. Turn",  # one word
        "Turn on the lamp. Turn on the.",  # ends as a sentence of its own
        "Turn on the reading lamp",
        "Stop. Stop",
        "",
    ],
)
def test_what_does_not_echo_the_sentence_before_is_no_echo(text: str) -> None:
    assert echo_at(text) is None


@pytest.mark.parametrize(
    "text", ["no no no", "turn it up, turn it up", "Turn on the kitchen lights.", ""]
)
def test_what_is_not_a_loop_is_left_alone(text: str) -> None:
    assert unloop(text) == text


PROMPT = "Kitchen, porch. Niamh's Lamp, Glimmerbox, Dachboden, Aoife's Room."
"""A client's names, then the household's."""


@pytest.mark.parametrize(
    "text",
    [
        "Niamh's Lamp, Glimmerbox.",  # the prompt written instead of the speech
        "Turn on the glimmerbox, Dachboden, Aoife's Room",
        "kitchen, porch",
    ],
)
def test_a_decode_that_copies_the_prompts_names_is_redone_without_it(text: str) -> None:
    assert echoes_prompt(text, PROMPT)
    assert judge(decode(text, prompt=PROMPT)) is Verdict.PROMPT_ECHO


@pytest.mark.parametrize(
    "text",
    [
        "Turn on Niamh's Lamp.",
        "Switch off the Glimmerbox in Aoife's Room.",
        "Glimmerbox, Niamh's Lamp.",  # two names, not in the prompt's order
        "Dachbodenlicht, Aoife's Room",  # a longer word is not the name
    ],
)
def test_a_command_that_names_one_or_two_passes(text: str) -> None:
    assert not echoes_prompt(text, PROMPT)
    assert not echoes_prompt(text, None)
    assert judge(decode(text, prompt=PROMPT)) is Verdict.OK


def test_two_names_said_in_the_prompts_order_cost_a_second_decode() -> None:
    # Rare and harmless: the decode without the prompt gives the answer, one decode later.
    assert echoes_prompt("Turn on the kitchen, porch and hall lights", PROMPT)
