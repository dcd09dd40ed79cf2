"""The grammar with real hassil and Home Assistant's real intents: matches, expansions,
and the sentences nearest a misheard reading."""

from __future__ import annotations

import time

import pytest

from daemon.house.grammar import (
    DEMO_NAMES,
    MAX_SENTENCES,
    Entity,
    HouseGrammar,
    HouseNames,
    load_intents,
    plain,
)
from daemon.house.names import Household, HouseName, NameKind, Tier

HOUSE = HouseNames(
    entities=(Entity("Kitchen Light", "light"), Entity("Patio Heater", "switch")),
    areas=("Kitchen", "Conservatory"),
    floors=("Attic",),
)


@pytest.fixture(scope="module")
def english():
    return load_intents("en")


@pytest.fixture(scope="module")
def demo(english):
    """The full-size grammar of the demo names: what near() searches in practice."""
    return HouseGrammar(english)


@pytest.fixture(scope="module")
def house(english):
    return HouseGrammar(english, HOUSE, size=3000)


def test_load_intents_reads_a_language_and_none_for_an_unknown_one():
    intents = load_intents("de")
    assert intents is not None and intents.language == "de"
    assert "HassTurnOn" in intents.intents
    assert load_intents("xx") is None


def test_a_named_entity_is_matched_with_its_name(house):
    for text in ("turn on the kitchen light", "Turn ON the Kitchen Light!"):
        match = house.match(text)
        assert match is not None, text
        assert match.intent == "HassTurnOn"
        assert match.slots["name"] == "Kitchen Light"


def test_areas_floors_and_numbers_are_slots(house):
    match = house.match("turn off the lights in the conservatory")
    assert match is not None and match.intent == "HassTurnOff"
    assert dict(match.slots) == {"area": "Conservatory", "domain": "light"}
    match = house.match("turn off the lights in the attic")
    assert match is not None and match.slots["floor"] == "Attic"
    match = house.match("set a timer for 5 minutes")
    assert match is not None and match.intent == "HassStartTimer"
    assert match.slots["minutes"] == 5


def test_the_speakers_area_completes_a_command_without_one(house):
    assert house.match("turn all fans off") is None
    match = house.match("turn all fans off", area="Kitchen")
    assert match is not None and match.intent == "HassTurnOff"
    assert match.slots["area"] == "Kitchen" and match.slots["domain"] == "fan"


def test_what_is_no_command_matches_nothing(house):
    assert house.match("what is the meaning of life") is None
    assert house.match("") is None


def test_a_household_reading_gives_names_of_any_domain(english):
    household = Household(
        (
            HouseName("Kitchen Light", NameKind.ENTITY, Tier.COMMON_DEVICE),
            HouseName("Big Lamp", NameKind.ALIAS, Tier.ALIAS),
            HouseName("Larder", NameKind.AREA, Tier.PLACE),
            HouseName("Loft", NameKind.FLOOR, Tier.PLACE),
        )
    )
    grammar = HouseGrammar(english, household, size=2000)
    match = grammar.match("turn on the kitchen light")
    assert match is not None and (match.intent, match.slots["name"]) == (
        "HassTurnOn",
        "Kitchen Light",
    )
    match = grammar.match("switch off big lamp")
    assert match is not None and (match.intent, match.slots["name"]) == ("HassTurnOff", "Big Lamp")
    match = grammar.match("turn off the lights in the larder")
    assert match is not None and match.slots["area"] == "Larder"
    assert any("Loft" in text for text in grammar.expansions(2000))


def test_a_german_command_matches_in_german():
    names = HouseNames(entities=(Entity("Deckenlampe", "light"),), areas=("Küche",))
    grammar = HouseGrammar(load_intents("de"), names, size=2000)
    assert grammar.language == "de"
    match = grammar.match("Schalte die Deckenlampe ein")
    assert match is not None and (match.intent, match.slots["name"]) == (
        "HassTurnOn",
        "Deckenlampe",
    )
    match = grammar.match("schalte das Licht in der Küche aus")
    assert match is not None and match.intent == "HassTurnOff"
    assert match.slots["area"] == "Küche"
    assert grammar.match("Was ist der Sinn des Lebens") is None


def test_expansions_are_bounded_and_a_prefix_of_longer_ones(house):
    everything = house.expansions(10**9)
    assert len(everything) == 3000
    assert house.expansions(100) == everything[:100]
    assert house.expansions(0) == []
    assert len(set(everything)) == len(everything)
    assert not any("{" in text or "<" in text for text in everything)


def test_expansions_hold_the_households_names(house):
    everything = house.expansions(3000)
    for name in ("Kitchen Light", "Patio Heater", "Conservatory", "Attic"):
        assert any(name in text for text in everything), name
    # The demo's names are not this household's.
    assert not any("Living Room" in text for text in everything)


def test_expansions_are_the_same_on_every_build(english, house):
    assert HouseGrammar(english, HOUSE, size=3000).expansions(3000) == house.expansions(3000)


def test_expansions_are_commands_the_grammar_matches(house):
    # Every written-out sentence is one Assist would understand (the speaker in the
    # Kitchen, for the commands that need to know where they are said).
    for text in house.expansions(3000)[::15]:
        assert house.match(text, area="Kitchen") is not None, text


def test_no_household_means_the_demo_names(english, demo):
    assert len(demo.expansions(MAX_SENTENCES)) == MAX_SENTENCES
    empty = HouseGrammar(english, Household(), size=500)
    assert empty.expansions(500) == demo.expansions(500)
    text = " ".join(demo.expansions(MAX_SENTENCES))
    assert all(entity.name in text for entity in DEMO_NAMES.entities)


@pytest.mark.parametrize(
    ("heard", "meant"),
    [
        ("Top oil my timers", "stop all my timers"),
        ("turn of the kitchen lite", "turn off the kitchen light"),
        ("Lock the front toe.", "lock the front door"),
        ("open the garbage door", "open the garage door"),
    ],
)
def test_near_finds_the_command_a_misreading_was(demo, heard, meant):
    assert meant in [text.lower() for text in demo.near(heard)]


@pytest.mark.parametrize(
    ("heard", "intent", "slots"),
    [
        ("Closer kitchen windows.", "HassTurnOff", {"area": "Kitchen", "device_class": "window"}),
        ("turn all hands up", "HassTurnOff", {"domain": "fan"}),
    ],
)
def test_near_finds_a_sentence_of_the_same_command(demo, heard, intent, slots):
    # The very sentence meant ("close the kitchen windows", "turn all fans off") need
    # not be among those written out (a bounded share of each template): one of the
    # nearest is the same command in other words.
    for text in demo.near(heard):
        match = demo.match(text, area="Office")
        if match and match.intent == intent and slots.items() <= match.slots.items():
            return
    pytest.fail(f"no {intent} {slots} among {demo.near(heard)}")


def test_near_answers_k_sentences_most_alike_first(demo):
    assert demo.near("stop all my timers", k=1) == ["stop all my timers"]
    assert len(demo.near("turn on the kitchen light", k=20)) == 20
    assert demo.near("turn on the kitchen light", k=0) == []
    assert demo.near("", k=5) == []
    assert demo.near("!!!") == []


def test_near_is_fast_over_the_full_list(demo):
    heard = ["Top oil my timers", "Closer kitchen windows.", "turn all hands up", "whats the temp"]
    demo.near(heard[0])
    start = time.perf_counter()
    for i in range(200):
        demo.near(heard[i % len(heard)])
    mean = (time.perf_counter() - start) / 200
    # About 1 ms on one core; the bound leaves room for a busy test machine.
    assert mean < 0.025


def test_plain_folds_case_accents_and_punctuation():
    assert plain("What's the Temperature?") == "whats the temperature"
    assert plain("Przedpokój, Obergeschoß: 5%") == "przedpokoj obergeschoss 5"
