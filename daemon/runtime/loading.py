"""Loading every engine once, on the devices the hardware plan chose.

:func:`load_engines` builds the :class:`~daemon.runtime.engines.Engines` container at
start-up (service) or for the CLI; on a reload it takes over every model whose
settings did not change (:func:`model_keys`). A model that fails to load on CUDA is
loaded on the CPU instead, and the reason is logged and kept for ``hearth check``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from daemon.config import Config
from daemon.engines.asr.base import AsrModel
from daemon.engines.asr.batch import batch_size
from daemon.engines.cpu import select_llama
from daemon.engines.hardware import EngineRequest, HardwareReport, Placement, plan
from daemon.engines.hub.progress import Downloads
from daemon.engines.llm.base import LlmEngine
from daemon.engines.models import EMBEDDED_LLM_NAME, resolve_gguf, size_mb
from daemon.engines.speaker import Ge2eEncoder, create_speaker_encoder
from daemon.engines.tts.base import TtsEngine
from daemon.engines.tts.cache import TtsCache
from daemon.engines.tts.registry import EngineSettings, tts_backend
from daemon.engines.tts.remote import MixedTts
from daemon.engines.turn import create_turn
from daemon.engines.turn.base import TurnModel
from daemon.engines.vad import create_vad
from daemon.engines.wake import WakeLibrary, WakeModelSettings
from daemon.errors import HearthError, ModelUnavailable
from daemon.runtime.engines import Engines, EngineStatus
from daemon.runtime.remote import (
    REMOTE_ASR_THREADS,
    attach_remote_voices,
    check_engine_voice,
    endpoint_sets,
    is_remote,
    load_remote_asr,
    load_remote_llm,
    local_voice,
    remote_fallback,
)
from daemon.runtime.standins import (
    switch_voice_when_fetched,
    switch_when_fetched,
    voice_stand_in,
    whisper_or_stand_in,
)
from daemon.speakers.service import SpeakerService
from daemon.speakers.store import SpeakerStore

_LOGGER = logging.getLogger(__name__)
T = TypeVar("T")


def engine_requests(config: Config) -> list[EngineRequest]:
    """What each configured engine asks of the hardware (VRAM estimates in MB)."""
    requests = [
        EngineRequest(f"asr:{name}", "asr", m.device, m.compute_type, vram_mb=1000)
        for name, m in config.asr.models.items()
        if m.backend == "local"
    ]
    requests.append(EngineRequest("tts", "tts", config.tts.device, vram_mb=400))
    if config.llm.backend == "local":
        requests.append(EngineRequest("llm", "llm", config.llm.device, vram_mb=1500))
    return requests


def model_keys(config: Config) -> dict[str, object]:
    """What decides each loaded model: equal keys mean a reload can keep the model.

    Settings read per request (sampling, prompts, limits, history) are not part
    of a key; the worker count is (CTranslate2 sizes its replicas by it).
    """
    llm = config.llm
    keys: dict[str, object] = {
        f"asr:{name}": (m, config.models_path, config.asr.workers)
        for name, m in config.asr.models.items()
    }
    keys["vad"] = (config.vad.engine, config.vad.threshold, config.vad.aggressiveness)
    keys["turn"] = (config.vad.turn, config.vad.turn_model, config.vad.turn_threshold)
    keys["speaker"] = (config.speakers.enabled, config.speakers.model)
    keys["tts"] = (config.tts.backend, config.tts.device, config.tts.loaded_voices)
    keys["tts-cache"] = (config.tts.cache, config.tts_cache_path)
    keys["llm"] = (
        llm.backend,
        llm.remote if llm.backend == "remote" else None,
        (llm.model, llm.device, llm.gpu_layers, llm.context_tokens, llm.threads),
        config.models_path,
        llm.prompt_cache,
    )
    wake = config.wake
    keys["wake"] = (
        wake.enabled,
        wake.models,
        wake.refractory_s,
        config.wake_path,
        wake.max_streams,
    )
    keys["conversations"] = (llm.history_turns, llm.history_ttl_s, llm.max_conversations)
    return keys


class _Reuse:
    """What a reload may take over from the engines in use (nothing when None)."""

    def __init__(self, previous: Engines | None, config: Config) -> None:
        self.previous = previous
        self.same: set[str] = set()
        if previous is not None:
            old, new = model_keys(previous.config), model_keys(config)
            self.same = {k for k, v in new.items() if old.get(k) == v}

    def model(self, key: str, current: T | None) -> T | None:
        """The previous engine's object for ``key`` when its key is unchanged."""
        return current if key in self.same and current is not None else None

    def status(self, engines: Engines, name: str) -> None:
        """Carry the previous status line of a kept model over."""
        assert self.previous is not None
        engines.status.extend(s for s in self.previous.status if s.name == name)
        _LOGGER.info("Kept %s loaded (unchanged)", name)

    def pools(self, engines: Engines) -> None:
        """Keep each pool whose worker count is unchanged, with the new queue size.

        A kept model keeps its pool: a local LLM must never run twice at once.
        """
        if self.previous is None:
            return
        pools = ("asr_pool", "vad_pool", "tts_pool", "llm_pool", "wake_pool", "turn_pool")
        for attr in (*pools, "speaker_pool"):
            old, new = getattr(self.previous, attr), getattr(engines, attr)
            if old.workers == new.workers:
                old.max_queue = new.max_queue
                new.close()
                setattr(engines, attr, old)


def load_engines(
    config: Config,
    report: HardwareReport,
    *,
    asr: bool = True,
    tts: bool = True,
    llm: bool = True,
    previous: Engines | None = None,
    downloads: Downloads | None = None,
) -> Engines:
    """Load the configured engines (blocking: call from a thread at start-up).

    The CLI loads only what a command needs; the daemon loads everything. On a
    reload ``previous`` are the engines in use: models whose settings did not
    change are taken over (with their worker pools) instead of loaded again.
    A Whisper model not on disk yet is served by the embedded tiny.en while it is
    fetched in the background (:mod:`daemon.runtime.standins`); ``downloads`` records
    the fetches (``/healthz``), kept across reloads.
    """
    placements = {p.name: p for p in plan(engine_requests(config), report)}
    asr_batch = max(
        [batch_size(config.asr.max_batch, p.device) for p in placements.values() if p.kind == "asr"]
        or [1]
    )
    if any(is_remote(config, name) for name in config.asr.models):
        asr_batch = max(asr_batch, -(-REMOTE_ASR_THREADS // config.asr.workers))
    if downloads is None and previous is not None:
        downloads = previous.hub.downloads
    engines = Engines(config, asr_batch, downloads)
    if previous is not None and previous.config.hub == config.hub:
        engines.hub = previous.hub  # its voice catalogue, read once, stays
    engines.report = report
    reuse = _Reuse(previous, config)
    reuse.pools(engines)
    for placement in placements.values():
        for reason in placement.reasons:
            log = _LOGGER.warning if "falling back" in reason or "moved" in reason else _LOGGER.info
            log("%s: %s", placement.name, reason)

    for name, model_cfg in config.asr.models.items() if asr else ():
        if model_cfg.backend == "remote":
            continue  # after the local models: one may be its fallback
        path, fetch = whisper_or_stand_in(config, name, model_cfg.path)
        placement = placements[f"asr:{name}"]
        kept = reuse.model(placement.name, previous.asr.get(name) if previous else None)
        if kept is not None and previous is not None and name in previous.stand_ins:
            kept = None  # a stand-in is never kept: the new engines fetch and switch
        if kept is not None:
            engines.asr[name] = kept
            reuse.status(engines, placement.name)
            continue

        def load_asr(p: Placement, path: Path = path, name: str = name) -> AsrModel:
            from daemon.engines.asr.whisper import WhisperAsr

            m = config.asr.models[name]
            return WhisperAsr(
                name,
                path,
                device=p.device,
                device_index=p.device_index,
                compute_type=p.compute_type,
                cpu_threads=m.cpu_threads,
                workers=config.asr.workers,
                beam_size=m.beam_size,
                language=m.language,
                batch_window_ms=config.asr.batch_window_ms,
                max_batch=batch_size(config.asr.max_batch, p.device),
                window=m.window,
            )

        engines.asr[name] = _load_with_fallback(engines, placement, path, load_asr)
        engines.status[-1].max_batch = batch_size(config.asr.max_batch, placement.device)
        if fetch:
            engines.status[-1].reasons.append(f"stand-in until {model_cfg.path} is fetched")
            switch_when_fetched(engines, name, model_cfg.path, placement, load_asr)
    for name in config.asr.models if asr else ():
        if is_remote(config, name):
            remote = load_remote_asr(config, name, engines.asr)
            engines.asr[name] = remote
            urls = ", ".join(endpoint_sets([remote])[0].urls)
            reasons = [f"remote OpenAI-compatible server (fallback: {remote_fallback(remote)})"]
            engines.status.append(
                EngineStatus(f"asr:{name}", "asr", "remote", "-", urls, 0.0, 0.0, reasons)
            )

    if asr and config.asr.partials == "auto":
        default = engines.asr[config.asr.default_model]
        engines.partials = default.device.startswith("cuda")
        _LOGGER.info(
            "Partial transcripts %s (asr.partials: auto, default model on %s)",
            "on" if engines.partials else "off",
            default.device,
        )
    engines.vad = reuse.model("vad", previous.vad if previous else None) or create_vad(
        config.vad.engine, config.vad.threshold, config.vad.aggressiveness
    )
    if asr and config.vad.turn != "off":
        engines.turn = reuse.model("turn", previous.turn if previous else None) or _load_turn(
            config
        )
    if config.speakers.enabled:
        old_speakers = previous.speakers if previous else None
        encoder = reuse.model(
            "speaker", old_speakers.encoder if old_speakers else None
        ) or _load_speaker(config)
        if encoder is not None:
            store = SpeakerStore(config.state_path / "speakers", config.speakers.max_speakers)
            engines.speakers = SpeakerService(encoder, engines.speaker_pool, store, config.speakers)
    if config.wake.enabled:
        engines.wake = reuse.model("wake", previous.wake if previous else None) or _load_wake(
            config
        )
    if tts:
        if placements["tts"].device == "cuda":
            from daemon.engines import cuda

            cuda.preload()  # onnxruntime's CUDA provider opens cuDNN and cuBLAS by name
        _load_tts(engines, config, placements["tts"], reuse)
    if llm:
        kept_llm = reuse.model("llm", previous.llm if previous else None)
        if kept_llm is not None:
            reuse.status(engines, "llm")
        engine = kept_llm or _load_llm(engines, config, placements.get("llm"))
        if engine is not None:  # None: this CPU runs no llama.cpp build (status says why)
            old_chat = previous.chat if previous else None
            conversations = reuse.model(
                "conversations", old_chat.conversations if old_chat else None
            )
            engines.attach_llm(engine, conversations)
            old_prompt = previous.config.llm.system_prompt if previous else None
            if kept_llm is None or old_prompt != config.llm.system_prompt:
                _prime_llm(engine, config)
    return engines


def _prime_llm(engine: LlmEngine, config: Config) -> None:
    """Have a local model evaluate the system prompt now, or read its state from disk,
    so that the first reply evaluates only its own turn (blocking: in the loading
    thread, never the event loop; the model's lock orders it with any reply)."""
    from daemon.engines.llm.local import LocalLlm

    if not config.llm.system_prompt or not isinstance(engine, LocalLlm):
        return
    if engine.prompt_cache is None:
        return  # llm.prompt_cache is off
    cache = engine.prompt_cache
    began, disk_hits = time.perf_counter(), cache.disk_hits
    try:
        primed = engine.prime(config.llm.system_prompt)
    except Exception as exc:  # noqa: BLE001 - the first reply evaluates it instead
        _LOGGER.warning("Could not prepare the system prompt's state: %s", exc)
        return
    if primed:
        source = "read from disk" if cache.disk_hits > disk_hits else "evaluated"
        _LOGGER.info(
            "System prompt %s in %.2f s (llm.prompt_cache)", source, time.perf_counter() - began
        )


def _load_wake(config: Config) -> WakeLibrary:
    """The wake models (CPU, TFLite): a few hundred ms for the built-in ones."""
    began = time.perf_counter()
    settings = {
        name: WakeModelSettings(m.library, m.probability_cutoff, m.sliding_window)
        for name, m in config.wake.models.items()
    }
    wake = WakeLibrary(
        settings, config.wake_path, config.wake.refractory_s, config.wake.max_streams
    )
    _LOGGER.info(
        "Loaded wake models %s in %.2f s", ", ".join(wake.models), time.perf_counter() - began
    )
    return wake


def _load_speaker(config: Config) -> Ge2eEncoder | None:
    """The speaker encoder (CPU, numpy), or None when it cannot load: speaker
    verification is then off (Willow's voice_auth answers 406)."""
    began = time.perf_counter()
    try:
        encoder = create_speaker_encoder(config.speakers.model)
    except Exception as exc:  # noqa: BLE001 - a broken model file must not stop the daemon
        _LOGGER.warning("Speaker model unavailable (%s); speaker verification is off", exc)
        return None
    _LOGGER.info("Loaded speaker model %s in %.2f s", encoder.name, time.perf_counter() - began)
    return encoder


def _load_turn(config: Config) -> TurnModel | None:
    """The end-of-turn model (CPU, under a second), or None when it cannot load: the
    endpointer then ends turns after the fixed trailing silence."""
    vad = config.vad
    began = time.perf_counter()
    try:
        turn = create_turn(vad.turn, vad.turn_model, vad.turn_threshold)
    except Exception as exc:  # noqa: BLE001 - a broken model file must not stop the daemon
        _LOGGER.warning(
            "End-of-turn model unavailable (%s); turns end after %d ms of silence",
            exc,
            vad.trailing_silence_ms,
        )
        return None
    _LOGGER.info("Loaded turn model %s in %.2f s", turn.name, time.perf_counter() - began)
    return turn


def _load_tts(engines: Engines, config: Config, placement: Placement, reuse: _Reuse) -> None:
    backend = tts_backend(config.tts.backend)
    engines.voices.use_engine(backend.voices(), backend.voice_files)
    remotes = attach_remote_voices(config, engines.voices)  # tts.remote: HTTP clients only
    check_engine_voice(engines.voices, backend, config.tts.default_voice)
    waiting = voice_stand_in(engines, config.tts.default_voice)
    voice = waiting or local_voice(engines.voices, config.tts.default_voice, remotes)
    previous = reuse.previous.tts if reuse.previous is not None else None

    def load_tts(p: Placement) -> TtsEngine:
        engine = backend.load(EngineSettings(p.device, config.tts.loaded_voices))
        engine.preload(voice)
        return engine

    old_engine = previous.engine if previous else None
    tts_engine = reuse.model("tts", getattr(old_engine, "local", old_engine))
    if tts_engine is not None:
        tts_engine.preload(voice)  # a new default voice loads beside the others
        reuse.status(engines, "tts")
    else:
        source = backend.source or voice.model_path
        tts_engine = _load_with_fallback(engines, placement, source, load_tts)
    cache = reuse.model("tts-cache", previous.cache if previous else None)
    if cache is None and config.tts.cache.enabled:
        cache = TtsCache(config.tts_cache_path, config.tts.cache.max_mb * 1_000_000)
    for group in remotes:
        reasons = [
            f"remote voices {', '.join(group.voices)} (fallback: {group.fallback or 'none'})"
        ]
        urls = ", ".join(group.endpoints.urls)
        engines.status.append(
            EngineStatus(f"tts:{group.name}", "tts", "remote", "-", urls, 0.0, 0.0, reasons)
        )
    engines.attach_tts(MixedTts(tts_engine, remotes) if remotes else tts_engine, cache)
    if waiting is not None and engines.tts is not None:
        engines.tts.default_voice = waiting.name
        switch_voice_when_fetched(engines, config.tts.default_voice, tts_engine)


def _load_llm(engines: Engines, config: Config, placement: Placement | None) -> LlmEngine | None:
    """The LLM; None, with an "off" status and its reason, when the local LLM's
    llama.cpp cannot run on this CPU (ASR and TTS serve without it)."""
    if config.llm.backend == "remote":
        engine = load_remote_llm(config, engines.llm_pool)
        urls = ", ".join(endpoint_sets([engine])[0].urls)
        reasons = [f"remote OpenAI-compatible server (fallback: {remote_fallback(engine)})"]
        engines.status.append(EngineStatus("llm", "llm", "remote", "-", urls, 0.0, 0.0, reasons))
        return engine
    assert placement is not None
    choice = select_llama()  # logs the one line that says why, when nothing can run
    if choice.build is None:
        engines.status.append(EngineStatus("llm", "llm", "off", "-", "", 0.0, 0.0, [choice.reason]))
        return None
    path = resolve_gguf(config.llm.model, config.models_path, config.asr.allow_download)

    def load(p: Placement) -> LlmEngine:
        from daemon.engines.llm.local import LocalLlm

        return LocalLlm(
            path,
            engines.llm_pool,
            context_tokens=config.llm.context_tokens,
            gpu_layers=config.llm.gpu_layers if p.device == "cuda" else 0,
            threads=config.llm.threads,
            name=EMBEDDED_LLM_NAME if not config.llm.model else None,
            prompt_cache=config.llm.prompt_cache,
            cache_dir=config.llm_cache_path if config.llm.prompt_cache else None,
        )

    return _load_with_fallback(engines, placement, path, load)


def _cuda_status(placement: Placement, report: HardwareReport | None) -> list[dict[str, object]]:
    """The CUDA libraries ``placement``'s engine needs, where found (CUDA boxes only)."""
    if report is None or report.cuda_libraries is None:
        return []
    from daemon.engines import cuda

    return [
        {"soname": lib.soname, "wheel": lib.wheel, "path": lib.path, "loaded": lib.loaded}
        for lib in cuda.find()
        if placement.kind in lib.users
    ]


def _load_with_fallback(
    engines: Engines, placement: Placement, path: Path, load: Callable[[Placement], T]
) -> T:
    """Load on the planned device; on a CUDA failure, log why and load on CPU."""
    began = time.perf_counter()
    try:
        engine = load(placement)
    except HearthError:
        raise
    except Exception as exc:  # noqa: BLE001 - any CUDA/runtime failure falls back
        if placement.device == "cpu":
            raise ModelUnavailable(f"{placement.name}: failed to load {path}: {exc}") from exc
        reason = (
            f"failed to load on {placement.label} ({type(exc).__name__}: {exc}); loading on CPU"
        )
        _LOGGER.warning("%s: %s", placement.name, reason)
        placement.to_cpu(reason)
        engine = load(placement)
    engines.status.append(
        EngineStatus(
            placement.name,
            placement.kind,
            placement.label,
            placement.compute_type,
            str(path),
            round(size_mb(path), 1),
            round(time.perf_counter() - began, 2),
            list(placement.reasons),
            placement.fix,
            _cuda_status(placement, engines.report),
        )
    )
    _LOGGER.info(
        "Loaded %s on %s in %.2f s", placement.name, placement.label, time.perf_counter() - began
    )
    return engine
