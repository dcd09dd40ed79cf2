"""Names other servers use for models and voices, and what they mean in Hearth."""

from __future__ import annotations

from daemon.runtime.api import Services

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


def asr_model_name(services: Services, name: str | None, aliases: frozenset[str]) -> str | None:
    """The configured ASR model a request names (None: the default).

    A configured name wins; a name from ``aliases`` means the default; any other
    name is left for the core to refuse as unknown.
    """
    if not name or services.house.has_asr_model(name):
        return name or None
    return None if name in aliases else name
