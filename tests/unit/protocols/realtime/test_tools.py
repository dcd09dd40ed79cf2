"""Function tools in a Realtime session over fake engines: a call becomes a
``function_call`` item, its output answers it, and the answer is spoken.

The fake LLM calls in the Hermes way (``<tool_call>`` tags), which the LLM base
class reads back as calls, as it does for the embedded model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from daemon.engines.llm.base import ChatMessage
from tests.fakes import FakeLlm, tone
from tests.unit.protocols.realtime.conftest import RATE, Client, close, kinds, open_client

LIGHT = {
    "type": "function",
    "name": "turn_on_light",
    "description": "Turn on the light in a room.",
    "parameters": {
        "type": "object",
        "properties": {"room": {"type": "string"}},
        "required": ["room"],
    },
}
CALL = '<tool_call>{"name": "turn_on_light", "arguments": {"room": "kitchen"}}</tool_call>'
ANSWER = ["The kitchen", " light is on."]
CALL_EVENTS = [
    "response.output_item.added",
    "conversation.item.added",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.output_item.done",
    "conversation.item.done",
    "response.done",
]


def say(client: Client, text: str) -> None:
    content = [{"type": "input_text", "text": text}]
    client.send(
        "conversation.item.create", item={"type": "message", "role": "user", "content": content}
    )


async def with_tools(client: Client, **session: Any) -> None:
    await client.next()
    client.send("session.update", session={"tools": [LIGHT], **session})
    await client.until("session.updated")


async def test_a_call_round_trip_ends_in_a_spoken_answer(tmp_path: Path):
    llm = FakeLlm(ANSWER, script=[[CALL]])
    client, task = await open_client(tmp_path, llm=llm)
    try:
        await with_tools(client, tool_choice="required", audio={"input": {"turn_detection": None}})
        say(client, "Turn on the kitchen light")
        await client.until("conversation.item.done")
        client.send("response.create")
        got = await client.until("response.done")
        head = kinds(got)
        assert head[head.index("response.created") + 1 :] == CALL_EVENTS
        done = next(m for m in got if m["type"] == "response.function_call_arguments.done")
        assert done["name"] == "turn_on_light"
        assert json.loads(done["arguments"]) == {"room": "kitchen"}
        assert "response.output_audio.delta" not in head
        response = got[-1]["response"]
        assert response["status"] == "completed"
        assert response["output"][0]["type"] == "function_call"
        assert response["output"][0]["call_id"] == done["call_id"]

        output = {"type": "function_call_output", "call_id": done["call_id"], "output": "ok"}
        client.send("conversation.item.create", item=output)
        added = (await client.until("conversation.item.done"))[-1]
        assert added["item"]["type"] == "function_call_output"
        client.send("response.create", response={"tool_choice": "none"})
        got = await client.until("response.done")
        assert "response.output_audio.delta" in kinds(got)
        assert got[-1]["response"]["status"] == "completed"
        transcript = next(m for m in got if m["type"] == "response.output_audio_transcript.done")
        assert transcript["transcript"] == "The kitchen light is on."
        prompt = llm.prompts[-1]
        user = prompt.index(ChatMessage("user", "Turn on the kitchen light"))
        called, result = prompt[user + 1], prompt[user + 2]
        assert called.role == "assistant" and "turn_on_light" in called.content + str(
            called.tool_calls
        )
        assert "ok" in result.content
        assert not client.session.tool_turns.turns
    finally:
        await close(client, task)


async def test_words_added_with_the_output_are_answered_after_it(tmp_path: Path):
    llm = FakeLlm(ANSWER, script=[[CALL]])
    client, task = await open_client(tmp_path, llm=llm)
    try:
        await with_tools(client, tool_choice="required", audio={"input": {"turn_detection": None}})
        say(client, "Turn on the kitchen light")
        client.send("response.create")
        got = await client.until("response.done")
        done = next(m for m in got if m["type"] == "response.function_call_arguments.done")
        output = {"type": "function_call_output", "call_id": done["call_id"], "output": "ok"}
        client.send("conversation.item.create", item=output)
        say(client, "And the hall?")
        client.send("response.create", response={"output_modalities": ["text"]})
        got = await client.until("response.done")
        assert "response.output_text.done" in kinds(got)
        assert llm.prompts[-1][-1] == ChatMessage("user", "And the hall?")
    finally:
        await close(client, task)


async def test_a_named_choice_on_the_response_calls_that_function(tmp_path: Path):
    llm = FakeLlm(ANSWER, script=[[CALL]])
    client, task = await open_client(tmp_path, llm=llm)
    try:
        await client.next()
        say(client, "Kitchen light please")
        await client.until("conversation.item.done")
        choice = {"type": "function", "name": "turn_on_light"}
        client.send("response.create", response={"tools": [LIGHT], "tool_choice": choice})
        got = await client.until("response.done")
        assert "response.function_call_arguments.done" in kinds(got)
    finally:
        await close(client, task)


async def test_an_answer_in_words_is_spoken_as_any_reply_from_one_generation(tmp_path: Path):
    llm = FakeLlm(ANSWER)
    client, task = await open_client(tmp_path, llm=llm)
    try:
        await with_tools(client, audio={"input": {"turn_detection": None}})
        say(client, "Hello")
        await client.until("conversation.item.done")
        client.send("response.create")
        got = await client.until("response.done")
        assert "response.function_call_arguments.delta" not in kinds(got)
        assert "response.output_audio.delta" in kinds(got)
        assert got[-1]["response"]["output"][0]["type"] == "message"
        # The words and the (absent) calls came from one generation, not two.
        assert len(llm.prompts) == 1
        assert "turn_on_light" in str(llm.prompts[0])  # the tools were offered to it
    finally:
        await close(client, task)


async def test_a_heard_turn_is_answered_on_the_tool_path(tmp_path: Path):
    llm = FakeLlm(ANSWER, script=[[CALL]])
    client, task = await open_client(tmp_path, llm=llm)
    try:
        await with_tools(client, tool_choice="required")
        silence = tone(0.8, rate=RATE) * 0
        client.append(tone(1.2, rate=RATE))
        client.append(silence)
        got = await client.until("response.done")
        assert "response.function_call_arguments.done" in kinds(got)
    finally:
        await close(client, task)


async def test_bad_tools_and_stray_calls_are_refused(client: Client):
    await client.next()
    client.send("session.update", session={"tools": [LIGHT], "tool_choice": "dance"})
    refused = (await client.until("error"))[-1]
    assert refused["error"]["param"] == "session.tools"
    call = {"type": "function_call", "name": "turn_on_light", "call_id": "c", "arguments": "{}"}
    client.send("conversation.item.create", item=call)
    refused = (await client.until("error"))[-1]
    assert refused["error"]["param"] == "item.type"


async def test_words_and_a_call_come_from_the_same_generation(tmp_path: Path):
    llm = FakeLlm(ANSWER, script=[["Sure, one moment. ", CALL]])
    client, task = await open_client(tmp_path, llm=llm)
    try:
        await with_tools(client, audio={"input": {"turn_detection": None}})
        say(client, "Turn on the kitchen light")
        await client.until("conversation.item.done")
        client.send("response.create")
        got = await client.until("response.done")
        assert "response.output_audio.delta" in kinds(got)
        assert "response.function_call_arguments.done" in kinds(got)
        output = got[-1]["response"]["output"]
        assert [item["type"] for item in output] == ["message", "function_call"]
        assert output[0]["content"][0]["transcript"] == "Sure, one moment."
        assert len(llm.prompts) == 1
    finally:
        await close(client, task)
