"""Where a spoken command cannot end, per language: the data behind the text turn signal.

A sentence that stops on an article, a conjunction, a preposition that wants its
object or a hesitation is not finished in any voice, whatever the pitch does. Each
language Hearth transcribes for a home (English, German, French, Spanish) has its
own lists. Words that end real commands are left out on purpose: English "on",
"off", "in", "up"; German separable prefixes ("an", "aus", "auf", "zu", "ein",
"ab"); French "dessus"; Spanish "ya". A number after a word that asks for a
duration ("for ten", "in fünf", "pendant dix", "por diez") still wants its unit.

Pure data and one lookup; :mod:`daemon.speech.turn_text` decides with it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Endings:
    """One language's words that leave a sentence open."""

    continuing: frozenset[str]
    """Last words after which something must follow."""
    fillers: frozenset[str]
    """Hesitations: the speaker is still thinking."""
    duration: frozenset[str]
    """Words after which a number wants its unit ("for ten" -> "minutes")."""
    numbers: frozenset[str]
    """Number words (digits are numbers in every language)."""


def _words(*groups: str) -> frozenset[str]:
    return frozenset(word for group in groups for word in group.split())


ENGLISH = Endings(
    continuing=_words(
        # Articles and possessives: a noun must follow.
        "a an the my your our their its some every",
        # Conjunctions: another clause must follow.
        "and or but nor because than if unless whether while although",
        # Prepositions that need their object ("on", "off", "up", "down", "out" end
        # commands such as "Turn the lights on", so they are not here; "in" ends few:
        # "What's the weather in ...").
        "to for of with from in into onto at about between towards toward until by via per",
        "during through without",
    ),
    fillers=_words("um umm uh uhh uhm er erm hmm mm ah eh"),
    duration=_words("for in after within"),
    numbers=_words(
        "one two three four five six seven eight nine ten eleven twelve fifteen twenty",
        "thirty forty fifty sixty ninety hundred half",
    ),
)
GERMAN = Endings(
    continuing=_words(
        "der die das den dem des eine einen einem einer eines",
        "mein meine meinen meinem meiner dein deine unser unsere",
        "und oder aber denn weil dass ob wenn als sondern",
        "für im zum zur mit von vom nach bei beim am über unter bis gegen ohne durch",
    ),
    fillers=_words("äh ähm öh öhm hm hmm em"),
    duration=_words("für in nach"),
    numbers=_words("eins zwei drei vier fünf sechs sieben acht neun zehn zwanzig dreißig halbe"),
)
FRENCH = Endings(
    continuing=_words(
        "le la les l un une des du de d au aux",
        "mon ma mes ton ta tes son sa ses notre nos votre vos leur leurs cet cette ces",
        "et ou mais car donc que qu si",
        "pour à dans sur avec sans chez vers par entre jusqu pendant",
    ),
    fillers=_words("euh heu hum bah ben"),
    duration=_words("pour pendant dans"),
    numbers=_words("un une deux trois quatre cinq six sept huit neuf dix vingt trente"),
)
SPANISH = Endings(
    continuing=_words(
        "el la los las un una unos unas mi mis tu tus su sus nuestro nuestra",
        "y e o u pero porque que si",
        "para por a en de del al con sin desde hasta sobre entre hacia durante",
    ),
    fillers=_words("eh em mmm este pues"),
    duration=_words("por durante en dentro"),
    numbers=_words("uno una dos tres cuatro cinco seis siete ocho nueve diez veinte treinta"),
)

BY_LANGUAGE: dict[str, Endings] = {"en": ENGLISH, "de": GERMAN, "fr": FRENCH, "es": SPANISH}
"""The languages with rules; another language's words say nothing about the turn."""


def endings(language: str | None) -> Endings | None:
    """The rules for ``language`` (an ISO code such as "en" or "de-DE"); None: none."""
    if not language:
        return ENGLISH
    return BY_LANGUAGE.get(language.lower().replace("_", "-").split("-")[0])
