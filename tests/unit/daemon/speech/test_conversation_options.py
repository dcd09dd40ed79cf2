"""A client's own options for a conversation, on the core alone.

A client's own instructions and limits for its replies (``ChatOptions``), through
the chat service, the pipeline's speculative replies and the conversation; a reply
that answers tool turns after the question (``ChatOptions.turns``) and the chat service's
start of a reply that may call tools; a reply stopped without stopping the hearing
(``Conversation.interrupt``); hands-free with the fixed silence
(``Profile.HANDS_FREE_SILENCE``); a sensitivity for a conversation's hearing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from daemon.audio.pcm import INTERNAL
from daemon.config import parse_config
from daemon.engines.llm.base import ChatMessage, Sampling, ToolCall
from daemon.errors import InvalidRequest, TextTooLong
from daemon.runtime.profiles import Profile, Sensitivity, session_profile
from daemon.runtime.requests import Listening, Replies
from daemon.speech import events as ev
from daemon.speech.chat import ChatOptions, ChatService, ChatSettings, ConversationStore
from daemon.speech.conversation import Mode
from tests.fakes import KITCHEN, FakeLlm, fake_config, fake_engines, utterance

pytestmark = pytest.mark.timeout(20)
SYSTEM = "Be brief."


class SamplingLlm(FakeLlm):
    def __init__(self, tokens: list[str] | None = None) -> None:
        super().__init__(tokens)
        self.samplings: list[Sampling] = []

    async def stream_chat(self, messages: list[ChatMessage], sampling: Sampling):  # type: ignore[override]
        self.samplings.append(sampling)
        async for piece in super().stream_chat(messages, sampling):
            yield piece


async def reply(pieces: AsyncIterator[str]) -> str:
    async with asyncio.timeout(5):
        return "".join([piece async for piece in pieces])


# --------------------------------------------------------------------------- chat


def test_chat_options_set_only_what_they_name():
    base = Sampling(temperature=0.0, top_p=0.9, max_tokens=128)
    assert ChatOptions().sampling(base) is base
    assert ChatOptions(temperature=0.7).sampling(base) == replace(base, temperature=0.7)
    assert ChatOptions(max_tokens=9).sampling(base) == replace(base, max_tokens=9)
    with pytest.raises(InvalidRequest):
        ChatOptions(temperature=3.0)
    with pytest.raises(InvalidRequest):
        ChatOptions(max_tokens=0)


async def test_instructions_replace_the_system_prompt_and_the_speaker_is_still_named():
    llm = SamplingLlm()
    chat = ChatService(llm, ConversationStore(4, 60, 10), ChatSettings(SYSTEM, max_prompt_chars=50))
    options = ChatOptions("Speak like a pirate.", 0.9, 12)
    await reply(chat.chat("c", "Hello.", speaker="Ann", options=options))
    assert llm.prompts[-1][0] == ChatMessage(
        "system", "Speak like a pirate.\n\nThe person speaking is Ann."
    )
    assert (llm.samplings[-1].temperature, llm.samplings[-1].max_tokens) == (0.9, 12)
    await reply(chat.chat("c", "Hello.", options=ChatOptions(instructions="")))
    assert llm.prompts[-1][0].role == "user"  # "" keeps no system prompt at all
    await reply(chat.chat("c", "Hello."))
    assert llm.prompts[-1][0] == ChatMessage("system", SYSTEM)
    with pytest.raises(TextTooLong):
        chat.check_options(ChatOptions("x" * 51))


async def test_turns_after_the_question_are_answered_and_the_exchange_remembered():
    llm = FakeLlm(["It is", " on"])
    chat = ChatService(llm, ConversationStore(4, 60, 10), ChatSettings(SYSTEM))
    call = ToolCall("call_1", "turn_on_light", '{"room": "kitchen"}')
    turns = (
        ChatMessage("assistant", "", (call,)),
        ChatMessage("tool", "ok", tool_call_id="call_1"),
    )
    answer = await reply(chat.chat("c", "Kitchen light.", options=ChatOptions(turns=turns)))
    assert answer == "It is on"
    prompt = llm.prompts[-1]
    asked = prompt.index(ChatMessage("user", "Kitchen light."))
    assert "turn_on_light" in str(prompt[asked + 1 :])  # the call and its result follow
    assert chat.conversations.history("c") == [
        ChatMessage("user", "Kitchen light."),
        ChatMessage("assistant", "It is on"),
    ]


async def test_the_chat_service_starts_a_tool_reply_with_the_history(tmp_path: Path):
    fakes = fake_engines(fake_config(tmp_path))
    try:
        chat = fakes.engines.chat
        assert chat is not None
        chat.remember("c", "Hi.", "Hello.")
        messages = await fakes.services.chat.chat_messages("c", "Lights?", "Be kind.")
        assert messages[0] == ChatMessage("system", "Be kind.")
        assert messages[1:] == [
            ChatMessage("user", "Hi."),
            ChatMessage("assistant", "Hello."),
            ChatMessage("user", "Lights?"),
        ]
    finally:
        fakes.close()


# --------------------------------------------------------------------------- conversation


async def next_of(events: AsyncIterator[object], kind: type) -> list[object]:
    seen = []
    async with asyncio.timeout(10):
        async for event in events:
            seen.append(event)
            if isinstance(event, kind):
                return seen
    raise AssertionError(f"no {kind.__name__} in {seen}")


async def test_a_conversation_writes_hands_free_replies_under_its_chat_options(tmp_path: Path):
    llm = SamplingLlm()
    fakes = fake_engines(fake_config(tmp_path), llm=llm)
    speech = fakes.services.speech
    conversation = speech.open_conversation("c")
    events = conversation.events()
    try:
        conversation.chat_options = ChatOptions("Rhyme.", max_tokens=5)
        await conversation.listen(
            await speech.hearing(Listening(Mode.HANDS_FREE, replies=Replies(on=True)))
        )
        pcm = utterance(220.0).astype("<i2").tobytes()
        for offset in range(0, len(pcm), 3200):
            await conversation.feed(INTERNAL, pcm[offset : offset + 3200])
        await next_of(events, ev.RunEnded)
        assert llm.prompts[-1][0] == ChatMessage("system", "Rhyme.")
        assert llm.prompts[-1][-1] == ChatMessage("user", KITCHEN)
        assert llm.samplings[-1].max_tokens == 5
        # ask() takes options of its own for one reply.
        await conversation.ask("Hello.", speak=False, chat_options=ChatOptions("Shout."))
        await next_of(events, ev.RunEnded)
        assert llm.prompts[-1][0] == ChatMessage("system", "Shout.")
    finally:
        await conversation.close()
        fakes.close()


async def test_interrupt_stops_the_reply_and_hearing_goes_on(tmp_path: Path):
    llm = FakeLlm([f"Word{n} " for n in range(200)])
    fakes = fake_engines(fake_config(tmp_path), llm=llm)
    speech = fakes.services.speech
    conversation = speech.open_conversation("c")
    events = conversation.events()
    try:
        await conversation.listen(
            await speech.hearing(Listening(Mode.HANDS_FREE, replies=Replies(on=True)))
        )
        await conversation.ask("Count.", speak=False)
        await next_of(events, ev.ReplyChunk)
        await conversation.interrupt()
        seen = await next_of(events, ev.ReplyInterrupted)
        assert not any(isinstance(e, ev.RunEnded) for e in seen)
        assert conversation.speech is not None and conversation.state.mode is Mode.HANDS_FREE
        await conversation.interrupt()  # nothing under way: nothing happens
    finally:
        await conversation.close()
        fakes.close()


# --------------------------------------------------------------------------- profiles


def test_hands_free_silence_never_asks_the_turn_model():
    config = parse_config("", "test-config.yaml")
    silence = session_profile(config, Profile.HANDS_FREE_SILENCE)
    hands_free = session_profile(config, Profile.HANDS_FREE)
    assert silence.hands_free and hands_free.settings.endpoint.turn
    assert not silence.settings.endpoint.turn
    assert silence.settings.endpoint.trailing_silence_s == 0.7


async def test_hearing_takes_a_sensitivity(tmp_path: Path):
    fakes = fake_engines(fake_config(tmp_path))
    speech = fakes.services.speech
    try:
        default = await speech.hearing(Listening(Mode.HANDS_FREE))
        eager = await speech.hearing(Listening(Mode.HANDS_FREE, sensitivity=Sensitivity.AGGRESSIVE))
        slow, quick = default.open_session(), eager.open_session()
        sooner, later = quick.settings.endpoint, slow.settings.endpoint
        assert sooner.trailing_silence_s < later.trailing_silence_s
        await slow.close()
        await quick.close()
    finally:
        fakes.close()
