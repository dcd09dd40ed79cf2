"""Enrollment and verification: recordings become an embedding in the speaker worker.

The encoder is CPU work (about 50 ms for 4 s of speech on one core here), so every
embedding is made in its own bounded worker pool, never on the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np

from daemon.config import SpeakersConfig
from daemon.engines.speaker import Ge2eEncoder
from daemon.engines.workers import WorkerPool
from daemon.errors import InvalidAudio, InvalidRequest
from daemon.speakers.store import Match, Speaker, SpeakerStore

MIN_RECORDED_S = 1.0
"""An enrollment needs at least this much audio in all, and voice in some of it."""


class SpeakerService:
    """The encoder, its worker, the store and the threshold, for the protocols."""

    def __init__(
        self,
        encoder: Ge2eEncoder,
        pool: WorkerPool,
        store: SpeakerStore,
        settings: SpeakersConfig,
    ) -> None:
        self.encoder = encoder
        self.pool = pool
        self.store = store
        self.settings = settings

    async def embed(self, audio: np.ndarray) -> np.ndarray | None:
        """The embedding of 16 kHz mono audio, or None when it holds no voice."""
        return await self.pool.run(self.encoder.embed, np.asarray(audio))

    async def enroll(self, name: str, recordings: Sequence[np.ndarray]) -> Speaker:
        """Enroll (or enroll again) ``name`` from 16 kHz recordings of their voice.

        Raises:
            InvalidRequest: too many recordings, or a bad name.
            InvalidAudio: no recording holds enough voice.
        """
        if not recordings:
            raise InvalidRequest("enrollment needs at least one recording")
        if len(recordings) > self.settings.max_takes:
            raise InvalidRequest(
                f"{len(recordings)} recordings; at most {self.settings.max_takes} "
                "(speakers.max_takes)"
            )
        embeddings = []
        for audio in recordings:
            embedding = await self.embed(audio)
            if embedding is not None:
                embeddings.append(embedding)
        recorded_s = sum(len(a) for a in recordings) / 16000
        if not embeddings or recorded_s < MIN_RECORDED_S:
            raise InvalidAudio(
                "no voice heard in the recordings: enrollment needs at least "
                f"{MIN_RECORDED_S:g} s of speech"
            )
        mean = np.mean(embeddings, axis=0)
        return await self.pool.run(
            self.store.save, name, mean / np.linalg.norm(mean), len(embeddings)
        )

    async def identify_if_enrolled(self, audio: np.ndarray, max_s: float = 30.0) -> Match | None:
        """:meth:`identify` on the first ``max_s`` of ``audio``; None (no embedding made)
        when nobody is enrolled."""
        if not await self.pool.run(self.store.anyone):
            return None
        return await self.identify(np.asarray(audio)[: int(max_s * 16000)])

    async def identify(self, audio: np.ndarray) -> Match:
        """Who is speaking in 16 kHz ``audio``: the best enrolled speaker over the threshold."""
        embedding = await self.embed(audio)
        if embedding is None:
            return Match(None, {})
        return await self.pool.run(self.store.match, embedding, self.settings.threshold)


class SpeakerLookup:
    """Who is speaking in one utterance, found beside its decode.

    :meth:`start` as soon as the utterance's audio is known (the embedding runs in the
    speaker worker while the ASR worker decodes); :meth:`match` when the transcript is
    ready. Without a speaker service (verification off) it finds nobody and costs
    nothing. One lookup per utterance; :meth:`cancel` when the request ends.
    """

    def __init__(self, service: SpeakerService | None) -> None:
        self.service = service
        self._pending: asyncio.Future[Match | None] | None = None

    @property
    def started(self) -> bool:
        """Whether :meth:`start` has been called with audio."""
        return self._pending is not None

    def start(self, audio: np.ndarray | None) -> None:
        """Begin identifying ``audio`` (16 kHz); a second call is ignored."""
        if self.service is not None and self._pending is None and audio is not None:
            self._pending = asyncio.ensure_future(self.service.identify_if_enrolled(audio))

    async def match(self, wait_s: float | None = None) -> Match | None:
        """The result: None when nobody is enrolled, the lookup never started, or it took
        longer than ``wait_s`` (then it goes on, and a later call may have it)."""
        if self._pending is None:
            return None
        try:
            async with asyncio.timeout(wait_s):
                return await asyncio.shield(self._pending)
        except TimeoutError:
            return None

    def cancel(self) -> None:
        """Stop a lookup still running (its worker call finishes on its own)."""
        if self._pending is not None and not self._pending.done():
            self._pending.cancel()
