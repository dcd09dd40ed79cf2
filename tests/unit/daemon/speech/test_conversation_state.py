"""The conversation's decisions (pure: no models, tasks or clocks)."""

from __future__ import annotations

import pytest

from daemon.errors import InvalidRequest
from daemon.speech import conversation_state as cs
from daemon.speech.conversation_state import Action, MicState, Mode, Phase, Replying, State


def run(state: State, *signals: cs.Signal, playing: bool = False) -> tuple[State, list[Action]]:
    actions: list[Action] = []
    for signal in signals:
        decision = cs.decide(state, signal, playing)
        state = decision.state
        actions.extend(decision.actions)
    return state, actions


def test_a_new_conversation_is_idle() -> None:
    assert State().phase is Phase.IDLE


@pytest.mark.parametrize(
    ("mode", "phase"),
    [
        (Mode.PUSH_TO_TALK, Phase.LISTENING),
        (Mode.HANDS_FREE, Phase.LISTENING),
        (Mode.WAKE, Phase.WAITING_FOR_WAKE),
    ],
)
def test_listen_opens_a_session_in_the_modes_phase(mode: Mode, phase: Phase) -> None:
    state, actions = run(State(), cs.Listen(mode, replies=True))
    assert state.phase is phase
    assert actions == [Action.OPEN_SESSION]


def test_wake_word_moves_from_waiting_to_listening_and_back() -> None:
    state, _ = run(State(), cs.Listen(Mode.WAKE, replies=False), cs.WakeHeard())
    assert state.phase is Phase.LISTENING
    state, _ = run(state, cs.WakeAgain())
    assert state.phase is Phase.WAITING_FOR_WAKE


def test_wake_notes_outside_wake_mode_change_nothing() -> None:
    state, _ = run(State(), cs.Listen(Mode.HANDS_FREE, replies=False))
    assert run(state, cs.WakeAgain(), cs.WakeHeard()) == (state, [])


def test_a_heard_utterance_is_answered_then_spoken_then_over() -> None:
    state, _ = run(State(), cs.Listen(Mode.HANDS_FREE, replies=True))
    state, actions = run(state, cs.Heard("turn on the lights", known_speaker=False))
    assert actions == [Action.START_REPLY] and state.phase is Phase.THINKING
    state, _ = run(state, cs.ReplyAudio())
    assert state.phase is Phase.SPEAKING
    state, _ = run(state, cs.ReplyOver())
    assert state.phase is Phase.LISTENING and state.replying is Replying.NONE


def test_transcripts_only_never_reply() -> None:
    state, _ = run(State(), cs.Listen(Mode.HANDS_FREE, replies=False))
    assert run(state, cs.Heard("hello", known_speaker=True))[1] == []


def test_an_empty_utterance_is_not_answered() -> None:
    state, _ = run(State(), cs.Listen(Mode.HANDS_FREE, replies=True))
    assert run(state, cs.Heard("  ", known_speaker=True)) == (state, [])


def test_speech_during_a_reply_is_barge_in() -> None:
    state, _ = run(
        State(),
        cs.Listen(Mode.HANDS_FREE, replies=True),
        cs.Heard("tell me a story", known_speaker=False),
        cs.ReplyAudio(),
    )
    state, actions = run(state, cs.VoiceOn())
    assert actions == [Action.CANCEL_REPLY]
    assert state.phase is Phase.LISTENING


def test_speech_while_the_client_still_plays_a_written_reply_stops_it() -> None:
    state, _ = run(State(), cs.Listen(Mode.HANDS_FREE, replies=True))
    assert run(state, cs.VoiceOn(), playing=True)[1] == [Action.CANCEL_REPLY]
    assert run(state, cs.VoiceOn(), playing=False)[1] == []


def test_a_new_answer_replaces_the_reply_under_way() -> None:
    state, _ = run(
        State(),
        cs.Listen(Mode.HANDS_FREE, replies=True),
        cs.Heard("first", known_speaker=False),
    )
    assert run(state, cs.Heard("second", known_speaker=False))[1] == [
        Action.CANCEL_REPLY,
        Action.START_REPLY,
    ]


def test_a_new_listen_stops_the_reply_and_reopens() -> None:
    state, _ = run(
        State(), cs.Listen(Mode.PUSH_TO_TALK, replies=True), cs.Stop(), cs.Ask(), cs.ReplyAudio()
    )
    state, actions = run(state, cs.Listen(Mode.PUSH_TO_TALK, replies=True))
    assert actions == [Action.CANCEL_REPLY, Action.OPEN_SESSION]
    assert state.phase is Phase.LISTENING


def test_stop_finishes_push_to_talk_only() -> None:
    state, _ = run(State(), cs.Listen(Mode.PUSH_TO_TALK, replies=True))
    state, actions = run(state, cs.Stop())
    assert actions == [Action.FINISH_UTTERANCE] and state.hearing is MicState.IDLE
    with pytest.raises(InvalidRequest, match="stop"):
        run(state, cs.Stop())
    hands_free, _ = run(State(), cs.Listen(Mode.HANDS_FREE, replies=True))
    with pytest.raises(InvalidRequest):
        run(hands_free, cs.Stop())


def test_mute_closes_hearing_and_lets_the_reply_play_on() -> None:
    state, _ = run(
        State(),
        cs.Listen(Mode.HANDS_FREE, replies=True),
        cs.Heard("what time is it", known_speaker=False),
        cs.ReplyAudio(),
    )
    state, actions = run(state, cs.Mute())
    assert actions == [Action.CLOSE_SESSION]
    assert state.phase is Phase.SPEAKING and state.hearing is MicState.IDLE


@pytest.mark.parametrize("mode", [Mode.HANDS_FREE, Mode.WAKE])
def test_the_household_gate_ignores_unknown_voices_hands_free(mode: Mode) -> None:
    state, _ = run(State(), cs.Listen(mode, replies=True, require_known=True))
    state, actions = run(state, cs.Heard("open the door", known_speaker=False))
    assert actions == [Action.IGNORE] and state.replying is Replying.NONE
    assert run(state, cs.Heard("open the door", known_speaker=True))[1] == [Action.START_REPLY]


def test_the_gate_does_not_apply_to_push_to_talk() -> None:
    state, _ = run(State(), cs.Listen(Mode.PUSH_TO_TALK, replies=True, require_known=True))
    assert run(state, cs.Heard("hello", known_speaker=False))[1] == [Action.START_REPLY]


def test_an_ignored_utterance_still_stops_nothing() -> None:
    state, _ = run(
        State(),
        cs.Listen(Mode.HANDS_FREE, replies=True, require_known=True),
        cs.Heard("hi", known_speaker=True),
        cs.ReplyAudio(),
    )
    state, actions = run(state, cs.Heard("stranger", known_speaker=False))
    assert actions == [Action.IGNORE] and state.phase is Phase.SPEAKING


def test_a_reload_renews_a_continuous_session_at_the_next_boundary() -> None:
    state, _ = run(State(), cs.Listen(Mode.HANDS_FREE, replies=False), cs.Reloaded())
    assert state.renew_pending
    state, actions = run(state, cs.Boundary())
    assert actions == [Action.RENEW_SESSION] and not state.renew_pending
    assert run(state, cs.Boundary())[1] == []


def test_a_reload_leaves_push_to_talk_alone() -> None:
    state, _ = run(State(), cs.Listen(Mode.PUSH_TO_TALK, replies=False), cs.Reloaded())
    assert not state.renew_pending
    assert run(state, cs.Boundary())[1] == []


def test_a_new_listen_forgets_a_pending_renewal() -> None:
    state, _ = run(
        State(),
        cs.Listen(Mode.HANDS_FREE, replies=False),
        cs.Reloaded(),
        cs.Listen(Mode.HANDS_FREE, replies=False),
    )
    assert not state.renew_pending


def test_say_interrupts_and_speaks() -> None:
    state, _ = run(
        State(), cs.Listen(Mode.HANDS_FREE, replies=True), cs.Heard("x", known_speaker=False)
    )
    state, actions = run(state, cs.Say())
    assert actions == [Action.CANCEL_REPLY, Action.START_SAY]
    assert state.phase is Phase.THINKING


def test_late_reply_audio_after_the_reply_ended_changes_nothing() -> None:
    state, _ = run(State(), cs.Listen(Mode.HANDS_FREE, replies=True))
    assert run(state, cs.ReplyAudio()) == (state, [])
