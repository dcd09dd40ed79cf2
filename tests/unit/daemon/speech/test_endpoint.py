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
