"""The HTTP application: health, ping and OpenAPI docs; protocol routers mount here."""

from __future__ import annotations

from typing import Any, Protocol

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from daemon import __version__


class ServiceView(Protocol):
    """What the HTTP app needs from the running service."""

    def health(self) -> tuple[bool, dict[str, Any]]:
        """(ready, details)."""
        ...


def create_app(service: ServiceView) -> FastAPI:
    """Build the app for one running service."""
    app = FastAPI(
        title="Hearth",
        version=__version__,
        description="Self-hosted voice daemon: speech-to-text, text-to-speech and chat.",
    )

    @app.get("/api/ping", tags=["health"])
    async def ping() -> dict[str, str]:
        """Liveness check, as the Willow Inference Server answers it."""
        return {"message": "pong"}

    @app.get("/healthz", tags=["health"])
    async def healthz() -> JSONResponse:
        """Engines, devices and versions; 503 until every engine is loaded."""
        ready, details = service.health()
        return JSONResponse(details, status_code=200 if ready else 503)

    return app
