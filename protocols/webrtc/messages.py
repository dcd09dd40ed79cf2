"""Data-channel messages: JSON objects ``{"type", "message", "obj"}``.

Client → server (WIS): ``start``, ``stop`` (``obj{model, beam_size,
detect_language}``), ``ping``. Hearth adds ``listen`` / ``mute`` (hands-free),
``obj{reply, speak, voice, language}`` in ``start`` / ``listen``, and ``say``
(``obj{text, voice}``): speak text that came from elsewhere (Home Assistant's
conversation agent) over the session's reply track. ``listen`` with
``obj{wake_word}`` is wake mode: each utterance must follow the wake word.

Server → client (WIS): ``infer`` (``obj{text}``), ``log``, ``error``, ``pong``.
Hearth adds ``partial`` (``obj{text}``), ``vad`` (``obj{speech}``), ``reply``
(``obj{text}``, and ``obj{done: true}`` at its end), ``state`` and, in wake mode,
``wake`` (``obj{event: "detected" | "waiting", name, phrase}``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from daemon.errors import HearthError, InvalidRequest

MAX_MESSAGE_CHARS = 16 * 1024
CLIENT_TYPES = ("start", "stop", "ping", "listen", "mute", "say")


@dataclass(frozen=True)
class Command:
    """One parsed client message."""

    type: str
    model: str | None = None
    beam_size: int | None = None
    language: str | None = None
    """None: the model's default; "auto": detect."""
    partials: bool | None = None
    """None: the daemon's asr.partials setting."""
    reply: bool = False
    speak: bool = True
    """With ``reply``: also speak it (false: the reply as text only)."""
    voice: str | None = None
    text: str = ""
    say: str = ""
    """What ``say`` speaks (its length is checked against the TTS limit)."""
    wake_word: str | None = None
    """``listen`` only: wait for this wake model before each utterance (wake mode)."""


def parse(raw: str | bytes) -> Command:
    """Parse and check one client message (InvalidRequest names the problem)."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidRequest("data-channel messages must be UTF-8 JSON text") from None
    if len(raw) > MAX_MESSAGE_CHARS:
        raise InvalidRequest(f"message is over {MAX_MESSAGE_CHARS} characters")
    try:
        data = json.loads(raw)
    except ValueError:
        raise InvalidRequest("message is not valid JSON") from None
    if not isinstance(data, dict):
        raise InvalidRequest("message must be a JSON object with a 'type'")
    kind = data.get("type")
    if kind not in CLIENT_TYPES:
        raise InvalidRequest(
            f"unknown message type {kind!r} (known: {', '.join(CLIENT_TYPES)})"
            if isinstance(kind, str)
            else "message needs a string 'type'"
        )
    obj = data.get("obj")
    if obj is None:
        obj = {}
    if not isinstance(obj, dict):
        raise InvalidRequest("'obj' must be a JSON object")
    model = obj.get("model")
    if model is not None and not isinstance(model, str):
        raise InvalidRequest("obj.model must be a string")
    beam = obj.get("beam_size")
    if beam is not None and (isinstance(beam, bool) or not isinstance(beam, int)):
        raise InvalidRequest("obj.beam_size must be an integer")
    language = obj.get("language")
    if language is not None and not isinstance(language, str):
        raise InvalidRequest("obj.language must be a string")
    if obj.get("detect_language") is True:
        language = "auto"
    voice = obj.get("voice")
    if voice is not None and not isinstance(voice, str):
        raise InvalidRequest("obj.voice must be a string")
    partials = obj.get("partials")
    if partials is not None and not isinstance(partials, bool):
        raise InvalidRequest("obj.partials must be true or false")
    speak = obj.get("speak", True)
    if not isinstance(speak, bool):
        raise InvalidRequest("obj.speak must be true or false")
    say = obj.get("text", "") if kind == "say" else ""
    if not isinstance(say, str):
        raise InvalidRequest("obj.text must be a string")
    if kind == "say" and not say.strip():
        raise InvalidRequest("'say' needs obj.text to speak")
    wake_word = obj.get("wake_word")
    if wake_word is not None and (not isinstance(wake_word, str) or len(wake_word) > 64):
        raise InvalidRequest("obj.wake_word must be a wake model name (at most 64 characters)")
    text = data.get("message") if isinstance(data.get("message"), str) else ""
    return Command(
        type=kind,
        model=model,
        beam_size=beam,
        language=language,
        partials=partials,
        reply=obj.get("reply") is True,
        speak=speak,
        voice=voice,
        text=str(text)[:200],
        say=say,
        wake_word=wake_word or None,
    )


def message(kind: str, obj: dict[str, Any] | None = None, text: str | None = None) -> str:
    """One server message as JSON text."""
    out: dict[str, Any] = {"type": kind}
    if text is not None:
        out["message"] = text
    if obj is not None:
        out["obj"] = obj
    return json.dumps(out, ensure_ascii=False)


def error(exc: HearthError) -> str:
    """The one mapping from failures to data-channel ``error`` messages."""
    return message("error", {"code": exc.code}, exc.message)
