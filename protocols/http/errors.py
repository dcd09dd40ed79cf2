"""The one place where errors become HTTP responses.

Routes raise :class:`daemon.errors.HearthError` subclasses (or :class:`HttpError`
for conditions that only exist in HTTP); the handlers installed by :func:`install`
answer with the status from :data:`daemon.errors.STATUS` and a body in the
caller's dialect: OpenAI's ``{"error": {"message", "type", "code"}}`` under
``/v1``, the Willow Inference Server's ``{"error": ...}`` everywhere else.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from daemon.errors import STATUS as STATUS  # re-exported: the one code-to-status table
from daemon.errors import HearthError, status_of

_LOGGER = logging.getLogger(__name__)

WILLOW_AUDIO_ERROR = "Invalid audio"
"""The exact text Willow Inference Server answers for audio it cannot use."""


EDGE_STATUS: dict[str, int] = {
    "not-found": 404,
    "method-not-allowed": 405,
    "uri-too-long": 414,
}
"""Codes only the HTTP edge answers (no route, wrong method, a URL past 65000 bytes)."""


class WillowErrorBody(BaseModel):
    """An error everywhere but ``/v1``: Willow devices show ``error``."""

    error: str
    code: str
    """A stable kebab-case code (``daemon.errors.STATUS``)."""
    detail: str


class OpenAiErrorDetail(BaseModel):
    """OpenAI's error object."""

    message: str
    type: str
    code: str
    param: str | None = None


class OpenAiErrorBody(BaseModel):
    """An error under ``/v1``, as OpenAI clients read it."""

    error: OpenAiErrorDetail


def error_responses(openai: bool = False) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` for every error status a route may answer, with its codes."""
    by_status: dict[int, list[str]] = {}
    for code, status in sorted((STATUS | EDGE_STATUS).items(), key=lambda item: item[1]):
        by_status.setdefault(status, []).append(code)
    model = OpenAiErrorBody if openai else WillowErrorBody
    return {
        status: {"description": "Error codes: " + ", ".join(codes), "model": model}
        for status, codes in by_status.items()
    }


def without_validation_422(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop FastAPI's automatic 422 from every operation: invalid requests get 400."""
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            if isinstance(operation, dict):
                operation.get("responses", {}).pop("422", None)
    return schema


class HttpError(HearthError):
    """An error that only exists at the HTTP edge (auth, readiness, limits)."""

    def __init__(self, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.headers = headers or {}


def error_body(path: str, code: str, message: str) -> dict[str, object]:
    """The JSON body for an error on ``path``."""
    if path.startswith("/v1/"):
        kind = "server_error" if status_of(code) >= 500 else "invalid_request_error"
        if code == "unauthorized":
            kind = "authentication_error"
        return {"error": {"message": message, "type": kind, "code": code, "param": None}}
    # Willow devices show "error"; WIS's own text for bad audio is kept verbatim.
    text = WILLOW_AUDIO_ERROR if code in ("invalid-audio", "audio-too-long") else message
    return {"error": text, "code": code, "detail": message}


def error_response(path: str, exc: HearthError) -> JSONResponse:
    """A JSON response for a typed error."""
    status = status_of(exc.code)
    if status >= 500 and exc.code not in ("busy", "not-ready", "llm-unavailable"):
        _LOGGER.warning("%s failed: %s: %s", path, exc.code, exc.message)
    headers = dict(getattr(exc, "headers", {}) or {})
    if exc.code in ("busy", "not-ready"):
        headers.setdefault("Retry-After", "1")
    return JSONResponse(error_body(path, exc.code, exc.message), status, headers=headers)


def install(app: FastAPI) -> None:
    """Install the handlers that turn errors into JSON responses."""

    async def on_hearth_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HearthError)
        return error_response(request.url.path, exc)

    async def on_validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()) if p != 'body')}: {e.get('msg')}"
            for e in exc.errors()
        )
        return error_response(request.url.path, HttpError("invalid-request", problems))

    async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = {
            404: "not-found",
            405: "method-not-allowed",
            408: "body-timeout",
            413: "upload-too-large",
        }.get(exc.status_code, "invalid-request")
        body = error_body(request.url.path, code, str(exc.detail))
        return JSONResponse(body, exc.status_code, headers=exc.headers)

    app.add_exception_handler(HearthError, on_hearth_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
