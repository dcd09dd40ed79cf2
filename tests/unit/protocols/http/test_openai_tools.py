"""Tools on ``/v1/chat/completions`` with the official ``openai`` client, over a fake LLM
that writes its calls as Hermes ``<tool_call>`` text (the default way of any engine)."""

import json
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from fastapi.testclient import TestClient

from protocols.http.app import create_app
from tests.fakes import FakeEngines, FakeLlm, FakeService, fake_config, fake_engines

LIGHT = {
    "type": "function",
    "function": {
        "name": "turn_on_light",
        "description": "Turn on the lights in a room",
        "parameters": {
            "type": "object",
            "properties": {"room": {"type": "string"}},
            "required": ["room"],
        },
    },
}
CALL_TOKENS = [
    "<tool_",
    'call>\n{"name": "turn_on_light", ',
    '"arguments": {"room": "kitchen"}}\n</tool_call>',
]
ASK = [{"role": "user", "content": "Turn on the kitchen lights."}]


@pytest.fixture
def fakes(tmp_path: Path) -> Iterator[FakeEngines]:
    engines = fake_engines(fake_config(tmp_path), llm=FakeLlm(list(CALL_TOKENS)))
    yield engines
    engines.close()


@pytest.fixture
def client(fakes: FakeEngines) -> Iterator[openai.OpenAI]:
    app = create_app(FakeService(fakes.engines.config, fakes.engines))
    with TestClient(app) as http:
        yield openai.OpenAI(
            base_url="http://testserver/v1", api_key="x", http_client=http, max_retries=0
        )


def test_a_call_comes_back_in_openai_shape(client, fakes):
    reply = client.chat.completions.create(model="m", messages=ASK, tools=[LIGHT])
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.id.startswith("call_")
    assert call.function.name == "turn_on_light"
    assert json.loads(call.function.arguments) == {"room": "kitchen"}
    assert reply.usage.completion_tokens > 0
    # The fake got the tools in its system turn (no system turn was sent).
    assert "<tools>" in fakes.llm.prompts[-1][0].content


def test_a_streamed_call(client):
    chunks = list(
        client.chat.completions.create(model="m", messages=ASK, tools=[LIGHT], stream=True)
    )
    deltas = [c.choices[0].delta for c in chunks]
    calls = [d.tool_calls[0] for d in deltas if d.tool_calls]
    assert calls[0].index == 0 and calls[0].id.startswith("call_")
    assert calls[0].function.name == "turn_on_light"
    arguments = "".join(c.function.arguments or "" for c in calls)
    assert json.loads(arguments) == {"room": "kitchen"}
    assert not "".join(d.content or "" for d in deltas)
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_the_result_comes_back_on_the_next_turn(client, fakes):
    fakes.llm.tokens = ["The kitchen", " lights are on."]
    turns = ASK + [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "turn_on_light", "arguments": '{"room": "kitchen"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"success": true}'},
    ]
    reply = client.chat.completions.create(model="m", messages=turns, tools=[LIGHT])
    assert reply.choices[0].finish_reason == "stop"
    assert reply.choices[0].message.content == "The kitchen lights are on."
    assert reply.choices[0].message.tool_calls is None
    prompt = fakes.llm.prompts[-1]
    assert '"arguments": {"room": "kitchen"}' in prompt[-2].content
    assert prompt[-1].content == '<tool_response>\n{"success": true}\n</tool_response>'
    # Results without tools offered this time go the same way.
    client.chat.completions.create(model="m", messages=turns)
    assert fakes.llm.prompts[-1][-1].content.startswith("<tool_response>")


def test_text_with_tools_offered_streams_as_text(client, fakes):
    fakes.llm.tokens = ["Four", " legs."]
    reply = client.chat.completions.create(model="m", messages=ASK, tools=[LIGHT])
    assert reply.choices[0].message.content == "Four legs."
    assert reply.choices[0].finish_reason == "stop"
    chunks = list(
        client.chat.completions.create(model="m", messages=ASK, tools=[LIGHT], stream=True)
    )
    assert [c.choices[0].delta.content for c in chunks[1:-1]] == ["Four", " legs."]
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_tool_choice_none_keeps_the_tools_out(client, fakes):
    fakes.llm.tokens = ["Sure."]
    client.chat.completions.create(model="m", messages=ASK, tools=[LIGHT], tool_choice="none")
    assert all("<tools>" not in m.content for m in fakes.llm.prompts[-1])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"tools": [{"type": "function", "function": {"name": "no spaces"}}]}, "tools[0].function"),
        ({"tools": [LIGHT], "tool_choice": "maybe"}, "tool_choice must be"),
        ({"tools": [LIGHT], "tool_choice": {"type": "function", "function": {"name": "x"}}}, "'x'"),
        ({"tools": "all"}, "tools must be a list"),
        ({"messages": [{"role": "tool", "content": "ok"}]}, "messages[0].tool_call_id"),
        ({"messages": [{"role": "assistant", "tool_calls": [{}]}]}, "messages[0].tool_calls[0]"),
        ({"messages": [{"role": "user", "content": "x", "tool_calls": []}]}, None),
    ],
)
def test_malformed_tools_are_400s_naming_the_problem(client, extra, message):
    body = {"model": "m", "messages": ASK} | extra
    if message is None:  # an empty list is no calls: accepted
        client.chat.completions.create(**body)
        return
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(**body)
    error = info.value.body
    assert error["code"] == "invalid-request" and error["type"] == "invalid_request_error"
    assert message in error["message"]
