"""Wake words: the models to advertise, and wake-word listeners (see
:mod:`daemon.runtime.services`)."""

from __future__ import annotations

from daemon.engines.wake import WakeLibrary
from daemon.engines.wake.base import WakeModelInfo
from daemon.errors import InvalidRequest
from daemon.runtime.context import CurrentCore
from daemon.speech.wake_gate import WakeListener


class WakeWords:
    """Wake-word detection, on the engines in force at each call."""

    def __init__(self, current: CurrentCore) -> None:
        self._current = current

    @property
    def enabled(self) -> bool:
        """Whether wake-word detection is on (``wake.enabled``)."""
        return self._current().engines.wake is not None

    def _library(self) -> WakeLibrary:
        wake = self._current().engines.wake
        if wake is None:
            raise InvalidRequest("wake-word detection is not enabled (wake.enabled)")
        return wake

    async def models(self) -> list[WakeModelInfo]:
        """Every wake model, with custom ones just dropped into the folder; none when off."""
        engines = self._current().engines
        wake = engines.wake
        if wake is None:
            return []
        await engines.wake_pool.run(wake.refresh)
        return list(wake.models.values())

    def model(self, name: str) -> WakeModelInfo:
        """The wake model called ``name`` (InvalidRequest when unknown or wake is off)."""
        wake = self._library()
        wake.check_names([name])
        return wake.models[name]

    async def open(self, names: list[str] | None) -> WakeListener:
        """A wake-word listener for ``names`` (None: every model); the caller closes it.

        The model folder is looked at first, so a custom model dropped in since counts.
        Raises InvalidRequest when wake is off or a name is unknown.
        """
        core = self._current()
        wake = core.engines.wake
        if wake is None:
            raise InvalidRequest("wake-word detection is not enabled (wake.enabled)")
        pool = core.engines.wake_pool
        await pool.run(wake.refresh)
        wake.check_names(names)
        stream = await pool.run(wake.stream, names)
        limits = core.limits
        return WakeListener(stream, pool, limits.max_sample_rate, limits.max_channels)
