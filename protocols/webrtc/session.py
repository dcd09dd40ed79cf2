"""One WebRTC session: a peer connection, its data channel, audio in, replies out.

The session lives as long as the browser keeps it: between utterances the client
pauses its track (``replaceTrack(null)``) and may send an RTCP BYE; the BYE is
ignored so the track, ICE and NAT pinholes stay up. Audio only reaches a speech
session while one is active: push-to-talk (``start`` ... ``stop``) or hands-free
(``listen`` ... ``mute``), where the VAD finds each utterance.

Two tasks carry the audio: one feeds the microphone into the speech session, and
one reads the session's event stream (or, for a spoken reply, the pipeline's) and
sends what it finds at once, so a partial transcript does not wait for the next
audio frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from aiortc import RTCPeerConnection
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

from daemon.engines.asr.base import TranscribeOptions
from daemon.engines.tts.base import SynthesisOptions
from daemon.engines.tts.service import TtsService
from daemon.errors import Busy, HearthError, InvalidRequest
from daemon.runtime.engines import Engines
from daemon.speech import events as ev
from daemon.speech.pipeline import PipelineRun, SpeculativeReplies
from daemon.speech.session import SessionOptions, SpeechSession
from daemon.speech.wake_gate import WakeDetected, WakeGate, WakeListener, WakeNote
from protocols.patches.aiortc import ignore_bye
from protocols.webrtc import messages
from protocols.webrtc.messages import Command
from protocols.webrtc.tracks import RATE, ReplyTrack, frame_pcm

_LOGGER = logging.getLogger(__name__)

MAX_PENDING_MESSAGES = 64
SAY_BURST = 4
"""``say`` requests a session may make at once; then one per SAY_INTERVAL_S."""
SAY_INTERVAL_S = 2.0


class RtcSession:
    """State of one browser connection (see the module docstring)."""

    def __init__(
        self, session_id: str, pc: RTCPeerConnection, engines: Callable[[], Engines]
    ) -> None:
        self.id = session_id
        self.pc = pc
        self._engines = engines
        self.reply_track = ReplyTrack()
        self.channel: Any = None
        self.mode = "idle"
        """idle, push-to-talk, hands-free or wake (hands-free after a wake word)."""
        self.wake: WakeGate | None = None
        """Wake mode: the gate in front of the speech session."""
        self.speech: SpeechSession | None = None
        self.run: PipelineRun | None = None
        self.command: Command | None = None
        self._listener: asyncio.Task[None] | None = None
        """Reads the active speech session's (or its pipeline run's) events."""
        self._speech_setup: tuple[str | None, SessionOptions] | None = None
        """Model and options of the active speech session, to build it anew."""
        self._engines_changed = False
        self.last_activity = time.monotonic()
        self._inbox: asyncio.Queue[str | bytes] = asyncio.Queue(MAX_PENDING_MESSAGES)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._reply: asyncio.Task[None] | None = None
        self._say_tokens = float(SAY_BURST)
        self._say_at = time.monotonic()
        self._closed = False
        self._spawn(self._process_messages(), "messages")

    # ------------------------------------------------------------------ plumbing

    def _spawn(self, coro: Any, name: str) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        task.set_name(f"rtc-{self.id}-{name}")
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            _LOGGER.error("[%s] task %s failed", self.id, task.get_name(), exc_info=exc)

    def on_engines_changed(self) -> None:
        """The engines were reloaded: use the current ones from the next utterance on.

        A hands-free speech session built from the old engines is rebuilt at the
        next utterance boundary, never mid-utterance; push-to-talk builds one per
        utterance anyway.
        """
        self._engines_changed = True

    @property
    def busy(self) -> bool:
        """Whether the session holds engines now: an utterance under way or a reply.

        An idle hands-free session is not busy: it moves to new engines before its
        next frame is heard, so a reload need not wait for it.
        """
        speech = self.speech
        hearing = speech is not None and (
            self.mode not in ("hands-free", "wake") or speech.in_utterance
        )
        replying = self._reply is not None and not self._reply.done()
        return hearing or self.run is not None or replying or self.reply_track.playing

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
        for transceiver in self.pc.getTransceivers():
            if transceiver.receiver.track is track:
                ignore_bye(transceiver.receiver, self.id)
        self._spawn(self._consume(track), "audio")

    # ------------------------------------------------------------------ audio in

    async def _consume(self, track: MediaStreamTrack) -> None:
        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                return  # the peer connection closed
            except Exception:  # noqa: BLE001 - the client must hear that nothing listens
                _LOGGER.exception("[%s] receiving audio failed", self.id)
                await self._intake_failed()
                return
            self.last_activity = time.monotonic()
            speech = self.speech
            if speech is None:
                continue  # between utterances: nothing listens
            try:
                if self._engines_changed and self.mode in ("hands-free", "wake"):
                    speech = await self._renew_speech(speech)
                fmt, pcm = frame_pcm(frame)  # type: ignore[arg-type]
                if self.wake is not None:
                    self._send_wake(await self.wake.feed(fmt, pcm))
                    continue
                speech.start(fmt)
                await speech.feed(pcm)
            except HearthError as exc:
                self.send(messages.error(exc))
                if self.speech is speech:  # not one that a new start replaced meanwhile
                    await self._end_speech()
            except Exception:  # noqa: BLE001 - end listening cleanly, never go deaf
                _LOGGER.exception("[%s] audio intake failed", self.id)
                if self.speech is speech:
                    await self._intake_failed()

    async def _intake_failed(self) -> None:
        """Tell the client that listening stopped after an unexpected failure."""
        self.send(messages.message("error", {"code": "internal-error"}, "internal error"))
        await self._end_speech()
        self.send(messages.message("state", {"mode": "idle"}))

    async def _renew_speech(self, speech: SpeechSession) -> SpeechSession:
        """Hands-free after a reload: between utterances, rebuild the speech session
        from the current engines (the old ones' worker pools are closing)."""
        if speech.in_utterance or self._speech_setup is None:
            return speech  # at the next boundary
        self._engines_changed = False
        model, options = self._speech_setup
        renewed = self._engines().new_session(model, options)
        self.speech = renewed
        if self.wake is not None:
            self.wake.speech = renewed
        # The old session's stream ends after what it already holds; its reader drains it.
        self._listener = self._spawn(self._listen(renewed, hands_free=True), "listen")
        await speech.close()
        return renewed

    async def _listen(self, speech: SpeechSession, hands_free: bool) -> None:
        """Send a speech session's events as they come; hands-free, start replies."""
        replies = self._hands_free_replies() if hands_free else None
        try:
            async for event in speech.events():
                self._forward(event)
                if replies is not None:
                    await replies.observe(event)
                if isinstance(event, ev.FinalTranscript):
                    if hands_free:
                        self._on_final(event, replies)
                    else:
                        self._send_infer(event)
        except HearthError as exc:
            self.send(messages.error(exc))
        except Exception:  # noqa: BLE001 - a reader that dies would stall the intake
            _LOGGER.exception("[%s] speech events failed", self.id)
            if self.speech is speech:
                await self._intake_failed()
        finally:
            if replies is not None:
                await replies.close()

    def _hands_free_replies(self) -> SpeculativeReplies | None:
        """Replies that start on the speculative transcript, when replies are asked for."""
        command = self.command
        pipeline = self._engines().pipeline
        if command is None or not command.reply or pipeline is None:
            return None
        return pipeline.replies(self.id, command.speak, self._reply_options(command))

    def _send_wake(self, notes: list[WakeNote]) -> None:
        """Tell the page the word was heard (it may chime) or that it waits again."""
        for note in notes:
            detected = isinstance(note, WakeDetected)
            obj = {"event": "detected" if detected else "waiting", "name": note.name}
            self.send(messages.message("wake", obj | {"phrase": note.phrase}))

    def _forward(self, event: ev.PipelineEvent) -> None:
        if isinstance(event, ev.VoiceStarted):
            self.send(messages.message("vad", {"speech": True}))
            self._barge_in()
        elif isinstance(event, ev.VoiceStopped):
            self.send(messages.message("vad", {"speech": False}))
        elif isinstance(event, ev.PartialTranscript):
            self.send(messages.message("partial", {"text": event.text}))

    def _barge_in(self) -> None:
        """The person speaks again: stop the reply that is playing."""
        if self._reply is not None and self._reply is asyncio.current_task():
            return  # the run that heard this speech is the one now replying to it
        if self.reply_track.playing or (self._reply is not None and not self._reply.done()):
            self.reply_track.clear()
            if self._reply is not None:
                self._reply.cancel()
                self._reply = None
            self.send(messages.message("reply", {"done": True, "interrupted": True}))

    def _on_final(self, final: ev.FinalTranscript, replies: SpeculativeReplies | None) -> None:
        """Hands-free: send the transcript, then the spoken reply if asked for."""
        self._send_infer(final)
        if replies is not None and final.text.strip():
            self._start_reply(replies.start(final))

    # ------------------------------------------------------------------ replies

    def _start_reply(self, run: PipelineRun) -> None:
        if self._reply is not None:
            self._reply.cancel()
        self.reply_track.clear()
        self._reply = self._spawn(self._play(run), "reply")

    async def _play(self, run: PipelineRun) -> None:
        """Send a run's events: over a speech session, from its first VAD event on."""
        rate = 16000
        async for event in run.events():
            self._forward(event)
            if isinstance(event, ev.FinalTranscript):
                self._send_infer(event)
                if not event.text.strip():
                    self.send(messages.message("reply", {"done": True, "text": ""}))
            elif isinstance(event, ev.ReplyChunk):
                self.send(messages.message("reply", {"delta": event.text}))
            elif isinstance(event, ev.ReplyDone):
                self.send(messages.message("reply", {"text": event.text, "done": True}))
            elif isinstance(event, ev.SpeechAudioStart):
                rate = event.rate
            elif isinstance(event, ev.SpeechAudio):
                self.reply_track.play(event.pcm, rate)
            elif isinstance(event, ev.SpeechAudioStop):
                self.reply_track.flush()
            elif isinstance(event, ev.RunError):
                self.send(messages.message("error", {"code": event.code}, event.message))

    def _send_infer(self, final: ev.FinalTranscript) -> None:
        """The final transcript, as WIS's ``infer`` message (plus timing fields)."""
        self.send(
            messages.message(
                "infer",
                {
                    "text": final.text,
                    "language": final.language,
                    "audio_ms": final.audio_ms,
                    "speech_ms": final.speech_ms,
                    "decode_ms": round(final.decode_ms),
                    "speculative": final.speculative,
                },
            )
        )

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
            await self._begin(command, hands_free=False)
        elif command.type == "listen":
            await self._begin(command, hands_free=True)
        elif command.type == "stop":
            await self._stop(command)
        elif command.type == "mute":
            await self._end_speech()
            self.send(messages.message("state", {"mode": "idle"}))
        elif command.type == "say":
            self._say(command)

    def _say(self, command: Command) -> None:
        """Speak text from elsewhere (e.g. Home Assistant's agent) over the reply track."""
        tts = self._engines().tts
        if tts is None:
            raise InvalidRequest("speaking needs TTS, which is not enabled")
        options = self._reply_options(command)
        tts.prepare(command.say, options)  # too long, empty, unknown voice: nothing plays
        # A cancelled synthesis still finishes its sentence in a worker: a client
        # sending 'say' in a loop must not keep every TTS worker busy.
        now = time.monotonic()
        self._say_tokens = min(SAY_BURST, self._say_tokens + (now - self._say_at) / SAY_INTERVAL_S)
        self._say_at = now
        if self._say_tokens < 1:
            raise Busy(f"too many 'say' requests: one per {SAY_INTERVAL_S:g} s after a burst")
        self._say_tokens -= 1
        self._barge_in()
        self.reply_track.clear()
        self._reply = self._spawn(self._speak(tts, command.say, options), "say")

    async def _speak(self, tts: TtsService, text: str, options: SynthesisOptions) -> None:
        try:
            async for block in tts.stream_cached(text, options):
                self.reply_track.play(block.pcm, block.rate)
            self.reply_track.flush()
            self.send(messages.message("reply", {"text": text, "done": True}))
        except HearthError as exc:
            self.send(messages.error(exc))
        except Exception:  # noqa: BLE001 - the session lives on; the client hears why
            _LOGGER.exception("[%s] speaking failed", self.id)
            self.send(messages.message("error", {"code": "internal-error"}, "internal error"))

    def _reply_options(self, command: Command) -> SynthesisOptions:
        """TTS options for replies: synthesized at the reply track's rate, so the
        TTS worker resamples, not the event loop."""
        return SynthesisOptions(voice=command.voice, sample_rate=RATE)

    async def _begin(self, command: Command, hands_free: bool) -> None:
        engines = self._engines()
        model = command.model
        options = SessionOptions(
            transcribe=TranscribeOptions(beam_size=command.beam_size, language=command.language),
            partials=engines.partials if command.partials is None else command.partials,
            hands_free=hands_free,
        )
        # An unknown model or language fails before anything starts (or stops).
        engines.asr_model(model).check_options(options.transcribe)
        if command.reply:
            if engines.pipeline is None:
                raise InvalidRequest("spoken replies need the LLM, which is not enabled")
            if engines.tts is not None and command.speak:
                engines.tts.check_voice(SynthesisOptions(voice=command.voice))
        gate_listener = await self._wake_listener(engines, command, hands_free)
        await self._end_speech()
        self._barge_in()  # talking again stops the reply that is playing
        self.command = command
        # A button ends push-to-talk: its speculation may start sooner.
        settings = None if hands_free else engines.push_to_talk_settings
        self.speech = engines.new_session(model, options, settings)
        if gate_listener is not None and engines.wake is not None:
            info = engines.wake.models[gate_listener.stream.names[0]]
            self.wake = WakeGate(
                gate_listener, self.speech, info, engines.config.wake.command_timeout_s
            )
        self._speech_setup = (model, options)
        self._engines_changed = False
        self.mode = "hands-free" if hands_free else "push-to-talk"
        if self.wake is not None:
            self.mode = "wake"
        if command.reply and not hands_free and engines.pipeline is not None:
            # Read from now on, so that the reply can start on the speculative transcript.
            self.run = engines.pipeline.start(
                session=self.speech,
                conversation_id=self.id,
                speak=command.speak,
                tts_options=self._reply_options(command),
            )
            self._listener = self._spawn(self._play(self.run), "listen")
        else:
            self._listener = self._spawn(self._listen(self.speech, hands_free), "listen")
        state: dict[str, Any] = {"mode": self.mode}
        if self.wake is not None:
            state["wake"] = {"name": self.wake.model.name, "phrase": self.wake.model.phrase}
        self.send(messages.message("state", state))

    async def _wake_listener(
        self, engines: Engines, command: Command, hands_free: bool
    ) -> WakeListener | None:
        """Wake mode's detector, before anything stops (an unknown word fails first)."""
        name = command.wake_word
        if name is None:
            return None
        if not hands_free:
            raise InvalidRequest("a wake word goes with 'listen', not 'start'")
        wake = engines.wake
        if wake is None:
            raise InvalidRequest("wake-word detection is not enabled (wake.enabled)")
        await engines.wake_pool.run(wake.refresh)
        wake.check_names([name])
        stream = await engines.wake_pool.run(wake.stream, [name])
        limits = engines.config.limits
        return WakeListener(stream, engines.wake_pool, limits.max_sample_rate, limits.max_channels)

    async def _stop(self, command: Command) -> None:
        speech, run = self.speech, self.run
        if self.mode != "push-to-talk" or speech is None:
            raise InvalidRequest("'stop' without a 'start'")
        if command.model is not None and command.model not in self._engines().asr:
            # willow-ts-client always names "large"; the model was chosen at start.
            self.send(
                messages.message(
                    "log", text=f"model '{command.model}' is not configured; used the default"
                )
            )
        listener, self._listener = self._listener, None
        self.speech, self.run, self.mode = None, None, "idle"
        if run is not None:
            # The run that listened now speaks the reply: new speech interrupts it.
            if self._reply is not None:
                self._reply.cancel()
            self.reply_track.clear()
            self._reply = listener
        # The final decode runs beside the message loop: a 'start' right after this
        # 'stop' must take the microphone at once. Awaited here, a slow decode (a busy
        # machine) held the next 'start' back, and the audio of the next utterance
        # arrived while nothing listened and was dropped.
        self._spawn(self._finish(speech), "finish")

    async def _finish(self, speech: SpeechSession) -> None:
        """End a push-to-talk utterance; its listener sends the transcript (and reply)."""
        try:
            await speech.finish()
        except HearthError as exc:
            self.send(messages.error(exc))
        except Exception:  # noqa: BLE001 - the session lives on; the client hears why
            _LOGGER.exception("[%s] final decode failed", self.id)
            self.send(messages.message("error", {"code": "internal-error"}, "internal error"))
        finally:
            await speech.close()

    async def _end_speech(self) -> None:
        speech, listener, gate = self.speech, self._listener, self.wake
        self.speech, self.run, self.mode, self._listener = None, None, "idle", None
        self.wake = None
        if gate is not None:
            await gate.close()
        if listener is not None and listener is not asyncio.current_task():
            # A run's reader, cancelled, drops its speculative reply and closes the session.
            listener.cancel()
        if speech is not None:
            await speech.close()

    # ------------------------------------------------------------------ life

    async def close(self) -> None:
        """Free everything; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        await self._end_speech()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.reply_track.stop()
        await self.pc.close()
