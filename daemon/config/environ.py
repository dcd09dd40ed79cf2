"""Settings from environment variables, for Docker Compose and the add-on.

A setting's variable is ``HEARTH_`` and its key path in upper case, ``__`` between
levels: ``HEARTH_LLM__REMOTE__BASE_URL``; a top-level key has none
(``HEARTH_STATE_DIR``). An entry of a mapping-valued key (``asr.models``) is named
with every character but letters and digits as ``_``: ``HEARTH_ASR__MODELS__TINY_EN``
names ``tiny.en``. ``..._FILE`` reads the value from a file (secrets), unless the
name with ``_FILE`` is itself a key (``HEARTH_HTTPS__CERT_FILE``). A string key takes
the text as it is; every other key reads it as a YAML value (``true``, ``5``,
``[a, b]``, ``{path: base}``).
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from daemon.config.convert import KeyPath, keys_of, unknown_key
from daemon.config.layers import ENV, Layers, Origin
from daemon.config.root import Config
from daemon.errors import ConfigError

PREFIX = "HEARTH_"
SEP = "__"
FILE_SUFFIX = "_FILE"
_MAX_DEPTH = 32


@dataclass(frozen=True)
class Target:
    """The key an environment variable sets, and how it reads its value."""

    path: KeyPath
    tp: Any
    """The annotation of the key's value."""
    from_file: bool
    """The variable names a file holding the value (``..._FILE``)."""
    new_entry: bool = False
    """An entry of a mapping-valued key that no layer below has: it takes a mapping."""


def env_name(key: str) -> str:
    """A key or entry name as an environment variable writes it (``tiny.en``: TINY_EN)."""
    return re.sub(r"[^0-9A-Za-z]", "_", key).upper()


def setting_names(environ: Mapping[str, str]) -> list[str]:
    """The variables of ``environ`` that are settings, parents before children.

    Raises ConfigError for a name that looks like a mistyped setting
    (``HEARTH_LOG_LEVEL``); other ``HEARTH_*`` names (``HEARTH_CONFIG``) are not settings.
    """
    hints = typing.get_type_hints(Config)
    keys = keys_of(Config)
    sections = [k for k in keys if dataclasses.is_dataclass(hints[k])]
    top = {env_name(k) for k in keys if k not in sections}
    names = []
    for name in environ:
        if not name.startswith(PREFIX):
            continue
        rest = name[len(PREFIX) :]
        upper = rest.upper()
        if SEP in rest or upper in top or upper.removesuffix(FILE_SUFFIX) in top:
            names.append(name)
            continue
        lower = rest.lower()
        for section in sorted(sections, key=len, reverse=True):
            if lower == section:
                raise ConfigError(
                    f"{name}: not a setting; set each key of {section} as {name}{SEP}KEY"
                )
            if lower.startswith(section + "_"):
                fixed = f"{PREFIX}{rest[: len(section)]}{SEP}{rest[len(section) + 1 :]}"
                raise ConfigError(
                    f"{name}: not a setting; did you mean {fixed}? "
                    f"(the levels of a key path are joined by {SEP})"
                )
    return sorted(names, key=lambda n: (n.count(SEP), n))


def resolve(name: str, layers: Layers) -> Target:
    """The key that the variable ``name`` sets, given what the layers below hold."""
    rest = name[len(PREFIX) :]
    tp: Any = Config
    path: KeyPath = ()
    new_entry = False
    while True:
        here = name[: len(name) - len(rest)]  # the variable's name up to this level
        if dataclasses.is_dataclass(tp):
            seg, sep, tail = rest.partition(SEP)
            fields = {env_name(k): k for k in keys_of(tp)}
            key = fields.get(seg.upper())
            from_file = False
            if key is None and not sep and seg.upper().endswith(FILE_SUFFIX):
                key = fields.get(seg.upper().removesuffix(FILE_SUFFIX))
                from_file = key is not None
            if key is None:
                raise ConfigError(f"{name}: {unknown_key(tp)}")
            next_tp = typing.get_type_hints(tp)[key]
        elif typing.get_origin(tp) is dict:
            key, from_file, sep, tail, new_entry = _entry(name, rest, path, here, layers)
            next_tp = typing.get_args(tp)[1]
        else:
            dotted = ".".join(path)
            raise ConfigError(
                f"{name}: unknown key ({dotted} takes a whole value: set {here.removesuffix(SEP)})"
            )
        path, tp = (*path, key), next_tp
        if not sep:
            return Target(path, tp, from_file, new_entry)
        rest = tail


def _entry(
    name: str, rest: str, path: KeyPath, here: str, layers: Layers
) -> tuple[str, bool, str, str, bool]:
    """The entry of the mapping at ``path`` that ``rest`` starts with: its name, whether
    the value is in a file, whether keys follow and which, and whether it is new."""
    upper = rest.upper()
    entries = layers.entries(path)
    matches: dict[str, list[tuple[str, bool]]] = {}
    for entry in entries:
        norm = env_name(entry)
        if upper == norm or upper.startswith(norm + SEP):
            matches.setdefault(norm, []).append((entry, False))
        elif upper == norm + FILE_SUFFIX:
            matches.setdefault(norm, []).append((entry, True))
    dotted = ".".join(path)
    if matches:
        norm = max(matches, key=len)
        if len(matches[norm]) > 1:
            both = ", ".join(entry for entry, _ in matches[norm])
            raise ConfigError(
                f"{name}: matches several entries of {dotted} ({both}); set {dotted} whole"
            )
        entry, from_file = matches[norm][0]
        if upper.startswith(norm + SEP):
            return entry, from_file, SEP, rest[len(norm) + len(SEP) :], False
        return entry, from_file, "", "", False
    seg, sep, _ = rest.partition(SEP)
    if sep:
        raise ConfigError(f"{name}: {no_entry(dotted, seg, entries, here + seg)}")
    from_file = upper.endswith(FILE_SUFFIX) and len(upper) > len(FILE_SUFFIX)
    return (seg[: -len(FILE_SUFFIX)] if from_file else seg).lower(), from_file, "", "", True


def no_entry(dotted: str, seg: str, entries: list[str], variable: str) -> str:
    """The problem of a variable naming an entry that no layer has."""
    return (
        f'{dotted} has no entry "{seg}" (entries: {", ".join(entries) or "none"}); '
        f"to add one, set {variable} to a whole mapping"
    )


def read_value_file(name: str, file_name: str) -> str:
    """The text of the file a ``..._FILE`` variable names, less one trailing newline."""
    if not file_name:
        raise ConfigError(f"{name}: names no file")
    try:
        text = Path(file_name).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{name}: cannot read {file_name}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{name}: {file_name} is not UTF-8 text") from None
    if text.endswith("\r\n"):
        return text[:-2]
    return text.removesuffix("\n")


def value_of(name: str, target: Target, text: str) -> Any:
    """The raw value a variable's text gives its key: the text for a string key, else
    the YAML value it spells."""
    if target.tp is str:
        return text
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{name}: invalid YAML: {problem}") from None
    if not _plain(value, 0, set()):
        raise ConfigError(f"{name}: invalid YAML: nested too deeply, or uses aliases")
    return value


def _plain(value: Any, depth: int, seen: set[int]) -> bool:
    """Whether a YAML value is a tree of bounded depth (no alias shares a node)."""
    if not isinstance(value, (dict, list)):
        return True
    if depth > _MAX_DEPTH or id(value) in seen:
        return False
    seen.add(id(value))
    items = value.values() if isinstance(value, dict) else value
    return all(_plain(item, depth + 1, seen) for item in items)


def apply_environ(layers: Layers, environ: Mapping[str, str]) -> bool:
    """Set every setting of ``environ`` in ``layers``; whether any was set."""
    set_by: dict[KeyPath, str] = {}
    for name in setting_names(environ):
        target = resolve(name, layers)
        dotted = ".".join(target.path)
        if target.path in set_by:
            raise ConfigError(
                f"{name}: {dotted} is also set by {set_by[target.path]}; set only one of them"
            )
        text = environ[name]
        if target.from_file:
            text = read_value_file(name, text)
        value = value_of(name, target, text)
        if target.new_entry and not isinstance(value, dict):
            parent = target.path[:-1]
            seg = name.rpartition(SEP)[2]
            problem = no_entry(".".join(parent), seg, layers.entries(parent), name)
            raise ConfigError(f"{name}: {problem}")
        set_by[target.path] = name
        layers.set(target.path, value, Origin(ENV, f"env {name}", name, target.path))
    return bool(set_by)


def read_from_file(path: KeyPath, origin: str) -> bool:
    """Whether the key at ``path`` took its value from a ``..._FILE`` variable, given its
    origin label (such a value is a secret: ``hearth check`` does not show it)."""
    if not origin.startswith("env " + PREFIX):
        return False
    last = origin[len("env " + PREFIX) :].rpartition(SEP)[2].upper()
    return last == env_name(path[-1]) + FILE_SUFFIX
