"""Building the remote engines (ASR models, voices, the LLM) from the configuration,
and closing them when they are replaced.

Remote engines load nothing: they hold HTTP clients and an :class:`EndpointSet`
each. Local fallbacks are loaded like any other local model and handed over here.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from daemon.config import Config, RemoteAsrConfig
from daemon.engines.asr.base import AsrModel
from daemon.engines.llm.base import LlmEngine
from daemon.engines.remote import EndpointSet, base_urls
from daemon.engines.tts.voices import VoiceInfo, VoiceStore
from daemon.engines.workers import WorkerPool
from daemon.errors import ConfigError, InvalidVoice, ModelUnavailable
from daemon.ops.metrics import RemoteGauges

if TYPE_CHECKING:
    from daemon.engines.tts.registry import TtsBackend
    from daemon.engines.tts.remote import RemoteTts

_LOGGER = logging.getLogger(__name__)
REMOTE_ASR_THREADS = 16
"""ASR pool threads when a model is remote: each waits on the network, not a core, and
the remote server batches what arrives together."""


def is_remote(config: Config, name: str) -> bool:
    """Whether ASR model ``name`` is served remotely."""
    return config.asr.models[name].backend == "remote"


def asr_endpoints(name: str, remote: RemoteAsrConfig) -> EndpointSet:
    """The endpoint set of one remote ASR model."""
    return EndpointSet(
        "asr",
        name,
        base_urls(remote.base_url, remote.base_urls),
        remote.api_key,
        remote.retry_s,
    )


def load_remote_asr(config: Config, name: str, local: dict[str, AsrModel]) -> AsrModel:
    """A remote ASR model, with its fallback taken from the loaded local ``models``."""
    from daemon.engines.asr.remote import RemoteAsr

    m = config.asr.models[name]
    fallback = local.get(m.fallback) if m.fallback else None
    model = RemoteAsr(
        name,
        asr_endpoints(name, m.remote),
        m.remote.model,
        timeout_s=m.remote.timeout_s,
        language=m.language,
        stream=m.remote.stream,
        fallback=fallback,
    )
    _LOGGER.info(
        "ASR model '%s' is remote at %s (fallback: %s)",
        name,
        ", ".join(model.endpoints.urls),
        m.fallback or "none",
    )
    return model


def load_remote_llm(config: Config, pool: WorkerPool) -> LlmEngine:
    """The remote LLM, with its local fallback model loaded (on the CPU) when one is named."""
    from daemon.engines.llm.remote import RemoteLlm

    remote = config.llm.remote
    fallback: LlmEngine | None = None
    if remote.fallback:
        from daemon.engines.llm.local import LocalLlm
        from daemon.engines.models import EMBEDDED_LLM_NAME, resolve_gguf

        spec = "" if remote.fallback == "embedded" else remote.fallback
        path = resolve_gguf(spec, config.models_path, config.asr.allow_download)
        fallback = LocalLlm(
            path,
            pool,
            context_tokens=config.llm.context_tokens,
            threads=config.llm.threads,
            name=EMBEDDED_LLM_NAME if not spec else None,
        )
    endpoints = EndpointSet(
        "llm",
        remote.model or "remote",
        base_urls(remote.base_url, remote.base_urls),
        remote.api_key,
        remote.retry_s,
    )
    return RemoteLlm(endpoints, remote.model, timeout_s=remote.timeout_s, fallback=fallback)


def load_remote_tts(config: Config) -> list[RemoteTts]:
    """The remote voice groups of ``tts.remote`` (nothing is loaded: HTTP clients)."""
    from daemon.engines.tts.remote import RemoteTts

    groups = []
    for r in config.tts.remote:
        endpoints = EndpointSet(
            "tts", r.name, base_urls(r.base_url, r.base_urls), r.api_key, r.retry_s
        )
        group = RemoteTts(r, endpoints)
        _LOGGER.info(
            "Voices %s are remote at %s (fallback: %s)",
            ", ".join(group.voices),
            ", ".join(endpoints.urls),
            r.fallback or "none",
        )
        groups.append(group)
    return groups


def attach_remote_voices(config: Config, store: VoiceStore) -> list[RemoteTts]:
    """The remote voice groups, their voices offered by ``store``.

    Raises:
        ConfigError: a remote voice has a bundled voice's name, or a fallback is not
            a local voice.
    """
    groups = load_remote_tts(config)
    try:
        store.set_remote([voice for group in groups for voice in group.voices.values()])
        for group in groups:
            if not group.fallback:
                continue
            fallback = store.find(group.fallback)
            if fallback is None or fallback.remote is not None:
                raise ConfigError(
                    f"tts.remote '{group.name}': fallback '{group.fallback}' is not a local "
                    f"voice (voices: {store.names()})"
                )
    except InvalidVoice as exc:
        raise ConfigError(f"tts.remote: {exc.message}") from None
    return groups


def check_engine_voice(store: VoiceStore, backend: TtsBackend, name: str) -> None:
    """ConfigError unless default voice ``name`` is one the TTS engine (``tts.backend``)
    or a remote server speaks (Piper's voice files are checked as they load)."""
    if backend.voice_files or store.find(name) is not None:
        return
    voices = ", ".join(v.name for v in store.list()) or "none"
    raise ConfigError(
        f"tts.default_voice '{name}' is not a voice of tts.backend '{backend.name}' "
        f"(voices: {voices}); set tts.default_voice to one of them"
    )


def local_voice(store: VoiceStore, name: str, groups: list[RemoteTts]) -> VoiceInfo:
    """The local voice to load at start-up for default voice ``name``: itself, or for
    a remote one its group's fallback (else the first local voice)."""
    voice = store.get(name)
    if voice.remote is None:
        return voice
    for group in groups:
        if voice.name in group.voices and group.fallback:
            return store.get(group.fallback)
    for other in store.list():
        if other.remote is None:
            return other
    raise ModelUnavailable("no local voice is installed (every voice is remote)")


async def close_remotes(engines: Iterable[object], keep: Iterable[object] = ()) -> int:
    """Close every remote engine of ``engines`` (remote ASR models, the TTS engine with
    remote voices) that is not in ``keep``: HTTP clients and health checks.

    Returns:
        How many were closed.
    """
    kept = {id(engine) for engine in keep}
    closed = 0
    for engine in engines:
        if engine is None or id(engine) in kept or not endpoint_sets([engine]):
            continue
        result = engine.close()  # type: ignore[attr-defined]
        if inspect.isawaitable(result):
            await result
        closed += 1
    return closed


def endpoint_sets(engines: Iterable[object]) -> list[EndpointSet]:
    """The endpoint sets of whichever of ``engines`` are remote."""
    found = []
    for engine in engines:
        sets = getattr(engine, "endpoints", None)
        if isinstance(sets, EndpointSet):
            found.append(sets)
        elif isinstance(sets, list):
            found.extend(s for s in sets if isinstance(s, EndpointSet))
    return found


def remote_gauges(sets: Iterable[EndpointSet]) -> RemoteGauges:
    """Each endpoint's state and counters, and the fallbacks, as plain tuples."""
    stats: list[tuple[str, str, str, bool, int, int, int]] = []
    fallbacks: list[tuple[str, str, str, int]] = []
    for s in sets:
        stats.extend(
            (e.kind, e.model, e.url, e.healthy, e.outstanding, e.requests, e.failures)
            for e in s.stats()
        )
        fallbacks.extend((s.kind, s.model, r, n) for r, n in sorted(s.fallbacks.items()))
    return RemoteGauges(tuple(stats), tuple(fallbacks))


def remote_fallback(engine: object) -> str:
    """The name of a remote engine's fallback ("none" without one)."""
    fallback = getattr(engine, "fallback", None)
    return str(getattr(fallback, "name", None) or "none")


def probe_remotes(config: Config) -> dict[str, dict[str, object]]:
    """Health-check every remote endpoint the configuration names (blocking, for check).

    Returns:
        For each remote engine ("asr:NAME", "llm", "tts:GROUP"): a one-line summary
        under "remote", each endpoint's answer under "endpoints", and "problem" when
        no endpoint answers and nothing falls back.
    """
    from daemon.engines.remote import probe

    wanted: dict[str, tuple[list[str], str, str, str]] = {}
    for name, m in config.asr.models.items():
        if m.backend == "remote":
            urls = base_urls(m.remote.base_url, m.remote.base_urls)
            wanted[f"asr:{name}"] = (urls, m.remote.api_key, m.remote.model, m.fallback)
    if config.llm.backend == "remote":
        r = config.llm.remote
        wanted["llm"] = (base_urls(r.base_url, r.base_urls), r.api_key, r.model, r.fallback)
    voices: dict[str, list[str]] = {}
    for t in config.tts.remote:
        wanted[f"tts:{t.name}"] = (
            base_urls(t.base_url, t.base_urls),
            t.api_key,
            t.model,
            t.fallback,
        )
        voices[f"tts:{t.name}"] = t.voices
    out: dict[str, dict[str, object]] = {}
    for key, (urls, api_key, model, fallback) in wanted.items():
        answers: list[dict[str, object]] = []
        lines = []
        for url in urls:
            alive, models, note = probe(url, api_key)
            serves = f"serves {', '.join(models[:8])}" if models else note
            if alive and models and model and model not in models:
                serves += f" (not {model})"
            # A server that lists its voices as models (Hearth does) shows those missing.
            offered = voices.get(key, [])
            if alive and set(offered) & set(models):
                missing = [v for v in offered if v not in models]
                serves += f" (missing voices: {', '.join(missing)})" if missing else ""
            answers.append({"url": url, "up": alive, "models": models, "note": note})
            lines.append(f"{url} {'up' if alive else 'DOWN'}: {serves}")
        summary = "; ".join(lines)
        if key in voices:
            summary = f"voices {', '.join(voices[key])}; {summary}"
        entry: dict[str, object] = {
            "remote": f"{summary} (fallback: {fallback or 'none'})",
            "endpoints": answers,
        }
        if key in voices:
            entry["voices"] = list(voices[key])
        if not any(a["up"] for a in answers) and not fallback:
            entry["problem"] = f"{key}: no endpoint answers and there is no fallback"
        out[key] = entry
    return out
