"""The session manager with real aiortc peers on loopback: offers that never connect."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from aiortc import RTCPeerConnection, RTCSessionDescription

from daemon.config import WebRtcConfig
from daemon.errors import Busy
from protocols.webrtc import ice
from protocols.webrtc.manager import RtcManager
from protocols.webrtc.tracks import ReplyTrack
from tests.fakes import fake_config, fake_engines
from tests.webrtc_client import LOOPBACK

TIMEOUT_S = 30
CONNECT_TIMEOUT_S = 1.0


async def offer() -> RTCPeerConnection:
    """A browser-like peer (microphone and data channel) with its offer made."""
    pc = RTCPeerConnection()
    pc.createDataChannel("chat", ordered=True)
    pc.addTrack(ReplyTrack())
    with ice.applied(LOOPBACK):
        await pc.setLocalDescription(await pc.createOffer())
    return pc


async def wait_until(check: Any, seconds: float) -> None:
    """Poll ``check`` every 50 ms until it holds (fails after ``seconds``)."""
    async with asyncio.timeout(seconds):
        while not check():
            await asyncio.sleep(0.05)


@pytest.fixture
async def manager(tmp_path: Path) -> Any:
    config = WebRtcConfig(
        addresses=["127.0.0.1"],
        port_min=21000,
        port_max=21199,
        max_sessions=2,
        connect_timeout_s=CONNECT_TIMEOUT_S,
    )
    fakes = fake_engines(fake_config(tmp_path))
    manager = RtcManager(config, fakes.services)
    await manager.start()
    yield manager
    await asyncio.wait_for(manager.close(), TIMEOUT_S)
    fakes.close()


async def test_offers_that_never_connect_free_their_slots(manager: RtcManager) -> None:
    async with asyncio.timeout(TIMEOUT_S):
        half_open = [await offer() for _ in range(2)]
        try:
            for pc in half_open:  # answered, but the answer is never applied: no ICE
                await manager.answer(pc.localDescription.sdp, "offer")
            late = await offer()
            with pytest.raises(Busy, match="max_sessions"):
                await manager.answer(late.localDescription.sdp, "offer")
            await late.close()
            await wait_until(lambda: not manager.sessions, CONNECT_TIMEOUT_S + 10)
        finally:
            for pc in half_open:
                await pc.close()

        # A peer that applies the answer and connects. Its deadline leaves two aiortc
        # peers on one loaded loop time to finish ICE and DTLS.
        connect_s = 5.0
        manager.config = dataclasses.replace(manager.config, connect_timeout_s=connect_s)
        real = await offer()
        try:
            session_id, answer = await manager.answer(real.localDescription.sdp, "offer")
            await real.setRemoteDescription(RTCSessionDescription(answer.sdp, answer.type))
            await wait_until(lambda: real.connectionState == "connected", 15)
            session = manager.sessions[session_id]
            await wait_until(lambda: session.pc.connectionState == "connected", 15)
            await asyncio.sleep(connect_s + 0.5)  # past the deadline: still open
            assert session_id in manager.sessions
        finally:
            with contextlib.suppress(Exception):
                await real.close()
