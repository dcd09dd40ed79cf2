"""RTCP pacing for long idle sessions.

aiortc sends a receiver report and a sender report about every second per
stream, even while no media flows. RFC 3550 recommends at least 5 s between
reports, and browsers use 5 s for audio; a paused session then costs a few
hundred bytes per second less. BYE and feedback packets are never delayed.
The hook into aiortc is :func:`protocols.patches.aiortc.gate_reports`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from aiortc.rtp import RtcpByePacket, RtcpPsfbPacket, RtcpRtpfbPacket

from protocols.patches.aiortc import gate_reports

REPORT_INTERVAL_S = 5.0
URGENT = (RtcpByePacket, RtcpPsfbPacket, RtcpRtpfbPacket)
"""Never delayed: BYE, and feedback (loss reports, keyframe and bitrate requests)."""


class ReportPacer:
    """Lets reports through at most every ``interval_s`` seconds; urgent packets always."""

    def __init__(
        self, interval_s: float = REPORT_INTERVAL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._last: float | None = None

    def allow(self, packets: list[Any]) -> bool:
        """Whether this send goes out now (a report too soon after the last is dropped)."""
        now = self._clock()
        urgent = any(isinstance(p, URGENT) for p in packets)
        if not urgent and self._last is not None and now - self._last < self.interval_s:
            return False
        self._last = now
        return True


def pace_reports(endpoint: Any, interval_s: float = REPORT_INTERVAL_S) -> None:
    """Let ``endpoint`` (an RTCRtpSender or RTCRtpReceiver) send RTCP reports at
    most every ``interval_s`` seconds."""
    gate_reports(endpoint, ReportPacer(interval_s).allow)
