"""``/v1/realtime``: the OpenAI Realtime API's WebSocket, handed to a Realtime session.

Authentication is the other ``/v1`` routes': ``Authorization: Bearer KEY`` (or
``X-API-Key``), or, for browsers that cannot set headers on a WebSocket, the
subprotocol ``openai-insecure-api-key.KEY``. A refused or early handshake is closed
before it is accepted (403). The answer names the subprotocol ``realtime`` when the
client offered it (browsers fail a handshake that names none of theirs), never the
key. A client that says ``OpenAI-Beta: realtime=v1`` (header or subprotocol
``openai-beta.realtime-v1``) is answered in the 2024 beta's event names.

``POST /v1/realtime/calls`` is the WebRTC variant, as OpenAI serves it: the body is
the SDP offer (``application/sdp``), or a form with the fields ``sdp`` and
``session`` (the session's settings as JSON, applied as a first ``session.update``).
The answer is ``201`` with the SDP answer and ``Location: /v1/realtime/calls/{id}``.
Events then travel on the client's ``oai-events`` data channel, audio on the tracks
(:mod:`protocols.realtime.calls`); the call is one of the WebRTC room's sessions.
"""

from __future__ import annotations

import functools
import json
import logging
from typing import Any

from fastapi import APIRouter, Depends, Query, Request, Response, WebSocket
from starlette.websockets import WebSocketDisconnect

from daemon.errors import HearthError, InvalidRequest
from daemon.ops.inflight import Ticket
from daemon.runtime.api import Services
from protocols.http.auth import check_api_key, key_matches, offered_keys, require_api_key
from protocols.http.common import config_of, ready_services, service_of
from protocols.http.errors import error_responses
from protocols.http.metrics import TICKET
from protocols.http.names import OPENAI_ASR_MODELS, OPENAI_VOICES
from protocols.http.rtc import manager_of
from protocols.realtime.calls import RealtimeCall, check_session
from protocols.realtime.session import RealtimeSession
from protocols.webrtc.manager import MAX_SDP_CHARS

_LOGGER = logging.getLogger(__name__)
router = APIRouter(tags=["openai"])
KEY_PROTOCOL = "openai-insecure-api-key."
BETA_PROTOCOL = "openai-beta.realtime-v1"
ANSWERED_PROTOCOLS = ("realtime", BETA_PROTOCOL)
"""Subprotocols Hearth may name in its answer, in order of preference."""
MAX_SESSION_CHARS = 64 * 1024
"""The largest ``session`` field of a call's offer."""
OFFER_BODY = {
    "required": True,
    "content": {
        "application/sdp": {"schema": {"type": "string"}},
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["sdp"],
                "properties": {
                    "sdp": {"type": "string", "description": "the SDP offer"},
                    "session": {"type": "string", "description": "session settings (JSON)"},
                },
            }
        },
    },
}
"""The offer, as documented in the OpenAPI schema (the route reads the body itself)."""


def subprotocols(websocket: WebSocket) -> list[str]:
    """The subprotocols the client offered."""
    header = websocket.headers.get("sec-websocket-protocol", "")
    return [p.strip() for p in header.split(",") if p.strip()]


def authorized(websocket: WebSocket, offered: list[str]) -> bool:
    """Whether the handshake carries the API key (always, when none is configured)."""
    expected = config_of(websocket).auth.api_key
    if not expected:
        return True
    keys = [p[len(KEY_PROTOCOL) :] for p in offered if p.startswith(KEY_PROTOCOL)]
    if keys:
        return key_matches(expected, offered_keys(websocket.headers) + keys)
    try:
        check_api_key(websocket)
    except HearthError:
        return False
    return True


class _Socket:
    """Starlette's WebSocket as the Realtime session reads and writes it."""

    def __init__(self, websocket: WebSocket) -> None:
        self._websocket = websocket

    async def receive(self) -> str | bytes | None:
        try:
            message = await self._websocket.receive()
        except (RuntimeError, WebSocketDisconnect):
            return None
        if message["type"] == "websocket.disconnect":
            return None
        text = message.get("text")
        return text if text is not None else message.get("bytes") or b""

    async def send(self, text: str) -> None:
        await self._websocket.send_text(text)


@router.websocket("/v1/realtime")
async def realtime(
    websocket: WebSocket,
    model: str = Query("", max_length=128, description="echoed back; Hearth has one LLM"),
) -> None:
    """A Realtime session (speech to speech) on the conversation engine."""
    offered = subprotocols(websocket)
    if not authorized(websocket, offered):
        await websocket.close(code=1008, reason="a valid API key is required")
        return
    service = service_of(websocket)
    if not service.loaded:
        await websocket.close(code=1013, reason="Hearth is still loading its engines")
        return
    beta = BETA_PROTOCOL in offered or "realtime=v1" in websocket.headers.get("openai-beta", "")
    answer = next((p for p in ANSWERED_PROTOCOLS if p in offered), None)
    await websocket.accept(subprotocol=answer)
    session = RealtimeSession(
        _Socket(websocket),
        # A reload swaps the engines; the session's conversation moves to them.
        service.services,
        model=model,
        beta=beta,
        voice_aliases=OPENAI_VOICES,
        asr_aliases=OPENAI_ASR_MODELS,
    )
    ticket = websocket.scope.get(TICKET)
    if isinstance(ticket, Ticket):
        # An idle session moves to new engines with its next audio: a reload waits
        # only while it hears an utterance or answers.
        ticket.busy = lambda: session.busy
    _LOGGER.info("Realtime session %s opened", session.id)
    try:
        await session.run()
    finally:
        _LOGGER.info("Realtime session %s closed", session.id)


@router.post(
    "/v1/realtime/calls",
    status_code=201,
    response_class=Response,
    dependencies=[Depends(require_api_key)],
    responses={
        **error_responses(openai=True),
        201: {"content": {"application/sdp": {}}, "description": "the SDP answer"},
    },
    openapi_extra={"requestBody": OFFER_BODY},
)
async def call(
    request: Request,
    model: str = Query("", max_length=128, description="echoed back; Hearth has one LLM"),
    _: Services = Depends(ready_services),
) -> Response:
    """A Realtime session over WebRTC: an SDP offer in, the SDP answer out."""
    sdp, session = await _offer(request)
    named = session.get("model") if session else None
    make = functools.partial(
        RealtimeCall,
        model=model or (named if isinstance(named, str) else ""),
        session=session,
        voice_aliases=OPENAI_VOICES,
        asr_aliases=OPENAI_ASR_MODELS,
    )
    call_id, answer = await manager_of(request).answer(sdp, "offer", make)
    return Response(
        answer.sdp,
        status_code=201,
        media_type="application/sdp",
        headers={"Location": f"/v1/realtime/calls/{call_id}"},
    )


async def _offer(request: Request) -> tuple[str, dict[str, Any] | None]:
    """The offer's SDP, and its session settings (None: Hearth's defaults)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "multipart/form-data" or kind == "application/x-www-form-urlencoded":
        form = await request.form(max_files=0, max_fields=8)
        sdp, raw = form.get("sdp"), form.get("session")
        if not isinstance(sdp, str):
            raise InvalidRequest("the form needs an 'sdp' field holding the offer")
        if raw is None:
            return sdp, None
        if not isinstance(raw, str) or len(raw) > MAX_SESSION_CHARS:
            limit = MAX_SESSION_CHARS
            raise InvalidRequest(f"'session' must be JSON of at most {limit} characters")
        try:
            data = json.loads(raw)
        except ValueError:
            raise InvalidRequest("'session' is not valid JSON") from None
        return sdp, check_session(data)
    if kind not in ("application/sdp", "text/plain", ""):
        raise InvalidRequest(f"send the offer as application/sdp or a form, not {kind!r}")
    body = await request.body()
    if len(body) > MAX_SDP_CHARS:
        raise InvalidRequest(f"the offer's SDP must be at most {MAX_SDP_CHARS} characters")
    try:
        return body.decode(), None
    except UnicodeDecodeError:
        raise InvalidRequest("the offer's SDP is not UTF-8 text") from None
