"""The Home Assistant Supervisor's rules for an add-on repository, written out for tests.

Read from the Supervisor's own source (home-assistant/supervisor, 2025.06 and 2026.08:
``store/data.py``, ``store/validate.py``, ``apps/validate.py``, ``apps/options.py``,
``validate.py``): how a repository is scanned for add-ons, what an add-on's
``config.yaml`` must hold, the options schema's grammar, and ``repository.yaml``. Where the
two releases differ, the stricter rule is kept, so an add-on that passes here loads on
both (for example ``map`` names: only the ones 2025.06 knows).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
RE_SLUG = re.compile(r"^[-_.A-Za-z0-9]+$")
RE_PORT = re.compile(r"^\d+(?:/tcp|/udp)?$")
RE_VOLUME = re.compile(
    r"^(data|config|ssl|addons|backup|share|media|homeassistant_config|all_addon_configs"
    r"|addon_config)(?::(rw|ro))?$"
)
"""2025.06's map names (2026.07 adds app_config, local_apps, all_app_configs)."""
RE_WATCHDOG = re.compile(r"^(?:https?|\[PROTO:\w+\]|tcp):\/\/\[HOST\]:(\[PORT:\d+\]|\d+).*$")
RE_IMAGE_PART = re.compile(r"^[a-z0-9{][a-z0-9.\-_{}]*$")
RE_SCHEMA_ELEMENT = re.compile(
    r"^(?:"
    r"|bool"
    r"|email"
    r"|url"
    r"|port"
    r"|device(?:\((?P<filter>subsystem=[a-z]+)\))?"
    r"|str(?:\((?P<s_min>\d+)?,(?P<s_max>\d+)?\))?"
    r"|password(?:\((?P<p_min>\d+)?,(?P<p_max>\d+)?\))?"
    r"|int(?:\((?P<i_min>\d+)?,(?P<i_max>\d+)?\))?"
    r"|float(?:\((?P<f_min>[\d\.]+)?,(?P<f_max>[\d\.]+)?\))?"
    r"|match\((?P<match>.*)\)"
    r"|list\((?P<list>.+)\)"
    r")\??$"
)
"""apps/options.py's grammar, with 2025.06's bounds (no negative numbers)."""
ARCHES = {"amd64", "aarch64"}
"""What the Supervisor supports (armhf, armv7 and i386 are deprecated)."""
STARTUP = {"initialize", "system", "services", "application", "once"}
BOOT = {"auto", "manual", "manual_only"}
REQUIRED = ("name", "version", "slug", "description", "arch")
BOOLEANS = (
    "host_network", "homeassistant_api", "hassio_api", "init", "udev", "stdin", "full_access",
)  # fmt: skip


def files(root: Path) -> list[Path]:
    """What a clone of the repository holds: its files that git does not ignore."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout.split("\0")  # fmt: skip
    return sorted(root / name for name in listed if name and (root / name).is_file())


def _skipped(root: Path, path: Path) -> bool:
    return any(part.startswith(".") or part == "rootfs" for part in path.relative_to(root).parts)


def scan(root: Path) -> list[Path]:
    """Every file the Supervisor reads as a possible add-on (store/data.py's glob
    ``**/config.*``, without dot folders and ``rootfs``)."""
    return [
        path
        for path in files(root)
        if path.stem == "config" and path.suffix in CONFIG_SUFFIXES and not _skipped(root, path)
    ]


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def repository_problems(root: Path) -> list[str]:
    """What is wrong with ``repository.yaml`` (store/validate.py)."""
    found = [root / f"repository{s}" for s in CONFIG_SUFFIXES if (root / f"repository{s}").exists()]
    if not found:
        return ["no repository.yaml at the root"]
    data = load(found[0])
    problems = []
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return ["repository.yaml needs a name"]
    if "url" in data and not _url(data["url"]):
        problems.append(f"repository url {data['url']!r} is not a URL")
    others = [p for p in files(root) if p.stem == "repository" and p not in found]
    if others:
        problems.append(f"other repository files would be read first: {others}")
    return problems


def _url(value: object) -> bool:
    if not isinstance(value, str):
        return False
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def addon_problems(data: Any) -> list[str]:
    """What keeps ``data`` (an add-on's config.yaml) from being an add-on (apps/validate.py)."""
    if not isinstance(data, dict):
        return ["not a mapping"]
    missing = [key for key in REQUIRED if key not in data]
    if missing:
        return [f"missing required key: {key}" for key in missing]
    problems: list[str] = []
    for key in ("name", "description"):
        if not isinstance(data[key], str):
            problems.append(f"{key} must be text")
    if not isinstance(data["version"], (str, int, float)):
        problems.append("version must be a version")
    if not isinstance(data["slug"], str) or not RE_SLUG.match(data["slug"]):
        problems.append(f"slug {data['slug']!r} does not match {RE_SLUG.pattern}")
    if not isinstance(data["arch"], list) or not set(data["arch"]) <= ARCHES:
        problems.append(f"arch {data['arch']!r}: only {sorted(ARCHES)}")
    problems += _plain_keys(data)
    problems += _ports(data)
    problems += _map(data.get("map", []))
    if "image" in data:
        problems += _image(data["image"])
    problems += schema_problems(data.get("options", {}), data.get("schema", {}))
    return problems


def _plain_keys(data: dict[str, Any]) -> list[str]:
    problems = []
    if "url" in data and not _url(data["url"]):
        problems.append(f"url {data['url']!r} is not a URL")
    if data.get("startup", "application") not in STARTUP:
        problems.append(f"startup {data['startup']!r}")
    if data.get("boot", "auto") not in BOOT:
        problems.append(f"boot {data['boot']!r}")
    for key in BOOLEANS:
        if key in data and not isinstance(data[key], bool):
            problems.append(f"{key} must be true or false")
    for key in ("discovery", "backup_exclude"):
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            problems.append(f"{key} must be a list of text")
    if "watchdog" in data and not RE_WATCHDOG.match(str(data["watchdog"])):
        problems.append(f"watchdog {data['watchdog']!r}")
    timeout = data.get("timeout", 10)
    if not isinstance(timeout, int) or not 10 <= timeout <= 300:
        problems.append("timeout must be 10-300")
    return problems


def _ports(data: dict[str, Any]) -> list[str]:
    problems = []
    for key in ("ports", "ports_description"):
        for port, value in (data.get(key) or {}).items():
            if not RE_PORT.match(str(port)):
                problems.append(f"{key} key {port!r} is not a port (no ranges)")
            if (
                key == "ports"
                and value is not None
                and not (isinstance(value, int) and 1 <= value <= 65535)
            ):
                problems.append(f"port {port} -> {value!r}")
    return problems


def _map(items: Any) -> list[str]:
    if not isinstance(items, list):
        return ["map must be a list"]
    problems = []
    for item in items:
        name = item.get("type") if isinstance(item, dict) else item
        if not isinstance(name, str) or not RE_VOLUME.match(name):
            problems.append(f"map entry {item!r} is not one the Supervisor knows")
    return problems


def _image(image: Any) -> list[str]:
    if not isinstance(image, str):
        return ["image must be text"]
    *registry, last = image.split("/")
    if ":" in last:
        return [f"image {image!r} must not carry a tag (the version is the tag)"]
    parts = registry[1:] + [last] if registry and "." in registry[0] else registry + [last]
    bad = [p for p in parts if not RE_IMAGE_PART.match(p)]
    return [f"image part {p!r} of {image!r}" for p in bad]


def schema_problems(options: Any, schema: Any) -> list[str]:
    """The options against the schema's grammar (apps/options.py)."""
    if not isinstance(options, dict) or not isinstance(schema, dict):
        return ["options and schema must be mappings"]
    problems = []
    for key, element in schema.items():
        items = element if isinstance(element, list) else [element]
        if isinstance(element, list) and len(element) != 1:
            problems.append(f"schema {key}: a list holds one type")
        for item in items:
            if isinstance(item, dict):
                problems += schema_problems(options.get(key, {}) or {}, item)
            elif not isinstance(item, str) or not RE_SCHEMA_ELEMENT.match(item):
                problems.append(f"schema {key}: {item!r} is not a type")
        optional = str(items[0]).endswith("?") if items else True
        if key not in options and not optional and not isinstance(items[0], dict):
            problems.append(f"option {key} is required by the schema but has no default")
        elif key in options:
            problems += _value_problems(key, options[key], element)
    problems += [f"option {key} is not in the schema" for key in options if key not in schema]
    return problems


def _value_problems(key: str, value: Any, element: Any) -> list[str]:
    if isinstance(element, list):
        if not isinstance(value, list):
            return [f"option {key} must be a list"]
        return [p for v in value for p in _value_problems(key, v, element[0])]
    if isinstance(element, dict):
        return [] if isinstance(value, dict) else [f"option {key} must be a mapping"]
    kind = element.rstrip("?")
    match = RE_SCHEMA_ELEMENT.match(element)
    if match is None:
        return []  # the element itself is reported
    if kind == "bool" and not isinstance(value, bool):
        return [f"option {key} must be true or false"]
    if kind.startswith(("str", "password", "url", "email")) and not isinstance(value, str):
        return [f"option {key} must be text"]
    if kind == "url" and not _url(value):
        return [f"option {key} must be a URL"]
    if match.group("list") and value not in match.group("list").split("|"):
        return [f"option {key}: {value!r} is not one of {match.group('list')}"]
    return []


def translation_problems(data: Any, schema: dict[str, Any], ports: dict[str, Any]) -> list[str]:
    """translations/en.yaml: a name for every option, and only options and ports."""
    if not isinstance(data, dict):
        return ["not a mapping"]
    problems = []
    configuration = data.get("configuration") or {}
    for key in schema:
        entry = configuration.get(key)
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            problems.append(f"option {key} has no translated name")
    problems += [f"translation of unknown option {k}" for k in configuration if k not in schema]
    problems += [
        f"translation of unknown port {p}" for p in data.get("network") or {} if p not in ports
    ]
    return problems
