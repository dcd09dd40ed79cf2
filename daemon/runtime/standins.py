"""A configured model or voice not on disk yet: served by a stand-in until it is fetched.

At start-up a Whisper model asked for by name (``small.en``, ``large-v3``) that was
never fetched would keep the daemon from serving for as long as the download takes.
The embedded ``tiny.en`` serves under the model's name meanwhile; the model is fetched
in a thread (progress in the log and ``/healthz``), loaded, and put in the stand-in's
place, each step logged. Offline, the stand-in keeps serving and the error says which
model is missing and what to do. A default voice named from the Piper catalogue
(``tts.default_voice: en_GB-alba-medium``) is the same: the bundled voice speaks by
default until it is fetched.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from daemon.config import Config
from daemon.engines.asr.base import AsrModel
from daemon.engines.hardware import Placement
from daemon.engines.hub.names import piper_name, whisper_repo
from daemon.engines.hub.transfer import Stopped
from daemon.engines.models import (
    EMBEDDED_ASR,
    embedded_whisper,
    find_whisper,
    size_mb,
    whisper_target,
)
from daemon.engines.tts.base import TtsEngine
from daemon.engines.tts.voices import VoiceInfo
from daemon.errors import ModelUnavailable
from daemon.runtime.engines import Engines

_LOGGER = logging.getLogger(__name__)
STAND_IN = next(iter(EMBEDDED_ASR))
"""The embedded model that serves meanwhile (``tiny.en``)."""


def whisper_or_stand_in(config: Config, name: str, spec: str) -> tuple[Path, bool]:
    """The folder to load for ASR model ``name`` (``spec``, its path setting) now, and
    whether ``spec`` is still to be fetched (the folder is then the stand-in's).

    Raises:
        ModelUnavailable: ``spec`` is not on disk and asr.allow_download is false, or it
            is neither a folder, a Whisper name nor a repository id (a typo: no stand-in).
    """
    path = find_whisper(spec, config.models_path)
    if path is not None:
        return path, False
    if not config.asr.allow_download:
        raise ModelUnavailable(
            f"ASR model '{spec}' is not on disk ({whisper_target(spec, config.models_path)}) "
            "and asr.allow_download is false"
        )
    if whisper_repo(spec) is None:
        raise ModelUnavailable(
            f"ASR model '{spec}' (asr.models.{name}.path) is neither a folder, a Whisper "
            "name (tiny, base, small, medium, large-v3, turbo, distil-large-v3, the .en "
            "ones) nor a Hugging Face repository id"
        )
    return stand_in(name, spec, config.models_path), True


def stand_in(name: str, spec: str, models_dir: Path) -> Path:
    """The folder of the model serving ASR model ``name`` until ``spec`` is fetched.

    Raises:
        ModelUnavailable: the embedded model is not installed either.
    """
    path = embedded_whisper(STAND_IN, models_dir)
    if path is None:
        raise ModelUnavailable(
            f"ASR model '{spec}' is not on disk and the embedded {STAND_IN} that would "
            "serve meanwhile is not installed"
        )
    _LOGGER.warning(
        "ASR model %s (%s) is not on disk yet: the embedded %s serves it until it is fetched",
        name,
        spec,
        STAND_IN,
    )
    return path


def switch_when_fetched(
    engines: Engines,
    name: str,
    spec: str,
    placement: Placement,
    load: Callable[[Placement, Path], AsrModel],
) -> threading.Thread:
    """Fetch ``spec`` in a thread, load it with ``load`` and put it in the place of the
    stand-in serving ASR model ``name``."""
    engines.stand_ins.add(name)
    thread = threading.Thread(
        target=_fetch_and_switch,
        args=(engines, name, spec, placement, load),
        name=f"fetch-{name}",
        daemon=True,
    )
    thread.start()
    return thread


def _fetch_and_switch(
    engines: Engines,
    name: str,
    spec: str,
    placement: Placement,
    load: Callable[[Placement, Path], AsrModel],
) -> None:
    try:
        path = engines.hub.fetch_whisper(spec, engines.config.models_path)
    except Stopped:
        return  # the daemon stops (or reloads): the partial files stay for the next start
    except ModelUnavailable as exc:
        _LOGGER.error(
            "ASR model %s (%s) could not be fetched: %s. The embedded %s keeps serving it",
            name,
            spec,
            exc,
            STAND_IN,
        )
        return
    began = time.perf_counter()
    try:
        model = load(placement, path)
    except Exception as exc:  # noqa: BLE001 - the stand-in keeps serving
        _LOGGER.error(
            "ASR model %s (%s) was fetched into %s but does not load (%s: %s); the "
            "embedded %s keeps serving it",
            name,
            spec,
            path,
            type(exc).__name__,
            exc,
            STAND_IN,
        )
        return
    engines.asr[name] = model
    engines.stand_ins.discard(name)
    for index, status in enumerate(engines.status):
        if status.name == placement.name:
            engines.status[index] = replace(
                status,
                path=str(path),
                size_mb=round(size_mb(path), 1),
                load_s=round(time.perf_counter() - began, 2),
                reasons=[r for r in status.reasons if not r.startswith("stand-in")],
            )
    _LOGGER.info(
        "Switched ASR model %s from the embedded %s to %s (%s)", name, STAND_IN, spec, path
    )


def voice_stand_in(engines: Engines, name: str) -> VoiceInfo | None:
    """The bundled voice that speaks by default while default voice ``name`` is fetched;
    None when ``name`` is on disk, or not a catalogue voice Hearth may fetch."""
    store = engines.voices
    if not engines.config.hub.voices or piper_name(name) is None or store.find(name):
        return None
    bundled = next((v for v in store.list() if v.source == "bundled"), None)
    if bundled is None:
        return None
    _LOGGER.warning(
        "Default voice %s is not on disk yet: the bundled %s speaks until it is fetched",
        name,
        bundled.name,
    )
    return bundled


def switch_voice_when_fetched(engines: Engines, name: str, engine: TtsEngine) -> threading.Thread:
    """Fetch voice ``name`` in a thread, load it in ``engine`` and make it the default."""
    thread = threading.Thread(
        target=_fetch_voice_and_switch,
        args=(engines, name, engine),
        name="fetch-voice",
        daemon=True,
    )
    thread.start()
    return thread


def _fetch_voice_and_switch(engines: Engines, name: str, engine: TtsEngine) -> None:
    tts = engines.tts
    stand_in = tts.default_voice if tts is not None else "the bundled voice"
    try:
        voice = engines.voices.get(name)
        engine.preload(voice)
    except Stopped:
        return
    except Exception as exc:  # noqa: BLE001 - the bundled voice keeps speaking
        _LOGGER.error(
            "Default voice %s could not be fetched: %s. The bundled %s keeps speaking",
            name,
            exc,
            stand_in,
        )
        return
    if tts is not None:
        tts.default_voice = name
    _LOGGER.info("Switched the default voice from the bundled %s to %s", stand_in, name)
