"""Hearth's English enrollment prompts: short, varied sentences a person reads aloud.

They cover English sounds and the words a home assistant says. ``voices.prompts_file``
replaces them (one sentence a line), e.g. for another language or a longer set.
"""

from __future__ import annotations

import functools
from pathlib import Path

PROMPTS = (
    "Turn on the kitchen lights.",
    "The weather today is sunny with a light breeze.",
    "Please remind me to call my sister this evening.",
    "The quick brown fox jumps over the lazy dog.",
    "I have set a timer for twenty minutes.",
    "The front door is locked and the garage is closed.",
    "Would you like me to play some quiet music?",
    "The living room is warmer than the bedroom.",
    "A cup of hot tea is ready in the kitchen.",
    "Tomorrow morning there is a chance of rain.",
    "She sells sea shells by the sea shore.",
    "The children are playing in the garden.",
    "Your package will arrive on Thursday afternoon.",
    "I could not find that song in your library.",
    "The washing machine has finished its cycle.",
    "Good morning, it is time to wake up.",
    "The thermostat is set to a comfortable temperature.",
    "Please speak a little more slowly.",
    "Dinner will be ready in about half an hour.",
    "The battery in the smoke alarm is running low.",
    "A gentle wind blew through the open window.",
    "Which room would you like me to heat?",
    "The library closes early on Sunday.",
    "I am sorry, I did not catch that.",
    "The train to the city leaves from platform four.",
    "Bright yellow flowers grew along the fence.",
    "Your meeting with the dentist is next Monday.",
    "The dog is sleeping by the fireplace.",
    "Could you please open the curtains?",
    "There is fresh bread on the kitchen table.",
    "The shopping list now has milk, eggs and butter.",
    "Thunder rolled across the valley at night.",
    "The robot vacuum is cleaning the hallway.",
    "Remember to water the plants on the balcony.",
    "The orchestra played a beautiful symphony.",
    "My favourite season is the early autumn.",
    "The lamp in the study is still switched on.",
    "We should leave before the traffic gets heavy.",
    "The baby monitor detected some noise upstairs.",
    "A huge ship sailed slowly into the harbour.",
    "The oven has reached the right temperature.",
    "Please lower the volume of the television.",
    "Every Friday we eat pizza and watch a film.",
    "The mountain path was steep and rocky.",
    "Your coffee order has been placed.",
    "The heating will switch off at midnight.",
    "Jack quickly moved the big wooden box.",
    "The garden sprinklers will run at dawn.",
    "It is quarter past seven in the evening.",
    "The museum has a new exhibition about whales.",
    "Do you want me to read the news headlines?",
    "The cat jumped onto the windowsill.",
    "Our neighbours are having a party tonight.",
    "The bathroom fan has been running for an hour.",
    "Snow is expected over the weekend.",
    "I will remind you when the laundry is dry.",
    "The painter used bright shades of blue and green.",
    "That recipe needs two cups of flour.",
    "The porch light turns on when someone arrives.",
    "Thank you, have a lovely day.",
    "The river flows quietly under the old bridge.",
    "Should I add batteries to the shopping list?",
    "The hallway smells of fresh paint.",
    "A flock of geese flew over the lake.",
    "The dishwasher door is not closed properly.",
    "Let me know if you need anything else.",
    "Violet and Thomas visited the zoo yesterday.",
    "The air quality in the house is good.",
    "Please close the window in the guest room.",
    "The phone is charging on the bedside table.",
    "Measure the sugar carefully before you stir.",
    "The soup tastes better with a pinch of salt.",
    "Where did I put my reading glasses?",
    "The alarm is set for six thirty tomorrow.",
    "Jazz music filled the small cafe.",
    "The refrigerator door was left open.",
    "Yesterday the bus was ten minutes late.",
    "He whispered a secret to his brother.",
    "The fireworks lit up the whole sky.",
    "Your favourite show starts in five minutes.",
)


def load_prompts(path: str) -> list[str]:
    """The prompts of ``voices.prompts_file``, else Hearth's own (blocking: reads the file)."""
    if not path:
        return list(PROMPTS)
    lines = Path(path).expanduser().read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and "|" not in line]


@functools.lru_cache(maxsize=8)
def _cached_prompts(path: str, mtime_ns: int) -> tuple[str, ...]:
    """The prompts of ``path`` as of ``mtime_ns`` (the key that invalidates the cache)."""
    return tuple(load_prompts(path))


def current_prompts(path: str) -> list[str]:
    """``load_prompts(path)``, parsed again only when the file changes (blocking: a stat)."""
    if not path:
        return load_prompts(path)
    mtime_ns = Path(path).expanduser().stat().st_mtime_ns
    return list(_cached_prompts(path, mtime_ns))
