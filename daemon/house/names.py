"""The household's names as values: what kind each is, how likely it is to be said.

A :class:`Household` is one reading of Home Assistant, already ranked; the store
swaps whole readings, so a request sees one reading or the next, never half of each.
Names are private to the house: nothing here logs them, and :meth:`Household.counts`
is all that leaves the process (``/healthz``, ``hearth check``).
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass

MAX_NAME_CHARS = 64
"""A longer text is not a name anyone says: skipped (the client prompt's own limit)."""


class NameKind(enum.Enum):
    """Where a name comes from in Home Assistant."""

    ENTITY = "entity"
    """An exposed entity's name (its friendly name)."""
    ALIAS = "alias"
    """An alias of an exposed entity, an area or a floor: a name the household gave."""
    AREA = "area"
    FLOOR = "floor"


class Tier(enum.IntEnum):
    """How likely a name is to be said, most likely first (wyoming-faster-whisper 3.7's
    order, with the aliases the household gave ahead of everything)."""

    ALIAS = 0
    """Aliases: somebody typed them in because that is what they say."""
    PLACE_IN_USE = 1
    """Areas and floors that hold an exposed entity."""
    COMMON_DEVICE = 2
    """Exposed entities of the domains spoken to most (lights, switches, fans...)."""
    PLACE = 3
    """Every other area and floor."""
    DEVICE = 4
    """Every other exposed entity."""


@dataclass(frozen=True)
class HouseName:
    """One name, as Home Assistant spells it."""

    text: str
    kind: NameKind
    tier: Tier
    domain: str | None = None
    """An entity's (or its alias's) domain, from its id ("light"); None for places."""


class SourceState(enum.Enum):
    """Where the source of names stands (``/healthz`` shows it)."""

    OFF = "off"
    """Not configured: nothing connects."""
    CONNECTING = "connecting"
    CONNECTED = "connected"
    """Connected, reading, and following registry changes."""
    RETRYING = "retrying"
    """The connection failed or ended; the names known stay in use meanwhile."""


@dataclass(frozen=True)
class Household:
    """One reading of the household's names, ranked: the most likely to be said first."""

    names: tuple[HouseName, ...] = ()
    refreshed_at: float | None = None
    """When Home Assistant was read (Unix time, s); None: never."""
    generation: int = 0
    """Counts the readings the store has published (a cache key)."""

    def counts(self) -> dict[str, int]:
        """How many names of each kind, and in all: what may be shown of them."""
        by_kind = Counter(name.kind.value for name in self.names)
        return {"names": len(self.names)} | {kind.value: by_kind[kind.value] for kind in NameKind}


def clean(value: object) -> str | None:
    """A name from outside with its whitespace collapsed; None when it is not text, is
    empty, or is too long to be a name."""
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    if not text or len(text) > MAX_NAME_CHARS:
        return None
    return text
