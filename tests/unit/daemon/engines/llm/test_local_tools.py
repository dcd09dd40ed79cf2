"""The local model's tool path without loading a model: its template, the grammar of a
forced call, and the guard against a call repeated after its result."""

import json

import pytest

from daemon.engines.llm.base import ChatMessage, Sampling, ToolCall, ToolCallDelta, tool_set
from daemon.engines.llm.local import LocalLlm
from daemon.engines.llm.local_tools import ChatTemplate, call_grammar, call_schema
from daemon.errors import InvalidRequest

TEMPLATE = (
    "{% if tools %}TOOLS:{% for t in tools %}{{ t.function.name }};{% endfor %}|{% endif %}"
    "{% for m in messages %}"
    "{% if m.role == 'bad' %}{{ raise_exception('no bad turns') }}{% endif %}"
    "[{{ m.role }}]{{ m.content }}"
    "{% for c in m.tool_calls or [] %}CALL {{ c.function.name }} "
    "{{ c.function.arguments | tojson }}{% endfor %}|"
    "{% endfor %}[assistant]"
)
LIGHT = {
    "type": "function",
    "function": {
        "name": "turn_on_light",
        "parameters": {
            "type": "object",
            "properties": {"room": {"type": "string", "enum": ["kitchen", "bedroom"]}},
            "required": ["room"],
        },
    },
}
TIMER = {
    "type": "function",
    "function": {
        "name": "set_timer",
        "parameters": {"type": "object", "properties": {"minutes": {"type": "integer"}}},
    },
}
ASKED = ChatMessage("assistant", "", (ToolCall("c1", "turn_on_light", '{"room": "kitchen"}'),))
TURNS = [
    ChatMessage("user", "Kitchen lights on."),
    ASKED,
    ChatMessage("tool", '{"ok": true}', tool_call_id="c1"),
]


def test_the_template_gets_the_usable_tools_and_call_arguments_as_objects():
    template = ChatTemplate(TEMPLATE, "<|im_end|>", "")
    assert template.takes_tools and template.stop == ["<|im_end|>"]
    prompt = template.render(TURNS, tool_set([LIGHT, TIMER]))
    assert prompt.startswith("TOOLS:turn_on_light;set_timer;|[user]Kitchen lights on.|")
    assert 'CALL turn_on_light {"room": "kitchen"}' in prompt  # an object, not a string
    assert '[tool]{"ok": true}' in prompt and prompt.endswith("[assistant]")
    named = template.render(TURNS[:1], tool_set([LIGHT, TIMER], TIMER))
    assert named.startswith("TOOLS:set_timer;|")
    assert not template.render(TURNS[:1], tool_set([LIGHT], "none")).startswith("TOOLS")
    with pytest.raises(InvalidRequest, match="template refused the messages: no bad turns"):
        template.render([ChatMessage("bad", "x")], tool_set([LIGHT]))  # type: ignore[arg-type]


def test_a_forced_call_has_a_grammar_of_the_schemas():
    tools = tool_set([LIGHT, TIMER]).tools
    schema = call_schema(tools)
    assert [alt["properties"]["name"] for alt in schema["oneOf"]] == [
        {"const": "turn_on_light"},
        {"const": "set_timer"},
    ]
    assert call_grammar(tools) is not None
    odd = tool_set(
        [{"type": "function", "function": {"name": "odd", "parameters": {"$ref": "#/nowhere"}}}]
    ).tools
    assert call_grammar(odd) is not None  # a schema the converter lacks: any object


def bare_local(script):
    """A LocalLlm whose generations are scripted (no model is loaded): text goes through
    the parser the tool path gives, deltas as they are."""
    llm = LocalLlm.__new__(LocalLlm)
    llm._template = ChatTemplate(TEMPLATE, "", "")
    llm.calls = []

    async def generate(messages, sampling, tools, parser):
        llm.calls.append((messages, tools))
        for item in script[len(llm.calls) - 1]:
            for out in parser.feed(item) if isinstance(item, str) else [item]:
                yield out
        for out in parser.finish():
            yield out

    llm._generate = generate
    return llm


async def collect(llm, messages, tools):
    return [p async for p in llm.stream_tools(messages, Sampling(), tools)]


REPEAT = ToolCallDelta(0, "c9", "turn_on_light", json.dumps({"room": "kitchen"}))


async def test_a_call_repeated_after_its_result_is_asked_again_in_words():
    llm = bare_local([[REPEAT], ["The kitchen lights are on."]])
    out = await collect(llm, TURNS, tool_set([LIGHT]))
    assert out == ["The kitchen lights are on."]
    told, again = llm.calls[1]
    assert again.choice.mode == "none"
    assert told[-1].role == "user" and told[-1].content.startswith("turn_on_light returned")


async def test_new_calls_pass_renumbered_and_a_forced_choice_is_not_second_guessed():
    other = ToolCallDelta(1, "c8", "set_timer", '{"minutes": 5}')
    llm = bare_local([[REPEAT, other]])
    out = await collect(llm, TURNS, tool_set([LIGHT, TIMER]))
    assert out == [ToolCallDelta(0, "c8", "set_timer", '{"minutes": 5}')]
    assert len(llm.calls) == 1
    forced = bare_local([[REPEAT]])
    assert await collect(forced, TURNS, tool_set([LIGHT], "required")) == [REPEAT]


async def test_a_result_echoed_is_asked_again_and_other_text_streams():
    llm = bare_local([['{"ok":', " true}"], ["Done."]])
    assert await collect(llm, TURNS, tool_set([LIGHT])) == ["Done."]
    # Text that only starts like the result waits, then goes on whole.
    llm = bare_local([['{"ok"', " is what it said."]])
    assert await collect(llm, TURNS, tool_set([LIGHT])) == ['{"ok" is what it said.']
    # No result in this turn: the guard holds nothing.
    llm = bare_local([["Hello", " there."]])
    assert await collect(llm, TURNS[:1], tool_set([LIGHT])) == ["Hello", " there."]


async def test_an_invented_function_or_stray_json_is_asked_again_without_tools():
    invented = '{"name": "count_legs", "arguments": {"animal": "spider"}}'
    for first in ([invented], ['{"legs": 8}'], [f"<tool_call>{invented}</tool_call>"]):
        llm = bare_local([first, ["Eight."]])
        assert await collect(llm, TURNS[:1], tool_set([LIGHT])) == ["Eight."]
        told, again = llm.calls[1]
        assert told == TURNS[:1] and again.choice.mode == "none"
    # A known call beside an invented one: the known one goes, nothing is asked again.
    known = '{"name": "turn_on_light", "arguments": {"room": "hall"}}'
    llm = bare_local([[f"{known}\n{invented}"]])
    (call,) = await collect(llm, TURNS[:1], tool_set([LIGHT]))
    assert call.name == "turn_on_light" and len(llm.calls) == 1
