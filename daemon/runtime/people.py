"""The people known by voice: listing, enrolling (from recordings or a voice's takes),
renaming and forgetting them (see :mod:`daemon.runtime.services`)."""

from __future__ import annotations

import asyncio

from daemon.audio.pcm import decode_file
from daemon.errors import InvalidRequest, SpeakersOff
from daemon.runtime.context import CurrentCore
from daemon.speakers.service import SpeakerService
from daemon.speakers.store import Speaker
from daemon.speech.transcribe import decode_upload
from daemon.voices.enroll import Enrollment

MAX_RECORDING_S = 60.0
"""One enrollment recording at most."""


class People:
    """The people Hearth knows by voice (never an embedding: names and counts)."""

    def __init__(self, current: CurrentCore) -> None:
        self._current = current

    def _service(self) -> SpeakerService:
        speakers = self._current().engines.speakers
        if speakers is None:
            raise SpeakersOff(
                "speaker verification is off (speakers.enabled: false, or its model did not load)"
            )
        return speakers

    @property
    def verifies(self) -> bool:
        """Whether speaker verification is on (``speakers.enabled`` and its model loaded)."""
        return self._current().engines.speakers is not None

    def check_enrollment(self, recordings: int) -> None:
        """Refuse an enrollment before its recordings are read: verification is off
        (SpeakersOff), or there are more than ``speakers.max_takes`` (InvalidRequest)."""
        service = self._service()
        if recordings > service.settings.max_takes:
            raise InvalidRequest(f"at most {service.settings.max_takes} recordings")

    async def list_speakers(self) -> list[Speaker]:
        """Every enrolled person, read afresh."""
        return await asyncio.to_thread(self._service().store.list)

    async def enroll_speaker(self, name: str, recordings: list[bytes]) -> Speaker:
        """Enroll (or enroll again) ``name`` from recordings in any format PyAV reads,
        within the request deadline."""
        core = self._current()
        service = self._service()
        async with core.request_deadline().bound():
            audio = [await decode_upload(data, MAX_RECORDING_S) for data in recordings]
            return await service.enroll(name, audio)

    async def enroll_speaker_from_voice(self, name: str, voice: str) -> Speaker:
        """Enroll ``name`` from the takes recorded for custom voice ``voice``."""
        core = self._current()
        service = self._service()
        enrollment = Enrollment(core.config, voice)
        paths = await asyncio.to_thread(enrollment.recordings, service.settings.max_takes)
        async with core.request_deadline().bound():
            audio = [await asyncio.to_thread(decode_file, str(p), MAX_RECORDING_S) for p in paths]
            return await service.enroll(name, audio)

    async def rename_speaker(self, name: str, new_name: str) -> Speaker:
        """Rename an enrolled person; the enrollment stays."""
        return await asyncio.to_thread(self._service().store.rename, name, new_name)

    async def remove_speaker(self, name: str) -> None:
        """Forget an enrolled person (their embedding is deleted)."""
        await asyncio.to_thread(self._service().store.remove, name)
