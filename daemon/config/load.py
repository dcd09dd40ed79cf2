"""Loading: the config file, the add-on options and the environment, in that order,
validated as one configuration whose errors name where the bad value came from.

A file error names the file, the line and the key
(``config.yaml:14 asr.models.tiny.beam_size: must be ...``); a variable's names the
variable (``HEARTH_ASR__MODELS__TINY_EN__BEAM_SIZE: must be ...``); an add-on
option's names the add-on options and the key.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path

import yaml

from daemon.config.addon import AddEntry, KeepEntries
from daemon.config.convert import Invalid, KeyPath, build
from daemon.config.cross import cross_checks
from daemon.config.environ import apply_environ
from daemon.config.layers import ADDON, ENV, FILE, Layers, Origin, leaves
from daemon.config.reader import line_map, line_of, yaml_error
from daemon.config.root import Config
from daemon.errors import ConfigError

ADDON_SOURCE = "add-on options"


def parse_config(text: str, source: str = "<string>") -> Config:
    """Parse and validate YAML text; raise ConfigError naming file, line and key.

    Reads no environment: the result holds the file's settings over the defaults.
    """
    return _assemble(text, source, {}, ADDON_SOURCE, {})


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    addon: Mapping[tuple[str, ...], object] | None = None,
    addon_source: str = ADDON_SOURCE,
) -> Config:
    """Load the configuration: defaults < the file < the add-on options < environment.

    Args:
        path: the config file; None: $HEARTH_CONFIG, and without it no file.
        environ: the environment to read ``HEARTH_*`` settings (and HEARTH_CONFIG)
            from; None: ``os.environ``, ``{}``: none.
        addon: add-on option values by key path, e.g. ``{("llm", "backend"): "remote"}``;
            a None value sets nothing.
        addon_source: how origins and errors name the add-on options.

    Returns:
        The validated Config; its ``origins`` say which layer set each key.

    Raises:
        ConfigError: naming the file and line, the variable or the add-on options.
    """
    env = os.environ if environ is None else environ
    if path is None:
        path = env.get("HEARTH_CONFIG") or None
    text = None
    source = "<defaults>"
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read config: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"{path}: config is not UTF-8 text") from None
        source = str(path)
    return _assemble(text, source, addon or {}, addon_source, env)


def _assemble(
    text: str | None,
    source: str,
    addon: Mapping[tuple[str, ...], object],
    addon_source: str,
    environ: Mapping[str, str],
) -> Config:
    """Validate the file on its own, then with the layers above it, then across keys."""
    lines: dict[KeyPath, int] = {}
    layers = Layers()
    try:
        config = Config()
        if text is not None:
            lines = line_map(text)
            data = yaml.safe_load(text)
            config = build(Config, data, ())
            layers = Layers(data)
            for key in leaves(Config, layers.data):
                line = line_of(key, lines)
                label = f"{source}:{line}" if line else source
                layers.owners[key] = Origin(FILE, label, label, key)
        overridden = _apply_addon(layers, addon, addon_source)
        overridden = apply_environ(layers, environ) or overridden
        if overridden:
            config = build(Config, layers.data, ())
        cross_checks(config)
    except Invalid as exc:
        raise ConfigError(_message(exc, source, lines, layers)) from None
    except yaml.YAMLError as exc:
        raise yaml_error(exc, text or "", source) from None
    except RecursionError:
        raise ConfigError(f"{source}: invalid YAML: nested or recursive too deeply") from None
    return dataclasses.replace(
        config,
        source=source,
        origins=layers.origins(),
        addon=dict(addon),
        addon_source=addon_source,
    )


def _apply_addon(layers: Layers, addon: Mapping[tuple[str, ...], object], source: str) -> bool:
    """Set each add-on option's key (shorter paths first), merged into the file's
    mappings rather than replacing them; whether any was set."""
    items = [(tuple(map(str, path)), value) for path, value in addon.items()]
    items = [(path, value) for path, value in items if path and value is not None]
    for path, value in sorted(items, key=lambda item: len(item[0])):
        origin = Origin(ADDON, source, source, path)
        if isinstance(value, AddEntry):
            layers.add_entry(path, value.name, value.value, origin)
        elif isinstance(value, KeepEntries):
            layers.keep_entries(path, list(value.names), origin)
        else:
            layers.set(path, value, origin)
    return bool(items)


def _message(exc: Invalid, source: str, lines: dict[KeyPath, int], layers: Layers) -> str:
    """The error text: named by the highest layer that set a key the check read."""
    key = ".".join(exc.path) or "(top level)"
    best = layers.owner(exc.path, below=True)
    for other in exc.also:
        found = layers.owner(other)
        if found is not None and (best is None or found.rank > best.rank):
            best = found
    if best is not None and best.rank > FILE:
        if best.rank == ENV and best.path == exc.path:
            return f"{best.where}: {exc.problem}"
        return f"{best.where} {key}: {exc.problem}"
    line = exc.line if exc.path else (exc.line or 1)
    if line is None:
        line = line_of(exc.path, lines)
    where = f"{source}:{line}" if line else source
    return f"{where} {key}: {exc.problem}"
