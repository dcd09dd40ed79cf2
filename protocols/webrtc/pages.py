"""The browser page ``/rtc`` and the shared client module it loads.

Static files from ``integrations/web`` (plain ES modules, no build step). The
page itself needs no key: it asks for one when the API is protected.
"""

from __future__ import annotations

import importlib.resources

from fastapi import APIRouter, HTTPException
from fastapi.responses import Response

router = APIRouter(tags=["pages"], include_in_schema=False)

FILES = {
    "hearth-client.js": "text/javascript; charset=utf-8",
    "rtc.js": "text/javascript; charset=utf-8",
    "rtc.css": "text/css; charset=utf-8",
    "enroll.js": "text/javascript; charset=utf-8",
}


def _read(name: str) -> bytes:
    return (importlib.resources.files("integrations") / "web" / name).read_bytes()


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
    return Response(_read(name), media_type=FILES[name], headers={"cache-control": "no-cache"})
