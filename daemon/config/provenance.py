"""Where each setting came from, as ``hearth check`` lists it, secrets hidden."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from daemon.config.convert import KeyPath
from daemon.config.environ import read_from_file
from daemon.config.layers import raw, value_at
from daemon.config.root import Config

SECRET_WORDS = ("api_key", "token", "password", "secret", "credential")
"""A key whose name holds one of these is a secret."""
HIDDEN = "(set)"
"""What is shown instead of a secret that is set."""


@dataclass(frozen=True)
class Setting:
    """One key set by the file, the add-on options or the environment."""

    key: str
    """The dotted key path, e.g. ``asr.models.tiny.en.beam_size``."""
    value: Any
    """The value in effect, as YAML data, with secrets shown as ``(set)``."""
    origin: str
    """``config.yaml:14``, ``env HEARTH_LLM__BACKEND``, the add-on options."""


def settings_of(config: Config) -> list[Setting]:
    """Every key a layer set, in config.yaml's order (every other key is the default)."""
    order = {path: i for i, path in enumerate(_paths(config, ()))}
    items = sorted(config.origins.items(), key=lambda item: order.get(item[0], len(order)))
    return [
        Setting(".".join(path), _shown(path, value_at(config, path), origin), origin)
        for path, origin in items
    ]


def redact(name: str, value: Any) -> Any:
    """``value`` (YAML data) with every non-empty secret in it shown as ``(set)``."""
    if isinstance(value, dict):
        return {k: redact(str(k), v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(name, v) for v in value]
    if value not in ("", None) and any(word in name.lower() for word in SECRET_WORDS):
        return HIDDEN
    return value


def _shown(path: KeyPath, value: Any, origin: str) -> Any:
    """The value of ``path`` as shown: hidden when it is a secret or came from a file."""
    value = raw(value)
    if read_from_file(path, origin) and value not in ("", None):
        return HIDDEN
    return redact(path[-1] if path else "", value)


def _paths(node: Any, path: KeyPath) -> Iterator[KeyPath]:
    """Every key path of a typed config, in field order."""
    yield path
    if dataclasses.is_dataclass(node):
        for f in dataclasses.fields(node):
            if not f.metadata.get("internal"):
                yield from _paths(getattr(node, f.name), (*path, f.name))
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*path, str(key)))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, (*path, str(i)))
