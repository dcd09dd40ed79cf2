"""The layers of a configuration merged as raw values, with where each key came from.

Lowest first: the built-in defaults, the config file, the add-on options, the
environment. Each layer sets key paths in one raw mapping (what YAML would give);
the loader validates the result once, and names the layer that set a bad value.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from daemon.config.convert import KeyPath
from daemon.config.root import Config

FILE = 1
ADDON = 2
ENV = 3


@dataclass(frozen=True)
class Origin:
    """The layer that set a key, and how messages name it."""

    rank: int
    """FILE, ADDON or ENV: a higher layer overrides a lower one."""
    label: str
    """Shown by ``hearth check``: ``config.yaml:14``, ``env HEARTH_LLM__BACKEND``."""
    where: str
    """What an error message starts with: the variable's name, the add-on source."""
    path: KeyPath
    """The key path the layer set."""


def raw(value: Any) -> Any:
    """A typed config value (or raw data) as plain YAML data: mappings, lists, scalars."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: raw(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if not f.metadata.get("internal")
        }
    if isinstance(value, dict):
        return {str(k): raw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [raw(v) for v in value]
    return value


def value_at(config: Any, path: KeyPath) -> Any:
    """The value at ``path`` in a typed config (None: no such key or entry)."""
    node = config
    for key in path:
        if dataclasses.is_dataclass(node):
            node = getattr(node, key, None)
        elif isinstance(node, dict):
            node = node.get(key)
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


def leaves(cls: Any, data: dict[Any, Any], path: KeyPath = ()) -> Iterator[KeyPath]:
    """The key paths that a layer's valid raw ``data`` sets: its leaves.

    Sections are walked into; so are an entry of a mapping-valued key
    (``asr.models.base``) and an item of a list of sections (``tts.remote.0``), each
    a leaf itself when it holds no keys (every default).
    """
    hints = typing.get_type_hints(cls)
    for key, value in data.items():
        sub = (*path, str(key))
        tp = hints.get(str(key))
        if dataclasses.is_dataclass(tp):
            if isinstance(value, dict):
                yield from leaves(tp, value, sub)
        elif typing.get_origin(tp) is dict and isinstance(value, dict):
            entry_tp = typing.get_args(tp)[1]
            for name, entry in value.items():
                if dataclasses.is_dataclass(entry_tp) and isinstance(entry, dict) and entry:
                    yield from leaves(entry_tp, entry, (*sub, str(name)))
                else:
                    yield (*sub, str(name))
        elif (
            typing.get_origin(tp) is list
            and dataclasses.is_dataclass(typing.get_args(tp)[0])
            and isinstance(value, list)
            and value
        ):
            for i, item in enumerate(value):  # tts.remote: one group per item
                if isinstance(item, dict) and item:
                    yield from leaves(typing.get_args(tp)[0], item, (*sub, str(i)))
                else:
                    yield (*sub, str(i))
        else:
            yield sub


class Layers:
    """Raw config data built up layer by layer, and the origin of every key set."""

    def __init__(self, data: dict[Any, Any] | None = None) -> None:
        self.data: dict[str, Any] = raw(data or {})
        self.owners: dict[KeyPath, Origin] = {}

    def set(self, path: KeyPath, value: Any, origin: Origin) -> None:
        """Set ``path`` to ``value``, replacing what lower layers put at or below it."""
        node = self.data
        for i, key in enumerate(path[:-1]):
            child = node.get(key)
            if not isinstance(child, dict):
                # A mapping-valued key starts from its defaults, so that setting one
                # entry (wake.models.alexa) keeps the others.
                default = value_at(Config(), path[: i + 1])
                child = raw(default) if isinstance(default, dict) else {}
                node[key] = child
            node = child
        node[path[-1]] = raw(value)
        for old in [p for p in self.owners if p[: len(path)] == path]:
            del self.owners[old]
        self.owners[path] = origin

    def set_in_file(self, path: KeyPath) -> bool:
        """Whether the config file (the lowest layer) set the mapping at ``path``."""
        node: Any = self.data
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return False
            node = node[key]
        return isinstance(node, dict) and any(
            o.rank == FILE and o.path[: len(path)] == path for o in self.owners.values()
        )

    def add_entry(self, path: KeyPath, name: str, value: Any, origin: Origin) -> None:
        """Make ``name`` an entry of the mapping at ``path``, keeping the others.

        Where the file set the mapping, its entries stay and an entry it already has is
        kept as the file wrote it; otherwise the mapping is this one entry (the built-in
        defaults' entries are not carried along)."""
        if not self.set_in_file(path):
            self.set(path, {name: value}, origin)
        elif name not in self.entries(path):
            self.set((*path, name), value, origin)

    def keep_entries(self, path: KeyPath, names: list[str], origin: Origin) -> None:
        """Make the mapping at ``path`` hold exactly ``names``: an entry the file set keeps
        what the file wrote under it (and its origins), a new one starts empty."""
        node: Any = self.data
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        have = node if isinstance(node, dict) and self.set_in_file(path) else {}
        kept = {
            p: o
            for p, o in self.owners.items()
            if p[: len(path)] == path and len(p) > len(path) and p[len(path)] in names
        }
        self.set(path, {name: have.get(name) or {} for name in names}, origin)
        self.owners.update(kept)

    def entries(self, path: KeyPath) -> list[str]:
        """The entry names of the mapping-valued key at ``path``, as the layers so far
        have it (the defaults where none set it)."""
        node: Any = self.data
        for key in path:
            if not isinstance(node, dict) or node.get(key) is None:
                return [str(k) for k in value_at(Config(), path) or {}]
            node = node[key]
        return [str(k) for k in node] if isinstance(node, dict) else []

    def owner(self, path: KeyPath, below: bool = False) -> Origin | None:
        """The layer that set ``path`` or the nearest key above it; with ``below``, else
        the highest layer that set a key under it."""
        for n in range(len(path), 0, -1):
            found = self.owners.get(path[:n])
            if found is not None:
                return found
        if below:
            under = [o for p, o in self.owners.items() if p[: len(path)] == path]
            return max(under, key=lambda o: o.rank, default=None)
        return None

    def origins(self) -> dict[KeyPath, str]:
        """Each key path set by a layer -> its origin label, in the order they were set."""
        return {path: origin.label for path, origin in self.owners.items()}
