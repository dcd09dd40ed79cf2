"""A remote LLM gets tools as sent and streams its tool_calls back."""

import pytest

from daemon.engines.llm.base import ChatMessage, Reply, Sampling, ToolCall, tool_set
from daemon.engines.llm.remote import RemoteLlm, delta_pieces
from daemon.engines.remote import RemoteFailure
from tests.helpers import free_port
from tests.remote_servers import ToolServer
from tests.unit.daemon.engines.llm.test_toolcalls import ScriptedLlm

LIGHT = {
    "type": "function",
    "function": {
        "name": "turn_on_light",
        "parameters": {"type": "object", "properties": {"room": {"type": "string"}}},
        "strict": True,
        "x-extra": {"kept": 1},
    },
}
ASK = [ChatMessage("user", "Kitchen lights on.")]


async def collect(pieces):
    reply, items = Reply(), []
    async for piece in pieces:
        reply.add(piece)
        items.append(piece)
    return reply, items


async def test_tools_go_as_sent_and_calls_stream_back():
    with ToolServer() as server:
        llm = RemoteLlm(server.base_url, "big")
        tools = tool_set([LIGHT], {"type": "function", "function": {"name": "turn_on_light"}})
        reply, items = await collect(llm.stream_tools(ASK, Sampling(max_tokens=9), tools))
        body = server.bodies[-1]
        assert body["tools"] == [LIGHT]
        assert body["tool_choice"] == {"type": "function", "function": {"name": "turn_on_light"}}
        assert "parallel_tool_calls" not in body and body["max_tokens"] == 9
        assert len(items) == 3  # the call's head, then its arguments in two pieces
        call = ToolCall("call_remote1", "turn_on_light", '{"room": "kitchen"}')
        assert reply.tool_calls == [call]

        # The next turn carries the call and its result in OpenAI's shape.
        follow = ASK + [
            ChatMessage("assistant", "", tuple(reply.tool_calls)),
            ChatMessage("tool", '{"ok": true}', tool_call_id="call_remote1"),
        ]
        parallel = tool_set([LIGHT], "auto", False)
        reply, _ = await collect(llm.stream_tools(follow, Sampling(), parallel))
        body = server.bodies[-1]
        assert body["parallel_tool_calls"] is False and body["tool_choice"] == "auto"
        assert body["messages"][1]["tool_calls"][0]["function"]["name"] == "turn_on_light"
        assert body["messages"][2] == {
            "role": "tool",
            "content": '{"ok": true}',
            "tool_call_id": "call_remote1",
        }
        assert reply.text == "The kitchen lights are on." and not reply.tool_calls
        # Plain chat sends no tools; a choice not sent is not added.
        assert "".join([p async for p in llm.stream_chat(ASK, Sampling())]).endswith("on.")
        assert "tools" not in server.bodies[-1]
        await collect(llm.stream_tools(ASK, Sampling(), tool_set([LIGHT])))
        assert server.bodies[-1]["tools"] == [LIGHT] and "tool_choice" not in server.bodies[-1]
        await llm.close()


async def test_a_failed_remote_falls_back_to_the_local_way_with_the_tools():
    local = ScriptedLlm(['<tool_call>{"name": "turn_on_light", "arguments": {}}</tool_call>'])
    dead = RemoteLlm(f"http://127.0.0.1:{free_port()}/v1", "m", timeout_s=2, fallback=local)
    reply, _ = await collect(dead.stream_tools(ASK, Sampling(), tool_set([LIGHT])))
    assert [c.name for c in reply.tool_calls] == ["turn_on_light"]
    assert "<tools>" in local.prompts[-1][0].content
    await dead.close()


def test_chunks_are_read_strictly():
    pieces = delta_pieces(
        '{"choices": [{"delta": {"content": "Hi", "tool_calls": '
        '[{"index": 1, "id": "c", "function": {"name": "f", "arguments": "{}"}}]}}]}'
    )
    assert pieces[0] == "Hi" and pieces[1].index == 1 and pieces[1].name == "f"
    assert delta_pieces('{"choices": [{"delta": {}}]}') == []
    for bad in ["<html>", '{"choices": []}', '{"choices": [{"delta": {"tool_calls": [3]}}]}']:
        with pytest.raises(RemoteFailure):
            delta_pieces(bad)
