"""The OpenAI Realtime API against a real daemon, with the official ``openai`` client.

Piper's speech goes in as 24 kHz PCM at real time, as a microphone would send it;
the reply comes back as audio deltas, which Whisper hears back.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import openai
import pytest

from daemon.audio.pcm import resample_pcm
from daemon.speech.player import LEAD_S
from tests.daemon import Daemon
from tests.helpers import assert_heard, hear, words

pytestmark = pytest.mark.e2e
RATE = 24000
STEP = RATE // 10 * 2
"""100 ms of 24 kHz PCM per append, as clients send it."""
TURN_S = 180.0
"""One turn on a loaded 2-core machine: decode, LLM and speech, with room to spare."""


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    extra = "llm:\n  temperature: 0.0\n  max_tokens: 40\n"
    yield from Daemon(tmp_path_factory.mktemp("realtime"), extra).serve()


@pytest.fixture
def client(daemon: Daemon) -> openai.AsyncOpenAI:
    # No auth.api_key configured: any key is accepted.
    return openai.AsyncOpenAI(base_url=f"{daemon.url}/v1", api_key="unused", max_retries=0)


def at_24k(samples_16k: np.ndarray, silence_s: float = 0.0) -> bytes:
    pcm = resample_pcm(samples_16k.astype("<i2").tobytes(), 16000, RATE)
    return pcm + bytes(int(silence_s * RATE) * 2)


async def say(conn: Any, pcm: bytes) -> None:
    """Append ``pcm`` at real time, 100 ms at a time."""
    began = time.monotonic()
    for offset in range(0, len(pcm), STEP):
        audio = base64.b64encode(pcm[offset : offset + STEP]).decode()
        await conn.input_audio_buffer.append(audio=audio)
        await asyncio.sleep(max(0.0, began + (offset + STEP) / (RATE * 2) - time.monotonic()))


async def until(conn: Any, kind: str, seen: list[Any]) -> Any:
    """Events up to the first of ``kind`` (kept in ``seen``); that event."""
    async with asyncio.timeout(TURN_S):
        while True:
            event = await conn.recv()
            seen.append(event)
            if event.type == "error":
                raise AssertionError(f"error event: {event.error}")
            if event.type == kind:
                return event


async def listen(conn: Any, seen: list[Any], response_id: str, seconds: float) -> None:
    """Events (kept in ``seen``) until ``seconds`` of the response's audio have arrived:
    the person listens to that much of the reply, however late this machine sends it."""
    async with asyncio.timeout(TURN_S):
        while len(reply_audio(seen, response_id)) < seconds * RATE * 2:
            event = await conn.recv()
            seen.append(event)
            if event.type == "error":
                raise AssertionError(f"error event: {event.error}")


def first(events: list[Any], kind: str) -> Any:
    found = [e for e in events if e.type == kind]
    assert found, f"no {kind} among {[e.type for e in events]}"
    return found[0]


def reply_audio(events: list[Any], response_id: str | None = None) -> bytes:
    return b"".join(
        base64.b64decode(e.delta)
        for e in events
        if e.type == "response.output_audio.delta"
        and (response_id is None or e.response_id == response_id)
    )


async def test_a_spoken_conversation(client, engines, speak):
    async with client.realtime.connect(model="gpt-realtime") as conn:
        seen: list[Any] = []
        created = await until(conn, "session.created", seen)
        assert created.session.audio.input.turn_detection.type == "server_vad"
        sender = asyncio.ensure_future(say(conn, at_24k(speak("Say hello to me."), 1.5)))
        done = await until(conn, "response.done", seen)
        await sender
        kinds = [e.type for e in seen]
        assert kinds.index("input_audio_buffer.speech_started") < kinds.index(
            "input_audio_buffer.speech_stopped"
        )
        completed = first(seen, "conversation.item.input_audio_transcription.completed")
        assert_heard(completed.transcript, "Say hello to me.", "hello")
        assert kinds.index("conversation.item.input_audio_transcription.completed") < kinds.index(
            "response.output_audio.delta"
        )
        assert done.response.status == "completed"
        reply = done.response.output[0].content[0].transcript
        assert reply
        audio = reply_audio(seen, done.response.id)
        assert len(audio) > RATE  # over half a second of speech
        heard = hear(engines, resample_pcm(audio, RATE, 16000))
        said, got = set(words(reply)), set(words(heard))
        assert len(said & got) / max(1, len(said)) >= 0.6, (reply, heard)


async def test_barge_in_stops_the_reply_and_says_how_much_was_played(client, speak):
    async with client.realtime.connect(model="gpt-realtime") as conn:
        seen: list[Any] = []
        await until(conn, "session.created", seen)
        # Spoken replies keep Hearth's prompt (one or two short sentences) first: the
        # long reply a barge-in needs is spelled out, not asked for.
        instructions = (
            "You count. Your answer is always: one, two, three, four, five, six, seven, "
            "eight, nine, ten, eleven, twelve, thirteen, fourteen, fifteen, sixteen, "
            "seventeen, eighteen, nineteen, twenty."
        )
        await conn.session.update(session={"type": "realtime", "instructions": instructions})
        await until(conn, "session.updated", seen)
        sender = asyncio.ensure_future(say(conn, at_24k(speak("Please count for me."), 1.5)))
        opening = await until(conn, "response.output_audio.delta", seen)
        await sender
        # The person listens to a second of the reply, then cuts in. The daemon sends
        # reply audio at most LEAD_S ahead of what it counts as played: that much more
        # received means at least a second played.
        await listen(conn, seen, opening.response_id, 1.0 + LEAD_S)
        interrupter = asyncio.ensure_future(say(conn, at_24k(speak("Stop."), 1.5)))
        done = await until(conn, "response.done", seen)
        assert done.response.id == opening.response_id
        assert done.response.status == "cancelled"
        assert done.response.status_details.reason == "turn_detected"
        truncated = first(seen, "conversation.item.truncated")
        sent_ms = len(reply_audio(seen, opening.response_id)) / 2 / RATE * 1000
        # What had played: at most what was sent (all of it when speech came slower than
        # it plays), at least the second the person listened.
        assert 500 <= truncated.audio_end_ms <= sent_ms + 1
        kinds = [e.type for e in seen]
        assert "input_audio_buffer.speech_started" in kinds[kinds.index("response.created") :]
        # Nothing more of the cut reply arrives; the next turn is answered.
        later: list[Any] = []
        await interrupter
        await until(conn, "response.done", later)
        assert not [e for e in later if getattr(e, "response_id", None) == opening.response_id]


async def test_client_committed_turns_and_a_text_reply(client, speak):
    async with client.realtime.connect(model="gpt-realtime") as conn:
        seen: list[Any] = []
        await until(conn, "session.created", seen)
        session = {
            "type": "realtime",
            "output_modalities": ["text"],
            "audio": {"input": {"turn_detection": None}},
        }
        await conn.session.update(session=session)
        await until(conn, "session.updated", seen)
        await say(conn, at_24k(speak("What is the capital of France?"), 0.3))
        await conn.input_audio_buffer.commit()
        await conn.response.create()
        done = await until(conn, "response.done", seen)
        completed = first(seen, "conversation.item.input_audio_transcription.completed")
        assert_heard(completed.transcript, "What is the capital of France?", "capital", "france")
        assert done.response.status == "completed"
        text = "".join(e.delta for e in seen if e.type == "response.output_text.delta")
        assert "paris" in words(text)
        assert not reply_audio(seen)


LIGHT = {
    "type": "function",
    "name": "turn_on_light",
    "description": "Turn on the light in a room of the house.",
    "parameters": {
        "type": "object",
        "properties": {"room": {"type": "string", "description": "The room, e.g. kitchen"}},
        "required": ["room"],
    },
}


async def test_a_function_call_round_trip_ends_in_a_spoken_answer(client, engines):
    async with client.realtime.connect(model="gpt-realtime") as conn:
        seen: list[Any] = []
        await until(conn, "session.created", seen)
        session = {
            "type": "realtime",
            "tools": [LIGHT],
            # A named choice: the embedded 0.5B model is weak at choosing ("auto").
            "tool_choice": {"type": "function", "name": "turn_on_light"},
            "audio": {"input": {"turn_detection": None}},
        }
        await conn.session.update(session=session)
        updated = await until(conn, "session.updated", seen)
        assert updated.session.tools[0].name == "turn_on_light"
        item = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Turn on the kitchen light"}],
        }
        await conn.conversation.item.create(item=item)
        await conn.response.create()
        done = await until(conn, "response.done", seen)
        assert done.response.status == "completed"
        call = first(seen, "response.function_call_arguments.done")
        assert call.name == "turn_on_light"
        assert "kitchen" in call.arguments.lower()
        added = first(seen, "response.output_item.added")
        assert added.item.type == "function_call"
        assert done.response.output[0].type == "function_call"
        assert not reply_audio(seen)

        result = {"type": "function_call_output", "call_id": call.call_id, "output": '{"on": true}'}
        await conn.conversation.item.create(item=result)
        later: list[Any] = []
        await conn.response.create()
        answered = await until(conn, "response.done", later)
        assert answered.response.status == "completed"
        assert answered.response.output[0].type == "message"
        audio = reply_audio(later, answered.response.id)
        assert len(audio) > RATE // 2  # a spoken answer, over a quarter of a second
        assert answered.response.output[0].content[0].transcript
