"""The repetition cut: pure, on scripted pieces, and in the chat service every route uses."""

import asyncio
import re
from collections.abc import AsyncIterator

import pytest

from daemon.engines.llm.base import ChatMessage, LlmEngine, Sampling
from daemon.engines.llm.repetition import RepetitionGuard
from daemon.speech.chat import ChatService, ChatSettings, ConversationStore

LOOP = (
    "La femme de France, la femme de la France, la femme de la France, la femme de la "
    "France, la femme de la France, la femme de la France, la femme de la France"
)


def tokens(text: str) -> list[str]:
    """Pieces the way a tokenizer streams them: each word with its leading space."""
    return re.findall(r"\s*\S+", text)


def run(pieces: list[str], ngram: int = 5) -> tuple[list[str], RepetitionGuard]:
    """Feed pieces until the guard stops; the passed-on pieces and the guard."""
    guard = RepetitionGuard(ngram)
    out = []
    for piece in pieces:
        out.append(guard.feed(piece))
        if guard.stopped:
            break
    out.append(guard.finish())
    assert "".join(out) == guard.reply
    return [p for p in out if p], guard


def words(text: str) -> list[str]:
    return [re.sub(r"\W+", "", w.lower()) for w in text.split()]


def has_repeated_ngram(text: str, n: int) -> bool:
    w = words(text)
    grams = [tuple(w[i : i + n]) for i in range(len(w) - n + 1)]
    return len(grams) != len(set(grams))


def test_a_loop_is_cut_after_its_first_round_and_ends_cleanly():
    out, guard = run(tokens(LOOP))
    assert guard.stopped
    assert "".join(out) == "La femme de France, la femme de la France."
    assert not has_repeated_ngram(guard.reply, 5)


@pytest.mark.parametrize(
    "text",
    [
        "The capital of France is Paris.",
        "I can answer questions, set timers and turn on the lights. Just ask!",
        "One, two, three, four, five, six, seven, eight, nine, ten.",
        "Sure. The kitchen lights are on, and the hall lights are on too.",
        "",
    ],
)
@pytest.mark.parametrize("split", ["tokens", "chars", "whole"])
def test_a_reply_without_a_repeat_passes_unchanged(text, split):
    pieces = {"tokens": tokens(text), "chars": list(text), "whole": [text]}[split]
    out, guard = run(pieces)
    assert not guard.stopped
    assert "".join(out) == text


def test_a_repeated_sentence_is_dropped_whole():
    text = "Paris is the capital of France. Paris is the capital of France. Paris is"
    out, guard = run(tokens(text))
    assert guard.stopped and "".join(out) == "Paris is the capital of France."


def test_a_cut_inside_a_clause_ends_at_a_word_with_a_full_stop():
    text = "I can set timers and lights and music and timers and lights and music and timers"
    out, guard = run(tokens(text))
    reply = "".join(out)
    assert guard.stopped and reply == "I can set timers and lights and music and."
    assert not has_repeated_ngram(reply, 5)


def test_no_half_repeated_phrase_whatever_the_pieces():
    for ngram in (3, 4, 5, 6):
        for text in (LOOP, "ha " * 30, "Yes. " * 20, "a b c d e f a b c d e f a b c d e f"):
            for pieces in (tokens(text), list(text)):
                out, guard = run(pieces, ngram)
                reply = "".join(out)
                assert guard.stopped, (ngram, text)
                assert not has_repeated_ngram(reply, ngram), (ngram, reply)
                assert not reply.rstrip().endswith(","), reply


def test_text_streams_without_waiting_for_the_end():
    guard = RepetitionGuard()
    pieces = tokens("Hello, the weather today is sunny and warm")
    # New words pass at once (a trailing comma waits for the next word: a cut drops it).
    assert [guard.feed(p) for p in pieces] == [
        "Hello",
        ", the",
        " weather",
        " today",
        " is",
        " sunny",
        " and",
        " warm",
    ]
    assert guard.finish() == ""


def test_only_words_that_may_start_a_repeat_wait():
    guard = RepetitionGuard()
    passed = [guard.feed(p) for p in tokens("the cat and the dog and the")]
    # "the" was seen: it waits until the word after it is complete and shows that
    # the phrase is new.
    assert passed == ["the", " cat", " and", "", "", " the dog", ""]
    assert guard.finish() == " and the"


def test_nothing_passes_after_the_cut():
    out, guard = run(tokens(LOOP))
    assert guard.feed(" more words") == "" and guard.finish() == ""


def test_ngram_must_be_at_least_two():
    with pytest.raises(ValueError):
        RepetitionGuard(1)


class LoopingLlm(LlmEngine):
    """Repeats one clause forever; counts the pieces it was asked for."""

    name = "loop"
    device = "cpu"
    context_tokens = 0

    def __init__(self) -> None:
        self.pieces = 0
        self.closed = False
        self.prompts: list[list[ChatMessage]] = []

    async def stream_chat(
        self, messages: list[ChatMessage], sampling: Sampling
    ) -> AsyncIterator[str]:
        self.prompts.append(messages)
        try:
            yield "The answer is Paris."
            while True:
                for piece in tokens(" I am not sure, but I think"):
                    self.pieces += 1
                    await asyncio.sleep(0)
                    yield piece
        finally:
            self.closed = True


async def test_the_chat_service_cuts_every_route_and_stops_generating():
    llm = LoopingLlm()
    chat = ChatService(llm, ConversationStore(4, 60, 10), ChatSettings("Be brief."))
    reply = "".join([p async for p in chat.chat("c1", "Where is the Eiffel tower?")])
    assert reply == "The answer is Paris. I am not sure, but I think."
    assert not has_repeated_ngram(reply, 4)
    assert llm.closed and llm.pieces < 20
    # The history keeps the cut reply; the system prompt leads every prompt.
    assert chat.conversations.history("c1")[-1].content == reply
    assert llm.prompts[0][0] == ChatMessage("system", "Be brief.")
    # The OpenAI-style route (the client's own messages) is cut the same way.
    messages = [ChatMessage("user", "Where is the Eiffel tower?")]
    assert "".join([p async for p in chat.complete(messages)]) == reply


async def test_the_cut_can_be_turned_off():
    llm = LoopingLlm()
    chat = ChatService(llm, ConversationStore(4, 60, 10), ChatSettings(repeat_ngram=0))
    pieces = chat.chat("", "Where?")
    got = [await anext(pieces) for _ in range(30)]
    await pieces.aclose()
    assert len(got) == 30
