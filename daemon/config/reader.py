"""Reading config.yaml: the line of every key path, and YAML errors as ConfigError."""

from __future__ import annotations

import yaml

from daemon.config.convert import Invalid, KeyPath
from daemon.errors import ConfigError


def line_map(text: str) -> dict[KeyPath, int]:
    """Map each key path to its 1-based line; reject duplicate keys."""
    lines: dict[KeyPath, int] = {}

    seen_nodes: set[int] = set()

    def walk(node: yaml.Node, path: KeyPath) -> None:
        if id(node) in seen_nodes:  # an alias: its keys were mapped where it was defined
            return
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                key = str(key_node.value)
                if key_node.tag.endswith(":null"):
                    key = "None"  # what yaml.safe_load makes of a null key
                sub = (*path, key)
                if key in seen:
                    raise Invalid(sub, "duplicate key", key_node.start_mark.line + 1)
                seen.add(key)
                lines[sub] = key_node.start_mark.line + 1
                walk(value_node, sub)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                lines[(*path, str(i))] = item.start_mark.line + 1
                walk(item, (*path, str(i)))

    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if root is not None:
        walk(root, ())
    return lines


def line_of(path: KeyPath, lines: dict[KeyPath, int]) -> int | None:
    """The line of ``path``, else of the nearest key above it that has one."""
    probe = path
    while probe:
        line = lines.get(probe)
        if line is not None:
            return line
        probe = probe[:-1]
    return None


def yaml_error(exc: yaml.YAMLError, text: str, source: str) -> ConfigError:
    """The ConfigError for text that is not valid YAML, naming the line if known."""
    if isinstance(exc, yaml.reader.ReaderError):
        line = text.count("\n", 0, exc.position) + 1
        return ConfigError(f"{source}:{line} invalid YAML: {exc.reason}")
    mark = getattr(exc, "problem_mark", None)
    where = f"{source}:{mark.line + 1}" if mark else source
    problem = getattr(exc, "problem", None) or str(exc)
    return ConfigError(f"{where} invalid YAML: {problem}")
