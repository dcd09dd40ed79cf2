"""What every part of the facade (:mod:`daemon.runtime.facade`) stands on."""

from __future__ import annotations

from daemon.config import Config, LimitsConfig
from daemon.house.commands import CommandBook
from daemon.house.store import NameStore
from daemon.ops.deadline import Deadline
from daemon.runtime.engines import Engines
from daemon.runtime.profiles import Profile, SessionProfile


class Door:
    """The loaded engines and the configuration in force, for the facade's parts."""

    _engines: Engines
    config: Config
    """The configuration in force (limits and per-request keys read live)."""
    _profiles: dict[Profile, SessionProfile]
    """Each session profile's settings under :attr:`config`."""
    _house: NameStore | None
    """The household's names (None: none are read, e.g. ``hearth check``)."""
    _commands: CommandBook | None
    """The household's commands (None: none are read)."""

    @property
    def limits(self) -> LimitsConfig:
        """The request limits in force."""
        return self.config.limits

    def request_deadline(self) -> Deadline:
        """A request's deadline, from now (``limits.request_timeout_s``): for a request
        the adapter begins and no single call of the core covers."""
        return Deadline(self.limits.request_timeout_s)
