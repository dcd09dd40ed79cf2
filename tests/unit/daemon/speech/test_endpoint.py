"""The endpointer is a pure state machine: drive it with (seconds, is_speech) steps."""

from daemon.speech.endpoint import EndpointConfig, Endpointer, EndpointState

FRAME = 0.03
CFG = EndpointConfig(speech_start_s=0.09, speculative_silence_s=0.24, trailing_silence_s=0.6)


def drive(ep: Endpointer, pattern: str) -> list[tuple[str, float]]:
    """'S' = a speech frame, '.' = a silent frame."""
    out = []
    for ch in pattern:
        out += [(e.kind, round(e.at_s, 2)) for e in ep.process(FRAME, ch == "S")]
    return out


def test_silence_never_starts():
    ep = Endpointer(CFG)
    assert drive(ep, "." * 100) == []
    assert ep.state is EndpointState.WAITING


def test_short_blip_is_not_speech():
    ep = Endpointer(CFG)
    assert drive(ep, "..SS....S.....") == []


def test_utterance_start_pause_end_times():
    ep = Endpointer(CFG)
    events = drive(ep, "." * 10 + "S" * 20 + "." * 30)
    assert events == [("started", 0.3), ("paused", 0.9), ("ended", 0.9)]
    assert ep.state is EndpointState.ENDED
    assert round(ep.speech_start_s, 2) == 0.3 and round(ep.speech_end_s, 2) == 0.9


def test_pause_then_resume_is_one_utterance():
    ep = Endpointer(CFG)
    events = drive(ep, "S" * 10 + "." * 10 + "S" * 10 + "." * 25)
    kinds = [k for k, _ in events]
    assert kinds == ["started", "paused", "resumed", "paused", "ended"]
    assert ep.speech_start_s == 0.0


def test_short_gap_does_not_pause():
    ep = Endpointer(CFG)
    events = drive(ep, "S" * 10 + "." * 5 + "S" * 10)
    assert [k for k, _ in events] == ["started"]
    assert ep.state is EndpointState.SPEECH


def test_speech_after_end_resumes_until_reset():
    ep = Endpointer(CFG)
    drive(ep, "S" * 10 + "." * 30)
    assert ep.state is EndpointState.ENDED
    assert [k for k, _ in drive(ep, "SSSS")] == ["resumed"]
    ep.reset()
    assert ep.state is EndpointState.WAITING
    assert [k for k, _ in drive(ep, "." * 3 + "S" * 4)] == ["started"]


def test_force_end_cuts_an_endless_utterance():
    ep = Endpointer(CFG)
    drive(ep, "S" * 50)
    assert [(e.kind, round(e.at_s, 2)) for e in ep.force_end()] == [("ended", 1.5)]
    assert ep.state is EndpointState.ENDED and ep.force_end() == []


# --------------------------------------------------------------------------- turn model

TURN = EndpointConfig(
    speech_start_s=0.09,
    speculative_silence_s=0.24,
    trailing_silence_s=0.6,
    turn=True,
    turn_check_s=0.18,
    turn_recheck_s=0.3,
    max_pause_s=1.5,
)


def test_turn_checks_start_early_and_repeat_as_the_silence_grows():
    ep = Endpointer(TURN)
    events = drive(ep, "S" * 10 + "." * 40)
    # Paused (speculation) at the first check, then a check every 0.3 s; no end before
    # max_pause_s without an answer, whatever trailing_silence_s says.
    assert events[:3] == [("started", 0.0), ("paused", 0.3), ("turn_check", 0.3)]
    checks = [k for k, _ in events].count("turn_check")
    assert checks == 4  # at 0.18, 0.48, 0.78, 1.08 s of silence
    assert ep.state is EndpointState.PAUSED
    assert drive(ep, "." * 10)[-1] == ("ended", 0.3)  # 1.5 s of silence


def test_complete_ends_at_once_and_incomplete_waits():
    ep = Endpointer(TURN)
    drive(ep, "S" * 10 + "." * 6)
    assert ep.turn_decided(0.3, complete=False) == []
    assert ep.state is EndpointState.PAUSED
    ended = ep.turn_decided(0.3, complete=True)
    assert [(e.kind, round(e.at_s, 2)) for e in ended] == [("ended", 0.3)]
    assert ep.state is EndpointState.ENDED
    assert ep.turn_decided(0.3, complete=True) == []  # decided once


def test_a_stale_answer_after_speech_resumed_is_ignored():
    ep = Endpointer(TURN)
    drive(ep, "S" * 10 + "." * 6 + "S" * 5)  # "set a timer for ... ten minutes"
    assert ep.state is EndpointState.SPEECH
    assert ep.turn_decided(0.3, complete=True) == []
    assert ep.state is EndpointState.SPEECH
    # The check after the new speech starts over at turn_check_s.
    events = drive(ep, "." * 6)
    assert [k for k, _ in events] == ["paused", "turn_check"]


def test_an_unasked_pause_ends_at_the_fixed_silence_and_the_next_is_asked_again():
    ep = Endpointer(TURN)
    drive(ep, "S" * 10 + "." * 6)  # the first check, at 0.18 s of silence
    assert ep.turn_unasked(0.3) == []
    events = drive(ep, "." * 14)  # no more checks; 0.6 s of silence ends it, not 1.5 s
    assert [k for k, _ in events] == ["ended"]
    assert abs(ep.now_s - 0.3 - 0.6) < 1e-6
    # Speech resuming asks the model again on its next pause.
    ep.reset()
    events = drive(ep, "S" * 10 + "." * 30)
    assert "turn_check" in [k for k, _ in events] and "ended" not in [k for k, _ in events]


def test_unasked_after_the_fixed_silence_ends_at_once_and_a_stale_one_is_ignored():
    ep = Endpointer(TURN)
    drive(ep, "S" * 10 + "." * 25)  # 0.75 s of silence, past trailing_silence_s
    assert [(e.kind, round(e.at_s, 2)) for e in ep.turn_unasked(0.3)] == [("ended", 0.3)]
    other = Endpointer(TURN)
    drive(other, "S" * 10 + "." * 6 + "S" * 5)
    assert other.turn_unasked(0.3) == [] and other.state is EndpointState.SPEECH


def test_without_the_turn_model_the_fixed_silence_decides():
    ep = Endpointer(CFG)
    events = drive(ep, "S" * 10 + "." * 30)
    assert "turn_check" not in [k for k, _ in events]
    assert ep.turn_decided(0.3, complete=True) == []


EARLY = EndpointConfig(
    speech_start_s=0.09,
    speculative_silence_s=0.24,
    trailing_silence_s=0.6,
    turn=True,
    turn_check_s=0.18,
    turn_early_check_s=0.06,
    max_pause_s=1.5,
)


def test_an_early_question_pauses_sooner_and_is_asked_once_more_at_the_usual_point():
    ep = Endpointer(EARLY)
    events = drive(ep, "S" * 10 + "." * 10)
    # Speculation and the first question at 60 ms of silence, the second at 180 ms;
    # no more without a recheck interval.
    assert events == [("started", 0.0), ("paused", 0.3), ("turn_check", 0.3), ("turn_check", 0.3)]
    assert ep.pause_s == ep.first_check_s == 0.06
    ended = ep.turn_decided(0.3, complete=True)
    assert [(e.kind, e.reason) for e in ended] == [("ended", "turn")]


def test_an_early_question_starts_over_after_speech_resumes():
    ep = Endpointer(EARLY)
    drive(ep, "S" * 10 + "." * 3)  # asked early; the person goes on
    events = drive(ep, "S" * 5 + "." * 3)
    assert [k for k, _ in events] == ["resumed", "paused", "turn_check"]


def test_the_longest_utterance_ends_once_while_speech_goes_on():
    # A recording sent at once stays ENDED until its client's audio-stop: speech going on
    # past the limit must not resume and end the utterance again on every frame.
    ep = Endpointer(EndpointConfig(max_utterance_s=1.0))
    events = []
    for _ in range(100):  # 3.2 s of unbroken speech in 32 ms frames
        events += ep.process(0.032, True)
    kinds = [e.kind for e in events]
    assert kinds == ["started", "ended"], kinds
    assert events[-1].reason == "longest-utterance"
    ep.reset()
    more = []
    for _ in range(10):
        more += ep.process(0.032, True)
    assert [e.kind for e in more] == ["started"]  # the next utterance starts as usual
