"""The browser pages ``/rtc`` and ``/enroll``, the shared client module, and the
Home Assistant card.

Static files from ``integrations/web`` and ``integrations/homeassistant`` (plain
ES modules, no build step). The pages need no key: they ask for one when the API
is protected. The card can be added to a dashboard straight from
``/web/hearth-voice-card.js``; it loads ``/web/hearth-client.js`` from the Hearth
it talks to (both cross-origin: see ``http.cors_origins``).
"""

from __future__ import annotations

import functools
import importlib.resources

from fastapi import APIRouter, HTTPException
from fastapi.responses import Response

router = APIRouter(tags=["pages"], include_in_schema=False)

JS = "text/javascript; charset=utf-8"
FILES = {
    "hearth-client.js": ("web", JS),
    "rtc.js": ("web", JS),
    "rtc.css": ("web", "text/css; charset=utf-8"),
    "enroll.js": ("web", JS),
    "hearth-voice-card.js": ("homeassistant", JS),
}
"""Served name → (folder under ``integrations``, content type)."""


@functools.cache
def _read(name: str, folder: str = "web") -> bytes:
    """A served file's bytes, read once (they ship with the package)."""
    return (importlib.resources.files("integrations") / folder / name).read_bytes()


@router.get("/rtc")
async def rtc_page() -> Response:
    """Talk to Hearth from a browser (microphone over WebRTC)."""
    return Response(_read("rtc.html"), media_type="text/html; charset=utf-8")


@router.get("/enroll")
async def enroll_page() -> Response:
    """Record prompts to enroll a person's own voice (microphone needs HTTPS)."""
    return Response(_read("enroll.html"), media_type="text/html; charset=utf-8")


@router.get("/web/{name}")
async def web_file(name: str) -> Response:
    """The page's scripts and styles."""
    if name not in FILES:
        raise HTTPException(404, "no such file")
    folder, media_type = FILES[name]
    return Response(
        _read(name, folder), media_type=media_type, headers={"cache-control": "no-cache"}
    )
