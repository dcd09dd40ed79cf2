"""Names other servers use for models and voices, and what they mean in Hearth."""

from __future__ import annotations

from daemon.engines.tts.base import SynthesisOptions
from daemon.errors import UnknownVoice
from daemon.runtime.engines import Engines

WIS_MODELS = frozenset({"tiny", "base", "small", "medium", "large", "large-v2", "large-v3"})
"""Model names Willow Inference Server accepts; they mean Hearth's default ASR model."""

OPENAI_ASR_MODELS = frozenset({"whisper-1", "gpt-4o-transcribe", "gpt-4o-mini-transcribe"})
"""OpenAI transcription model names; they mean Hearth's default ASR model."""

WIS_SPEAKERS = frozenset({"clb", "bdl", "rms", "slt", "awb", "jmk", "ksp"})
"""WIS's built-in (CMU Arctic) speakers; Willow firmware asks for CLB. They mean the
default voice."""

OPENAI_VOICES = frozenset(
    {"alloy", "ash", "ballad", "coral", "echo", "fable", "onyx", "nova", "sage", "shimmer"}
    | {"verse", "marin", "cedar"}
)
"""OpenAI voice names; they mean the default voice."""


def asr_model_name(engines: Engines, name: str | None, aliases: frozenset[str]) -> str | None:
    """The configured ASR model a request names (None: the default).

    A configured name wins; a name from ``aliases`` means the default; any other
    name is left for :meth:`Engines.asr_model` to refuse as unknown.
    """
    if not name or name in engines.asr:
        return name or None
    return None if name in aliases else name


def synthesis_options(
    engines: Engines,
    name: str | None,
    aliases: frozenset[str],
    speed: float = 1.0,
    sample_rate: int | None = None,
) -> SynthesisOptions:
    """Options for a voice or speaker named by a client.

    ``name`` may be a voice in the store, a speaker of the default voice, or one of
    ``aliases`` (case-insensitive) or empty for the default voice; anything else is
    an unknown voice (404). Runs on the event loop: voices come from the store's
    memory (:meth:`VoiceStore.recall`), and synthesis reads the voice afresh.
    """
    assert engines.tts is not None
    if not name or name.lower() in aliases:
        return SynthesisOptions(speed=speed, sample_rate=sample_rate)
    if engines.voices.recall(name) is not None:
        return SynthesisOptions(voice=name, speed=speed, sample_rate=sample_rate)
    default = engines.tts.check_voice(SynthesisOptions())
    if name in default.speakers:
        return SynthesisOptions(speaker=name, speed=speed, sample_rate=sample_rate)
    known = engines.voices.names()
    raise UnknownVoice(f"unknown voice or speaker '{name[:64]}' (voices: {known})")
