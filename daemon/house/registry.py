"""Home Assistant's answers to names, ranked by how likely each is to be said.

Assist's own matcher (``conversation/default_agent.py``) understands the exposed
entities' names and aliases, and every area's and floor's name and aliases: those are
the names a person can say to it, and the ones read here. Everything from Home
Assistant is checked as it is read: a value of the wrong type is skipped, a name over
:data:`~daemon.house.names.MAX_NAME_CHARS` characters is skipped, and at most
``max_names`` names are kept, the most likely first (:class:`~daemon.house.names.Tier`).
Pure functions: no connection here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from daemon.house.names import HouseName, NameKind, Tier, clean

ASSISTANT = "conversation"
"""The assistant id Assist's exposure settings are kept under."""
COMMON_DOMAINS = frozenset(
    {"light", "switch", "fan", "media_player", "climate", "cover", "lock", "scene", "vacuum"}
)
"""Domains spoken to most: their entities' names come before the others'."""
MAX_ENTITIES = 10_000
"""Exposed entities read at most (a house with more is cut, in Home Assistant's order)."""


@dataclass(frozen=True)
class Answers:
    """What one reading asked Home Assistant, as it answered (``result`` of each command)."""

    exposed: object = None
    """``homeassistant/expose_entity/list``."""
    states: object = None
    """``get_states``: the friendly names."""
    entries: object = None
    """``config/entity_registry/get_entries`` for the exposed entities: aliases, areas."""
    devices: object = None
    """``config/device_registry/list``: the area of an entity that names none."""
    areas: object = None
    """``config/area_registry/list``."""
    floors: object = None
    """``config/floor_registry/list`` (None: a release before floors)."""


def exposed_ids(result: object, limit: int = MAX_ENTITIES) -> list[str]:
    """The entity ids exposed to Assist, in Home Assistant's order (at most ``limit``).

    Releases since 2023 list only exposed entities, each ``{"conversation": true}``;
    older ones listed every entity with true or false per assistant: both read alike.
    """
    table = _get(result, "exposed_entities")
    if not isinstance(table, Mapping):
        return []
    found = []
    for entity_id, assistants in table.items():
        if isinstance(entity_id, str) and _get(assistants, ASSISTANT) is True:
            found.append(entity_id)
            if len(found) >= limit:
                break
    return found


def household_names(answers: Answers, exposed: list[str], max_names: int) -> list[HouseName]:
    """The names of one reading, ranked most likely first, unique (case aside), at most
    ``max_names``."""
    entries = answers.entries if isinstance(answers.entries, Mapping) else {}
    friendly = _friendly_names(answers.states, set(exposed))
    device_areas = {
        device_id: area
        for device in _items(answers.devices)
        if isinstance(device_id := device.get("id"), str)
        and isinstance(area := device.get("area_id"), str)
    }
    used_areas: set[str] = set()
    devices: list[_Device] = []
    for entity_id in exposed:
        entry = entries.get(entity_id)
        entry = entry if isinstance(entry, Mapping) else {}
        if entry.get("disabled_by") is not None:
            continue
        name = (
            friendly.get(entity_id) or clean(entry.get("name")) or clean(entry.get("original_name"))
        )
        area = entry.get("area_id") or device_areas.get(str(entry.get("device_id")))
        if isinstance(area, str):
            used_areas.add(area)
        devices.append(_Device(entity_id, name, _texts(entry.get("aliases"))))
    floors_used = {
        floor
        for area in _items(answers.areas)
        if area.get("area_id") in used_areas and isinstance(floor := area.get("floor_id"), str)
    }
    ranked = _ranked(devices, answers, used_areas, floors_used)
    return _unique(ranked, max_names)


@dataclass(frozen=True)
class _Device:
    entity_id: str
    name: str | None
    aliases: list[str] = field(default_factory=list)

    @property
    def domain(self) -> str:
        return self.entity_id.partition(".")[0]

    @property
    def common(self) -> bool:
        return self.domain in COMMON_DOMAINS


def _ranked(
    devices: list[_Device], answers: Answers, used_areas: set[str], floors_used: set[str]
) -> Iterator[HouseName]:
    """Every name with its tier, in tier order (the order within a tier is Home
    Assistant's)."""
    places = [
        (area.get("area_id") in used_areas, NameKind.AREA, area) for area in _items(answers.areas)
    ] + [
        (floor.get("floor_id") in floors_used, NameKind.FLOOR, floor)
        for floor in _items(answers.floors)
    ]
    for device in devices:
        for alias in device.aliases:
            yield HouseName(alias, NameKind.ALIAS, Tier.ALIAS, device.domain)
    for _, _, place in places:
        for alias in _texts(place.get("aliases")):
            yield HouseName(alias, NameKind.ALIAS, Tier.ALIAS)
    for wanted in (True, False):
        tier = Tier.PLACE_IN_USE if wanted else Tier.PLACE
        for in_use, kind, place in places:
            name = clean(place.get("name"))
            if in_use == wanted and name is not None:
                yield HouseName(name, kind, tier)
        if wanted:
            for device in devices:
                if device.common and device.name is not None:
                    yield HouseName(device.name, NameKind.ENTITY, Tier.COMMON_DEVICE, device.domain)
    for device in devices:
        if not device.common and device.name is not None:
            yield HouseName(device.name, NameKind.ENTITY, Tier.DEVICE, device.domain)


def _unique(names: Iterator[HouseName], limit: int) -> list[HouseName]:
    seen: set[str] = set()
    kept: list[HouseName] = []
    for name in names:
        key = name.text.casefold()
        if key in seen:
            continue
        seen.add(key)
        kept.append(name)
        if len(kept) >= limit:
            break
    return kept


def _friendly_names(states: object, wanted: set[str]) -> dict[str, str]:
    """``friendly_name`` of each wanted entity in ``get_states``' answer."""
    found: dict[str, str] = {}
    for state in _items(states):
        entity_id = state.get("entity_id")
        if entity_id in wanted:
            name = clean(_get(state.get("attributes"), "friendly_name"))
            if name is not None:
                found[entity_id] = name
    return found


def _items(value: object) -> Iterator[Mapping[str, Any]]:
    """The mappings of a list from Home Assistant (anything else in it is skipped)."""
    if isinstance(value, list):
        for item in value:
            if isinstance(item, Mapping):
                yield item


def _texts(value: object) -> list[str]:
    """The usable names of a list of aliases."""
    if not isinstance(value, list):
        return []
    return [text for item in value if (text := clean(item)) is not None]


def _get(value: object, key: str) -> object:
    return value.get(key) if isinstance(value, Mapping) else None
