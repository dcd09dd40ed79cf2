"""Tools on ``/v1/chat/completions`` against a real ``hearth serve``, with the official
``openai`` client: the embedded model (its own chat template) and a remote server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import openai
import pytest

from tests.daemon import Daemon
from tests.remote_servers import ToolServer

pytestmark = pytest.mark.e2e


def function(name: str, description: str, **properties: str) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {key: {"type": kind} for key, kind in properties.items()},
                "required": list(properties),
            },
        },
    }


TOOLS = [
    function("turn_on_light", "Turn on the lights in a room", room="string"),
    function("turn_off_light", "Turn off the lights in a room", room="string"),
    function("set_timer", "Start a timer", minutes="integer"),
]
KITCHEN = [{"role": "user", "content": "Turn on the kitchen lights."}]


def client_of(daemon: Daemon) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{daemon.url}/v1", api_key="unused", max_retries=0, timeout=180)


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[openai.OpenAI]:
    yield from (client_of(d) for d in Daemon(tmp_path_factory.mktemp("tools")).serve())


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[openai.OpenAI, ToolServer]]:
    with ToolServer() as server:
        extra = (
            "llm:\n  backend: remote\n  remote:\n"
            f"    base_url: {server.base_url}\n    model: fake-tools\n"
        )
        for daemon in Daemon(tmp_path_factory.mktemp("remote-tools"), extra).serve():
            yield client_of(daemon), server


def test_local_model_calls_the_light_tool(local):
    reply = local.chat.completions.create(model="hearth", messages=KITCHEN, tools=TOOLS)
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls", choice.message
    (call,) = choice.message.tool_calls
    assert call.function.name == "turn_on_light"
    assert json.loads(call.function.arguments) == {"room": "kitchen"}


def test_local_model_streams_a_named_call_and_answers_its_result(local):
    ask = [{"role": "user", "content": "Set a timer for 10 minutes."}]
    chunks = list(
        local.chat.completions.create(
            model="hearth",
            messages=ask,
            tools=TOOLS,
            tool_choice={"type": "function", "function": {"name": "set_timer"}},
            stream=True,
        )
    )
    calls = [c.choices[0].delta.tool_calls[0] for c in chunks if c.choices[0].delta.tool_calls]
    assert calls[0].function.name == "set_timer" and calls[0].id.startswith("call_")
    arguments = json.loads("".join(c.function.arguments or "" for c in calls))
    assert arguments == {"minutes": 10}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"

    turns = ask + [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": calls[0].id,
                    "type": "function",
                    "function": {"name": "set_timer", "arguments": json.dumps(arguments)},
                }
            ],
        },
        {"role": "tool", "tool_call_id": calls[0].id, "content": '{"success": true}'},
    ]
    reply = local.chat.completions.create(model="hearth", messages=turns, tools=TOOLS)
    assert reply.choices[0].finish_reason == "stop"
    assert reply.choices[0].message.tool_calls is None
    assert reply.choices[0].message.content.strip()
    assert "success" not in reply.choices[0].message.content


def test_a_malformed_tool_is_a_400(local):
    with pytest.raises(openai.BadRequestError) as info:
        local.chat.completions.create(
            model="hearth",
            messages=KITCHEN,
            tools=[{"type": "function", "function": {"name": "turn on"}}],
        )
    assert info.value.body["code"] == "invalid-request"
    assert "tools[0].function.name" in info.value.body["message"]


def test_remote_model_gets_the_tools_as_sent_and_its_calls_come_back(remote):
    client, server = remote
    choice = {"type": "function", "function": {"name": "turn_off_light"}}
    reply = client.chat.completions.create(
        model="fake-tools", messages=KITCHEN, tools=TOOLS, tool_choice=choice
    )
    assert server.bodies[-1]["tools"] == TOOLS and server.bodies[-1]["tool_choice"] == choice
    (call,) = reply.choices[0].message.tool_calls
    assert (call.id, call.function.name) == ("call_remote1", "turn_off_light")
    assert json.loads(call.function.arguments) == {"room": "kitchen"}
    assert reply.choices[0].finish_reason == "tool_calls"

    chunks = list(
        client.chat.completions.create(
            model="fake-tools", messages=KITCHEN, tools=TOOLS, stream=True
        )
    )
    calls = [c.choices[0].delta.tool_calls[0] for c in chunks if c.choices[0].delta.tool_calls]
    assert calls[0].function.name == "turn_on_light"
    assert "".join(c.function.arguments or "" for c in calls) == '{"room": "kitchen"}'
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    assert "tool_choice" not in server.bodies[-1]  # not sent, not added
