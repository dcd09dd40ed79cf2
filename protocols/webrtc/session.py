"""One WebRTC session: a peer connection, its data channel, audio in, replies out.

The session translates, and decides nothing: the conversation engine
(:mod:`daemon.speech.conversation`) hears, replies, stops a reply on barge-in,
applies the household gate and renews itself after a reload. This module turns
data-channel commands into conversation calls, microphone frames into its audio,
and its events into data-channel messages and the reply track.

The session lives as long as the browser keeps it: between utterances the client
pauses its track (``replaceTrack(null)``) and may send an RTCP BYE; the BYE is
ignored so the track, ICE and NAT pinholes stay up.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from aiortc import RTCPeerConnection
from aiortc.mediastreams import MediaStreamTrack

from daemon.errors import HearthError
from daemon.ops.tasks import OwnedTasks
from daemon.runtime.api import (
    ConversationEvent,
    Decoding,
    Listening,
    Mode,
    Replies,
    Services,
    SynthesisOptions,
    TranscribeOptions,
    WakeDetected,
    WakeWaiting,
)
from daemon.runtime.api import events as ev
from protocols.webrtc import messages
from protocols.webrtc.messages import Command
from protocols.webrtc.tracks import RATE, ReplyTrack, keep_through_bye, microphone

_LOGGER = logging.getLogger(__name__)

MAX_PENDING_MESSAGES = 64


class RtcSession:
    """State of one browser connection (see the module docstring)."""

    def __init__(self, session_id: str, pc: RTCPeerConnection, services: Services) -> None:
        self.id = session_id
        self.pc = pc
        self._services = services
        self.reply_track = ReplyTrack()
        self.channel: Any = None
        self.conversation = services.speech.open_conversation(session_id, self.reply_track)
        self.last_activity = time.monotonic()
        self._inbox: asyncio.Queue[str | bytes] = asyncio.Queue(MAX_PENDING_MESSAGES)
        self._tasks = OwnedTasks(f"rtc-{session_id}")
        self._rate = RATE
        self._closed = False
        self._tasks.spawn(self._process_messages(), "messages")
        self._tasks.spawn(self._forward_conversation_events(), "events")

    # ------------------------------------------------------------------ plumbing

    @property
    def mode(self) -> str:
        """idle, push-to-talk, hands-free or wake."""
        state = self.conversation.state
        listening = state.mode is not None and state.hearing.value != "idle"
        return state.mode.value if listening and state.mode is not None else "idle"

    @property
    def speech(self) -> Any:
        """The conversation's speech session now (None between utterances)."""
        return self.conversation.speech

    def on_engines_changed(self) -> None:
        """The engines were reloaded: the conversation renews itself at a boundary."""
        self.conversation.reloaded()

    @property
    def busy(self) -> bool:
        """Whether the session holds engines now: an utterance under way or a reply."""
        return self.conversation.busy or self.reply_track.playing

    def send(self, text: str) -> None:
        """Send one data-channel message if the channel is open."""
        if self.channel is not None and self.channel.readyState == "open":
            self.channel.send(text)

    def attach_channel(self, channel: Any) -> None:
        """The client's data channel arrived."""
        self.channel = channel

        @channel.on("message")
        def on_message(raw: str | bytes) -> None:
            self.last_activity = time.monotonic()
            try:
                self._inbox.put_nowait(raw)
            except asyncio.QueueFull:
                self.send(messages.message("error", {"code": "busy"}, "too many messages queued"))

    def attach_track(self, track: MediaStreamTrack) -> None:
        """The client's microphone track arrived: consume it for the session's life."""
        keep_through_bye(self.pc, track, self.id)
        self._tasks.spawn(self._consume(track), "audio")

    # ------------------------------------------------------------------ audio in

    async def _consume(self, track: MediaStreamTrack) -> None:
        try:
            async for fmt, pcm in microphone(track):
                self.last_activity = time.monotonic()
                if self.conversation.speech is None:
                    continue  # between utterances: nothing listens
                try:
                    await self.conversation.feed(fmt, pcm)
                except HearthError as exc:
                    self.send(messages.error(exc))
                except Exception:  # noqa: BLE001 - end listening cleanly, never go deaf
                    _LOGGER.exception("[%s] audio intake failed", self.id)
                    await self._intake_failed()
        except Exception:  # noqa: BLE001 - the client must hear that nothing listens
            _LOGGER.exception("[%s] receiving audio failed", self.id)
            await self._intake_failed()

    async def _intake_failed(self) -> None:
        """Tell the client that listening stopped after an unexpected failure."""
        self.send(messages.message("error", {"code": "internal-error"}, "internal error"))
        await self.conversation.mute()
        self.send(messages.message("state", {"mode": "idle"}))

    # ------------------------------------------------------------------ events out

    async def _forward_conversation_events(self) -> None:
        """The conversation's events, as data-channel messages and reply audio."""
        async for event in self.conversation.events():
            try:
                self._send_as_messages(event)
            except Exception:  # noqa: BLE001 - one bad event must not silence the rest
                _LOGGER.exception("[%s] event translation failed", self.id)

    def _send_as_messages(self, event: ConversationEvent) -> None:
        send, message = self.send, messages.message
        if isinstance(event, ev.VoiceStarted | ev.VoiceStopped):
            send(message("vad", {"speech": isinstance(event, ev.VoiceStarted)}))
        elif isinstance(event, ev.PartialTranscript):
            send(message("partial", {"text": event.text}))
        elif isinstance(event, ev.FinalTranscript):
            send(message("infer", _infer(event)))
            if not event.text.strip() and self.conversation.state.replies:
                send(message("reply", {"done": True, "text": ""}))
        elif isinstance(event, ev.UtteranceIgnored):
            obj = {"reason": event.reason, "text": event.text, "speaker": event.speaker}
            send(message("ignored", obj))
        elif isinstance(event, WakeDetected | WakeWaiting):
            detected = isinstance(event, WakeDetected)
            obj = {"event": "detected" if detected else "waiting", "name": event.name}
            send(message("wake", obj | {"phrase": event.phrase}))
        elif isinstance(event, ev.ReplyInterrupted):
            send(message("reply", {"done": True, "interrupted": True}))
        elif isinstance(event, ev.ReplyChunk):
            send(message("reply", {"delta": event.text}))
        elif isinstance(event, ev.ReplyDone):
            send(message("reply", {"text": event.text, "done": True}))
        elif isinstance(event, ev.SpeechAudioStart):
            self._rate = event.rate
            self.reply_track.begin()
        elif isinstance(event, ev.SpeechAudio):
            self.reply_track.play(event.pcm, self._rate)
        elif isinstance(event, ev.SpeechAudioStop):
            self.reply_track.flush()
        elif isinstance(event, ev.RunError):
            send(message("error", {"code": event.code}, event.message))
        elif isinstance(event, ev.PhaseChanged):
            send(message("phase", {"phase": event.phase}))

    # ------------------------------------------------------------------ control

    async def _process_messages(self) -> None:
        while True:
            raw = await self._inbox.get()
            try:
                command = messages.parse(raw)
                await self._handle(command)
            except HearthError as exc:
                self.send(messages.error(exc))
            except Exception:  # noqa: BLE001 - one bad message must not end the session
                _LOGGER.exception("[%s] message handling failed", self.id)
                self.send(messages.message("error", {"code": "internal-error"}, "internal error"))

    async def _handle(self, command: Command) -> None:
        if command.type == "ping":
            self.send(messages.message("pong", text=command.text or None))
        elif command.type == "start":
            await self._begin(command, Mode.PUSH_TO_TALK)
        elif command.type == "listen":
            await self._begin(command, Mode.WAKE if command.wake_word else Mode.HANDS_FREE)
        elif command.type == "stop":
            await self._stop(command)
        elif command.type == "mute":
            await self.conversation.mute()
            self.send(messages.message("state", {"mode": "idle"}))
        elif command.type == "say":
            await self.conversation.say(command.say, self._reply_options(command))

    def _reply_options(self, command: Command) -> SynthesisOptions:
        """TTS options for replies: synthesized at the reply track's rate, so the
        TTS worker resamples, not the event loop."""
        return SynthesisOptions(voice=command.voice, sample_rate=RATE)

    async def _begin(self, command: Command, mode: Mode) -> None:
        transcribe = TranscribeOptions(beam_size=command.beam_size, language=command.language)
        listening = Listening(
            mode,
            Decoding(command.model, transcribe, command.partials),
            Replies(command.reply, command.speak, self._reply_options(command)),
            wake_word=command.wake_word,
        )
        hearing = await self._services.speech.hearing(listening)
        await self.conversation.listen(hearing)  # it stops a reply that is playing
        state: dict[str, Any] = {"mode": self.mode}
        if hearing.wake_model is not None:
            state["wake"] = {"name": hearing.wake_model.name, "phrase": hearing.wake_model.phrase}
        self.send(messages.message("state", state))

    async def _stop(self, command: Command) -> None:
        await self.conversation.stop()  # the final (and reply) follow as events
        if command.model is not None and not self._services.house.has_asr_model(command.model):
            # willow-ts-client always names "large"; the model was chosen at start.
            text = f"model '{command.model}' is not configured; used the default"
            self.send(messages.message("log", text=text))

    # ------------------------------------------------------------------ life

    async def close(self) -> None:
        """Free everything; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        await self.conversation.close()
        await self._tasks.cancel_all()
        self.reply_track.stop()
        await self.pc.close()


def _infer(final: ev.FinalTranscript) -> dict[str, Any]:
    """The final transcript, as WIS's ``infer`` message (plus timing and speaker)."""
    return {
        "text": final.text,
        "language": final.language,
        "audio_ms": final.audio_ms,
        "speech_ms": final.speech_ms,
        "decode_ms": round(final.decode_ms),
        "speculative": final.speculative,
        "speaker": final.speaker,
    }
