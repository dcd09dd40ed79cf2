"""Signaling: ``POST /api/rtc/asr`` (non-trickle offer → answer), as WIS serves it."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from protocols.http.auth import require_api_key
from protocols.http.common import ready_services
from protocols.http.errors import HttpError
from protocols.webrtc.manager import MAX_SDP_CHARS, RtcManager

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
    """The service's session manager (made when the daemon starts serving)."""
    manager: RtcManager | None = getattr(request.app.state, "rtc", None)
    if manager is None:
        raise HttpError("not-ready", "WebRTC is not available yet; try again shortly")
    return manager


@router.post("/api/rtc/asr", response_model=Answer)
async def offer(body: Offer, request: Request, _: object = Depends(ready_services)) -> Answer:
    """Open a WebRTC session: microphone audio in, results on the data channel."""
    session_id, answer = await manager_of(request).answer(body.sdp, body.type)
    return Answer(sdp=answer.sdp, type=answer.type, session=session_id)
