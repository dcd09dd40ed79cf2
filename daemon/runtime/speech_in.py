"""Speech in: conversations, spoken requests, whole files, a client's PCM and recorded
takes, heard as a named profile says (see :mod:`daemon.runtime.services`)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import numpy as np

from daemon.audio.pcm import RATE, AudioFormat, to_internal
from daemon.engines.asr.base import Segment, TranscribeOptions, Transcript
from daemon.engines.tts.base import SynthesisOptions
from daemon.errors import AudioTooLong, InvalidRequest
from daemon.runtime.context import Core, CurrentCore
from daemon.runtime.profiles import Profile
from daemon.runtime.requests import FileRequest, Listening, SpokenRequest
from daemon.runtime.sessions import open_session, request_limits
from daemon.runtime.wake_words import WakeWords
from daemon.speech.conversation import Conversation, Hearing, Mode, Playback
from daemon.speech.recording import Recording
from daemon.speech.request import SpeechRequest
from daemon.speech.session import SpeechSession
from daemon.speech.transcribe import FileTranscript, transcribe_samples
from daemon.speech.upload import stream_upload, transcribe_upload
from daemon.voices.enroll import Enrollment, TakeCheck

_MODE_PROFILES = {
    Mode.PUSH_TO_TALK: Profile.PUSH_TO_TALK,
    Mode.HANDS_FREE: Profile.HANDS_FREE,
    Mode.WAKE: Profile.WAKE,
}


class SpeechIn:
    """What a client says: conversations, requests, files and takes.

    Each call reads the core in force; a request keeps the engines it opened with,
    and a conversation moves to new engines at its next boundary after a reload.
    """

    def __init__(self, current: CurrentCore, wake: WakeWords) -> None:
        self._current = current
        self._wake = wake

    def check_transcribe(self, model: str | None, options: TranscribeOptions) -> None:
        """Fail now on an unknown model, or options it cannot honour (a language it
        does not speak), before a request starts."""
        self._current().engines.asr_model(model, options.language).check_options(options)

    # ---------------------------------------------------------------- conversations

    def open_conversation(
        self, conversation_id: str, playback: Playback | None = None, *, follow: bool = False
    ) -> Conversation:
        """A conversation for one client (a WebRTC peer, a Realtime session).

        It reads the engines in force whenever it starts something, so it moves to new
        engines after a reload: at the owner's :meth:`Conversation.reloaded`, or with
        ``follow`` on its own, as soon as it next listens or hears a frame after the
        engines or settings change. ``playback`` is the client's player of reply audio
        (barge-in stops it). The caller closes it.
        """
        current = self._current
        moved = _CoreWatch(current) if follow else None
        return Conversation(conversation_id, lambda: current().engines, playback, moved)

    async def hearing(self, listening: Listening) -> Hearing:
        """How a conversation is to hear, checked before anything stops (its speech
        session is opened from the core in force again when the conversation renews
        itself after a reload).

        Raises:
            UnknownModel, InvalidRequest: an unknown model, language, voice or wake
                word, a wake word outside wake mode, or replies without the LLM.
        """
        core = self._current()
        engines = core.engines
        mode, decoding, replies = listening.mode, listening.decoding, listening.replies
        transcribe = decoding.transcribe or TranscribeOptions()
        tts_options = replies.voice or SynthesisOptions()
        engines.asr_model(decoding.model, transcribe.language).check_options(transcribe)
        if replies.on:
            if engines.pipeline is None:
                raise InvalidRequest("spoken replies need the LLM, which is not enabled")
            if engines.tts is not None and replies.speak:
                engines.tts.check_voice(tts_options)
        wake_word = listening.wake_word
        if (wake_word is not None) != (mode is Mode.WAKE):
            raise InvalidRequest("a wake word goes with hands-free listening ('listen')")
        wake = wake_model = None
        if wake_word is not None:
            wake_model = self._wake.model(wake_word)
            wake = await self._wake.open([wake_word])
        chosen = listening.profile or _MODE_PROFILES[mode]
        current = self._current

        def session() -> SpeechSession:
            return open_session(
                current(),
                chosen,
                decoding.model,
                transcribe,
                partials=decoding.partials,
                sensitivity=listening.sensitivity,
            )

        continuous = mode is not Mode.PUSH_TO_TALK
        return Hearing(
            mode=mode,
            open_session=session,
            reply=replies.on,
            speak=replies.speak,
            tts_options=tts_options,
            require_known=continuous and core.config.speakers.require == "known",
            wake=wake,
            wake_model=wake_model,
            command_timeout_s=core.config.wake.command_timeout_s,
            speaker_wait_s=core.profiles[chosen].speaker_wait_s,
            identify=listening.identify,
            translate=listening.translate,
        )

    async def open_request(self, request: SpokenRequest) -> SpeechRequest:
        """One utterance a client sends and waits on: a push-to-talk turn of a new
        conversation, heard as its profile says (who ends it, the audio cap, the
        deadline), on the engines in force now until it ends, even across a reload.

        Raises:
            UnknownModel, InvalidRequest: as :meth:`hearing`.
        """
        core = self._current()

        def pinned() -> Core:
            return core

        held = SpeechIn(pinned, WakeWords(pinned))
        hearing = await held.hearing(request.listening())
        conversation = held.open_conversation(request.conversation_id or uuid.uuid4().hex)
        try:
            await conversation.listen(hearing)
            folder = request.record_to
            recording = Recording(folder, "upload") if folder is not None else None
            return SpeechRequest(
                conversation,
                request_limits(core, request.profile),
                stream=request.stream,
                replies=request.replies.on,
                recording=recording,
            )
        except BaseException:
            await conversation.close()
            raise

    # ---------------------------------------------------------------- files and takes

    async def transcribe_file(self, request: FileRequest) -> FileTranscript:
        """A whole file's transcript, within the file profile's cap and deadline; with
        ``identify``, who speaks in it."""
        core = self._current()
        engines = core.engines
        return await transcribe_upload(
            engines, engines.speakers, request_limits(core, Profile.FILE), request.data,
            request.model, request.transcribe,
            translate=request.translate, identify=request.identify,
        )  # fmt: skip

    async def stream_file(self, request: FileRequest) -> AsyncIterator[Segment | Transcript]:
        """A whole file's segments as they are decoded, then its Transcript (the file
        is decoded first: a bad one fails here)."""
        core = self._current()
        limits = request_limits(core, Profile.FILE)
        return await stream_upload(
            core.engines, limits, request.data, request.model, request.transcribe
        )

    async def transcribe_pcm(
        self, fmt: AudioFormat, pcm: bytes, model: str | None, options: TranscribeOptions
    ) -> FileTranscript:
        """The transcript of a client's PCM in ``fmt`` (a Realtime audio item), at most
        ``limits.max_audio_s`` of it."""
        core = self._current()
        samples = await asyncio.to_thread(to_internal, fmt, pcm)
        limit = core.limits.max_audio_s
        if len(samples) > limit * RATE:
            raise AudioTooLong(f"the audio is longer than {limit:g} s")
        return await transcribe_samples(core.engines, samples, model, options)

    async def add_take(
        self, enrollment: Enrollment, data: bytes | np.ndarray, index: int | None
    ) -> TakeCheck:
        """Check a recorded take with ASR and VAD, and keep it in ``enrollment`` if good."""
        return await enrollment.add_take(self._current().engines, data, index)


class _CoreWatch:
    """Whether the core in force changed since it was last asked (a reload)."""

    def __init__(self, current: CurrentCore) -> None:
        self._current = current
        self._seen: Core = current()

    def __call__(self) -> bool:
        core = self._current()
        moved = core is not self._seen
        self._seen = core
        return moved
