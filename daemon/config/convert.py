"""Raw YAML values to the typed dataclass tree, with the problem and key path of the
first value that does not fit.

``build`` turns a mapping into a section dataclass, ``convert`` one value into its
annotated type; both raise ``Invalid`` (a key path and a problem, no file or line:
the loader adds where the value came from).
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Literal

KeyPath = tuple[str, ...]
"""A key path from the top of config.yaml, e.g. ("asr", "models", "tiny.en")."""


class Invalid(Exception):
    """A value that does not fit: its key path, the problem, and the line if known.

    ``also`` names the other keys a cross-field check read, so that the loader can
    name the layer (an environment variable, the add-on options) that set one of them.
    """

    def __init__(
        self, path: KeyPath, problem: str, line: int | None = None, also: tuple[KeyPath, ...] = ()
    ) -> None:
        super().__init__(problem)
        self.path = path
        self.problem = problem
        self.line = line
        self.also = also


def describe(value: Any) -> str:
    """How an error message shows the value it got."""
    if isinstance(value, str):
        return f'"{value}"'
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    return repr(value)


def check_rules(value: Any, rules: dict[str, Any], kind: str) -> None:
    """Apply a field's rules (min, max, choices, check) to a value of the right type."""
    lo, hi = rules.get("min"), rules.get("max")
    if lo is not None and hi is not None and not lo <= value <= hi:
        raise Invalid((), f"must be {kind} between {lo} and {hi}, got {describe(value)}")
    if lo is not None and value < lo:
        raise Invalid((), f"must be {kind} >= {lo}, got {describe(value)}")
    if hi is not None and value > hi:
        raise Invalid((), f"must be {kind} <= {hi}, got {describe(value)}")
    choices = rules.get("choices")
    if choices is not None and value not in choices:
        raise Invalid((), f"must be one of {', '.join(choices)}, got {describe(value)}")
    check = rules.get("check")
    if check is not None:
        problem = check(value)
        if problem:
            raise Invalid((), f"{problem}, got {describe(value)}")


def convert(tp: Any, value: Any, rules: dict[str, Any], path: KeyPath) -> Any:
    """Validate ``value`` against the annotation ``tp``; return the typed value."""
    try:
        return _convert_inner(tp, value, rules, path)
    except Invalid as exc:
        if not exc.path:
            exc.path = path
        raise


def _convert_inner(tp: Any, value: Any, rules: dict[str, Any], path: KeyPath) -> Any:
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        return build(tp, value, path)
    if origin is dict:
        if not isinstance(value, dict):
            raise Invalid(path, f"must be a mapping, got {describe(value)}")
        _, val_tp = typing.get_args(tp)
        if not value:
            raise Invalid(path, "must name at least one entry")
        return {str(k): convert(val_tp, v, {}, (*path, str(k))) for k, v in value.items()}
    if origin is list:
        if not isinstance(value, list):
            raise Invalid(path, f"must be a list, got {describe(value)}")
        (item_tp,) = typing.get_args(tp)
        return [convert(item_tp, v, rules, (*path, str(i))) for i, v in enumerate(value)]
    if origin is Literal:
        choices = typing.get_args(tp)
        if isinstance(value, bool):  # YAML reads a bare on/off as a boolean
            word = "on" if value else "off"
            value = word if word in choices else value
        elif isinstance(value, int | float) and str(value) in choices:
            value = str(value)  # a bare number among words (window: 30)
        if value not in choices:
            raise Invalid(
                path, f"must be one of {', '.join(map(str, choices))}, got {describe(value)}"
            )
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise Invalid(path, f"must be true or false, got {describe(value)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            kind = "an integer"
            lo = rules.get("min")
            suffix = f" >= {lo}" if lo is not None and rules.get("max") is None else ""
            if lo is not None and rules.get("max") is not None:
                suffix = f" between {lo} and {rules['max']}"
            raise Invalid(path, f"must be {kind}{suffix}, got {describe(value)}")
        check_rules(value, rules, "an integer")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Invalid(path, f"must be a number, got {describe(value)}")
        check_rules(float(value), rules, "a number")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise Invalid(path, f"must be a string, got {describe(value)}")
        check_rules(value, rules, "a string")
        return value
    raise TypeError(f"unsupported config type {tp!r}")  # a bug in this module


def keys_of(cls: Any) -> dict[str, dataclasses.Field[Any]]:
    """The fields of a section that config.yaml may set (not the internal ones)."""
    return {f.name: f for f in dataclasses.fields(cls) if not f.metadata.get("internal")}


def unknown_key(cls: Any) -> str:
    """The problem of a key that ``cls`` does not have."""
    return f"unknown key (known keys: {', '.join(sorted(keys_of(cls)))})"


def build(cls: Any, data: Any, path: KeyPath) -> Any:
    """The section dataclass ``cls`` from a mapping (None: every default)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise Invalid(path, f"must be a mapping, got {describe(data)}")
    hints = typing.get_type_hints(cls)
    fields = keys_of(cls)
    for key in data:
        if key not in fields:
            raise Invalid((*path, str(key)), unknown_key(cls))
    kwargs = {}
    for name, f in fields.items():
        if name in data:
            kwargs[name] = convert(
                hints[name], data[name], f.metadata.get("rules", {}), (*path, name)
            )
    return cls(**kwargs)
