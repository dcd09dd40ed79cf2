"""What a client adds to the conversation, and what it asks of it.

``conversation.item.create`` adds a user message (typed, or audio that is
transcribed here through the core's speech service) or a system message (it follows the session's
instructions); ``truncate`` and ``delete`` act on items the session knows.
``response.create`` becomes a :class:`Request`: the response's own settings over the
session's, answered by :func:`answer` once every user item it answers has its words.
Hearth's history holds what the person said and what Hearth answered, so an
assistant message (or a function call) cannot be added; a ``function_call_output``
answers a call the model made (see :mod:`~protocols.realtime.tools`).
"""

from __future__ import annotations

import logging
from typing import Any

from daemon.errors import HearthError
from daemon.runtime.api import VoiceRequest
from protocols.realtime import config as cfg
from protocols.realtime import tools
from protocols.realtime.audio import WireFormat, received, wire_format
from protocols.realtime.objects import Request, Response, UserItem, message_item
from protocols.realtime.state import SessionState
from protocols.realtime.wire import Refused, event, new_id

_LOGGER = logging.getLogger(__name__)
MAX_ITEM_ID = 64


def spoken() -> UserItem:
    """A new user item made of input audio."""
    return UserItem(new_id("item"))


# ---------------------------------------------------------------- items


async def create(session: SessionState, item: object) -> None:
    """``conversation.item.create``: a user or system message joins the conversation."""
    if not isinstance(item, dict):
        raise Refused("'item' must be an object", "invalid_type", "item")
    kind = item.get("type", "message")
    if kind == "function_call_output":
        await tools.add_output(session, item)
        return
    if kind == "function_call":
        raise Refused(
            "function calls cannot be added: Hearth's history holds the calls it made",
            param="item.type",
        )
    if kind != "message":
        raise Refused(f"unknown item type {str(kind)[:32]!r}", "invalid_value", "item.type")
    item_id = item.get("id") or new_id("item")
    if not isinstance(item_id, str) or len(item_id) > MAX_ITEM_ID or item_id in session.user.known:
        raise Refused("'item.id' must be a new id of at most 64 characters", param="item.id")
    role = item.get("role")
    texts, encoded = _content(item.get("content"))
    audio = None
    if encoded is not None:
        audio = await received(session.config.input_format, encoded, "item.content.audio")
    limit = session.services.house.limits.max_prompt_chars
    text = "\n".join(t for t in texts if t.strip())
    if len(text) > limit:
        raise Refused(f"the text is longer than {limit} characters", param="item.content")
    if role == "system":
        await _system(session, item_id, text, audio)
    elif role == "user":
        await _user(session, item_id, text, audio)
    elif role == "assistant":
        raise Refused(
            "assistant messages cannot be added: Hearth's history holds what it said",
            param="item.role",
        )
    else:
        raise Refused("'item.role' must be user or system", param="item.role")


async def _system(session: SessionState, item_id: str, text: str, audio: bytes | None) -> None:
    if audio is not None or not text:
        raise Refused("a system message holds text only", param="item.content")
    notes = [*session.system_items, text]
    chat = session.config.chat_options(notes, session.defaults().instructions)
    if session.services.chat.chats:
        session.services.chat.check_options(chat)
    session.system_items = notes
    session.conversation.chat_options = chat
    session.prime(chat)
    previous = session.user.last_item
    session.user.remember(item_id, "system")
    body = message_item(item_id, "system", "completed", [{"type": "input_text", "text": text}])
    await session.send(event("conversation.item.added", previous_item_id=previous, item=body))
    await session.send(event("conversation.item.done", item=body))


async def _user(session: SessionState, item_id: str, text: str, audio: bytes | None) -> None:
    if audio is not None and text:
        raise Refused("a user message holds text or audio, not both", param="item.content")
    user = UserItem(item_id, audio=audio is not None)
    if audio is None:
        if not text:
            raise Refused("the message is empty", param="item.content")
        await session.user.add_user(user, text)
        await session.send(event("conversation.item.done", item=user.render(text)))
        user.resolve(text)
    else:
        await session.user.add_user(user)
        fmt = session.config.input_format
        session.spawn(_transcribe(session, user, audio, fmt), "transcribe-item")
    session.user.pending.append(user)


async def _transcribe(session: SessionState, user: UserItem, pcm: bytes, fmt: WireFormat) -> None:
    """The words of an audio item, decoded whole."""
    speech = session.services.speech
    try:
        config = session.config
        options = config.transcribe_options()
        model = session.asr_model(config)
        result = await speech.transcribe_pcm(fmt.pcm, pcm, model, options)
        await session.user.transcribed(user, result.text, result.audio_ms)
    except HearthError as exc:
        user.resolve("")
        details = {"type": "invalid_request_error", "code": exc.code, "message": exc.message}
        await session.send(
            event(
                "conversation.item.input_audio_transcription.failed",
                item_id=user.id,
                content_index=0,
                error=details | {"param": None},
            )
        )
    finally:
        user.resolve("")  # never left waiting, whatever happened


def _content(content: object) -> tuple[list[str], object | None]:
    """The texts and the base64 audio of an item's content parts."""
    if not isinstance(content, list) or not content:
        raise Refused("'item.content' must be a list of parts", param="item.content")
    texts: list[str] = []
    audio: object | None = None
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "text", "output_text") and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "input_audio" and audio is None:
            audio = part.get("audio")
        else:
            raise Refused("content parts are input_text, or one input_audio", param="item.content")
    return texts, audio


async def truncate(session: SessionState, data: dict[str, Any]) -> None:
    """``conversation.item.truncate``: the client played this much of a reply; one still
    under way stops."""
    item_id, end = data.get("item_id"), data.get("audio_end_ms")
    if not isinstance(item_id, str) or session.user.known.get(item_id) != "assistant":
        raise Refused("no assistant item with that id", param="item_id")
    if isinstance(end, bool) or not isinstance(end, int) or end < 0:
        raise Refused("'audio_end_ms' must be a whole number of ms", param="audio_end_ms")
    book = session.book
    for response in (book.response, book.draining):
        if response is not None and response.item_id == item_id:
            await session.cancel(response, "client_cancelled")
    await session.send(
        event("conversation.item.truncated", item_id=item_id, content_index=0, audio_end_ms=end)
    )


async def delete(session: SessionState, data: dict[str, Any]) -> None:
    """``conversation.item.delete``: an item not yet answered is not answered."""
    item_id = data.get("item_id")
    user = session.user
    if not isinstance(item_id, str) or item_id not in user.known:
        raise Refused("no item with that id", param="item_id")
    user.known.pop(item_id)
    user.pending = [item for item in user.pending if item.id != item_id]
    await session.send(event("conversation.item.deleted", item_id=item_id))


# ---------------------------------------------------------------- responses


def response_request(session: SessionState, given: object) -> Request:
    """The settings of ``response.create``'s ``response`` over the session's."""
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise Refused("'response' must be an object", "invalid_type", "response")
    config = session.config
    if given.get("conversation", "auto") != "auto":
        raise Refused("only responses in the conversation are made", param="response.conversation")
    if given.get("input") is not None:
        raise Refused(
            "a response answers the conversation, not its own input", param="response.input"
        )
    offered = session.tools
    if given.get("tools") is not None or given.get("tool_choice") is not None:
        offered = tools.offered(
            given.get("tools", list(config.tools)),
            given.get("tool_choice", config.tool_choice),
            "response.tools",
        )
    audio = given.get("audio")
    output = audio.get("output") if isinstance(audio, dict) else None
    output = output if isinstance(output, dict) else {}
    speaks = config.speaks
    for key in ("output_modalities", "modalities"):
        if key in given:
            speaks = "audio" in cfg.modalities(given[key], f"response.{key}")
    voice = config.voice
    if "voice" in output or "voice" in given:
        voice = cfg.voice(output.get("voice", given.get("voice")), "response.audio.output.voice")
    fmt = config.output_format
    if "format" in output or "output_audio_format" in given:
        name = output.get("format", given.get("output_audio_format"))
        fmt = wire_format(name, "response.audio.output.format")
    tokens = config.max_output_tokens
    for key in ("max_output_tokens", "max_response_output_tokens"):
        if key in given:
            tokens = cfg.max_tokens(given[key], f"response.{key}")
    instructions = given.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise Refused("'response.instructions' must be a string", param="response.instructions")
    limits: dict[str, Any] = {"max_tokens": tokens}
    if given.get("temperature") is not None:
        limits["temperature"] = cfg.number(given["temperature"], "response.temperature", 0, 2)
    chat = session.chat_options(instructions, speaks, **limits)
    services = session.services
    if services.chat.chats:
        services.chat.check_options(chat)
    if speaks and not services.voices.speaks:
        raise Refused("spoken output needs TTS, which is not enabled", param="response.audio")
    tts = None
    if speaks:
        aliases = session.voice_aliases
        chosen = VoiceRequest(voice, aliases, speed=config.speed, sample_rate=fmt.rate)
        tts = services.voices.resolve_voice(chosen)
    name = voice or session.defaults().voice
    response = Response(new_id("resp"), speaks, fmt, name, tokens)
    return Request(response, tts, chat, instructions, offered)


async def answer(session: SessionState, request: Request, pending: list[UserItem]) -> None:
    """Ask the conversation once every pending item has its words (the response's
    instructions are the question when none waits; with neither, the response is empty)."""
    response = request.response
    book = session.book
    try:
        words = [(await item.transcript).strip() for item in pending]
        text = "\n".join(w for w in words if w) or (request.instructions or "").strip()
        if response.finished:
            return
        if session.tool_turns.waiting:  # the function outputs (and any new words) answered
            await tools.answer_results(session, request, "\n".join(w for w in words if w))
            return
        if not text:
            await book.finish(response, "completed")
            return
        if request.tools is not None:
            await tools.respond(session, request, text, request.tools)
            return
        session.tool_turns.clear()
        response.asked = True
        await session.conversation.ask(text, response.speak, request.tts, request.chat)
    except HearthError as exc:
        response.error = {"type": "invalid_request_error", "code": exc.code, "message": exc.message}
        await book.finish(response, "failed")
