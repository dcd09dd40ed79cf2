"""Patches to aiortc, per sender or receiver object (never to its classes).

- **RTCP report gate** (``RTCRtpSender._send_rtcp``, ``RTCRtpReceiver._send_rtcp``):
  aiortc sends a sender and a receiver report about every second per stream, even
  while no media flows, and has no setting for it. A paused session that may stay
  open for days should report as browsers do (every 5 s); the pacing rule itself
  lives in :mod:`protocols.webrtc.rtcp`.
- **RTCP BYE ignored** (``RTCRtpReceiver._handle_rtcp_packet``): browsers may send a
  BYE when the page pauses its microphone (``replaceTrack(null)``) between
  utterances; aiortc then ends the remote track for good. WIS ignores BYE so the
  session lives on, and so does Hearth.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from aiortc import RTCRtpReceiver
from aiortc.rtp import RtcpByePacket

from protocols.patches import Patch, usable

_LOGGER = logging.getLogger(__name__)

VERSIONS = ("1.10", "1.17")
SENDER_RTCP = Patch(
    "aiortc",
    "aiortc.rtcrtpsender:RTCRtpSender._send_rtcp",
    ("self", "packets"),
    True,
    VERSIONS,
    "RTCP sender reports are not paced",
)
RECEIVER_RTCP = Patch(
    "aiortc",
    "aiortc.rtcrtpreceiver:RTCRtpReceiver._send_rtcp",
    ("self", "packet"),
    True,
    VERSIONS,
    "RTCP receiver reports are not paced",
)
RECEIVER_HANDLE_RTCP = Patch(
    "aiortc",
    "aiortc.rtcrtpreceiver:RTCRtpReceiver._handle_rtcp_packet",
    ("self", "packet"),
    True,
    VERSIONS,
    "an RTCP BYE (sent when a browser pauses its microphone) ends the session's audio",
)
PATCHES = (SENDER_RTCP, RECEIVER_RTCP, RECEIVER_HANDLE_RTCP)


def gate_reports(endpoint: Any, allow: Callable[[list[Any]], bool]) -> bool:
    """Drop the RTCP sends of ``endpoint`` (an RTCRtpSender or RTCRtpReceiver) that
    ``allow`` refuses; False when the patch cannot apply.

    ``allow`` always gets a list: a sender sends a list of packets, a receiver one.
    """
    patch = RECEIVER_RTCP if isinstance(endpoint, RTCRtpReceiver) else SENDER_RTCP
    if not usable(patch):
        return False
    original = endpoint._send_rtcp

    async def send(packets: Any) -> None:
        if allow(packets if isinstance(packets, list) else [packets]):
            await original(packets)

    endpoint._send_rtcp = send
    return True


def ignore_bye(receiver: Any, session_id: str) -> bool:
    """Keep ``receiver``'s track alive through RTCP BYE; False when the patch cannot apply."""
    if not usable(RECEIVER_HANDLE_RTCP):
        return False
    original = receiver._handle_rtcp_packet

    async def handle(packet: Any) -> None:
        if isinstance(packet, RtcpByePacket):
            _LOGGER.debug("[%s] RTCP BYE ignored (track paused)", session_id)
            return
        await original(packet)

    receiver._handle_rtcp_packet = handle
    return True
