"""TTS engines that plug in: ``tts.backend`` names the one that speaks local voices.

A backend is a :class:`TtsBackend`: how its engine loads, and which voices it brings.
Piper (``tts.backend: piper``, the default) speaks the voice store's files: the
bundled voices, the household's own, the catalogue's. Another engine brings its own
voices by name, and the store offers those instead of Piper's files.

Any other value of ``tts.backend`` is an importable module whose ``BACKEND`` is a
:class:`TtsBackend`: a new engine is that one module and that one key. Voices of
OpenAI-compatible servers (``tts.remote``) are spoken beside the backend's, whichever
it is (:class:`~daemon.engines.tts.remote.MixedTts`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from daemon.config.rules import module_ok
from daemon.engines.tts.base import TtsEngine
from daemon.engines.tts.voices import VoiceInfo
from daemon.errors import ConfigError


@dataclass(frozen=True)
class EngineSettings:
    """What every backend's engine is loaded with."""

    device: str
    """``cpu`` or ``cuda`` (the hardware plan's choice; a backend may ignore it)."""
    loaded_voices: int = 4
    """Voices held in memory at once (``tts.loaded_voices``)."""


def _no_voices() -> list[VoiceInfo]:
    return []


@dataclass(frozen=True)
class TtsBackend:
    """One TTS engine as Hearth loads it."""

    name: str
    load: Callable[[EngineSettings], TtsEngine]
    """Build the engine (blocking; its voices load on :meth:`TtsEngine.preload`)."""
    voices: Callable[[], list[VoiceInfo]] = field(default=_no_voices)
    """The voices it brings by name (see :func:`engine_voice`); none for Piper, whose
    voices are the store's files."""
    voice_files: bool = False
    """Whether it speaks the voice store's files (Piper's ``.onnx`` voices)."""
    source: Path | None = None
    """What ``hearth check`` shows as its model (its module, for a plug-in)."""


def engine_voice(
    name: str,
    language: str,
    sample_rate: int,
    engine: str,
    *,
    display_name: str = "",
    speakers: tuple[str, ...] = (),
    url: str = "",
) -> VoiceInfo:
    """A voice an engine brings by name, as the voice store lists it."""
    return VoiceInfo(
        name=name,
        model_path=Path(),
        config_path=Path(),
        language=language,
        sample_rate=sample_rate,
        speakers=speakers,
        display_name=display_name or name,
        source="engine",
        read_only=True,
        attribution_name=engine,
        attribution_url=url,
        origin="engine",
    )


def _load_piper(settings: EngineSettings) -> TtsEngine:
    from daemon.engines.tts.piper import PiperTts

    return PiperTts(use_cuda=settings.device == "cuda", max_loaded=settings.loaded_voices)


PIPER = TtsBackend("piper", _load_piper, voice_files=True)
"""Piper voices (piper-tts over onnxruntime): the default."""
BUILT_IN: dict[str, TtsBackend] = {PIPER.name: PIPER}


def tts_backend(name: str) -> TtsBackend:
    """The backend ``tts.backend`` names (importing a plug-in's module).

    Raises:
        ConfigError: no such module, or it defines no ``BACKEND``.
    """
    if name in BUILT_IN:
        return BUILT_IN[name]
    problem = module_ok(name)
    if problem is not None:
        raise ConfigError(f"tts.backend '{name[:128]}' {problem}")
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise ConfigError(f"tts.backend '{name}' cannot be imported: {exc}") from None
    backend = getattr(module, "BACKEND", None)
    if not isinstance(backend, TtsBackend):
        raise ConfigError(
            f"tts.backend '{name}' is not a TTS engine: the module defines no BACKEND "
            "(a daemon.engines.tts.registry.TtsBackend)"
        )
    if backend.source is None and module.__file__:
        backend = replace(backend, source=Path(module.__file__))
    return backend
