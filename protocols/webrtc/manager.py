"""All WebRTC sessions: offer → answer, limits, and reaping of idle or failed ones.

The manager is the WebRTC listener: signaling rides on the HTTP listener's routes,
media on UDP ports the ICE policy picks per session. A session whose peer does not
connect within ``webrtc.connect_timeout_s`` of its answer is closed, so offers that
never complete ICE cannot hold the ``webrtc.max_sessions`` slots. On reload every live session
is told that new engines are in (its next utterance uses them) and the previous
engines are kept until the utterances and replies running on them end. On stop
every session is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from aiortc import (
    RTCConfiguration,
    RTCIceServer,
    RTCPeerConnection,
    RTCRtpSender,
    RTCSessionDescription,
)

from daemon.config import Config, WebRtcConfig
from daemon.errors import Busy, InvalidRequest
from daemon.runtime.api import Services
from protocols.listener import Announcement, Drained, Listener, ListenerKind, Wiring
from protocols.webrtc import ice
from protocols.webrtc.rtcp import pace_reports
from protocols.webrtc.session import RtcSession
from protocols.webrtc.tracks import ReplyTrack

_LOGGER = logging.getLogger(__name__)

MAX_SDP_CHARS = 64 * 1024
REAP_INTERVAL_S = 10.0
CLOSE_WAIT_S = 5.0
"""On stop: how long sessions being closed by their connect deadline get to finish."""


class PeerSession(Protocol):
    """What the manager needs of a session: Hearth's own (:class:`RtcSession`) or
    another protocol's over the same peer connections (the Realtime API's calls)."""

    id: str
    pc: RTCPeerConnection
    reply_track: ReplyTrack
    last_activity: float

    @property
    def busy(self) -> bool:
        """Whether the session holds engines now."""
        ...

    def attach_channel(self, channel: Any) -> None:
        """The client's data channel arrived."""
        ...

    def attach_track(self, track: Any) -> None:
        """The client's microphone track arrived."""
        ...

    def on_engines_changed(self) -> None:
        """The engines were reloaded."""
        ...

    async def close(self) -> None:
        """Free everything; safe to call more than once."""
        ...


SessionFactory = Callable[[str, RTCPeerConnection, Services], PeerSession]
"""Makes a session from (id, peer connection, engines)."""


class RtcManager:
    """Creates sessions from offers and closes them when they die or go quiet."""

    name = "webrtc"
    early = False

    def __init__(self, config: WebRtcConfig, services: Services) -> None:
        self.config = config
        self._services = services
        """The core's services (ModelUnavailable while the engines load)."""
        self.sessions: dict[str, PeerSession] = {}
        """Open sessions by id (:class:`RtcSession` unless another factory made them)."""
        self.policy = ice.IcePolicy(config.port_min, config.port_max, tuple(config.addresses))
        self._reaper: asyncio.Task[None] | None = None
        self._deadlines: dict[str, asyncio.TimerHandle] = {}
        """Sessions not connected yet: when each is given up."""
        self._closing: set[asyncio.Task[None]] = set()
        self.started = False
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

    async def answer(
        self, sdp: str, kind: str, make: SessionFactory = RtcSession
    ) -> tuple[str, RTCSessionDescription]:
        """A new session for a non-trickle offer; returns (session id, answer).

        ``make`` builds the session (Hearth's own protocol unless told otherwise).
        """
        if self.closed:
            raise Busy("Hearth is shutting down")
        if not self.started:
            raise Busy("WebRTC is not available yet; try again shortly")
        if kind != "offer":
            raise InvalidRequest(f"expected an SDP offer, got type {kind!r}")
        if not sdp.strip() or len(sdp) > MAX_SDP_CHARS:
            raise InvalidRequest(f"the offer's SDP must be 1 to {MAX_SDP_CHARS} characters")
        if len(self.sessions) >= self.config.max_sessions:
            raise Busy(
                f"too many WebRTC sessions (webrtc.max_sessions is {self.config.max_sessions})"
            )
        self._services.house.check_loaded()  # not ready yet: fail before any work
        pc = RTCPeerConnection(self._rtc_configuration())
        session = make(uuid.uuid4().hex[:12], pc, self._services)
        self.sessions[session.id] = session

        @pc.on("datachannel")
        def on_datachannel(channel: object) -> None:
            session.attach_channel(channel)

        @pc.on("track")
        def on_track(track: object) -> None:
            if getattr(track, "kind", "") == "audio":
                session.attach_track(track)

        @pc.on("connectionstatechange")
        async def on_state() -> None:
            if pc.connectionState == "connected":
                self._connected(session.id)
            elif pc.connectionState in ("failed", "closed"):
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
        if session.id in self.sessions and pc.connectionState != "connected":
            self._deadlines[session.id] = asyncio.get_running_loop().call_later(
                self.config.connect_timeout_s, self._connect_deadline, session.id
            )
        _LOGGER.info("WebRTC session %s opened (%d open)", session.id, len(self.sessions))
        return session.id, pc.localDescription

    def _connected(self, session_id: str) -> None:
        """The peer completed ICE and DTLS: the session lives until idle or failed."""
        handle = self._deadlines.pop(session_id, None)
        if handle is not None:
            handle.cancel()

    def _connect_deadline(self, session_id: str) -> None:
        """Close a session whose peer never connected (ICE never completed)."""
        self._deadlines.pop(session_id, None)
        session = self.sessions.get(session_id)
        if session is None or session.pc.connectionState == "connected":
            return
        _LOGGER.info(
            "WebRTC session %s did not connect within %g s (webrtc.connect_timeout_s); closing",
            session_id,
            self.config.connect_timeout_s,
        )
        task = asyncio.create_task(self.close_session(session_id), name="rtc-unconnected")
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def close_session(self, session_id: str) -> None:
        """Close one session (idempotent)."""
        handle = self._deadlines.pop(session_id, None)
        if handle is not None:
            handle.cancel()
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

    async def start(self) -> None:
        """Let ICE policies steer this loop's binds, and start reaping idle sessions."""
        if self.started or self.closed:
            return
        ice.install(asyncio.get_running_loop())
        self._reaper = asyncio.create_task(self._reap(), name="rtc-reaper")
        self.started = True

    async def stop(self, grace_s: float) -> None:
        """Close every session: a session lasts as long as the browser keeps it open,
        so waiting for it to end would only delay the stop."""
        await self.close()

    def reconfigure(self, config: Config, swapped: bool) -> Drained:
        """WebRTC settings need a restart; new engines are announced to every session."""
        if not swapped:
            return lambda: True
        running = [s for s in self.sessions.values() if _session_busy(s)]
        for session in list(self.sessions.values()):
            session.on_engines_changed()
        return lambda: not any(_session_busy(s) for s in running)

    def busy(self) -> bool:
        """Whether a session is listening to an utterance or replying."""
        return any(_session_busy(s) for s in self.sessions.values())

    def active_sessions(self) -> dict[str, int]:
        """Open sessions."""
        return {"webrtc": len(self.sessions)}

    def announcements(self) -> list[Announcement]:
        """Nothing of its own: signaling is on the HTTP listener."""
        return []

    def describe(self) -> str:
        """Nothing of its own for the status line."""
        return ""

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
        if self._closing:
            await asyncio.wait(set(self._closing), timeout=CLOSE_WAIT_S)


def _session_busy(session: PeerSession) -> bool:
    """An utterance is being heard, or a reply is on its way (both hold engines)."""
    return session.busy


def _make(wiring: Wiring, made: Mapping[str, Listener]) -> Listener:
    """Sessions belong to the service: counted in /metrics, closed on stop."""
    return RtcManager(wiring.config.webrtc, wiring.services)


KIND = ListenerKind("webrtc", _make, restart=("webrtc",))
"""Every WebRTC setting is read when the manager is made (ports, ICE, limits)."""
