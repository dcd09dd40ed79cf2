"""The facade's speech in: whole files, a client's PCM, recorded takes, wake-word
streams, and the speech sessions a conversation hears through (see
:mod:`daemon.runtime.facade`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import numpy as np

from daemon.audio.pcm import RATE, AudioFormat, to_internal
from daemon.engines.asr.base import Segment, TranscribeOptions, Transcript
from daemon.engines.asr.commands import CommandReader
from daemon.engines.asr.hints import Hint, Hinter
from daemon.engines.asr.prompt import MAX_PROMPT_CHARS
from daemon.engines.wake import WakeLibrary
from daemon.engines.wake.base import WakeModelInfo
from daemon.errors import AudioTooLong, InvalidRequest
from daemon.house.commands import HouseCommands
from daemon.house.names import SourceState
from daemon.house.prompt import PromptBudget
from daemon.house.store import NameStore
from daemon.runtime.door import Door
from daemon.runtime.profiles import Profile, Sensitivity, with_sensitivity
from daemon.speech.finals import Identify
from daemon.speech.request import RequestLimits
from daemon.speech.session import SessionOptions, SpeechSession
from daemon.speech.transcribe import FileTranscript, transcribe_samples
from daemon.speech.upload import stream_upload, transcribe_upload
from daemon.speech.wake_gate import WakeListener
from daemon.voices.enroll import Enrollment, TakeCheck

_LOGGER = logging.getLogger(__name__)


class HouseHints:
    """A session's :class:`Hinter`: the household's names as they are at each decode."""

    def __init__(self, house: NameStore, client: str | None, budget: PromptBudget) -> None:
        self._house = house
        self._client = client
        self._budget = budget

    def hint(self, heard: str) -> Hint | None:
        """The household's names most like ``heard``, as a second reading's prompt (None
        when none is alike, or the matching failed: the first reading then stands)."""
        try:
            found = self._house.second_prompt(self._client, self._budget, heard)
        except Exception as exc:  # noqa: BLE001 - the names are a bonus; never fail a decode
            _LOGGER.warning("Matching the household's names failed: %s", type(exc).__name__)
            return None
        return None if found is None else Hint(*found)


class SpeechDoor(Door):
    """Speech in, and wake words."""

    # ---------------------------------------------------------------- speech in

    def check_transcribe(self, model: str | None, options: TranscribeOptions) -> None:
        """Fail now on an unknown model, or options it cannot honour (a language it
        does not speak), before a request starts."""
        self._engines.asr_model(model, options.language).check_options(options)

    def _session(
        self,
        profile: Profile,
        model: str | None = None,
        transcribe: TranscribeOptions | None = None,
        *,
        partials: bool | None = None,
        sensitivity: Sensitivity = Sensitivity.DEFAULT,
    ) -> SpeechSession:
        """A speech session for a conversation's hearing (adapters open conversations
        and requests, never a session).

        Args:
            profile: the client's timing (see :mod:`daemon.runtime.profiles`).
            model: ASR model name (None: the default); UnknownModel otherwise.
            transcribe: language, beam size and prompt for its decodes.
            partials: decode partial transcripts (None: as the profile and
                ``asr.partials`` say).
            sensitivity: how soon the client wants its turn ended.
        """
        engines = self._engines
        chosen = self._profiles[profile]
        transcribe = transcribe or TranscribeOptions()
        if partials is None:
            partials = chosen.partials and engines.partials
        settings = with_sensitivity(chosen.settings, sensitivity, self.config.vad.turn_threshold)
        options = SessionOptions(
            transcribe=transcribe,
            # The one place the household's names join a request (after the client's).
            hints=self.household_hints(model, transcribe),
            commands=self.household_commands(model, transcribe),
            partials=partials,
            hands_free=chosen.hands_free,
            ends_turn=chosen.ends_turn,
        )
        return engines.new_session(model, options, settings)

    def _limits(self, profile: Profile) -> RequestLimits:
        """The cap and deadline of a request of ``profile``."""
        chosen = self._profiles[profile]
        return RequestLimits(chosen.max_audio_s, chosen.deadline_s, chosen.deadline_counts_audio)

    def household_hints(self, model: str | None, options: TranscribeOptions) -> Hinter | None:
        """The second reading's hints for a session decoding with ``options``: the
        household's names resembling what it heard, after the client's own prompt (its
        ``transcript_names`` and ``transcript_terms``, or an OpenAI ``prompt``), within
        the model's budget (:data:`MAX_PROMPT_CHARS` characters, and its own token cap).
        None when Home Assistant is not configured. The names are read at each decode,
        so a long session hears a rename; a decode never waits for them."""
        house = self._house
        if house is None or (not house.current.names and house.state is SourceState.OFF):
            return None
        asr = self._engines.asr_model(model, options.language)
        budget = PromptBudget(
            asr.name, MAX_PROMPT_CHARS, asr.max_prompt_tokens, asr.token_counter()
        )
        return HouseHints(house, options.initial_prompt, budget)

    def household_commands(
        self, model: str | None, options: TranscribeOptions
    ) -> CommandReader | None:
        """The household's commands for a session decoding with ``options`` (in its
        language), or None: ``homeassistant.commands`` off, or no household names."""
        book = self._commands
        if book is None or not book.enabled or not self._house or not self._house.current.names:
            return None
        asr = self._engines.asr_model(model, options.language)
        language = options.language
        if not language or language == "auto":
            language = getattr(asr, "default_language", "") or "en"
        book.grammar(language)  # its first build starts now, before the audio comes
        return HouseCommands(book, language)

    async def transcribe_upload(
        self,
        data: bytes,
        model: str | None,
        options: TranscribeOptions,
        *,
        translate: bool = False,
        identify: Identify = Identify.NONE,
    ) -> FileTranscript:
        """A whole file's transcript (any format PyAV reads), within the file profile's
        cap and deadline; with ``identify``, who speaks in it."""
        engines = self._engines
        limits = self._limits(Profile.FILE)
        return await transcribe_upload(
            engines, engines.speakers, limits, data, model, options,
            translate=translate, identify=identify,
        )  # fmt: skip

    async def stream_upload(
        self, data: bytes, model: str | None, options: TranscribeOptions
    ) -> AsyncIterator[Segment | Transcript]:
        """A whole file's segments as they are decoded, then its Transcript (the file
        is decoded first: a bad one fails here)."""
        return await stream_upload(self._engines, self._limits(Profile.FILE), data, model, options)

    async def transcribe_pcm(
        self, fmt: AudioFormat, pcm: bytes, model: str | None, options: TranscribeOptions
    ) -> FileTranscript:
        """The transcript of a client's PCM in ``fmt`` (a Realtime audio item), at most
        ``limits.max_audio_s`` of it."""
        samples = await asyncio.to_thread(to_internal, fmt, pcm)
        limit = self.limits.max_audio_s
        if len(samples) > limit * RATE:
            raise AudioTooLong(f"the audio is longer than {limit:g} s")
        return await transcribe_samples(self._engines, samples, model, options)

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
