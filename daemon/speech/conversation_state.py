"""The conversation's decisions, as a pure state machine.

A conversation hears (or waits for its wake word) and replies, and the two overlap:
the person may speak while a reply plays (barge-in), and a push-to-talk reply
plays after the button is up. So the state is two facts, what the conversation
does with the microphone (:class:`MicState`) and where its reply is
(:class:`Replying`), and the phase a client sees is derived from them.

:func:`decide` takes the state and one :data:`Signal` and gives the next state and
the :data:`Action` list the runner (``conversation``) carries out. Nothing here
touches a model, a task or a clock, so every decision is tested alone.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from daemon.errors import InvalidRequest


class Mode(enum.Enum):
    """How a conversation hears."""

    PUSH_TO_TALK = "push-to-talk"
    """One utterance, ended by the client (a button released, an upload ended)."""
    HANDS_FREE = "hands-free"
    """Utterance after utterance, each ended by Hearth (turn model or fixed silence)."""
    WAKE = "wake"
    """Hands-free, but only what follows the wake word is heard."""


class MicState(enum.Enum):
    """What the conversation does with the microphone."""

    IDLE = "idle"
    WAITING = "waiting"
    """Wake mode: listening for the word only."""
    LISTENING = "listening"


class Replying(enum.Enum):
    """Where the conversation's reply is."""

    NONE = "none"
    THINKING = "thinking"
    """The reply is being written; nothing of it plays yet."""
    SPEAKING = "speaking"


class Phase(enum.Enum):
    """What a client sees: idle, waiting for the wake word, listening, thinking, speaking."""

    IDLE = "idle"
    WAITING_FOR_WAKE = "waiting-for-wake"
    LISTENING = "listening"
    THINKING = "thinking"
    SPEAKING = "speaking"


@dataclass(frozen=True)
class State:
    """Everything the decisions depend on."""

    mode: Mode | None = None
    hearing: MicState = MicState.IDLE
    replying: Replying = Replying.NONE
    replies: bool = False
    """Whether utterances are answered (else transcripts only)."""
    require_known: bool = False
    """The household gate: only enrolled speakers are answered (hands-free, wake)."""
    renew_pending: bool = False
    """The engines were reloaded: rebuild the speech session at the next boundary."""

    @property
    def phase(self) -> Phase:
        """The one phase a client is told: a reply under way outranks hearing."""
        if self.replying is Replying.SPEAKING:
            return Phase.SPEAKING
        if self.replying is Replying.THINKING:
            return Phase.THINKING
        if self.hearing is MicState.WAITING:
            return Phase.WAITING_FOR_WAKE
        if self.hearing is MicState.LISTENING:
            return Phase.LISTENING
        return Phase.IDLE

    @property
    def continuous(self) -> bool:
        """Hands-free or wake: Hearth ends each utterance, and the stream goes on."""
        return self.mode in (Mode.HANDS_FREE, Mode.WAKE)


# ---------------------------------------------------------------- signals


@dataclass(frozen=True)
class Listen:
    """Begin hearing in ``mode`` (a new start replaces what was heard before)."""

    mode: Mode
    replies: bool
    require_known: bool = False


@dataclass(frozen=True)
class Stop:
    """Push-to-talk: the audio is over."""


@dataclass(frozen=True)
class Mute:
    """Stop hearing (a reply under way plays on)."""


@dataclass(frozen=True)
class VoiceOn:
    """The VAD heard speech begin."""


@dataclass(frozen=True)
class WakeHeard:
    """The wake word was heard: what follows is a command."""


@dataclass(frozen=True)
class WakeAgain:
    """The command is over (or never came): wait for the word again."""


@dataclass(frozen=True)
class Heard:
    """An utterance's final transcript, and whether its voice is an enrolled one."""

    text: str
    known_speaker: bool


@dataclass(frozen=True)
class Say:
    """Speak text from elsewhere (an announcement) over the reply."""


@dataclass(frozen=True)
class Ask:
    """Answer text as if it had been said (a typed message)."""


@dataclass(frozen=True)
class ReplyAudio:
    """The reply's first audio is ready."""


@dataclass(frozen=True)
class ReplyOver:
    """The reply ended (done, failed or cancelled)."""


@dataclass(frozen=True)
class Reloaded:
    """The engines were reloaded."""


@dataclass(frozen=True)
class Boundary:
    """Audio arrived while no utterance is under way (a safe moment to renew)."""


Signal = (
    Listen
    | Stop
    | Mute
    | VoiceOn
    | WakeHeard
    | WakeAgain
    | Heard
    | Say
    | Ask
    | ReplyAudio
    | ReplyOver
    | Reloaded
    | Boundary
)

# ---------------------------------------------------------------- actions


class Action(enum.Enum):
    """What the runner does, in the order given."""

    CANCEL_REPLY = "cancel-reply"
    """Stop the reply under way and tell the client it was interrupted."""
    OPEN_SESSION = "open-session"
    """Close any speech session and open one for the new mode (from current engines)."""
    CLOSE_SESSION = "close-session"
    FINISH_UTTERANCE = "finish-utterance"
    """Decode the push-to-talk utterance; its final arrives as :class:`Heard`."""
    START_REPLY = "start-reply"
    """Answer the utterance just heard (or the text asked)."""
    START_SAY = "start-say"
    IGNORE = "ignore"
    """Set the utterance aside: its voice is no enrolled speaker's."""
    RENEW_SESSION = "renew-session"
    """Rebuild the hands-free speech session from the current engines."""


@dataclass(frozen=True)
class Decision:
    """The next state and what to do."""

    state: State
    actions: tuple[Action, ...] = ()


def decide(state: State, signal: Signal, playing: bool = False) -> Decision:
    """The conversation's next state and actions for one signal (pure).

    ``playing`` says whether reply audio is still playing on the client's transport
    (a reply is written before it is heard): new speech stops that too.
    Raises :class:`InvalidRequest` for a signal that makes no sense now (``stop``
    without a push-to-talk start).
    """
    active = state.replying is not Replying.NONE or playing
    cancel = (Action.CANCEL_REPLY,) if active else ()
    match signal:
        case Listen(mode=mode, replies=replies, require_known=require_known):
            hearing = MicState.WAITING if mode is Mode.WAKE else MicState.LISTENING
            new = replace(
                state,
                mode=mode,
                hearing=hearing,
                replying=Replying.NONE,
                replies=replies,
                require_known=require_known,
                renew_pending=False,
            )
            return Decision(new, (*cancel, Action.OPEN_SESSION))
        case Stop():
            if state.mode is not Mode.PUSH_TO_TALK or state.hearing is not MicState.LISTENING:
                raise InvalidRequest("'stop' without a 'start'")
            return Decision(replace(state, hearing=MicState.IDLE), (Action.FINISH_UTTERANCE,))
        case Mute():
            return Decision(
                replace(state, mode=None, hearing=MicState.IDLE, renew_pending=False),
                (Action.CLOSE_SESSION,),
            )
        case VoiceOn():
            return Decision(replace(state, replying=Replying.NONE), cancel)
        case WakeHeard():
            if state.hearing is MicState.WAITING:
                return Decision(replace(state, hearing=MicState.LISTENING))
            return Decision(state)
        case WakeAgain():
            if state.mode is Mode.WAKE and state.hearing is not MicState.IDLE:
                return Decision(replace(state, hearing=MicState.WAITING))
            return Decision(state)
        case Heard(text=text, known_speaker=known):
            if not text.strip():
                return Decision(state)
            if state.require_known and state.continuous and not known:
                return Decision(state, (Action.IGNORE,))
            if not state.replies:
                return Decision(state)
            return Decision(
                replace(state, replying=Replying.THINKING), (*cancel, Action.START_REPLY)
            )
        case Say():
            return Decision(replace(state, replying=Replying.THINKING), (*cancel, Action.START_SAY))
        case Ask():
            return Decision(
                replace(state, replying=Replying.THINKING), (*cancel, Action.START_REPLY)
            )
        case ReplyAudio():
            if state.replying is Replying.THINKING:
                return Decision(replace(state, replying=Replying.SPEAKING))
            return Decision(state)
        case ReplyOver():
            return Decision(replace(state, replying=Replying.NONE))
        case Reloaded():
            if state.continuous:
                return Decision(replace(state, renew_pending=True))
            return Decision(state)  # push-to-talk opens a session per utterance anyway
        case Boundary():
            if state.renew_pending and state.continuous:
                return Decision(replace(state, renew_pending=False), (Action.RENEW_SESSION,))
            return Decision(state)
    raise AssertionError(f"unknown signal {signal!r}")
