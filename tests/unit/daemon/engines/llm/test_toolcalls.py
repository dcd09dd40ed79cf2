"""Tool calls written as text: the streaming parser, the Hermes prompt, answered calls."""

import asyncio
import json

import pytest

from daemon.engines.llm.base import (
    ChatMessage,
    LlmEngine,
    Reply,
    Sampling,
    ToolCall,
    ToolCallDelta,
    ToolChoice,
    ToolSet,
    tool_set,
)
from daemon.engines.llm.toolcalls import (
    ToolCallParser,
    answered_calls,
    hermes_messages,
    results_as_text,
)

NAMES = ["turn_on_light", "set_timer"]
CALL = '{"name": "turn_on_light", "arguments": {"room": "kitchen"}}'


def run(pieces, names=NAMES, inside=False):
    """Everything the parser gives for ``pieces``, and what came out per feed."""
    parser = ToolCallParser(names, inside)
    per_feed = [parser.feed(p) for p in pieces]
    out = [item for items in per_feed for item in items] + parser.finish()
    return out, per_feed


def calls(items):
    return [(i.index, i.name, json.loads(i.arguments)) for i in items if not isinstance(i, str)]


def text(items):
    return "".join(i for i in items if isinstance(i, str))


def chars(s):
    return list(s)


@pytest.mark.parametrize("split", [lambda s: [s], chars], ids=["whole", "char-by-char"])
def test_a_tagged_call_after_text(split):
    out, _ = run(split(f"Sure, turning it on.\n<tool_call>\n{CALL}\n</tool_call>"))
    assert text(out) == "Sure, turning it on."
    assert calls(out) == [(0, "turn_on_light", {"room": "kitchen"})]
    assert out[-1].id.startswith("call_") and len(out[-1].id) == 29


@pytest.mark.parametrize("split", [lambda s: [s], chars], ids=["whole", "char-by-char"])
def test_a_bare_json_reply_is_a_call(split):
    # Qwen2.5-Coder-0.5B drops the tags and answers the object alone.
    out, _ = run(split(f"  {CALL}"))
    assert out == [out[0]] and calls(out) == [(0, "turn_on_light", {"room": "kitchen"})]


def test_fenced_and_several_calls():
    two = f'```json\n{CALL}\n{{"name": "set_timer", "arguments": "{{\\"minutes\\": 5}}"}}\n```'
    out, _ = run([two])
    assert calls(out) == [
        (0, "turn_on_light", {"room": "kitchen"}),
        (1, "set_timer", {"minutes": 5}),
    ]
    tagged = f"<tool_call>{CALL}</tool_call>\n\n<tool_call>[{CALL}]</tool_call>\n"
    out, _ = run(chars(tagged))
    assert text(out) == "" and [c[0] for c in calls(out)] == [0, 1]


def test_text_streams_at_once_and_only_a_possible_tag_waits():
    _, per_feed = run(["The answer", " is 4.", " a <", "b", " <tool", "_ca"])
    assert per_feed == [["The answer"], [" is 4."], [" a"], [" <b"], [], []]
    out, _ = run(["The answer is 4 <tool", "_ca"])
    assert text(out) == "The answer is 4 <tool_ca"


@pytest.mark.parametrize(
    "reply",
    [
        "<tool_call>{not json}</tool_call>",
        '<tool_call>{"name": "open_door", "arguments": {}}</tool_call>',
        '<tool_call>{"name": "set_timer", "arguments": [1]}</tool_call>',
        '<tool_call>{"name": "set_timer", "arguments": "nope"}</tool_call>',
    ],
)
def test_a_block_that_is_no_known_call_stays_text(reply):
    out, _ = run([reply])
    assert text(out) == reply and not calls(out)


def test_json_that_is_not_a_call_stays_text():
    out, _ = run(['{"answer": 4}'])
    assert out == ['{"answer": 4}']
    out, _ = run(["`ls` lists files."])
    assert out == ["`ls` lists files."]


def test_a_forced_call_starts_inside_the_block_and_may_end_without_the_tag():
    out, _ = run(chars(CALL), inside=True)
    assert calls(out) == [(0, "turn_on_light", {"room": "kitchen"})]
    out, _ = run([CALL + "\n</tool_call>"], inside=True)
    assert len(calls(out)) == 1 and text(out) == ""


def test_strict_drops_invented_functions_and_stray_json():
    invented = '{"name": "count_legs", "arguments": {}}'
    parser = ToolCallParser(NAMES, strict=True)
    out = parser.feed(f'{CALL}\n{invented}\n{{"temp": 3}}') + parser.finish()
    assert calls(out) == [(0, "turn_on_light", {"room": "kitchen"})] and parser.dropped == 2
    parser = ToolCallParser(NAMES, strict=True)
    out = parser.feed(f"Hm. <tool_call>{invented}</tool_call> ok") + parser.finish()
    assert text(out) == "Hm. ok" and parser.dropped == 1
    parser = ToolCallParser(NAMES, strict=True)
    assert parser.feed("<tool_call>{oops</tool_call>") == ["<tool_call>{oops</tool_call>"]
    assert parser.dropped == 0  # not JSON: text, strict or not


def test_without_names_everything_is_text():
    out, _ = run([f"<tool_call>{CALL}</tool_call>"], names=[])
    assert text(out) == f"<tool_call>{CALL}</tool_call>"


LIGHT = {
    "type": "function",
    "function": {"name": "turn_on_light", "parameters": {"type": "object", "properties": {}}},
}
ASKED = ChatMessage("assistant", "", (ToolCall("call_1", "turn_on_light", '{"room":"kitchen"}'),))
CONVERSATION = [
    ChatMessage("system", "Be brief."),
    ChatMessage("user", "Kitchen lights on."),
    ASKED,
    ChatMessage("tool", '{"ok": true}', tool_call_id="call_1"),
]


def test_hermes_messages_put_tools_in_the_system_turn_and_calls_in_text():
    tools = tool_set([LIGHT], "required")
    system, user, assistant, result = hermes_messages(CONVERSATION, tools)
    assert system.role == "system" and system.content.startswith("Be brief.\n\n# Tools")
    assert json.dumps(LIGHT) in system.content and "Answer with a function call." in system.content
    assert user == CONVERSATION[1]
    assert assistant.role == "assistant"
    assert '<tool_call>\n{"name": "turn_on_light", "arguments": {"room": "kitchen"}}' in (
        assistant.content
    )
    assert result == ChatMessage("user", '<tool_response>\n{"ok": true}\n</tool_response>')
    named = hermes_messages(CONVERSATION[1:2], tool_set([LIGHT], LIGHT))
    assert named[0].content.endswith("Call the function turn_on_light now.")
    # No usable tools: no tool prompt, the results still as text.
    plain = hermes_messages(CONVERSATION, ToolSet())
    assert plain[0] == CONVERSATION[0] and plain[-1].role == "user"


def test_answered_calls_and_results_told_in_words():
    assert answered_calls(CONVERSATION) == {("turn_on_light", '{"room": "kitchen"}')}
    # A new user turn: earlier calls are history, not answered calls of this turn.
    assert answered_calls(CONVERSATION + [ChatMessage("user", "And now?")]) == set()
    told = results_as_text(CONVERSATION)
    assert told[:2] == CONVERSATION[:2]
    assert told[2] == ChatMessage("assistant", "One moment.")
    assert told[3].role == "user"
    assert told[3].content.startswith('turn_on_light returned: {"ok": true}\nNow answer')


class ScriptedLlm(LlmEngine):
    name, device, context_tokens = "scripted", "cpu", 0

    def __init__(self, tokens):
        self.tokens = tokens
        self.prompts = []

    async def stream_chat(self, messages, sampling):
        self.prompts.append(messages)
        for token in self.tokens:
            yield token


def test_any_engine_takes_tools_through_the_hermes_default():
    llm = ScriptedLlm(["<tool_", "call>\n", CALL[:20], CALL[20:], "\n</tool_call>"])
    tools = tool_set([LIGHT])

    async def go():
        reply = Reply()
        async for piece in llm.stream_tools(CONVERSATION[:2], Sampling(), tools):
            reply.add(piece)
        return reply

    reply = asyncio.run(go())
    assert reply.text == "" and [c.name for c in reply.tool_calls] == ["turn_on_light"]
    assert "<tools>" in llm.prompts[0][0].content
    none = ToolSet(tools.tools, ToolChoice("none"))

    async def words():
        return [p async for p in llm.stream_tools(CONVERSATION[:2], Sampling(), none)]

    assert "".join(asyncio.run(words())) == "".join(llm.tokens)  # no tools, no parsing
    assert all(not isinstance(p, ToolCallDelta) for p in asyncio.run(words()))
