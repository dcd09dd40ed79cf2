"""The Realtime session over fake engines: client events in, server events out.

The fake VAD hears tones as speech and the fake ASR hears "Turn on the kitchen
lights" in a 220 Hz tone (tests/fakes.py); audio goes in as 24 kHz PCM (or G.711)
in base64, as an OpenAI client sends it.
"""

from __future__ import annotations

import asyncio
import base64
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from daemon.engines.llm.base import ChatMessage, Sampling
from daemon.speech.chat import WARM_UP_QUESTION as PRIME_QUESTION
from protocols.realtime.audio import PCMU
from tests.fakes import KITCHEN, FakeLlm, fake_config, fake_engines, silence, tone, utterance
from tests.unit.protocols.realtime.conftest import (
    RATE,
    TIMEOUT_S,
    Client,
    close,
    kinds,
    open_client,
)

SPOKEN_TURN = [
    "input_audio_buffer.speech_started",
    "input_audio_buffer.speech_stopped",
    "input_audio_buffer.committed",
    "conversation.item.added",
    "conversation.item.input_audio_transcription.completed",
    "conversation.item.done",
]
RESPONSE_HEAD = [
    "response.created",
    "response.output_item.added",
    "conversation.item.added",
    "response.content_part.added",
]
RESPONSE_TAIL = [
    "response.output_audio.done",
    "response.output_audio_transcript.done",
    "response.content_part.done",
    "response.output_item.done",
    "conversation.item.done",
    "response.done",
]


class SamplingLlm(FakeLlm):
    """Records the sampling of every reply too."""

    def __init__(self, tokens: list[str] | None = None) -> None:
        super().__init__(tokens)
        self.samplings: list[Sampling] = []

    async def stream_chat(self, messages: list[ChatMessage], sampling: Sampling):  # type: ignore[override]
        self.samplings.append(sampling)
        async for piece in super().stream_chat(messages, sampling):
            yield piece


def without(messages: list[dict], *dropped: str) -> list[str]:
    return [k for k in kinds(messages) if k not in dropped]


def audio_of(messages: list[dict]) -> bytes:
    deltas = [m["delta"] for m in messages if m["type"] == "response.output_audio.delta"]
    return b"".join(base64.b64decode(d) for d in deltas)


# --------------------------------------------------------------------------- session


async def test_the_session_is_announced_with_hearths_defaults(client: Client):
    created = await client.next()
    assert created["type"] == "session.created" and created["event_id"].startswith("event_")
    session = created["session"]
    assert session["type"] == "realtime" and session["model"] == "gpt-realtime"
    audio = session["audio"]
    assert audio["input"]["format"] == {"type": "audio/pcm", "rate": 24000}
    assert audio["output"]["format"] == {"type": "audio/pcm", "rate": 24000}
    assert audio["input"]["turn_detection"]["type"] == "server_vad"
    assert audio["input"]["turn_detection"]["silence_duration_ms"] == 300  # vad.trailing_silence
    assert audio["input"]["transcription"]["model"] == "fake"
    assert session["output_modalities"] == ["audio"]
    assert session["instructions"] and session["max_output_tokens"] == "inf"


async def test_session_update_reads_the_ga_shape_and_writes_back_what_holds(client: Client):
    await client.next()
    client.send(
        "session.update",
        event_id="evt_1",
        session={
            "type": "realtime",
            "instructions": "Speak like a pirate.",
            "audio": {
                "input": {
                    "format": {"type": "audio/pcmu"},
                    "turn_detection": {"type": "semantic_vad", "eagerness": "high"},
                    "transcription": {"model": "whisper-1", "language": "en"},
                },
                "output": {"format": {"type": "audio/pcma"}, "voice": "marin"},
            },
            "max_output_tokens": 40,
            "tools": [],
        },
    )
    updated = (await client.until("session.updated"))[-1]
    session = updated["session"]
    assert session["instructions"] == "Speak like a pirate."
    assert session["audio"]["input"]["format"] == {"type": "audio/pcmu"}
    assert session["audio"]["output"]["format"] == {"type": "audio/pcma"}
    assert session["audio"]["input"]["turn_detection"]["eagerness"] == "high"
    assert session["audio"]["output"]["voice"] == "marin"
    assert session["max_output_tokens"] == 40
    # Spoken replies keep Hearth's prompt first; the client's instructions follow it.
    configured = client.session.defaults().instructions
    assert configured
    instructions = client.session.conversation.chat_options.instructions
    assert instructions == f"{configured}\n\nSpeak like a pirate."


async def test_session_update_reads_the_beta_shape(client: Client):
    await client.next()
    client.send(
        "session.update",
        session={
            "modalities": ["text", "audio"],
            "input_audio_format": "g711_ulaw",
            "output_audio_format": "pcm16",
            "turn_detection": None,
            "max_response_output_tokens": "inf",
            "temperature": 0.7,
        },
    )
    updated = (await client.until("session.updated"))[-1]
    audio = updated["session"]["audio"]
    assert audio["input"]["format"] == {"type": "audio/pcmu"}
    assert audio["input"]["turn_detection"] is None
    assert updated["session"]["temperature"] == 0.7


@pytest.mark.parametrize(
    ("session", "code", "param"),
    [
        ({"audio": {"output": {"voice": "xx_XX-nobody"}}}, "unknown-voice", None),
        ({"audio": {"input": {"format": {"type": "audio/flac"}}}}, "invalid_value", None),
        ({"modalities": ["video"]}, "invalid_value", "session.modalities"),
        ({"tools": [{"type": "function", "name": "no way"}]}, "invalid_value", "session.tools"),
        ({"dance": True}, "unknown_parameter", "session.dance"),
        ({"type": "transcription"}, "invalid_value", "session.type"),
        ({"max_output_tokens": 0}, "invalid_value", "session.max_output_tokens"),
        ({"audio": {"input": {"transcription": {"model": "nope"}}}}, "unknown-model", None),
    ],
)
async def test_a_bad_session_update_is_refused_and_nothing_changes(client, session, code, param):
    await client.next()
    client.send("session.update", event_id="evt_bad", session=session)
    refused = (await client.until("error"))[-1]
    assert refused["error"]["code"] == code
    assert refused["error"]["event_id"] == "evt_bad"
    assert refused["error"]["type"] == "invalid_request_error"
    if param is not None:
        assert refused["error"]["param"] == param
    assert client.session.config.output_format.type == "audio/pcm"


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ('{"type": "dance", "event_id": "e1"}', "unknown_event"),
        ("not json", "invalid_json"),
        ('["session.update"]', "invalid_event"),
        ('{"type": "input_audio_buffer.append", "audio": "%%%"}', "invalid-audio"),
        ('{"type": "response.cancel"}', "response_cancel_not_active"),
        ('{"type": "input_audio_buffer.commit"}', "invalid_value"),
        ('{"type": "conversation.item.truncate", "item_id": "x"}', "invalid_value"),
    ],
)
async def test_bad_events_get_an_error_and_the_session_goes_on(client, raw, code):
    await client.next()
    client.send_raw(raw)
    refused = (await client.until("error"))[-1]
    body = refused["error"]
    assert body["code"] == code and body["message"]
    assert set(body) == {"type", "code", "message", "param", "event_id"}
    client.send("session.update", session={})
    await client.until("session.updated")


# --------------------------------------------------------------------------- turns


async def test_server_vad_hears_a_turn_and_answers_it_in_speech(client: Client):
    llm = client.fakes.llm
    await client.next()
    client.append(utterance(220.0, rate=RATE))
    got = await client.until("response.done")
    order = without(
        got,
        "conversation.item.input_audio_transcription.delta",
        "response.output_audio_transcript.delta",
        "response.output_audio.delta",
    )
    assert order == SPOKEN_TURN + RESPONSE_HEAD + RESPONSE_TAIL
    started = got[0]
    item_id = started["item_id"]
    assert started["audio_start_ms"] >= 250
    stopped = next(m for m in got if m["type"] == "input_audio_buffer.speech_stopped")
    assert 1400 <= stopped["audio_end_ms"] <= 1700 and stopped["item_id"] == item_id
    completed = next(m for m in got if m["type"].endswith("transcription.completed"))
    assert completed["transcript"] == KITCHEN and completed["item_id"] == item_id
    deltas = "".join(m["delta"] for m in got if m["type"].endswith("transcription.delta"))
    assert deltas == KITCHEN  # the deltas add up to the transcript
    transcript = [m["delta"] for m in got if m["type"] == "response.output_audio_transcript.delta"]
    assert transcript == llm.tokens
    assert len(audio_of(got)) > 0.1 * RATE * 2  # over 100 ms of 24 kHz PCM
    done = got[-1]["response"]
    assert done["status"] == "completed"
    assert done["output"][0]["content"][0] == {"type": "output_audio", "transcript": llm.reply}
    assert llm.prompts[-1][-1] == ChatMessage("user", KITCHEN)


async def test_the_session_instructions_and_limits_reach_the_llm(tmp_path: Path):
    llm = SamplingLlm()
    client, task = await open_client(tmp_path, llm=llm)
    try:
        await client.next()
        session = {"instructions": "Be brief.", "max_output_tokens": 12, "temperature": 0.9}
        client.send("session.update", session=session)
        await client.until("session.updated")
        client.append(utterance(220.0, rate=RATE))
        await client.until("response.done")
        configured = client.session.defaults().instructions
        system = ChatMessage("system", f"{configured}\n\nBe brief.")
        assert llm.prompts[-1][0] == system
        assert (llm.samplings[-1].max_tokens, llm.samplings[-1].temperature) == (12, 0.9)
        # The system turn was evaluated as the session was set, before the first reply.
        assert llm.prompts[0] == [system, ChatMessage("user", PRIME_QUESTION)]
        assert llm.samplings[0].max_tokens == 1
    finally:
        await close(client, task)


async def test_a_sessions_instructions_are_prepared_once(tmp_path: Path):
    llm = SamplingLlm()
    fakes = fake_engines(fake_config(tmp_path), llm=llm)  # one daemon
    session = {"type": "realtime", "instructions": "Answer as a butler."}
    for _ in range(2):  # a fresh session per command, the same instructions
        client, task = await open_client(tmp_path, fakes=fakes)
        try:
            await client.next()
            client.send("session.update", session=session)
            await client.until("session.updated")
            await asyncio.sleep(0.05)
        finally:
            await close(client, task)
    primes = [p for p in llm.prompts if p[-1] == ChatMessage("user", PRIME_QUESTION)]
    assert len(primes) == 1 and primes[0][0].content.endswith("\n\nAnswer as a butler.")
    # Hearth's own prompt is evaluated at load: nothing to prepare without instructions.
    client, task = await open_client(tmp_path, fakes=fakes)
    try:
        await client.next()
        client.send("session.update", session={"type": "realtime", "temperature": 0.7})
        await client.until("session.updated")
        await asyncio.sleep(0.05)
    finally:
        await close(client, task)
    assert len([p for p in llm.prompts if p[-1].content == PRIME_QUESTION]) == 1


async def test_client_committed_turns_wait_for_response_create(client: Client):
    await client.next()
    client.send("session.update", session={"audio": {"input": {"turn_detection": None}}})
    await client.until("session.updated")
    client.append(utterance(220.0, rate=RATE))
    client.send("input_audio_buffer.commit", event_id="c1")
    got = await client.until("conversation.item.done")
    assert without(got, "conversation.item.input_audio_transcription.delta") == [
        "input_audio_buffer.committed",
        "conversation.item.added",
        "conversation.item.input_audio_transcription.completed",
        "conversation.item.done",
    ]
    assert got[-1]["item"]["content"][0]["transcript"] == KITCHEN
    await asyncio.sleep(0.3)
    assert not [m for m in client.unread() if m["type"].startswith("response.")]
    client.send("response.create")
    got = await client.until("response.done")
    assert got[-1]["response"]["status"] == "completed"
    assert client.fakes.llm.prompts[-1][-1] == ChatMessage("user", KITCHEN)
    # An empty buffer cannot be committed.
    client.send("input_audio_buffer.commit", event_id="c2")
    refused = (await client.until("error"))[-1]
    assert refused["error"]["code"] == "input_audio_buffer_commit_empty"
    assert refused["error"]["event_id"] == "c2"


async def test_a_response_asked_right_after_the_commit_waits_for_the_words(client: Client):
    await client.next()
    client.send("session.update", session={"audio": {"input": {"turn_detection": None}}})
    await client.until("session.updated")
    client.append(utterance(220.0, rate=RATE))
    client.send("input_audio_buffer.commit")
    client.send("response.create")
    got = await client.until("response.done")
    assert got[-1]["response"]["status"] == "completed"
    kinds_ = kinds(got)
    completed = kinds_.index("conversation.item.input_audio_transcription.completed")
    assert completed < kinds_.index("response.output_item.added")
    assert client.fakes.llm.prompts[-1][-1] == ChatMessage("user", KITCHEN)


async def test_a_text_item_is_answered_in_text_with_the_response_limits(tmp_path: Path):
    llm = SamplingLlm()
    client, task = await open_client(tmp_path, llm=llm)
    try:
        await client.next()
        text = [{"type": "input_text", "text": "Hi"}]
        client.send(
            "conversation.item.create", item={"type": "message", "role": "user", "content": text}
        )
        got = await client.until("conversation.item.done")
        assert kinds(got) == ["conversation.item.added", "conversation.item.done"]
        response = {"output_modalities": ["text"], "max_output_tokens": 7, "instructions": "Rhyme."}
        client.send("response.create", response=response)
        got = await client.until("response.done")
        texts = [m["delta"] for m in got if m["type"] == "response.output_text.delta"]
        assert texts == llm.tokens
        assert "response.output_audio.delta" not in kinds(got)
        done = next(m for m in got if m["type"] == "response.output_text.done")
        assert done["text"] == llm.reply
        assert got[-1]["response"]["output"][0]["content"][0]["type"] == "output_text"
        assert llm.prompts[-1][0] == ChatMessage("system", "Rhyme.")
        assert llm.prompts[-1][-1] == ChatMessage("user", "Hi")
        assert llm.samplings[-1].max_tokens == 7
    finally:
        await close(client, task)


async def test_an_audio_item_is_transcribed_and_answered(client: Client):
    await client.next()
    pcm = base64.b64encode(utterance(220.0, rate=RATE).astype("<i2").tobytes()).decode()
    item = {"type": "message", "role": "user", "content": [{"type": "input_audio", "audio": pcm}]}
    client.send("conversation.item.create", item=item)
    client.send("response.create")
    got = await client.until("response.done")
    completed = next(m for m in got if m["type"].endswith("transcription.completed"))
    assert completed["transcript"] == KITCHEN
    assert kinds(got).index("conversation.item.done") < kinds(got).index("response.done")
    assert client.fakes.llm.prompts[-1][-1] == ChatMessage("user", KITCHEN)


async def test_system_items_follow_the_instructions_and_assistant_items_are_refused(client):
    await client.next()
    system = {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "X"}]}
    client.send("conversation.item.create", item=system)
    await client.until("conversation.item.done")
    instructions = client.session.conversation.chat_options.instructions
    assert instructions is not None and instructions.endswith("\n\nX")
    said = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "Hi"}]}
    client.send("conversation.item.create", item=said)
    refused = (await client.until("error"))[-1]
    assert refused["error"]["param"] == "item.role"
    tool = {"type": "function_call_output", "call_id": "c", "output": "{}"}
    client.send("conversation.item.create", item=tool)
    refused = (await client.until("error"))[-1]
    assert refused["error"]["param"] == "item.call_id"  # no call awaits it


# --------------------------------------------------------------------------- interruptions


LONG_REPLY = [
    "The kitchen lights are on now. ",
    "I also closed the blinds in the living room. ",
    "Tomorrow will be sunny with a light breeze. ",
    "Your next meeting starts at ten in the morning. ",
    "Remember to water the plants on the balcony. ",
    "Dinner reservations are confirmed for seven. ",
    "The garage door was left open, so I shut it. ",
    "Music keeps playing quietly in the hall. ",
]
"""About 1.8 s of the fake TTS's speech, no phrase repeated (the repetition guard would
cut it): still playing when the person cuts in."""


async def test_barge_in_cancels_the_reply_and_says_how_much_was_played(tmp_path: Path):
    client, task = await open_client(tmp_path, llm=FakeLlm(LONG_REPLY))
    try:
        await client.next()
        client.append(utterance(220.0, rate=RATE))
        await client.until("response.output_audio.delta")
        await asyncio.sleep(0.6)
        assert client.session.playback.playing
        client.append(np.concatenate([tone(0.4, 440.0, RATE), silence(0.5, RATE)]))
        got = await client.until("response.done")
        done = got[-1]["response"]
        assert done["status"] == "cancelled"
        assert done["status_details"] == {"type": "cancelled", "reason": "turn_detected"}
        assert done["output"][0]["status"] == "incomplete"
        [truncated] = [m for m in got if m["type"] == "conversation.item.truncated"]
        sent = len(audio_of(client.seen)) / 2 / RATE * 1000
        # Half a second (LEAD_S) was still ahead of the client's playback when it spoke:
        # not counted as played (a stall of the loop just before the cut eats into it).
        assert 500 <= truncated["audio_end_ms"] <= sent - 200
        assert "input_audio_buffer.speech_started" in kinds(client.unread() + got)
        assert not client.session.playback.playing
    finally:
        await close(client, task)


async def test_response_cancel_stops_the_reply(tmp_path: Path):
    client, task = await open_client(tmp_path, llm=FakeLlm(LONG_REPLY))
    try:
        await client.next()
        client.append(utterance(220.0, rate=RATE))
        created = (await client.until("response.created"))[-1]
        client.send("response.create")
        busy = (await client.until("error"))[-1]
        assert busy["error"]["code"] == "conversation_already_has_active_response"
        await client.until("response.output_audio.delta")
        client.send("response.cancel", response_id=created["response"]["id"])
        got = await client.until("response.done")
        details = got[-1]["response"]["status_details"]
        assert details == {"type": "cancelled", "reason": "client_cancelled"}
        await asyncio.sleep(0.3)
        assert "response.output_audio.delta" not in kinds(client.unread())
    finally:
        await close(client, task)


class SlowLlm(FakeLlm):
    """Takes its time over every piece."""

    async def stream_chat(self, messages: list[ChatMessage], sampling: Sampling):  # type: ignore[override]
        async for piece in super().stream_chat(messages, sampling):
            await asyncio.sleep(2.0)
            yield piece


async def test_a_response_past_its_deadline_fails(tmp_path: Path):
    client, task = await open_client(tmp_path, llm=SlowLlm())
    try:
        await client.next()
        core = client.fakes.core
        core.config = replace(
            core.config, limits=replace(core.config.limits, request_timeout_s=0.5)
        )
        item = [{"type": "input_text", "text": "Hi"}]
        client.send(
            "conversation.item.create", item={"type": "message", "role": "user", "content": item}
        )
        client.send("response.create")
        done = (await client.until("response.done"))[-1]["response"]
        assert done["status"] == "failed"
        assert done["status_details"]["error"]["code"] == "timeout"
        client.send("response.create")  # the next one may start (nothing to answer: empty)
        empty = (await client.until("response.done"))[-1]["response"]
        assert empty["status"] == "completed" and empty["output"] == []
        # A reply the conversation starts itself has the same deadline.
        client.append(utterance(220.0, rate=RATE))
        done = (await client.until("response.done"))[-1]["response"]
        assert done["status"] == "failed"
        assert done["status_details"]["error"]["code"] == "timeout"
    finally:
        await close(client, task)


# --------------------------------------------------------------------------- formats, dialects


async def test_g711_in_and_out(client: Client):
    await client.next()
    formats = {"input": {"format": {"type": "audio/pcmu"}}, "output": {"format": "g711_ulaw"}}
    client.send("session.update", session={"audio": formats})
    await client.until("session.updated")
    pcm = utterance(220.0, rate=8000).astype("<i2").tobytes()
    client.append(PCMU.from_pcm(pcm, 8000), piece=1600)
    got = await client.until("response.done")
    completed = next(m for m in got if m["type"].endswith("transcription.completed"))
    assert completed["transcript"] == KITCHEN
    audio = audio_of(got)
    spoken = "".join(s.sentence for s in client.fakes.tts.spoken)
    assert abs(len(audio) - len(spoken) * 8000 / 200) < 400  # one byte per 8 kHz sample


async def test_a_beta_client_hears_the_beta_names(tmp_path: Path):
    client, task = await open_client(tmp_path, beta=True)
    try:
        created = await client.next()
        assert created["session"]["input_audio_format"] == "pcm16"
        assert created["session"]["modalities"] == ["text", "audio"]
        client.append(utterance(220.0, rate=RATE))
        got = await client.until("response.done")
        names = set(kinds(got))
        assert {"conversation.item.created", "response.audio.delta"} <= names
        assert {"response.audio_transcript.delta", "response.audio.done"} <= names
        assert not names & {"conversation.item.added", "conversation.item.done"}
        assert not names & {"response.output_audio.delta", "response.output_audio.done"}
    finally:
        await close(client, task)


async def test_closing_ends_everything(client: Client):
    await client.next()
    client.append(utterance(220.0, rate=RATE))
    await client.until("input_audio_buffer.speech_started")
    async with asyncio.timeout(TIMEOUT_S):
        await client.session.close()
        await client.session.close()  # safe twice
    assert client.session.conversation.speech is None


def test_the_playback_is_the_cores_player():
    from daemon.speech.player import ReplyPlayer
    from daemon.speech.reply import Playback

    def accepts(playback: Playback) -> bool:
        return playback.playing is False

    assert accepts(ReplyPlayer())
