"""Voices spoken by OpenAI-compatible speech servers (Kokoro-FastAPI, speaches,
openedai-speech, another Hearth).

Each ``tts.remote`` entry is one :class:`RemoteTts`: a group of voices of one model,
reachable at one or more base URLs (:class:`EndpointSet`). Every sentence is one
``POST {base_url}/audio/speech`` (``response_format`` wav or pcm), and its audio is
handed on as it arrives, as mono s16 PCM at the voice's rate. A sentence moves to
another endpoint, then to the group's local fallback voice, only before any of its
audio went out; a failure after that ends the speech with an error. Every wait is
bounded by ``timeout_s`` for the sentence, and every answer by a size limit.

:class:`MixedTts` puts the local engine (Piper) and the remote groups behind the one
engine the TTS service holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from pathlib import Path

import httpx
import numpy as np

from daemon.audio.pcm import PcmResampler, float_to_pcm
from daemon.config import RemoteTtsConfig
from daemon.engines.remote import (
    AllEndpointsFailed,
    EndpointSet,
    RemoteEndpoint,
    RemoteFailure,
    classify,
    status_failure,
    stream_failover,
)
from daemon.engines.tts.base import SynthesisOptions, TtsEngine
from daemon.engines.tts.voices import RemoteVoice, VoiceInfo
from daemon.errors import InvalidRequest, RemoteUnavailable

_LOGGER = logging.getLogger(__name__)
MAX_SENTENCE_S = 120.0
"""Longest audio one sentence may bring (s): a server that floods is cut off."""
MAX_HEADER = 64 << 10
"""Bytes of a WAV answer that may come before its audio (header and extra chunks)."""
MAX_ERROR_BODY = 4096
"""Bytes of an error answer read for its message."""
MIN_CHUNK_S = 0.05
"""Audio gathered before it is handed on (s): tiny network reads are joined."""


class SpeakLocally(Exception):
    """Every endpoint failed before any audio: the local ``voice`` speaks instead."""

    def __init__(self, voice: str, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.voice = voice
        self.reason = reason
        self.detail = detail


def voice_infos(remote: RemoteTtsConfig) -> list[VoiceInfo]:
    """The voices one ``tts.remote`` entry offers, as the voice store lists them."""
    return [
        VoiceInfo(
            name=local,
            model_path=Path(),
            config_path=Path(),
            language=remote.language,
            sample_rate=remote.sample_rate,
            speakers=(),
            display_name=f"{voice} ({remote.name})",
            source="remote",
            read_only=True,
            attribution_name=f"{remote.name} ({remote.model})",
            attribution_url="",
            origin="remote",
            remote=RemoteVoice(remote.name, remote.model, voice),
        )
        for local, voice in remote.local_names().items()
    ]


class _Audio:
    """One answer's bytes as mono s16 PCM at ``rate``: a WAV header is checked and
    read (any rate, mono or stereo, 16 bit), raw ``pcm`` is taken to be at ``rate``."""

    def __init__(self, fmt: str, rate: int, gain: float) -> None:
        self.rate = rate
        self.gain = gain
        self._header: bytearray | None = bytearray() if fmt == "wav" else None
        self._channels = 1
        self._left = -1
        """Audio bytes the WAV data chunk still holds (-1: until the stream ends)."""
        self._limit = int(MAX_SENTENCE_S * rate) * 2
        self._received = 0
        self._frame_rest = b""
        self._resampler = PcmResampler(rate, rate)
        self._pending = bytearray()
        self._min = int(MIN_CHUNK_S * rate) * 2

    def feed(self, data: bytes) -> bytes:
        """PCM ready to hand on (may be empty); RemoteFailure on garbage or a flood."""
        if self._header is not None:
            self._header += data
            data = self._read_header()
            if self._header is not None:
                if len(self._header) > MAX_HEADER:
                    raise RemoteFailure("garbage", "sent no WAV audio (header too long)")
                return b""
        if self._left >= 0:
            data = data[: self._left]
            self._left -= len(data)
        self._received += len(data)
        if self._received > self._limit:
            raise RemoteFailure("oversized", f"sent more than {MAX_SENTENCE_S:g} s of audio")
        self._pending += self._convert(data, last=False)
        if len(self._pending) < self._min:
            return b""
        out = bytes(self._pending)
        self._pending.clear()
        return out

    def finish(self) -> bytes:
        """The rest of the audio at the end of the answer."""
        if self._header is not None:
            raise RemoteFailure("garbage", "ended before its WAV header did")
        out = bytes(self._pending) + self._convert(b"", last=True)
        self._pending.clear()
        return out

    def _read_header(self) -> bytes:
        """Parse the WAV header once its data chunk begins; return the audio after it."""
        assert self._header is not None
        head = bytes(self._header)
        if len(head) < 12:
            return b""
        if head[:4] != b"RIFF" or head[8:12] != b"WAVE":
            raise RemoteFailure("garbage", "answered something other than WAV audio")
        pos, rate, bits = 12, 0, 0
        while len(head) >= pos + 8:
            kind, size = head[pos : pos + 4], struct.unpack("<I", head[pos + 4 : pos + 8])[0]
            if kind == b"data":
                if not rate:
                    raise RemoteFailure("garbage", "sent WAV audio with no format chunk")
                self._header = None
                if size not in (0, 0xFFFFFFFF):  # a streamed WAV cannot know its length
                    self._left = size
                self._resampler = PcmResampler(rate, self.rate)
                self._limit = int(MAX_SENTENCE_S * rate) * 2 * self._channels
                return head[pos + 8 :]
            if kind == b"fmt ":
                if len(head) < pos + 24:
                    return b""
                tag, channels, rate, _, _, bits = struct.unpack("<HHIIHH", head[pos + 8 : pos + 24])
                if tag not in (1, 0xFFFE) or bits != 16 or channels not in (1, 2):
                    raise RemoteFailure(
                        "garbage",
                        f"sent WAV audio Hearth cannot play (format {tag}, {bits} bit, "
                        f"{channels} channels)",
                    )
                if not 4000 <= rate <= 192000:
                    raise RemoteFailure("garbage", f"sent WAV audio at {rate} Hz")
                self._channels = channels
            pos += 8 + size + (size & 1)
        return b""

    def _convert(self, data: bytes, last: bool) -> bytes:
        frame = 2 * self._channels
        data = self._frame_rest + data
        usable = len(data) - len(data) % frame
        self._frame_rest = data[usable:]
        data = data[:usable]
        if self._channels == 2 and data:
            both = np.frombuffer(data, dtype="<i2").astype(np.int32).reshape(-1, 2)
            data = (both.sum(axis=1) // 2).astype("<i2").tobytes()
        pcm = self._resampler.feed(data, last=last)
        if self.gain != 1.0 and pcm:
            audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) * (self.gain / 32768.0)
            pcm = float_to_pcm(audio)
        return pcm


class RemoteTts:
    """One ``tts.remote`` entry: its voices, endpoints, HTTP client and fallback."""

    def __init__(
        self,
        config: RemoteTtsConfig,
        endpoints: EndpointSet,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.name = config.name
        self.config = config
        self.endpoints = endpoints
        self.model = config.model
        self.timeout_s = config.timeout_s
        self.fallback = config.fallback
        """The local voice that speaks when every endpoint fails ("": none)."""
        self.voices = {v.name: v for v in voice_infos(config)}
        key = endpoints.api_key
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(config.timeout_s),
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
            transport=transport,
        )

    async def stream(
        self, voice: VoiceInfo, sentence: str, options: SynthesisOptions
    ) -> AsyncGenerator[bytes, None]:
        """Mono s16 PCM of ``sentence`` at ``voice.sample_rate``, as it arrives.

        Raises:
            SpeakLocally: every endpoint failed before any audio and there is a fallback.
            RemoteUnavailable: the same with no fallback, or a failure after audio went out.
        """
        assert voice.remote is not None
        body = {
            "model": self.model,
            "input": sentence,
            "voice": voice.remote.voice,
            "response_format": self.config.response_format,
            "speed": round(min(4.0, max(0.25, options.speed * voice.speed)), 3),
        }
        gain = options.volume * voice.volume
        fmt, rate = self.config.response_format, voice.sample_rate

        def broke_off(ep: RemoteEndpoint, failure: RemoteFailure) -> Exception:
            return RemoteUnavailable(
                f"remote voice '{voice.name}' at {ep.url} broke off its audio: {failure.detail}"
            )

        pcms = stream_failover(
            self.endpoints,
            lambda ep, deadline: self._attempt(ep, body, _Audio(fmt, rate, gain), deadline),
            self.timeout_s,
            allow_down=not self.fallback,
            broke_off=broke_off,
        )
        try:
            async with contextlib.aclosing(pcms):
                async for pcm in pcms:
                    yield pcm
            return
        except AllEndpointsFailed as exc:
            reason, detail = exc.reason, exc.detail
        if not self.fallback:
            raise RemoteUnavailable(
                f"remote voice '{voice.name}' ({self.name}) failed and has no fallback: {detail}"
            )
        _LOGGER.warning(
            "Remote voice '%s' (%s) failed (%s: %s); speaking with '%s'",
            voice.name,
            self.name,
            reason,
            detail,
            self.fallback,
        )
        self.endpoints.count_fallback(reason)
        raise SpeakLocally(self.fallback, reason, detail)

    async def _attempt(
        self, ep: RemoteEndpoint, body: dict[str, object], audio: _Audio, deadline: float
    ) -> AsyncGenerator[bytes, None]:
        """One endpoint's audio; RemoteFailure when it fails, times out or sends garbage.

        Every wait is timed on its own, never across a ``yield``: the reader's pace is
        the reader's, and a timeout must not land in its code.
        """
        loop = asyncio.get_running_loop()
        request = self._client.build_request(
            "POST",
            f"{ep.url}/audio/speech",
            json=body,
            timeout=httpx.Timeout(max(0.1, deadline - loop.time())),
        )
        try:
            async with asyncio.timeout_at(deadline):
                resp = await self._client.send(request, stream=True)
        except TimeoutError:
            raise RemoteFailure("timeout", "did not answer in time") from None
        except httpx.HTTPError as exc:
            raise classify(exc) from None
        try:
            chunks = resp.aiter_bytes()
            if resp.status_code >= 400:
                detail = b""
                while len(detail) < MAX_ERROR_BODY:
                    piece = await self._next(chunks, deadline)
                    if piece is None:
                        break
                    detail += piece
                raise status_failure(resp.status_code, detail)
            kind = resp.headers.get("content-type", "").lower()
            if kind.startswith(("text/", "application/json")):
                raise RemoteFailure("garbage", f"answered {kind or 'no content type'}, not audio")
            while (data := await self._next(chunks, deadline)) is not None:
                pcm = audio.feed(data)
                if pcm:
                    yield pcm
            tail = audio.finish()
            if tail:
                yield tail
        finally:
            await resp.aclose()

    @staticmethod
    async def _next(chunks: AsyncIterator[bytes], deadline: float) -> bytes | None:
        """The next piece of an answer before ``deadline`` (None at its end)."""
        try:
            async with asyncio.timeout_at(deadline):
                return await anext(chunks, None)
        except TimeoutError:
            raise RemoteFailure("timeout", "did not finish its audio in time") from None
        except httpx.HTTPError as exc:
            raise classify(exc) from None

    async def close(self) -> None:
        """Close the HTTP client and stop health checks; safe to call more than once."""
        self.endpoints.close()
        await self._client.aclose()


class MixedTts(TtsEngine):
    """The local engine and the remote voice groups, as the TTS service's one engine.

    The service streams remote voices itself (:meth:`remote`); calls that reach this
    engine are for local voices.
    """

    def __init__(self, local: TtsEngine, remotes: list[RemoteTts]) -> None:
        self.local = local
        self.remotes = {r.name: r for r in remotes}
        self.device = local.device
        self.endpoints = [r.endpoints for r in remotes]
        """Every group's endpoint set (for /metrics)."""

    def remote(self, voice: VoiceInfo) -> RemoteTts | None:
        """The group that speaks ``voice`` (None for a local voice)."""
        if voice.remote is None:
            return None
        group = self.remotes.get(voice.remote.group)
        if group is None:
            raise RemoteUnavailable(f"remote voice '{voice.name}' is no longer configured")
        return group

    def synthesize(
        self, voice: VoiceInfo, sentence: str, options: SynthesisOptions
    ) -> Iterator[bytes]:
        """Local voices only (remote ones are streamed by the service)."""
        if voice.remote is not None:
            raise InvalidRequest(f"voice '{voice.name}' is remote and streamed, not synthesized")
        return self.local.synthesize(voice, sentence, options)

    def preload(self, voice: VoiceInfo) -> None:
        """Load a local voice now (a remote one has nothing to load)."""
        if voice.remote is None:
            self.local.preload(voice)

    async def close(self) -> None:
        """Close every remote group (the local engine is not closed: a reload may keep it)."""
        for remote in self.remotes.values():
            await remote.close()
