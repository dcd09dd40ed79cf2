"""RTCP pacing for long idle sessions.

aiortc sends a receiver report and a sender report about every second per
stream, even while no media flows. RFC 3550 recommends at least 5 s between
reports, and browsers use 5 s for audio; a paused session then costs a few
hundred bytes per second less. BYE and feedback packets are never delayed.
"""

from __future__ import annotations

import time
from typing import Any

from aiortc.rtp import RtcpByePacket, RtcpPsfbPacket, RtcpRtpfbPacket

REPORT_INTERVAL_S = 5.0
URGENT = (RtcpByePacket, RtcpPsfbPacket, RtcpRtpfbPacket)
"""Never delayed: BYE, and feedback (loss reports, keyframe and bitrate requests)."""


def pace_reports(endpoint: Any, interval_s: float = REPORT_INTERVAL_S) -> None:
    """Let ``endpoint`` (an RTCRtpSender or RTCRtpReceiver) send RTCP reports at
    most every ``interval_s`` seconds."""
    original = endpoint._send_rtcp
    last = [0.0]

    async def send(packets: Any) -> None:
        # A sender passes a list of packets, a receiver a single one.
        items = packets if isinstance(packets, list) else [packets]
        now = time.monotonic()
        if not any(isinstance(p, URGENT) for p in items) and now - last[0] < interval_s:
            return
        last[0] = now
        await original(packets)

    endpoint._send_rtcp = send
