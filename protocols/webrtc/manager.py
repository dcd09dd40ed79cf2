"""All WebRTC sessions: offer → answer, limits, and reaping of idle or failed ones."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable

from aiortc import (
    RTCConfiguration,
    RTCIceServer,
    RTCPeerConnection,
    RTCRtpSender,
    RTCSessionDescription,
)

from daemon.config import WebRtcConfig
from daemon.engines import Engines
from daemon.errors import Busy, InvalidRequest

from . import ice
from .rtcp import pace_reports
from .session import RtcSession

_LOGGER = logging.getLogger(__name__)

MAX_SDP_CHARS = 64 * 1024
REAP_INTERVAL_S = 10.0


class RtcManager:
    """Creates sessions from offers and closes them when they die or go quiet."""

    def __init__(self, config: WebRtcConfig, engines: Callable[[], Engines]) -> None:
        self.config = config
        self._engines = engines
        self.sessions: dict[str, RtcSession] = {}
        self.policy = ice.IcePolicy(config.port_min, config.port_max, tuple(config.addresses))
        self._reaper: asyncio.Task[None] | None = None
        self.closed = False

    def _rtc_configuration(self) -> RTCConfiguration:
        servers = [
            RTCIceServer(
                urls=url,
                username=self.config.ice_username or None,
                credential=self.config.ice_credential or None,
            )
            for url in self.config.ice_servers
        ]
        return RTCConfiguration(iceServers=servers)

    async def answer(self, sdp: str, kind: str) -> tuple[str, RTCSessionDescription]:
        """A new session for a non-trickle offer; returns (session id, answer)."""
        if self.closed:
            raise Busy("Hearth is shutting down")
        if kind != "offer":
            raise InvalidRequest(f"expected an SDP offer, got type {kind!r}")
        if not sdp.strip() or len(sdp) > MAX_SDP_CHARS:
            raise InvalidRequest(f"the offer's SDP must be 1 to {MAX_SDP_CHARS} characters")
        if len(self.sessions) >= self.config.max_sessions:
            raise Busy(
                f"too many WebRTC sessions (webrtc.max_sessions is {self.config.max_sessions})"
            )
        self._engines()  # not ready yet: fail before any work
        loop = asyncio.get_running_loop()
        ice.install(loop)
        if self._reaper is None:
            self._reaper = asyncio.create_task(self._reap(), name="rtc-reaper")
        pc = RTCPeerConnection(self._rtc_configuration())
        session = RtcSession(uuid.uuid4().hex[:12], pc, self._engines)
        self.sessions[session.id] = session

        @pc.on("datachannel")
        def on_datachannel(channel: object) -> None:
            session.attach_channel(channel)

        @pc.on("track")
        def on_track(track: object) -> None:
            if getattr(track, "kind", "") == "audio":
                session.attach_track(track)  # type: ignore[arg-type]

        @pc.on("connectionstatechange")
        async def on_state() -> None:
            if pc.connectionState in ("failed", "closed"):
                _LOGGER.info("WebRTC session %s %s", session.id, pc.connectionState)
                await self.close_session(session.id)

        try:
            await pc.setRemoteDescription(RTCSessionDescription(sdp=sdp, type="offer"))
            if not any(t.kind == "audio" for t in pc.getTransceivers()):
                raise InvalidRequest("the offer has no audio: add a microphone track")
            if "opus/48000" not in sdp.lower():
                raise InvalidRequest("the offer has no Opus audio (every browser offers it)")
            opus = [
                codec
                for codec in RTCRtpSender.getCapabilities("audio").codecs
                if codec.mimeType.lower() == "audio/opus"
            ]
            for transceiver in pc.getTransceivers():
                if transceiver.kind == "audio":
                    # The reply track hands over Opus packets (see tracks.py).
                    transceiver.setCodecPreferences(opus)
            pc.addTrack(session.reply_track)
            with ice.applied(self.policy):
                await pc.setLocalDescription(await pc.createAnswer())
            for transceiver in pc.getTransceivers():
                pace_reports(transceiver.sender)
                pace_reports(transceiver.receiver)
        except InvalidRequest:
            await self.close_session(session.id)
            raise
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            await self.close_session(session.id)
            raise InvalidRequest(f"the offer's SDP could not be used: {exc}") from None
        except OSError as exc:
            await self.close_session(session.id)
            raise Busy(f"no media port available: {exc}") from None
        _LOGGER.info("WebRTC session %s opened (%d open)", session.id, len(self.sessions))
        return session.id, pc.localDescription

    async def close_session(self, session_id: str) -> None:
        """Close one session (idempotent)."""
        session = self.sessions.pop(session_id, None)
        if session is not None:
            await session.close()
            _LOGGER.info("WebRTC session %s closed (%d open)", session_id, len(self.sessions))

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(REAP_INTERVAL_S)
            now = time.monotonic()
            for session in list(self.sessions.values()):
                if now - session.last_activity > self.config.idle_timeout_s:
                    _LOGGER.info("WebRTC session %s idle; closing", session.id)
                    await self.close_session(session.id)

    async def close(self) -> None:
        """Close every session and stop reaping; later offers are refused."""
        self.closed = True
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        for session_id in list(self.sessions):
            await self.close_session(session_id)
