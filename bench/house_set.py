"""The household of ``bench/house_names.py``: its commands and its Home Assistant.

Each command is written as Home Assistant spells its names (the reference) and said as
the names sound, which is how the voices are given it: "Niamh" is said "Niav", not as
English letters read it. The fake Home Assistant holds every name the commands use and
200 others they never mention, as a real house has: other people's lamps and fans,
plain lights, sensors, entities not exposed to Assist, empty rooms.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tests.fake_ha import Area, Entity, FakeHomeAssistant, Floor


@dataclass(frozen=True)
class Command:
    text: str
    """As Home Assistant spells its names."""
    said: str
    """As a person says it (what the voices read)."""
    names: tuple[str, ...]


def _c(text: str, said: str, *names: str) -> Command:
    return Command(text, said, names)


COMMANDS = [
    # Irish names: said as they sound.
    _c("Turn on Niamh's Lamp.", "Turn on Niav's lamp.", "Niamh's Lamp"),
    _c(
        "Turn off the lights in Aoife's Room.",
        "Turn off the lights in Eefa's room.",
        "Aoife's Room",
    ),
    _c(
        "Switch on Siobhán's Desk Light.", "Switch on Shivawn's desk light.", "Siobhán's Desk Light"
    ),
    _c("Set Caoimhe's Fan to low.", "Set Keeva's fan to low.", "Caoimhe's Fan"),
    _c("Dim Oisín's Nightlight.", "Dim Usheen's nightlight.", "Oisín's Nightlight"),
    _c(
        "Play some music on Saoirse's Speaker.",
        "Play some music on Seersha's speaker.",
        "Saoirse's Speaker",
    ),
    _c("Turn on Tadhg's Heater.", "Turn on Tige's heater.", "Tadhg's Heater"),
    _c("Turn off Ciarán's Lamp.", "Turn off Keeran's lamp.", "Ciarán's Lamp"),
    _c(
        "Is the window open in Gráinne's Room?",
        "Is the window open in Grawnya's room?",
        "Gráinne's Room",
    ),
    _c(
        "Turn off the lights in Pádraig's Office.",
        "Turn off the lights in Pawdrig's office.",
        "Pádraig's Office",
    ),
    _c("Close Róisín's Blinds.", "Close Rosheen's blinds.", "Róisín's Blinds"),
    _c("Turn on Mamó's Lamp.", "Turn on Mammo's lamp.", "Mamó's Lamp"),
    # German.
    _c("Turn on Oma's Stehlampe.", "Turn on Oma's shtay lampa.", "Oma's Stehlampe"),
    _c("Start the Kaffeemaschine.", "Start the kaffee masheena.", "Kaffeemaschine"),
    _c(
        "Turn off the lights in the Wohnzimmer.",
        "Turn off the lights in the vone tsimmer.",
        "Wohnzimmer",
    ),
    _c(
        "How warm is it in the Kinderzimmer?",
        "How warm is it in the kinder tsimmer?",
        "Kinderzimmer",
    ),
    _c("Turn on the light in the Dachboden.", "Turn on the light in the dahk bohden.", "Dachboden"),
    _c("Turn on Opa's Leselampe.", "Turn on Opa's layzeh lampa.", "Opa's Leselampe"),
    _c("Turn up the heating in the Stube.", "Turn up the heating in the shtoobeh.", "Stube"),
    _c("Switch off Jürgen's Fan.", "Switch off Yurgen's fan.", "Jürgen's Fan"),
    _c(
        "Turn off all the lights in the Obergeschoss.",
        "Turn off all the lights in the oberga shoss.",
        "Obergeschoss",
    ),
    # Polish.
    _c("Turn on Zosia's Lamp.", "Turn on Zosha's lamp.", "Zosia's Lamp"),
    _c(
        "Turn on the light in the Przedpokój.",
        "Turn on the light in the pshed pokooy.",
        "Przedpokój",
    ),
    _c("Open the blinds in Babcia's Room.", "Open the blinds in Bobcha's room.", "Babcia's Room"),
    _c("Switch off Wojtek's Heater.", "Switch off Voytek's heater.", "Wojtek's Heater"),
    _c("Turn on Grzegorz's Desk Lamp.", "Turn on Gzhegosh's desk lamp.", "Grzegorz's Desk Lamp"),
    _c("Is the light on in the Łazienka?", "Is the light on in the wazhenka?", "Łazienka"),
    _c("Turn on Małgosia's Fan.", "Turn on Mowgosha's fan.", "Małgosia's Fan"),
    _c("Turn off everything in the Piwnica.", "Turn off everything in the peevneetsa.", "Piwnica"),
    _c("Turn on the Lampka Nocna.", "Turn on the lampka notsna.", "Lampka Nocna"),
    # Invented device names.
    _c("Turn on the Glimmerbox.", "Turn on the glimmer box.", "Glimmerbox"),
    _c("Turn off the Hue Go.", "Turn off the Hue Go.", "Hue Go"),
    _c("Set the Lumora Strip to blue.", "Set the Lumora strip to blue.", "Lumora Strip"),
    _c("Turn on the Zephyrix Fan.", "Turn on the zephyrix fan.", "Zephyrix Fan"),
    _c("Switch on the Kettlo.", "Switch on the kettlo.", "Kettlo"),
    _c("Turn off the Snoozr.", "Turn off the snoozer.", "Snoozr"),
    _c("Start the Aquavia Pump.", "Start the Aquavia pump.", "Aquavia Pump"),
    _c("Dim the Nimbulux Lamp.", "Dim the Nimbulux lamp.", "Nimbulux Lamp"),
    _c(
        "Is the Frostbyte Freezer running?",
        "Is the frost byte freezer running?",
        "Frostbyte Freezer",
    ),
    _c("Turn off the Vizzy TV.", "Turn off the Vizzy TV.", "Vizzy TV"),
    _c("Turn on the Bean Bot.", "Turn on the bean bot.", "Bean Bot"),
    # Two names in one command.
    _c(
        "Turn on the Hue Go in Aoife's Room.",
        "Turn on the Hue Go in Eefa's room.",
        "Hue Go",
        "Aoife's Room",
    ),
    _c(
        "Turn off the Glimmerbox in the Wohnzimmer.",
        "Turn off the glimmer box in the vone tsimmer.",
        "Glimmerbox",
        "Wohnzimmer",
    ),
    _c(
        "Turn on Zosia's Lamp in Babcia's Room.",
        "Turn on Zosha's lamp in Bobcha's room.",
        "Zosia's Lamp",
        "Babcia's Room",
    ),
    _c(
        "Turn on the Lumora Strip in the Kinderzimmer.",
        "Turn on the Lumora strip in the kinder tsimmer.",
        "Lumora Strip",
        "Kinderzimmer",
    ),
]


def _household(fake: FakeHomeAssistant) -> None:
    """Every name the commands say: entities (with aliases), areas (one alias), floors."""
    fake.add_floor(Floor("og", "Obergeschoss"))
    fake.add_floor(Floor("piwnica", "Piwnica"))
    rooms = [("aoife", "Aoife's Room", "og", []), ("grainne", "Gráinne's Room", "og", []),
             ("padraig", "Pádraig's Office", None, []), ("wohn", "Wohnzimmer", None, ["Stube"]),
             ("kinder", "Kinderzimmer", "og", []), ("dach", "Dachboden", "og", []),
             ("przed", "Przedpokój", None, []), ("babcia", "Babcia's Room", "piwnica", []),
             ("lazienka", "Łazienka", "og", [])]  # fmt: skip
    for area_id, name, floor, aliases in rooms:
        fake.add_area(Area(area_id, name, aliases, floor))
    entities = [
        ("light.niamh", "Niamh's Lamp", "aoife", []),
        ("light.siobhan", "Siobhán's Desk Light", "padraig", []),
        ("fan.caoimhe", "Caoimhe's Fan", "grainne", []),
        ("light.oisin", "Oisín's Nightlight", "kinder", []),
        ("media_player.saoirse", "Saoirse's Speaker", "wohn", []),
        ("climate.tadhg", "Tadhg's Heater", "dach", []),
        ("light.ciaran", "Ciarán's Lamp", "przed", []),
        ("cover.roisin", "Róisín's Blinds", "babcia", []),
        ("light.clodagh", "Clodagh's Lamp", "lazienka", ["Mamó's Lamp"]),
        ("light.oma", "Oma's Stehlampe", "wohn", []),
        ("switch.kaffee", "Kaffeemaschine", None, ["Bean Bot"]),
        ("light.opa", "Opa's Leselampe", "wohn", []),
        ("fan.jurgen", "Jürgen's Fan", "dach", []),
        ("light.zosia", "Zosia's Lamp", "babcia", ["Lampka Nocna"]),
        ("climate.wojtek", "Wojtek's Heater", "przed", []),
        ("light.grzegorz", "Grzegorz's Desk Lamp", "padraig", []),
        ("fan.malgosia", "Małgosia's Fan", "lazienka", []),
        ("light.glimmer", "Glimmerbox", "wohn", []),
        ("light.huego", "Hue Go", "aoife", []),
        ("light.lumora", "Lumora Strip", "kinder", []),
        ("fan.zephyrix", "Zephyrix Fan", "grainne", []),
        ("switch.kettlo", "Kettlo", None, []),
        ("switch.snoozr", "Snoozr", "aoife", []),
        ("switch.aquavia", "Aquavia Pump", None, []),
        ("light.nimbulux", "Nimbulux Lamp", "dach", []),
        ("switch.frostbyte", "Frostbyte Freezer", None, []),
        ("media_player.vizzy", "Vizzy TV", "wohn", []),
    ]
    for entity_id, name, area, aliases in entities:
        fake.add_entity(Entity(entity_id, name, aliases, area_id=area))


PEOPLE = ("Dervla Bríd Fionnuala Eoghan Cathal Méabh Orla Rónán Seán Ailbhe Lukas Henrik "
          "Annelie Matthias Friedrich Ursula Kasia Bartek Jadwiga Tomasz Wiesław Ola Krzysztof "
          "Agnieszka Pietro").split()  # fmt: skip
THINGS = ("Lamp", "Fan", "Speaker", "Heater", "Blinds", "Reading Light")
PLAIN = ("Garage Light", "Porch Light", "Hall Ceiling", "Bathroom Fan", "Office Lamp",
         "Stairs Light", "Landing Light", "Patio Lights", "Garden Spots", "Shed Light",
         "Desk Lamp", "Bed Lamp", "Floor Lamp", "Mirror Light", "Pantry Light",
         "Wardrobe Light", "Cellar Light", "Driveway Light", "Fence Lights", "Pond Pump",
         "Tumble Dryer", "Washing Machine", "Dishwasher", "Microwave", "Toaster", "Radio",
         "Bedroom TV", "Soundbar", "Air Purifier", "Dehumidifier", "Towel Rail", "Boiler",
         "Front Gate", "Back Door Lock", "Garage Door", "Kitchen Blinds", "Study Fan",
         "Nursery Lamp", "Hall Speaker", "Porch Heater")  # fmt: skip
SENSES = ("Temperature", "Humidity", "Motion", "Battery", "Door Contact", "Power")
PLACES = ("Boiler", "Hallway", "Garage", "Kitchen", "Loft", "Utility", "Porch", "Shed",
          "Greenhouse", "Cellar")  # fmt: skip
ROOMS = ("Garage", "Hall", "Utility Room", "Conservatory", "Spare Room", "Gästezimmer",
         "Spiżarnia", "Seomra Suí", "Gartenhaus", "Attic Bathroom", "Boot Room", "Larder",
         "Workshop", "Sunroom", "Den", "Wintergarten", "Strych", "Cloakroom", "Loft",
         "Balcony")  # fmt: skip


def _others(fake: FakeHomeAssistant) -> int:
    """200 names the commands never say; how many were added."""
    domains = ("light", "fan", "media_player", "climate", "cover", "light")
    added = 0
    for i in range(50):  # other people's things: as unusual as the commands' names
        person, thing = PEOPLE[i % len(PEOPLE)], THINGS[(i // len(PEOPLE) + i) % len(THINGS)]
        domain = domains[THINGS.index(thing)]
        fake.add_entity(
            Entity(f"{domain}.other_{i}", f"{person}'s {thing}", area_id=f"room{i % 10}")
        )
    for i, name in enumerate(PLAIN):  # plain names Whisper writes by itself
        fake.add_entity(Entity(f"switch.plain_{i}", name, area_id=f"room{i % 10}"))
    for i in range(60):  # sensors, exposed
        name = f"{PLACES[i % len(PLACES)]} {SENSES[i // len(PLACES)]}"
        fake.add_entity(Entity(f"sensor.s_{i}", name, area_id=f"room{i % 10}"))
    for i in range(30):  # not exposed to Assist: never read
        fake.add_entity(Entity(f"light.hidden_{i}", f"Zigbee Bulb {i}", exposed=False))
    for i, name in enumerate(ROOMS):  # ten rooms with the things above, ten empty
        fake.add_area(Area(f"room{i}", name))
    added = 50 + len(PLAIN) + 60 + 30 + len(ROOMS)
    return added


def fake_house() -> FakeHomeAssistant:
    """The fake Home Assistant of the benchmark."""
    fake = FakeHomeAssistant()
    _household(fake)
    assert _others(fake) == 200
    # Home Assistant lists entities and areas in the order they were added: mixed, in a
    # real house, not the commands' names first.
    rng = random.Random(20260301)
    for table in (fake.entities, fake.areas):
        items = list(table.items())
        rng.shuffle(items)
        table.clear()
        table.update(items)
    said = {n.casefold() for c in COMMANDS for n in c.names}
    others = [e.name for e in fake.entities.values()] + [a.name for a in fake.areas.values()]
    assert len(said) >= 40 and len(others) == len(set(others))
    return fake
