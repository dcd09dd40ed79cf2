"""Realtime server events as JSON objects, errors in OpenAI's shape, and the beta names.

Every server event has a ``type`` and a fresh ``event_id``. Errors are
``{"type": "error", "error": {"type", "code", "message", "param", "event_id"}}``,
where ``error.event_id`` names the client event that caused it. A client of the
2024 beta (``OpenAI-Beta: realtime=v1``) is answered with the beta's names where
they differ (:func:`beta_event`).
"""

from __future__ import annotations

import uuid
from typing import Any

from daemon.errors import HearthError, status_of

Event = dict[str, Any]

BETA_NAMES = {
    "conversation.item.added": "conversation.item.created",
    "response.output_audio.delta": "response.audio.delta",
    "response.output_audio.done": "response.audio.done",
    "response.output_audio_transcript.delta": "response.audio_transcript.delta",
    "response.output_audio_transcript.done": "response.audio_transcript.done",
    "response.output_text.delta": "response.text.delta",
    "response.output_text.done": "response.text.done",
}
"""Generally available server event names → the beta's."""
BETA_DROPPED = frozenset({"conversation.item.done"})
"""Server events the beta did not have."""
BETA_CONTENT = {"output_audio": "audio", "output_text": "text"}


def new_id(prefix: str) -> str:
    """An identifier in OpenAI's style: ``event_…``, ``item_…``, ``resp_…``, ``sess_…``."""
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def event(kind: str, **fields: Any) -> Event:
    """A server event of type ``kind``."""
    return {"type": kind, "event_id": new_id("event"), **fields}


def error(
    code: str,
    message: str,
    *,
    kind: str = "invalid_request_error",
    param: str | None = None,
    client_event: str | None = None,
) -> Event:
    """An ``error`` event; ``client_event`` is the id of the client event at fault."""
    body = {"type": kind, "code": code, "message": message, "param": param}
    return event("error", error=body | {"event_id": client_event})


class Refused(HearthError):
    """A client event the session cannot act on, with OpenAI's snake_case code (for
    example ``unknown_event``, ``invalid_value``) and the parameter at fault."""

    code = "invalid-request"

    def __init__(self, message: str, code: str = "invalid_value", param: str | None = None) -> None:
        super().__init__(message)
        self.openai_code = code
        self.param = param


def hearth_error(exc: HearthError, client_event: str | None = None) -> Event:
    """A typed failure as an ``error`` event: a client's fault (4xx codes) or the server's;
    Hearth's own kebab-case code, or the snake_case code of a :class:`Refused` event."""
    kind = "server_error" if status_of(exc.code) >= 500 else "invalid_request_error"
    if isinstance(exc, Refused):
        return error(exc.openai_code, exc.message, param=exc.param, client_event=client_event)
    return error(exc.code, exc.message, kind=kind, client_event=client_event)


def beta_event(message: Event) -> Event | None:
    """``message`` as the 2024 beta named it (None: the beta had no such event)."""
    kind = message["type"]
    if kind in BETA_DROPPED:
        return None
    renamed = dict(message, type=BETA_NAMES.get(kind, kind))
    for key in ("item", "part"):
        if isinstance(renamed.get(key), dict):
            renamed[key] = _beta_content(renamed[key])
    response = renamed.get("response")
    if isinstance(response, dict):
        response = dict(response)
        if isinstance(response.get("output"), list):
            response["output"] = [_beta_content(i) for i in response["output"]]
        if "output_modalities" in response:
            response["modalities"] = response.pop("output_modalities")
        renamed["response"] = response
    return renamed


def _beta_content(item: dict[str, Any]) -> dict[str, Any]:
    """An item (or content part) with the beta's content type names."""
    if item.get("type") in BETA_CONTENT:
        return dict(item, type=BETA_CONTENT[item["type"]])
    content = item.get("content")
    if not isinstance(content, list):
        return item
    return dict(item, content=[_beta_content(c) if isinstance(c, dict) else c for c in content])
