"""The speech sessions a conversation hears through, built from a :class:`Core`: the
profile's settings, the client's options and the household's names and commands; and
each profile's request cap and deadline. Adapters open conversations and requests
(:mod:`daemon.runtime.speech_in`), never a session."""

from __future__ import annotations

import logging

from daemon.engines.asr.base import TranscribeOptions
from daemon.engines.asr.commands import CommandReader
from daemon.engines.asr.hints import Hint, Hinter
from daemon.engines.asr.prompt import MAX_PROMPT_CHARS
from daemon.house.commands import HouseCommands
from daemon.house.names import SourceState
from daemon.house.prompt import PromptBudget
from daemon.house.store import NameStore
from daemon.runtime.context import Core
from daemon.runtime.profiles import Profile, Sensitivity, with_sensitivity
from daemon.speech.request import RequestLimits
from daemon.speech.session import SessionOptions, SpeechSession

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


def open_session(
    core: Core,
    profile: Profile,
    model: str | None = None,
    transcribe: TranscribeOptions | None = None,
    *,
    partials: bool | None = None,
    sensitivity: Sensitivity = Sensitivity.DEFAULT,
) -> SpeechSession:
    """A speech session for a conversation's hearing.

    Args:
        core: the engines and configuration to open it from.
        profile: the client's timing (see :mod:`daemon.runtime.profiles`).
        model: ASR model name (None: the default); UnknownModel otherwise.
        transcribe: language, beam size and prompt for its decodes.
        partials: decode partial transcripts (None: as the profile and
            ``asr.partials`` say).
        sensitivity: how soon the client wants its turn ended.
    """
    engines = core.engines
    chosen = core.profiles[profile]
    transcribe = transcribe or TranscribeOptions()
    if partials is None:
        partials = chosen.partials and engines.partials
    settings = with_sensitivity(chosen.settings, sensitivity, core.config.vad.turn_threshold)
    options = SessionOptions(
        transcribe=transcribe,
        # The one place the household's names join a request (after the client's).
        hints=household_hints(core, model, transcribe),
        commands=household_commands(core, model, transcribe),
        partials=partials,
        hands_free=chosen.hands_free,
        ends_turn=chosen.ends_turn,
    )
    return engines.new_session(model, options, settings)


def request_limits(core: Core, profile: Profile) -> RequestLimits:
    """The cap and deadline of a request of ``profile``."""
    chosen = core.profiles[profile]
    return RequestLimits(chosen.max_audio_s, chosen.deadline_s, chosen.deadline_counts_audio)


def household_hints(core: Core, model: str | None, options: TranscribeOptions) -> Hinter | None:
    """The second reading's hints for a session decoding with ``options``: the
    household's names resembling what it heard, after the client's own prompt (its
    ``transcript_names`` and ``transcript_terms``, or an OpenAI ``prompt``), within
    the model's budget (:data:`MAX_PROMPT_CHARS` characters, and its own token cap).
    None when Home Assistant is not configured. The names are read at each decode,
    so a long session hears a rename; a decode never waits for them."""
    house = core.house
    if house is None or (not house.current.names and house.state is SourceState.OFF):
        return None
    asr = core.engines.asr_model(model, options.language)
    budget = PromptBudget(asr.name, MAX_PROMPT_CHARS, asr.max_prompt_tokens, asr.token_counter())
    return HouseHints(house, options.initial_prompt, budget)


def household_commands(
    core: Core, model: str | None, options: TranscribeOptions
) -> CommandReader | None:
    """The household's commands for a session decoding with ``options`` (in its
    language), or None: ``homeassistant.commands`` off, or no household names."""
    book = core.commands
    if book is None or not book.enabled or not core.house or not core.house.current.names:
        return None
    asr = core.engines.asr_model(model, options.language)
    language = options.language
    if not language or language == "auto":
        language = getattr(asr, "default_language", "") or "en"
    book.grammar(language)  # its first build starts now, before the audio comes
    return HouseCommands(book, language)
