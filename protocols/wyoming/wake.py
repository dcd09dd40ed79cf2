"""The Wyoming wake service: ``detect``, then audio, answered with ``detection``.

Home Assistant's wake-word entity opens one connection per detection run: it sends
``detect{names}``, ``audio-start`` and 10 ms chunks, and reads until ``detection``
(or the connection ends). wyoming-satellite (``--wake-uri``) keeps one connection
for hours: ``detect`` and ``audio-start`` again after each detection, with no
``audio-stop`` in between, and expects every later detection too. So a run lasts
from ``detect`` to ``audio-stop`` (or the next ``detect``); every time the word is
heard a ``detection{name, timestamp}`` goes out (``timestamp``: ms of audio since
``audio-start``), and ``audio-stop`` after a run without one gets ``not-detected``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.event import Event
from wyoming.wake import Detect, Detection, NotDetected

from daemon.audio.pcm import AudioFormat
from daemon.errors import InvalidAudio, InvalidRequest
from daemon.runtime.api import WakeBatch, WakeListener, WakeWords

_LOGGER = logging.getLogger(__name__)
MAX_NAMES = 16
"""Wake model names one ``detect`` may list."""


class WyomingWake:
    """One connection's wake detection runs (see the module docstring)."""

    def __init__(
        self,
        wake: WakeWords,
        write: Callable[[Event], Awaitable[None]],
        conn_id: str,
    ) -> None:
        self._wake = wake
        self._write = write
        self._id = conn_id
        self._listener: WakeListener | None = None
        self._detected = False
        self._origin = 0
        """Stream sample of the run's ``audio-start`` (detection timestamps count from it)."""

    @property
    def active(self) -> bool:
        """A detection run is open: audio events belong to it."""
        return self._listener is not None

    def claims(self, event: Event) -> bool:
        """Whether ``event`` is for the wake service (``detect``, or audio in a run)."""
        kind = event.type
        if Detect.is_type(kind):
            return True
        return self.active and any(t.is_type(kind) for t in (AudioStart, AudioChunk, AudioStop))

    async def handle(self, event: Event) -> None:
        """Answer one wake event (HearthError becomes the connection's error event)."""
        kind = event.type
        if Detect.is_type(kind):
            await self._detect(Detect.from_event(event))
        elif AudioStart.is_type(kind):
            start = AudioStart.from_event(event)
            await self._start(AudioFormat(start.rate, start.width, start.channels))
        elif AudioChunk.is_type(kind):
            await self._chunk(event)
        elif AudioStop.is_type(kind):
            await self._stop()

    async def _detect(self, detect: Detect) -> None:
        await self.close()
        wake = self._wake
        if not wake.enabled:
            raise InvalidRequest("wake-word detection is not enabled (wake.enabled)")
        names = list(detect.names) if detect.names else None
        if names is not None and (
            len(names) > MAX_NAMES or not all(isinstance(n, str) and n for n in names)
        ):
            raise InvalidRequest(f"'detect' names must be at most {MAX_NAMES} model names")
        # A custom model dropped into the folder since the last look counts now.
        self._listener = await wake.open(names)
        self._detected = False
        self._origin = 0
        _LOGGER.debug("[%s] detecting %s", self._id, ", ".join(self._listener.stream.names))

    async def _start(self, fmt: AudioFormat) -> None:
        listener = self._listener
        assert listener is not None
        if listener.samples:  # audio-start again in the same run: a fresh start
            await self._report(await listener.flush())
            await listener.reset()
        self._origin = listener.samples
        listener.start(fmt)

    async def _chunk(self, event: Event) -> None:
        listener = self._listener
        assert listener is not None
        try:
            chunk = AudioChunk.from_event(event)
        except (KeyError, TypeError, ValueError):
            raise InvalidAudio("audio-chunk needs rate, width and channels") from None
        # A satellite may skip audio-start; the chunk carries its format anyway.
        listener.start(AudioFormat(chunk.rate, chunk.width, chunk.channels))
        await self._report(await listener.feed(chunk.audio))

    async def _stop(self) -> None:
        listener = self._listener
        assert listener is not None
        try:
            await self._report(await listener.flush())
            if not self._detected:
                await self._write(NotDetected().event())
        finally:
            await self.close()

    async def _report(self, heard: WakeBatch | None) -> None:
        if heard is None:
            return
        for hit in heard.hits:
            self._detected = True
            _LOGGER.info("[%s] wake word %s heard", self._id, hit.name)
            await self._write(
                Detection(name=hit.name, timestamp=(hit.end_sample - self._origin) // 16).event()
            )

    async def close(self) -> None:
        """End the run in progress, if any; safe to call more than once."""
        listener, self._listener = self._listener, None
        if listener is not None:
            await listener.close()
