"""Signaling: ``POST /api/rtc/asr`` (non-trickle offer → answer), as WIS serves it."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from daemon.engines import Engines
from protocols.http.auth import require_api_key
from protocols.http.common import ready_engines, service_of

from .manager import MAX_SDP_CHARS, RtcManager

router = APIRouter(tags=["webrtc"], dependencies=[Depends(require_api_key)])


class Offer(BaseModel):
    """The browser's offer, ICE candidates included (gathering complete)."""

    sdp: str = Field(max_length=MAX_SDP_CHARS)
    type: str = Field(max_length=16)


class Answer(BaseModel):
    """Hearth's answer; ``session`` identifies the session in logs."""

    sdp: str
    type: str
    session: str


def manager_of(request: Request) -> RtcManager:
    """The app's session manager (made on first use)."""
    state = request.app.state
    manager: RtcManager | None = getattr(state, "rtc", None)
    if manager is None:
        service = service_of(request)

        def engines() -> Engines:
            current = service.engines
            assert current is not None, "engines not loaded"
            return current

        manager = RtcManager(service.config.webrtc, engines)
        state.rtc = manager
    return manager


@router.post("/api/rtc/asr", response_model=Answer)
async def offer(body: Offer, request: Request, _: object = Depends(ready_engines)) -> Answer:
    """Open a WebRTC session: microphone audio in, results on the data channel."""
    session_id, answer = await manager_of(request).answer(body.sdp, body.type)
    return Answer(sdp=answer.sdp, type=answer.type, session=session_id)
