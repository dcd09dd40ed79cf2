"""A stand-in Home Assistant dashboard for the card's browser tests and benchmarks.

A small web server on its own origin serves the card as Home Assistant serves
``/config/www`` (``/local/...``), a test page (tests/data/ha-card-page.html) that
mounts it with a stub ``hass`` and a fake microphone, and that microphone's WAV.
"""

from __future__ import annotations

import json
import queue
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.browser import wait_for
from tests.helpers import free_port

ROOT = Path(__file__).resolve().parents[1]
CARD = ROOT / "integrations" / "homeassistant" / "hearth-voice-card.js"
PAGE = ROOT / "tests" / "data" / "ha-card-page.html"
MAX_RESULT = 4 * 1024 * 1024
"""Bytes a page may report (a recording of the answer, base64)."""


class Dashboard:
    """The stand-in dashboard's web server (its own origin)."""

    def __init__(self, mic_wav: Path) -> None:
        self.port = free_port()
        self.results: queue.Queue[dict[str, Any]] = queue.Queue()
        outer = self
        files = {
            "/": (PAGE, "text/html"),
            "/local/hearth-voice-card.js": (CARD, "text/javascript"),
            "/mic.wav": (mic_wav, "audio/wav"),
        }
        self._files = files

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                path = urllib.parse.urlsplit(self.path).path
                if path not in files:
                    self.send_error(404)
                    return
                file, kind = files[path]
                body = file.read_bytes()
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                # /result: what a self-driving page (?autotest=1) reports.
                length = int(self.headers.get("Content-Length") or 0)
                if urllib.parse.urlsplit(self.path).path != "/result" or length > MAX_RESULT:
                    self.send_error(404 if length <= MAX_RESULT else 413)
                    return
                outer.results.put(json.loads(self.rfile.read(length) or b"{}"))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def add_wav(self, name: str, path: Path) -> str:
        """Serve another microphone WAV at ``/NAME.wav``; the page plays it when opened
        with ``wav=/NAME.wav``. Returns that path."""
        url = f"/{name}.wav"
        self._files[url] = (path, "audio/wav")
        return url

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def page(self, host: str = "127.0.0.1", **query: Any) -> str:
        encoded = {k: json.dumps(v) if isinstance(v, dict) else v for k, v in query.items()}
        return f"http://{host}:{self.port}/?{urllib.parse.urlencode(encoded)}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


SHADOW = "const $ = (s) => card.shadowRoot.querySelector(s);"
"""Script prefix: ``$`` queries the mounted card's shadow root."""


def hold_to_talk(driver: Any) -> float:
    """Press the card's button, let the fake microphone say its WAV, release.

    Returns the page's clock (ms) at the release; ``markAudio()`` runs just before it.
    """
    return driver.execute_async_script(
        f"""const done = arguments[arguments.length - 1]; {SHADOW}
        const talk = $('.talk');
        talk.dispatchEvent(new PointerEvent('pointerdown', {{bubbles: true, pointerId: 7}}));
        setTimeout(async () => {{
          await mic.say();
          setTimeout(() => {{
            if (window.markAudio) markAudio();
            const at = performance.now();
            talk.dispatchEvent(new PointerEvent('pointerup', {{bubbles: true, pointerId: 7}}));
            done(at);
          }}, 300);
        }}, 300);"""
    )


def shown_error(driver: Any) -> str:
    """The card's error banner, once it shows."""
    return wait_for(driver, f"{SHADOW} const e = $('.error'); return !e.hidden && e.textContent")


def load_page(driver: Any, url: str) -> None:
    """Open the test page and wait until it has mounted the card (or editor)."""
    driver.get(url)
    wait_for(driver, "return window.pageReady === true")


def load_card(driver: Any, url: str) -> None:
    """Open the test page and wait until the card is connected to Hearth."""
    load_page(driver, url)
    wait_for(driver, f"{SHADOW} return $('.state').dataset.state === 'connected'")
