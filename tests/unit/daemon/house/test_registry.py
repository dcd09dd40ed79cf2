"""Home Assistant's answers to ranked names: what Assist understands, checked as read."""

from __future__ import annotations

from daemon.house.names import MAX_NAME_CHARS, NameKind, Tier
from daemon.house.registry import Answers, exposed_ids, household_names


def state(entity_id: str, name: object) -> dict[str, object]:
    return {"entity_id": entity_id, "state": "on", "attributes": {"friendly_name": name}}


def entry(entity_id: str, **keys: object) -> dict[str, object]:
    return {"entity_id": entity_id, "aliases": [], "area_id": None, "device_id": None,
            "disabled_by": None, "name": None, "original_name": None} | keys  # fmt: skip


def test_exposed_ids_read_both_formats_and_stop_at_the_limit():
    yes, no = {"conversation": True}, {"conversation": False}
    now = {"exposed_entities": {"light.a": yes, "light.b": {"cloud.alexa": True}}}
    assert exposed_ids(now) == ["light.a"]
    old = {"exposed_entities": {"light.a": no, "light.c": yes}}
    assert exposed_ids(old) == ["light.c"]
    many = {"exposed_entities": {f"light.{i}": {"conversation": True} for i in range(50)}}
    assert len(exposed_ids(many, limit=10)) == 10
    for junk in (None, [], {"exposed_entities": []}, {"exposed_entities": {"x": "yes"}}):
        assert exposed_ids(junk) == []


def test_tiers_areas_by_device_and_floors_in_use():
    answers = Answers(
        states=[
            state("light.lamp", "Oma's Lamp"),
            state("sensor.t", "Thermo"),
            state("fan.f", "Zephyrix Fan"),
        ],  # fmt: skip
        entries={
            "light.lamp": entry("light.lamp", aliases=["Grandma's Lamp"], device_id="d1"),
            "sensor.t": entry("sensor.t", area_id="attic"),
            "fan.f": entry("fan.f", disabled_by="user"),
        },
        devices=[{"id": "d1", "area_id": "wohnzimmer"}],
        areas=[
            {"area_id": "wohnzimmer", "name": "Wohnzimmer", "aliases": ["Stube"], "floor_id": "eg"},
            {"area_id": "attic", "name": "Dachboden", "aliases": [], "floor_id": None},
            {"area_id": "empty", "name": "Przedpokój", "aliases": [], "floor_id": "og"},
        ],
        floors=[
            {"floor_id": "eg", "name": "Erdgeschoss", "aliases": []},
            {"floor_id": "og", "name": "Obergeschoss", "aliases": ["Oben"]},
        ],  # fmt: skip
    )
    names = household_names(answers, ["light.lamp", "sensor.t", "fan.f"], 100)
    assert [(n.text, n.tier) for n in names] == [
        ("Grandma's Lamp", Tier.ALIAS),
        ("Stube", Tier.ALIAS),
        ("Oben", Tier.ALIAS),
        ("Wohnzimmer", Tier.PLACE_IN_USE),  # through the lamp's device
        ("Dachboden", Tier.PLACE_IN_USE),
        ("Erdgeschoss", Tier.PLACE_IN_USE),
        ("Oma's Lamp", Tier.COMMON_DEVICE),
        ("Przedpokój", Tier.PLACE),
        ("Obergeschoss", Tier.PLACE),
        ("Thermo", Tier.DEVICE),
    ]  # the disabled fan is not there
    assert {n.kind for n in names} == set(NameKind)


def test_registry_names_stand_in_for_missing_states_and_duplicates_go():
    answers = Answers(
        states=[state("light.a", "Kitchen")],
        entries={
            "light.a": entry("light.a"),
            "light.b": entry("light.b", name="Hue Go"),
            "light.c": entry("light.c", original_name="kitchen"),
        },  # fmt: skip
        areas=[{"area_id": "k", "name": "KITCHEN", "aliases": []}],
    )
    names = household_names(answers, ["light.a", "light.b", "light.c"], 100)
    # The area (not in use) comes after the entities: its spelling of the name loses.
    assert [n.text for n in names] == ["Kitchen", "Hue Go"]


def test_what_comes_from_outside_is_checked():
    long = "x" * (MAX_NAME_CHARS + 1)
    answers = Answers(
        states=[state("light.a", long), state("light.b", 42), "junk", None],
        entries={"light.a": "junk", "light.b": entry("light.b", aliases=[None, " Big  Light ", 7])},
        devices="junk",
        areas=[{"area_id": "a", "name": ["not", "text"], "aliases": "Hall"}, 3],
        floors={"floor_id": "f"},
    )
    names = household_names(answers, ["light.a", "light.b"], 100)
    assert [n.text for n in names] == ["Big Light"]


def test_at_most_max_names_the_most_likely_first():
    answers = Answers(
        states=[state(f"light.l{i}", f"Lamp {i}") for i in range(10)],
        entries={f"light.l{i}": entry(f"light.l{i}", aliases=[f"Alias {i}"]) for i in range(10)},
    )
    names = household_names(answers, [f"light.l{i}" for i in range(10)], 12)
    assert [n.text for n in names][-3:] == ["Alias 9", "Lamp 0", "Lamp 1"]
