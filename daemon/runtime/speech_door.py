"""The facade's speech in: sessions from named profiles, whole files, recorded takes,
and wake-word streams (see :mod:`daemon.runtime.facade`)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import numpy as np

from daemon.engines.asr.base import Segment, TranscribeOptions, Transcript
from daemon.engines.asr.prompt import MAX_PROMPT_CHARS
from daemon.engines.wake import WakeLibrary
from daemon.engines.wake.base import WakeModelInfo
from daemon.errors import InvalidRequest
from daemon.house.prompt import PromptBudget
from daemon.runtime.door import Door
from daemon.runtime.profiles import Profile, Sensitivity, with_sensitivity
from daemon.speech.session import SessionOptions, SpeechSession
from daemon.speech.transcribe import (
    FileTranscript,
    stream_segments,
    transcribe_samples,
    translate_audio,
)
from daemon.speech.wake_gate import WakeListener
from daemon.voices.enroll import Enrollment, TakeCheck


class SpeechDoor(Door):
    """Speech in, and wake words."""

    # ---------------------------------------------------------------- speech in

    def check_transcribe(self, model: str | None, options: TranscribeOptions) -> None:
        """Fail now on an unknown model, or options it cannot honour (a language it
        does not speak), before a request starts."""
        self._engines.asr_model(model, options.language).check_options(options)

    def open_session(
        self,
        profile: Profile,
        model: str | None = None,
        transcribe: TranscribeOptions | None = None,
        *,
        partials: bool | None = None,
        ends_turn: bool | None = None,
        sensitivity: Sensitivity = Sensitivity.DEFAULT,
    ) -> SpeechSession:
        """A speech session for one utterance (or, hands-free, a stream of them).

        Args:
            profile: the client's timing (see :mod:`daemon.runtime.profiles`).
            model: ASR model name (None: the default); UnknownModel otherwise.
            transcribe: language, beam size and prompt for its decodes.
            partials: decode partial transcripts (None: as the profile and
                ``asr.partials`` say).
            ends_turn: the session ends the utterance itself, and its final
                transcript comes while audio still arrives (None: as the profile
                says; see :meth:`ends_turns`).
            sensitivity: how soon the client wants its turn ended.

        Returns:
            The session; the caller starts, feeds, finishes and closes it.
        """
        engines = self._engines
        chosen = self._profiles[profile]
        # The one place the household's names join a request's prompt (after the client's).
        transcribe = self.household_prompt(model, transcribe or TranscribeOptions())
        if partials is None:
            partials = chosen.partials and engines.partials
        settings = with_sensitivity(chosen.settings, sensitivity, self.config.vad.turn_threshold)
        options = SessionOptions(
            transcribe=transcribe,
            partials=partials,
            hands_free=chosen.hands_free,
            ends_turn=chosen.ends_turn if ends_turn is None else ends_turn,
        )
        return engines.new_session(model, options, settings)

    def household_prompt(self, model: str | None, options: TranscribeOptions) -> TranscribeOptions:
        """``options`` with the household's names after the client's own prompt (its
        ``transcript_names`` and ``transcript_terms``, or an OpenAI ``prompt``), within the
        model's budget: :data:`MAX_PROMPT_CHARS` characters, and its own token cap
        (Distil-Whisper). Unchanged when no names are known; never waits for them."""
        house = self._house
        if house is None or not house.current.names:
            return options
        asr = self._engines.asr_model(model, options.language)
        budget = PromptBudget(
            asr.name, MAX_PROMPT_CHARS, asr.max_prompt_tokens, asr.token_counter()
        )
        prompt = house.prompt(options.initial_prompt, budget)
        if prompt == options.initial_prompt:
            return options
        return dataclasses.replace(options, initial_prompt=prompt)

    async def transcribe_file(
        self,
        samples: np.ndarray,
        model: str | None,
        options: TranscribeOptions,
        translate: bool = False,
    ) -> FileTranscript:
        """Decode a whole file's 16 kHz int16 samples (and translate them when asked)."""
        return await transcribe_samples(self._engines, samples, model, options, translate)

    def stream_file(
        self, samples: np.ndarray, model: str | None, options: TranscribeOptions
    ) -> AsyncIterator[Segment | Transcript]:
        """A whole file's segments as they are decoded, then its Transcript."""
        return stream_segments(self._engines, samples, model, options)

    async def translate(
        self, session: SpeechSession, audio: np.ndarray, options: TranscribeOptions, text: str
    ) -> str:
        """English text of a session's utterance ``audio`` whose transcript is ``text``."""
        return await translate_audio(self._engines, session.asr, audio, options, text)

    async def add_take(
        self, enrollment: Enrollment, data: bytes | np.ndarray, index: int | None
    ) -> TakeCheck:
        """Check a recorded take with ASR and VAD, and keep it in ``enrollment`` if good."""
        return await enrollment.add_take(self._engines, data, index)

    # ---------------------------------------------------------------- wake

    @property
    def wakes(self) -> bool:
        """Whether wake-word detection is on (``wake.enabled``)."""
        return self._engines.wake is not None

    def _wake(self) -> WakeLibrary:
        wake = self._engines.wake
        if wake is None:
            raise InvalidRequest("wake-word detection is not enabled (wake.enabled)")
        return wake

    async def wake_models(self) -> list[WakeModelInfo]:
        """Every wake model, with custom ones just dropped into the folder; none when off."""
        wake = self._engines.wake
        if wake is None:
            return []
        await self._engines.wake_pool.run(wake.refresh)
        return list(wake.models.values())

    def wake_model(self, name: str) -> WakeModelInfo:
        """The wake model called ``name`` (InvalidRequest when unknown or wake is off)."""
        wake = self._wake()
        wake.check_names([name])
        return wake.models[name]

    async def open_wake(self, names: list[str] | None) -> WakeListener:
        """A wake-word listener for ``names`` (None: every model); the caller closes it.

        The model folder is looked at first, so a custom model dropped in since counts.
        Raises InvalidRequest when wake is off or a name is unknown.
        """
        wake = self._wake()
        pool = self._engines.wake_pool
        await pool.run(wake.refresh)
        wake.check_names(names)
        stream = await pool.run(wake.stream, names)
        limits = self.limits
        return WakeListener(stream, pool, limits.max_sample_rate, limits.max_channels)
