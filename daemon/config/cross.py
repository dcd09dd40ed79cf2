"""Checks across fields, run on the whole configuration once every layer is in.

Each raises ``Invalid`` at one key and lists in ``also`` the other keys it read, so
that an error caused by an environment variable names that variable.
"""

from __future__ import annotations

from daemon.config.convert import Invalid
from daemon.config.root import Config
from daemon.config.rules import remote_voice_ok


def cross_checks(config: Config) -> None:
    """Raise ``Invalid`` for the first setting that contradicts another."""
    if config.asr.default_model not in config.asr.models:
        raise Invalid(
            ("asr", "default_model"),
            f"must name one of asr.models ({', '.join(config.asr.models)}), "
            f'got "{config.asr.default_model}"',
            also=(("asr", "models"),),
        )
    trailing = ("vad", "trailing_silence_ms")
    if config.vad.speculative_silence_ms > config.vad.trailing_silence_ms:
        raise Invalid(
            ("vad", "speculative_silence_ms"),
            f"must not exceed vad.trailing_silence_ms ({config.vad.trailing_silence_ms}), "
            f"got {config.vad.speculative_silence_ms}",
            also=(trailing,),
        )
    if config.willow.speculative_silence_ms > config.vad.trailing_silence_ms:
        raise Invalid(
            ("willow", "speculative_silence_ms"),
            f"must not exceed vad.trailing_silence_ms ({config.vad.trailing_silence_ms}), "
            f"got {config.willow.speculative_silence_ms}",
            also=(trailing,),
        )
    if config.webrtc.port_min > config.webrtc.port_max:
        raise Invalid(
            ("webrtc", "port_min"),
            f"must not exceed webrtc.port_max ({config.webrtc.port_max}), "
            f"got {config.webrtc.port_min}",
            also=(("webrtc", "port_max"),),
        )
    if bool(config.https.cert_file) != bool(config.https.key_file):
        raise Invalid(
            ("https", "cert_file"),
            "cert_file and key_file must be set together",
            also=(("https", "key_file"),),
        )
    if config.llm.backend == "remote" and not (
        config.llm.remote.base_url or config.llm.remote.base_urls
    ):
        raise Invalid(
            ("llm", "remote", "base_url"),
            "must be set when llm.backend is remote",
            also=(("llm", "backend"), ("llm", "remote", "base_urls")),
        )
    _remote_checks(config)
    _tts_remote_checks(config)
    _home_assistant_checks(config)


def _home_assistant_checks(config: Config) -> None:
    """A Home Assistant named by URL needs a token to read its names with."""
    ha = config.homeassistant
    if ha.url and ha.names and not ha.token:
        raise Invalid(
            ("homeassistant", "token"),
            "must be set when homeassistant.url is (a long-lived access token of an "
            "administrator; HEARTH_HOMEASSISTANT__TOKEN_FILE reads it from a file)",
            also=(("homeassistant", "url"), ("homeassistant", "names")),
        )
    if ha.retry_min_s > ha.retry_max_s:
        raise Invalid(
            ("homeassistant", "retry_min_s"),
            f"must not exceed homeassistant.retry_max_s ({ha.retry_max_s:g}), "
            f"got {ha.retry_min_s:g}",
            also=(("homeassistant", "retry_max_s"),),
        )


def _tts_remote_checks(config: Config) -> None:
    """Remote voice groups name their servers and voices; no voice is named twice."""
    groups: set[str] = set()
    names: set[str] = set()
    for i, r in enumerate(config.tts.remote):
        path = ("tts", "remote", str(i))
        if not r.name or r.name in groups:
            raise Invalid((*path, "name"), f'must be set and unique, got "{r.name}"')
        groups.add(r.name)
        if not (r.base_url or r.base_urls):
            raise Invalid((*path, "base_url"), "must be set")
        if not r.voices:
            raise Invalid((*path, "voices"), "must name at least one voice the server offers")
        for local in r.local_names():
            if remote_voice_ok(local) or local in names:
                raise Invalid((*path, "voices"), f'"{local}" is not a usable, unique voice name')
            names.add(local)
    for i, r in enumerate(config.tts.remote):
        if r.fallback in names:
            raise Invalid(
                ("tts", "remote", str(i), "fallback"),
                f'must name a local voice, not a remote one, got "{r.fallback}"',
            )


def _remote_checks(config: Config) -> None:
    """Remote ASR models name their servers and a fallback that exists."""
    local = [n for n, m in config.asr.models.items() if m.backend == "local"]
    for name, m in config.asr.models.items():
        path = ("asr", "models", name)
        if m.backend == "remote" and not (m.remote.base_url or m.remote.base_urls):
            raise Invalid(
                (*path, "remote", "base_url"),
                "must be set when backend is remote",
                also=((*path, "backend"), (*path, "remote", "base_urls")),
            )
        if m.fallback and (m.backend != "remote" or m.fallback not in local):
            raise Invalid(
                (*path, "fallback"),
                f"must name a local model of asr.models ({', '.join(local) or 'none'}) "
                f'on a remote model, got "{m.fallback}"',
                also=((*path, "backend"), ("asr", "models")),
            )
