"""The commands Home Assistant understands, with the household's names in them.

Home Assistant's Assist matches what was said against sentence templates
(``home-assistant-intents``, read and matched by ``hassil``): "turn on {name}",
"close [the] {area} {cover_classes}"... :class:`HouseGrammar` holds one language's
templates with the household's entity, area and floor names as their slot lists, and
answers three questions: which command a text is (:meth:`~HouseGrammar.match`, as
Assist would match it), which sentences it can say (:meth:`~HouseGrammar.expansions`,
bounded: :mod:`daemon.house.expand`), and which of those a misheard reading is
closest to (:meth:`~HouseGrammar.near`: "Top oil my timers" -> "stop all my timers").

Building one reads the templates and writes out the sentences (a second or more):
callers do it in a worker. Names stay in the object; nothing here logs them.
"""

from __future__ import annotations

import math
import re
import types
import unicodedata
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from hassil.intents import Intents, SlotList, TextSlotList, TextSlotValue
from hassil.recognize import recognize_best
from home_assistant_intents import get_intents

from daemon.house.expand import context_domains, expand
from daemon.house.names import Household, NameKind

MAX_SENTENCES = 50_000
"""Sentences written out for :meth:`HouseGrammar.near` (and the most expansions)."""

SlotValue = str | int | float

_MARKS = re.compile(r"[\u0300-\u036f]")
"""Combining accents, as NFKD leaves them (é -> e + ◌́)."""
_NOT_WORD = re.compile(r"[\W_]+")


@dataclass(frozen=True)
class Entity:
    """An entity's name as the household says it, and its domain when known."""

    name: str
    domain: str | None = None
    """``light``, ``cover``...; None: unknown (the name may stand for any domain)."""


@dataclass(frozen=True)
class HouseNames:
    """The names the templates' ``{name}``, ``{area}`` and ``{floor}`` lists hold."""

    entities: tuple[Entity, ...] = ()
    areas: tuple[str, ...] = ()
    floors: tuple[str, ...] = ()

    @classmethod
    def of(cls, household: Household) -> HouseNames:
        """A household's names, each entity's with its domain where the reading has it
        (an alias of a place has none: said like a name, it may stand for anything)."""
        by_kind: dict[NameKind, list[str]] = {kind: [] for kind in NameKind}
        domains: dict[str, str | None] = {}
        for name in household.names:
            by_kind[name.kind].append(name.text)
            if name.kind in (NameKind.ENTITY, NameKind.ALIAS):
                domains.setdefault(name.text, name.domain)
        entities = by_kind[NameKind.ENTITY] + by_kind[NameKind.ALIAS]
        return cls(
            entities=tuple(Entity(text, domains.get(text)) for text in dict.fromkeys(entities)),
            areas=tuple(dict.fromkeys(by_kind[NameKind.AREA])),
            floors=tuple(dict.fromkeys(by_kind[NameKind.FLOOR])),
        )


DEMO_NAMES = HouseNames(
    entities=(
        Entity("Kitchen Light", "light"),
        Entity("Living Room Lamp", "light"),
        Entity("Ceiling Fan", "fan"),
        Entity("Front Door", "lock"),
        Entity("Garage Door", "cover"),
        Entity("TV", "media_player"),
        Entity("Thermostat", "climate"),
    ),
    areas=("Kitchen", "Living Room", "Bedroom", "Office"),
    floors=("Upstairs", "Downstairs"),
)
"""The names used when there is no household: enough for every kind of command."""


@dataclass(frozen=True)
class CommandMatch:
    """A text matched as a command: the intent and its slots' values."""

    intent: str
    """Home Assistant's intent name (``HassTurnOn``)."""
    slots: Mapping[str, SlotValue] = field(default_factory=lambda: types.MappingProxyType({}))
    """Slot name to value: ``name`` -> "Kitchen Light", ``minutes`` -> 5.0 (read-only)."""


def load_intents(language: str) -> Intents | None:
    """Home Assistant's intents for ``language`` ("en", "de", "de-CH"...); None when it
    has none. Reads a JSON file and parses it: call it in a worker."""
    data = get_intents(language)
    return None if data is None else Intents.from_dict(data)


class HouseGrammar:
    """One language's command templates, filled with one household's names.

    Built once per household reading (slow: in a worker); then read-only, so any
    number of threads may ask it at once.
    """

    def __init__(
        self,
        intents: Intents,
        names: HouseNames | Household | None = None,
        size: int = MAX_SENTENCES,
    ) -> None:
        """Fill ``intents`` with ``names`` (None or no names: :data:`DEMO_NAMES`) and
        write out ``size`` sentences for :meth:`near`."""
        if isinstance(names, Household):
            names = HouseNames.of(names)
        if names is None or not (names.entities or names.areas or names.floors):
            names = DEMO_NAMES  # no household (yet): the commands still have names in them
        self._intents = intents
        domains = sorted(
            {
                domain
                for intent in intents.intents.values()
                for block in intent.data
                for domain in context_domains(block.requires_context.get("domain"))
            }
        )
        self._lists: dict[str, SlotList] = {
            "name": _name_list(names.entities, domains),
            "area": TextSlotList.from_strings(names.areas, allow_template=False, name="area"),
            "floor": TextSlotList.from_strings(names.floors, allow_template=False, name="floor"),
        }
        pairs = [(entity.name, entity.domain) for entity in names.entities]
        lists = {key: self._lists[key] for key in ("area", "floor")}
        self._sentences = expand(intents, lists, pairs, size)
        self._index = _Index(self._sentences)

    @property
    def language(self) -> str:
        """The templates' language code."""
        return self._intents.language

    def match(self, text: str, area: str | None = None) -> CommandMatch | None:
        """The command ``text`` is, as Assist matches it (case and punctuation aside);
        None when it is none. ``area``: where the speaker is ("turn off the lights")."""
        context = {} if area is None else {"area": {"value": area, "text": area}}
        result = recognize_best(
            text,
            self._intents,
            slot_lists=self._lists,
            intent_context=context,
            best_slot_name="name",
        )
        if result is None:
            return None
        slots = {name: _value(entity.value) for name, entity in result.entities.items()}
        return CommandMatch(result.intent.name, types.MappingProxyType(slots))

    def expansions(self, limit: int) -> list[str]:
        """At most ``limit`` command sentences (no more than the grammar's ``size``),
        taken from the templates in turn: a shorter list is the start of a longer one."""
        return self._sentences[: max(0, limit)]

    def near(self, text: str, k: int = 8) -> list[str]:
        """The ``k`` command sentences most like ``text`` (letter trigrams), most alike first."""
        return self._index.nearest(text, k)


def _name_list(entities: Iterable[Entity], domains: Sequence[str]) -> TextSlotList:
    """The ``{name}`` list, each value with its domain in the context as Home Assistant
    gives it; a name of unknown domain is offered once for every domain."""
    values = [
        TextSlotValue.from_tuple(
            (entity.name, entity.name, {"domain": domain}), allow_template=False
        )
        for entity in entities
        for domain in ((entity.domain,) if entity.domain else domains)
    ]
    return TextSlotList(name="name", values=values)


def _value(value: object) -> SlotValue:
    return value if isinstance(value, str | int | float) else str(value)


def plain(text: str) -> str:
    """``text`` in lower-case letters, digits and single spaces, accents folded and
    apostrophes dropped: "What's the Temperature?" -> "whats the temperature"."""
    decomposed = unicodedata.normalize("NFKD", text.casefold().replace("'", "").replace("’", ""))
    return " ".join(_NOT_WORD.sub(" ", _MARKS.sub("", decomposed)).split())


def trigrams(text: str) -> set[str]:
    """The letter trigrams of a :func:`plain` text, its word ends included."""
    padded = f" {text} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


class _Index:
    """Sentences by their trigrams: an inverted index scored as a Dice coefficient in
    which each trigram weighs its rarity (idf), so "timers" counts more than "the"."""

    def __init__(self, sentences: Sequence[str]) -> None:
        keys: dict[str, None] = {}
        self._texts: list[str] = []
        for sentence in sentences:
            key = plain(sentence)
            if key and key not in keys:  # "what's" and "whats" read alike: one is enough
                keys[key] = None
                self._texts.append(sentence)
        self._vocabulary: dict[str, int] = {}
        rows, columns = array("i"), array("i")  # ~30 a sentence: as C ints, not objects
        for row, key in enumerate(keys):
            for gram in sorted(trigrams(key)):
                columns.append(self._vocabulary.setdefault(gram, len(self._vocabulary)))
                rows.append(row)
        row_array = np.frombuffer(rows, dtype=np.int32)
        column_array = np.frombuffer(columns, dtype=np.int32)
        order = np.argsort(column_array, kind="stable")
        self._postings = row_array[order]
        self._starts = np.searchsorted(column_array[order], np.arange(len(self._vocabulary) + 1))
        count = len(self._texts)
        self._unseen = math.log(1.0 + count)
        self._idf = np.log1p(count / np.maximum(np.diff(self._starts), 1))
        self._weights = np.bincount(row_array, self._idf[column_array], minlength=count)

    def nearest(self, text: str, k: int) -> list[str]:
        """The ``k`` sentences most like ``text``, most alike first."""
        grams = sorted(trigrams(plain(text)))  # sorted: the same sums, bit for bit, every run
        if k <= 0 or not self._texts or not grams:
            return []
        known = [self._vocabulary[gram] for gram in grams if gram in self._vocabulary]
        query = float(self._idf[known].sum()) + self._unseen * (len(grams) - len(known))
        if not known:
            return []
        starts, ends = self._starts[known], self._starts[np.asarray(known) + 1]
        rows = np.concatenate([self._postings[a:b] for a, b in zip(starts, ends, strict=True)])
        shared = np.bincount(
            rows, np.repeat(self._idf[known], ends - starts), minlength=len(self._texts)
        )
        score = 2.0 * shared / (query + self._weights)
        k = min(k, len(self._texts))
        best = np.argpartition(-score, k - 1)[:k] if k < len(score) else np.arange(len(score))
        best = best[np.lexsort((best, -score[best]))]
        return [self._texts[i] for i in best]
