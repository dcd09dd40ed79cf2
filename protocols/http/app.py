"""The HTTP application: health, docs, and the protocol routers.

Every route but ``/api/ping`` and ``/healthz`` needs the API key when
``auth.api_key`` is set (see :mod:`protocols.http.auth`), the docs included;
``/healthz`` then tells only its status to requests without the key. Only the Home
Assistant card's routes are open to other origins (``http.cors_origins``, see
:mod:`protocols.http.cors`); browsers on other sites may change nothing
(:mod:`protocols.http.origin`). The OpenAPI schema lists every error status with
its codes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import Depends, FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse

from daemon import __version__
from protocols.http import (
    errors,
    metrics,
    openai_api,
    openai_chat,
    pages,
    realtime_route,
    speakers_api,
    sts,
    voices_api,
    willow,
    willow_chat,
    willow_speech,
)
from protocols.http import rtc as rtc_routes
from protocols.http.auth import has_api_key, require_api_key
from protocols.http.common import BodyIdle, BodyLimit, ServiceView
from protocols.http.cors import CardCors
from protocols.http.errors import error_responses, without_validation_422
from protocols.http.origin import OriginGuard

if TYPE_CHECKING:
    from protocols.webrtc.manager import RtcManager

__all__ = ["ServiceView", "create_app"]


def create_app(service: ServiceView, rtc: RtcManager | None = None) -> FastAPI:
    """Build the app for one running service (``rtc``: the WebRTC sessions' manager)."""
    app = FastAPI(
        title="Hearth",
        version=__version__,
        description="Self-hosted voice daemon: speech-to-text, text-to-speech and chat.",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.service = service
    app.state.rtc = rtc  # signaling answers "not ready" while it is None
    errors.install(app)
    app.add_middleware(BodyLimit, service=service)
    # A body that stops arriving ends its request (and connection) early: 408.
    app.add_middleware(BodyIdle, service=service)
    # Around BodyLimit: counts 413s too. In-flight tracking stays on with metrics off.
    metrics.install(app, service, expose=service.config.metrics.enabled)
    # The card's CORS headers go on every response, errors included.
    app.add_middleware(CardCors, service=service)
    # Outermost: a cross-site request is refused before anything else runs.
    app.add_middleware(OriginGuard, service=service)
    shared = error_responses()

    @app.get("/api/ping", tags=["health"])
    async def ping() -> dict[str, str]:
        """Liveness check, as the Willow Inference Server answers it."""
        return {"message": "pong"}

    @app.get("/healthz", tags=["health"], responses={503: shared[503]})
    async def healthz(request: Request) -> JSONResponse:
        """Engines, devices and versions (with the key, when one is set); 503 until loaded."""
        ready, details = service.health()
        if not has_api_key(request):  # versions and paths help an attacker: status only
            details = {"status": details.get("status", "")}
        return JSONResponse(details, status_code=200 if ready else 503)

    @app.get("/openapi.json", include_in_schema=False, dependencies=[Depends(require_api_key)])
    async def openapi() -> JSONResponse:
        return JSONResponse(without_validation_422(app.openapi()))

    @app.get("/docs", include_in_schema=False, dependencies=[Depends(require_api_key)])
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title="Hearth API")

    for module in (
        willow,
        willow_speech,
        sts,
        willow_chat,
        voices_api,
        speakers_api,
        rtc_routes,
        pages,
    ):
        app.include_router(module.router, responses=shared)
    for module in (openai_api, openai_chat):
        app.include_router(module.router, responses=error_responses(openai=True))
    app.include_router(realtime_route.router)
    return app
