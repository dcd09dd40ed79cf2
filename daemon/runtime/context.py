"""What every core service stands on: the engines and configuration in force.

A :class:`Core` is one loaded :class:`~daemon.runtime.engines.Engines` under one
:class:`~daemon.config.Config`, with the profiles that configuration gives and the
household's names and commands. The service makes a new one when the engines or the
configuration change (a reload); the services of :mod:`daemon.runtime.services` read
the one in force through a :data:`CurrentCore` at each call, and what they open (a
request, a voice for streamed text) keeps the one it started with.
"""

from __future__ import annotations

from collections.abc import Callable

from daemon.config import Config, LimitsConfig
from daemon.house.commands import CommandBook
from daemon.house.store import NameStore
from daemon.ops.deadline import Deadline
from daemon.runtime.engines import Engines
from daemon.runtime.profiles import Profile, SessionProfile, session_profiles


class Core:
    """The loaded engines and the configuration in force, for the core's services."""

    def __init__(
        self,
        engines: Engines,
        config: Config | None = None,
        house: NameStore | None = None,
        commands: CommandBook | None = None,
    ) -> None:
        self.engines = engines
        self.config = config or engines.config
        """The configuration in force: a reload that swaps no engines (``willow.*``,
        ``speakers.require``, limits read per request) gives a new core over the same
        engines."""
        self.profiles: dict[Profile, SessionProfile] = session_profiles(self.config)
        """Each session profile's settings under :attr:`config`."""
        self.house = house
        """The household's names, which every speech session's second reading looks for
        (None: none are read, e.g. ``hearth check``)."""
        self.commands = commands
        """The household's commands, which a home's speech sessions are read against."""

    def wraps(self, engines: Engines, config: Config) -> bool:
        """Whether this core is ``engines`` under ``config`` (the service makes a new one
        after a reload)."""
        return self.engines is engines and self.config is config

    @property
    def limits(self) -> LimitsConfig:
        """The request limits in force."""
        return self.config.limits

    def request_deadline(self) -> Deadline:
        """A request's deadline, from now (``limits.request_timeout_s``)."""
        return Deadline(self.limits.request_timeout_s)


CurrentCore = Callable[[], Core]
"""The core in force now (ModelUnavailable while the engines load)."""
