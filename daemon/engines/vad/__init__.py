"""Voice activity detection behind one streaming interface."""

from __future__ import annotations

from daemon.engines.vad.base import Vad, VadStream


def create_vad(engine: str, threshold: float = 0.5, aggressiveness: int = 2) -> Vad:
    """Build the VAD named ``engine`` (webrtc or silero)."""
    if engine == "webrtc":
        from daemon.engines.vad.webrtc import WebRtcVad

        return WebRtcVad(aggressiveness)
    if engine == "silero":
        from daemon.engines.vad.silero import SileroVad

        return SileroVad(threshold)
    raise ValueError(f"unknown VAD engine {engine!r}")


__all__ = ["Vad", "VadStream", "create_vad"]
