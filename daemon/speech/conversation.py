"""The conversation engine: one loop of hearing and replying, for every client.

A :class:`Conversation` lives as long as its client (a WebRTC peer, an upload, a
satellite connection). It hears in one of three modes (push-to-talk, hands-free,
wake) through a speech session it opens from the current engines, finds who spoke
when speakers are enrolled, answers through the speech pipeline (the reply starts
on the speculative transcript), stops its reply when the person speaks again, and
rebuilds its speech session between utterances after a reload. Every decision is
made by the pure state machine in :mod:`~daemon.speech.conversation_state`; this
module carries them out.

Everything leaves through one bounded event stream, :meth:`Conversation.events`:
the session's events (VAD, partials, finals carrying the speaker), wake notes, the
reply's text and audio, interruptions, ignored utterances and phase changes. An
adapter only translates them (and plays the audio on its own transport).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from daemon.audio.pcm import AudioFormat
from daemon.engines.tts.base import SynthesisOptions
from daemon.errors import HearthError, InvalidRequest
from daemon.ops.stream import EventStream
from daemon.ops.tasks import OwnedTasks
from daemon.speech import conversation_state as cs
from daemon.speech import events as ev
from daemon.speech.chat import ChatOptions
from daemon.speech.finals import Utterance
from daemon.speech.listening import (
    Hearing,
    Services,
    finish_speech,
    open_session,
    own_end_failed,
)
from daemon.speech.pipeline import PipelineRun, SpeculativeReplies
from daemon.speech.reply import SAY_BURST, Playback, ReplySlot, SayBudget, said
from daemon.speech.session import SpeechSession
from daemon.speech.wake_gate import WakeDetected, WakeGate, WakeNote

_LOGGER = logging.getLogger(__name__)
MAX_EVENTS = 256
"""Events held for a reader that has not taken them (then producers wait)."""
GATE_WAIT_S = 3.0
"""How long the household gate waits for a final's speaker: the decision needs the answer."""
__all__ = ["SAY_BURST", "Conversation", "ConversationEvent", "Hearing", "Mode", "Playback"]

ConversationEvent = ev.PipelineEvent | ev.ConversationNote | WakeNote
"""What a conversation emits: the pipeline vocabulary, its own notes (interruptions,
ignored utterances, phases) and the wake gate's notes."""
Mode = cs.Mode
"""How a conversation hears (push-to-talk, hands-free, wake)."""
Phase = cs.Phase
_AUDIO = (ev.SpeechAudioStart, ev.SpeechAudio, ev.SpeechAudioStop)


class Conversation:
    """One client's conversation (see the module docstring)."""

    def __init__(
        self,
        conversation_id: str,
        services: Callable[[], Services],
        playback: Playback | None = None,
        moved: Callable[[], bool] | None = None,
    ) -> None:
        self.id = conversation_id
        self._services = services
        self._moved = moved
        """Whether the engines or settings in force changed since it was last asked
        (None: the owner calls :meth:`reloaded` itself)."""
        self.state = cs.State()
        self.hearing: Hearing | None = None
        self._speech: SpeechSession | None = None
        self._gate: WakeGate | None = None
        self._listener: asyncio.Task[None] | None = None
        self._generation = 0
        """Bumped by each listen: a push-to-talk final from before it replies to nobody."""
        self._last_speaker: str | None = None
        self._out: EventStream[ConversationEvent] = EventStream(MAX_EVENTS)
        self._tasks = OwnedTasks(f"conversation-{conversation_id}")
        self._reply = ReplySlot(self._tasks, self._emit, playback, self._drop_unsent_audio)
        self._says = SayBudget()
        self.chat_options = ChatOptions()
        """How replies are written (a client's instructions and limits): read as each starts."""

    # ---------------------------------------------------------------- reading

    def events(self) -> AsyncIterator[ConversationEvent]:
        """Every event, in order, until :meth:`close` (read it in a task of its own)."""
        return self._out.__aiter__()

    @property
    def phase(self) -> cs.Phase:
        """The phase a client is shown."""
        return self.state.phase

    @property
    def speech(self) -> SpeechSession | None:
        """The speech session that hears now (None: nothing listens)."""
        return self._speech

    @property
    def busy(self) -> bool:
        """Whether engines are in use now: an utterance under way, or a reply.

        An idle hands-free conversation is not busy: it moves to new engines before
        its next frame is heard, so a reload need not wait for it.
        """
        speech = self._speech
        hearing = speech is not None and (not self.state.continuous or speech.in_utterance)
        return hearing or self._reply.running

    # ---------------------------------------------------------------- commands

    async def listen(self, hearing: Hearing) -> None:
        """Hear in a new mode; what was heard before (and a reply) stops."""
        self._follow()
        session = await open_session(hearing)  # fails (unknown model) before anything stops
        self._generation += 1
        self.hearing = hearing
        signal = cs.Listen(hearing.mode, hearing.reply, hearing.require_known)
        await self._apply(signal, session=session)

    async def stop(self) -> None:
        """Push-to-talk: the audio is over; the final (and reply) follow as events."""
        await self._apply(cs.Stop())

    async def mute(self) -> None:
        """Stop hearing; a reply under way plays on."""
        await self._apply(cs.Mute())

    async def interrupt(self) -> None:
        """Stop the reply and its audio, as new speech would (barge-in); hearing goes on."""
        await self._apply(cs.VoiceOn())

    async def say(self, text: str, options: SynthesisOptions) -> None:
        """Speak ``text`` (an announcement) as the reply; raises before anything stops."""
        tts = self._services().tts
        if tts is None:
            raise InvalidRequest("speaking needs TTS, which is not enabled")
        tts.prepare(text, options)  # too long, empty, unknown voice: nothing plays
        self._says.take()
        await self._apply(cs.Say(), say=(tts, text, options))

    async def ask(
        self,
        text: str,
        speak: bool = True,
        tts_options: SynthesisOptions | None = None,
        chat_options: ChatOptions | None = None,
    ) -> None:
        """Answer ``text`` as if it had been said (a typed message), under ``chat_options``."""
        pipeline = self._services().pipeline
        if pipeline is None:
            raise InvalidRequest("replies need the LLM and TTS, which are not both enabled")
        run = pipeline.start(
            text=text,
            conversation_id=self.id,
            speak=speak,
            tts_options=tts_options,
            speaker=self._last_speaker,
            chat_options=chat_options or self.chat_options,
        )
        await self._apply(cs.Ask(), run=run)

    def reloaded(self) -> None:
        """The engines were reloaded: renew the speech session at the next boundary."""
        self.state = cs.decide(self.state, cs.Reloaded()).state

    def _follow(self) -> None:
        """Take a reload seen since the last listen or frame as :meth:`reloaded` does."""
        if self._moved is not None and self._moved():
            self.reloaded()

    async def feed(self, fmt: AudioFormat, pcm: bytes) -> list[WakeNote]:
        """Microphone audio; dropped while nothing listens. Returns the wake notes.

        On a failure the conversation stops hearing (it is muted) and the error is
        raised for the client.
        """
        self._follow()
        speech = self._speech
        if speech is None:
            return []
        try:
            if not speech.in_utterance:
                await self._apply(cs.Boundary())
                speech = self._speech or speech
            if self._gate is not None:
                notes = await self._gate.feed(fmt, pcm)
                for note in notes:
                    await self._emit(note)
                    detected = isinstance(note, WakeDetected)
                    await self._apply(cs.WakeHeard() if detected else cs.WakeAgain())
                return notes
            speech.start(fmt)
            await speech.feed(pcm)
            return []
        except BaseException:
            if self._speech is speech:  # not one that a new listen replaced meanwhile
                await self.mute()
            raise

    async def close(self) -> None:
        """Stop everything and end the event stream; safe to call more than once."""
        await self._close_hearing()
        await self._reply.cancel(report=False)
        await self._tasks.cancel_all()
        self._out.close()

    # ---------------------------------------------------------------- decisions

    async def _apply(self, signal: cs.Signal, **given: Any) -> cs.Decision:
        before = self.state.phase
        decision = cs.decide(self.state, signal, self._reply.playing)
        self.state = decision.state
        for action in decision.actions:
            await self._act(action, given)
        if self.state.phase is not before:
            await self._emit(ev.PhaseChanged(self.state.phase.value))
        return decision

    async def _act(self, action: cs.Action, given: dict[str, Any]) -> None:
        if action is cs.Action.CANCEL_REPLY:
            await self._reply.cancel(report=True)
        elif action is cs.Action.OPEN_SESSION:
            await self._open(given["session"])
        elif action is cs.Action.CLOSE_SESSION:
            await self._close_hearing()
        elif action is cs.Action.FINISH_UTTERANCE:
            self._finish()
        elif action is cs.Action.RENEW_SESSION:
            await self._renew()
        elif action is cs.Action.START_REPLY:
            run: PipelineRun = given["run"]
            self._reply.start(run.events(), self._reply_audio, self._reply_over)
        elif action is cs.Action.START_SAY:
            tts, text, options = given["say"]
            events = said(tts, text, options, self.id)
            self._reply.start(events, self._reply_audio, self._reply_over, "say")
        elif action is cs.Action.IGNORE:
            final: ev.FinalTranscript = given["final"]
            await self._emit(ev.UtteranceIgnored(final.text, "unknown-speaker", final.speaker))

    # ---------------------------------------------------------------- hearing

    async def _open(self, session: SpeechSession) -> None:
        await self._close_hearing()
        hearing = self.hearing
        assert hearing is not None
        self._speech = session
        if hearing.wake is not None and hearing.wake_model is not None:
            self._gate = WakeGate(
                hearing.wake, session, hearing.wake_model, hearing.command_timeout_s
            )
        self._listener = self._tasks.spawn(self._hear(session, self._generation), "hear")

    async def _close_hearing(self) -> None:
        speech, listener, gate = self._speech, self._listener, self._gate
        self._speech, self._listener, self._gate = None, None, None
        if gate is not None:
            await gate.close()
        if listener is not None and listener is not asyncio.current_task():
            listener.cancel()
        if speech is not None:
            await speech.close()

    def _finish(self) -> None:
        """Push-to-talk: decode beside the caller, so a new listen takes the microphone
        at once; the session's reader sends the final (and starts the reply)."""
        speech, self._speech, self._listener = self._speech, None, None
        if speech is not None:
            self._tasks.spawn(finish_speech(speech, self._emit, self.id), "finish")

    async def _renew(self) -> None:
        """Between utterances after a reload: a speech session from the current engines."""
        old, hearing = self._speech, self.hearing
        if old is None or hearing is None:
            return
        renewed = hearing.open_session()
        self._speech = renewed
        if self._gate is not None:
            self._gate.speech = renewed
        # The old session's stream ends after what it holds; its reader drains it.
        self._listener = self._tasks.spawn(self._hear(renewed, self._generation), "hear")
        await old.close()

    async def _hear(self, speech: SpeechSession, generation: int) -> None:
        """Read one speech session's events: pass them on, and act on the finals."""
        hearing = self.hearing
        assert hearing is not None
        services = self._services()
        pipeline = services.pipeline if hearing.reply else None
        replies = None
        if pipeline is not None:
            replies = pipeline.replies(
                self.id, hearing.speak, hearing.tts_options, self.chat_options
            )
            replies.speaker = self._last_speaker
        utterance = self._utterance(services)
        speech.on_utterance = utterance.start
        try:
            async for event in speech.events():
                if isinstance(event, ev.FinalTranscript):
                    await self._heard(event, utterance, replies, generation, speech)
                    utterance = self._utterance(services)
                    speech.on_utterance = utterance.start
                    continue
                await self._emit(event)  # the speech first, then what it stops
                if isinstance(event, ev.VoiceStarted):
                    await self._apply(cs.VoiceOn())  # barge-in
                if replies is not None:
                    replies.chat_options = self.chat_options  # a change applies from now on
                    await replies.observe(event)
            await own_end_failed(speech, self._emit, self.id)
        except HearthError as exc:
            await self._emit(ev.RunError(exc.code, exc.message))
        except Exception:  # noqa: BLE001 - a reader that dies would leave the client deaf
            _LOGGER.exception("[%s] speech events failed", self.id)
            await self._emit(ev.RunError("internal-error", "internal error"))
            if self._speech is speech:
                await self.mute()
        finally:
            utterance.cancel()
            if replies is not None:
                await replies.close()

    def _utterance(self, services: Services) -> Utterance:
        hearing = self.hearing
        assert hearing is not None
        return Utterance(services.speakers, hearing.identify, hearing.translate)

    async def _heard(
        self,
        final: ev.FinalTranscript,
        utterance: Utterance,
        replies: SpeculativeReplies | None,
        generation: int,
        speech: SpeechSession,
    ) -> None:
        """An utterance's final: name its speaker, then reply, ignore or just pass it on."""
        hearing = self.hearing
        assert hearing is not None
        gate = self.state.require_known and self.state.continuous
        wait = GATE_WAIT_S if gate else hearing.speaker_wait_s
        services = self._services()
        options = speech.options.transcribe
        final = await utterance.complete(final, wait, services, speech.asr, options)
        if final.speaker is not None:
            self._last_speaker = final.speaker
        if generation != self._generation:
            await self._emit(final)  # a push-to-talk final from before the last listen
            return
        run = replies.start(final) if replies is not None and final.text.strip() else None
        signal = cs.Heard(final.text, final.speaker is not None)
        decision = cs.decide(self.state, signal, self._reply.playing)
        if cs.Action.IGNORE not in decision.actions:
            await self._emit(final)
        if run is not None and cs.Action.START_REPLY not in decision.actions:
            await _drop(run)
            run = None
        await self._apply(signal, run=run, final=final)

    # ---------------------------------------------------------------- replies

    async def _reply_audio(self) -> None:
        await self._apply(cs.ReplyAudio())

    async def _reply_over(self) -> None:
        await self._apply(cs.ReplyOver())

    # ---------------------------------------------------------------- plumbing

    async def _emit(self, event: ConversationEvent) -> None:
        await self._out.put(event)

    def _drop_unsent_audio(self) -> None:
        self._out.drop(lambda event: isinstance(event, _AUDIO))


async def _drop(run: PipelineRun) -> None:
    """A reply run that will not be read: free its speculative reply."""
    await run._drop_speculation()
