"""Tool definitions read from OpenAI's JSON: shapes, choices and bounds."""

import json

import pytest

from daemon.engines.llm.base import (
    MAX_TOOL_CHARS,
    MAX_TOOLS,
    ChatMessage,
    Reply,
    Tool,
    ToolCall,
    ToolCallDelta,
    ToolChoice,
    tool_set,
)
from daemon.errors import InvalidRequest

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
        "strict": True,
    },
}
TIMER = {
    "type": "function",
    "name": "set_timer",
    "parameters": {"type": "object", "properties": {"minutes": {"type": "integer"}}},
}
"""The Realtime API's flat shape."""


def test_both_shapes_and_the_chat_shape_goes_on_as_sent():
    tools = tool_set([LIGHT, TIMER])
    light, timer = tools.tools
    assert light.name == "turn_on_light" and light.description.startswith("Turn on")
    assert light.to_openai() == LIGHT  # strict and all, as sent
    assert timer.to_openai() == {
        "type": "function",
        "function": {"name": "set_timer", "parameters": TIMER["parameters"]},
    }
    assert tools.choice == ToolChoice("auto") and tools.usable() == tools.tools
    assert not tools.forced and not tools.choice_sent
    assert tool_set([LIGHT], "auto").choice_sent


@pytest.mark.parametrize(
    ("choice", "expected", "usable", "forced"),
    [
        (None, ToolChoice("auto"), 2, False),
        ("auto", ToolChoice("auto"), 2, False),
        ("none", ToolChoice("none"), 0, False),
        ("required", ToolChoice("required"), 2, True),
        (
            {"type": "function", "function": {"name": "set_timer"}},
            ToolChoice("function", "set_timer"),
            1,
            True,
        ),
        ({"type": "function", "name": "set_timer"}, ToolChoice("function", "set_timer"), 1, True),
    ],
)
def test_choices(choice, expected, usable, forced):
    tools = tool_set([LIGHT, TIMER], choice)
    assert tools.choice == expected
    assert len(tools.usable()) == usable and tools.forced is forced
    if expected.mode == "function":
        assert tools.usable()[0].name == "set_timer"
        assert expected.to_openai() == {"type": "function", "function": {"name": "set_timer"}}
    else:
        assert expected.to_openai() == expected.mode


def tool(**function):
    return {"type": "function", "function": {"name": "f", **function}}


@pytest.mark.parametrize(
    ("tools", "choice", "message"),
    [
        ({"a": 1}, None, "tools must be a list"),
        ([7], None, r"tools\[0\] must be an object"),
        ([{"type": "retrieval"}], None, r"tools\[0\].type must be 'function'"),
        ([{"type": "function", "function": "f"}], None, r"tools\[0\].function must be an object"),
        ([tool(name="bad name!")], None, r"tools\[0\].function.name must be 1 to 64"),
        ([tool(name="x" * 65)], None, "name must be 1 to 64"),
        ([tool(description=3)], None, "description must be a string"),
        ([tool(parameters=[])], None, "parameters must be a JSON Schema of an object"),
        ([tool(parameters={"type": "string"})], None, "parameters must be a JSON Schema"),
        ([LIGHT, LIGHT], None, "two tools are named 'turn_on_light'"),
        ([LIGHT], "sometimes", "tool_choice must be 'auto'"),
        ([LIGHT], {"type": "function", "function": {"name": "nope"}}, "'nope', which is not"),
        ([], "required", "'required' needs tools"),
    ],
)
def test_malformed_definitions_name_the_problem(tools, choice, message):
    with pytest.raises(InvalidRequest, match=message):
        tool_set(tools, choice)


def test_bounds():
    many = [tool(name=f"f{i}") for i in range(MAX_TOOLS + 1)]
    with pytest.raises(InvalidRequest, match=f"at most {MAX_TOOLS}"):
        tool_set(many)
    big = tool(description="x" * MAX_TOOL_CHARS)
    with pytest.raises(InvalidRequest, match=r"tools\[0\] takes \d+ characters"):
        tool_set([big])
    wide = [tool(name=f"f{i}", description="x" * (MAX_TOOL_CHARS - 200)) for i in range(5)]
    with pytest.raises(InvalidRequest, match="the tools take"):
        tool_set(wide)
    deep: dict = {"type": "object"}
    for _ in range(20):
        deep = {"type": "object", "properties": {"a": deep}}
    with pytest.raises(InvalidRequest, match="nest deeper"):
        tool_set([tool(parameters=deep)])
    hostile: dict = {}
    for _ in range(900):  # within a request body's size, past Python's recursion limit
        hostile = {"a": hostile}
    with pytest.raises(InvalidRequest, match="nest deeper"):
        tool_set([tool(parameters={"type": "object", "properties": hostile})])
    with pytest.raises(InvalidRequest, match="parallel_tool_calls"):
        tool_set([LIGHT], None, "yes")


def test_no_parameters_means_an_empty_object():
    assert tool_set([tool()]).tools[0].parameters == {"type": "object", "properties": {}}
    assert Tool("f").to_openai()["function"] == {
        "name": "f",
        "parameters": {"type": "object", "properties": {}},
    }


def test_messages_in_openai_shape():
    call = ToolCall("call_1", "turn_on_light", '{"room": "kitchen"}')
    asked = ChatMessage("assistant", "", (call,))
    answered = ChatMessage("tool", '{"ok": true}', tool_call_id="call_1")
    assert asked.to_openai() == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "turn_on_light", "arguments": '{"room": "kitchen"}'},
            }
        ],
    }
    assert answered.to_openai() == {
        "role": "tool",
        "content": '{"ok": true}',
        "tool_call_id": "call_1",
    }
    assert ChatMessage("user", "hi").to_openai() == {"role": "user", "content": "hi"}
    assert asked.size == len("turn_on_light") + len('{"room": "kitchen"}')
    assert call.parsed_arguments() == {"room": "kitchen"}
    assert ToolCall("c", "f", "not json").parsed_arguments() == "not json"


def test_reply_puts_streamed_deltas_together():
    reply = Reply()
    for piece in [
        "Sure.",
        ToolCallDelta(1, "call_b", "set_timer", ""),
        ToolCallDelta(0, "call_a", "turn_on_light", '{"room": '),
        ToolCallDelta(1, arguments='{"minutes": 5}'),
        ToolCallDelta(0, arguments='"kitchen"}'),
        ToolCallDelta(2, "call_c", "get_time"),
    ]:
        reply.add(piece)
    assert reply.text == "Sure."
    assert reply.tool_calls == [
        ToolCall("call_a", "turn_on_light", '{"room": "kitchen"}'),
        ToolCall("call_b", "set_timer", '{"minutes": 5}'),
        ToolCall("call_c", "get_time", "{}"),
    ]
    assert json.loads(reply.tool_calls[0].arguments) == {"room": "kitchen"}
