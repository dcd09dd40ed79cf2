"""The pipeline with a fake LLM and a fake synthesizer: ordering, history, errors."""

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest

from daemon.engines.llm.base import ChatMessage, LlmEngine, Sampling
from daemon.engines.tts.base import SynthesisOptions, TtsEngine
from daemon.engines.tts.service import TtsService
from daemon.engines.tts.voices import VoiceInfo, VoiceStore
from daemon.engines.workers import WorkerPool
from daemon.errors import InvalidText, PromptTooLong, TextTooLong
from daemon.speech.chat import ChatService, ChatSettings, ConversationStore
from daemon.speech.events import (
    FinalTranscript,
    ReplyChunk,
    ReplyDone,
    ReplyStarted,
    RunEnded,
    RunError,
    SpeechAudio,
    SpeechAudioStart,
    SpeechAudioStop,
    VoiceStarted,
    VoiceStopped,
)
from daemon.speech.pipeline import MAX_REPLY_EVENTS, SpeechPipeline, _one_error


class FakeLlm(LlmEngine):
    name = "fake"
    device = "cpu"

    def __init__(self, pieces: list[str], delay: float = 0.05, context_tokens: int = 0):
        self.pieces = pieces
        self.delay = delay
        self.context_tokens = context_tokens
        self.prompts: list[list[ChatMessage]] = []

    async def stream_chat(self, messages, sampling) -> AsyncIterator[str]:
        self.prompts.append(messages)
        for piece in self.pieces:
            await asyncio.sleep(self.delay)
            yield piece


class FakeTts(TtsEngine):
    device = "cpu"

    def __init__(self):
        self.spoken: list[str] = []

    def preload(self, voice: VoiceInfo) -> None:
        pass

    def synthesize(self, voice, sentence, options) -> Iterator[bytes]:
        self.spoken.append(sentence)
        yield b"\x01\x00" * 100


def build(llm: LlmEngine, tmp_path, max_turns: int = 4):
    tts = TtsService(
        FakeTts(), VoiceStore(tmp_path), WorkerPool("tts", 1, 8), None, "en_US-joe-medium", 0.0, 200
    )
    chat = ChatService(llm, ConversationStore(max_turns, 60, 10), ChatSettings("Be brief."))
    return SpeechPipeline(chat, tts), chat


async def test_speech_starts_before_the_reply_is_complete(tmp_path):
    # 0.2 s between pieces: the first sentence's audio has 0.4 s to come, longer
    # than the garbage collector's pauses in a process holding the whole test run.
    llm = FakeLlm(["The lights", " are on now.", " Anything", " else you need?"], delay=0.2)
    pipeline, _ = build(llm, tmp_path)
    events = [e async for e in pipeline.run(text="lights on", conversation_id="c1")]
    kinds = [type(e) for e in events]
    assert kinds[0] is ReplyStarted and kinds[-1] is RunEnded
    first_audio = kinds.index(SpeechAudio)
    last_chunk = len(kinds) - 1 - kinds[::-1].index(ReplyChunk)
    assert first_audio < last_chunk, "TTS must start on the first sentence"
    assert kinds.index(SpeechAudioStart) < first_audio < kinds.index(SpeechAudioStop)
    spoken = [e.sentence for e in events if isinstance(e, SpeechAudio)]
    # The first piece is a short phrase (a break before "on"), then whole sentences.
    assert spoken == ["The lights are", "on now.", "Anything else you need?"]
    done = next(e for e in events if isinstance(e, ReplyDone))
    assert done.text == "The lights are on now. Anything else you need?"


async def test_a_markdown_reply_is_spoken_as_words(tmp_path):
    llm = FakeLlm(
        ["**Sure!** ", "Here is the list:\n", "- milk\n", "- eggs 🥚\n\n", "👍\n\n", "Done."]
    )
    pipeline, _ = build(llm, tmp_path)
    events = [e async for e in pipeline.run(text="shopping list", conversation_id="c1")]
    assert not [e for e in events if isinstance(e, RunError)]
    said = " ".join(e.sentence for e in events if isinstance(e, SpeechAudio))
    assert not set(said) & set("*#-`🥚👍"), said
    assert "Sure!" in said and "milk" in said and "eggs" in said and "Done." in said
    # The text reply keeps the Markdown: a screen can render it.
    done = next(e for e in events if isinstance(e, ReplyDone))
    assert "**Sure!**" in done.text


async def test_history_is_kept_per_conversation_and_bounded(tmp_path):
    llm = FakeLlm(["Ok."], delay=0)
    _, chat = build(llm, tmp_path, max_turns=4)
    for i in range(6):
        _ = [p async for p in chat.chat("a", f"question {i}")]
    _ = [p async for p in chat.chat("b", "other")]
    asked = [[m.content for m in prompt if m.role == "user"] for prompt in llm.prompts]
    # Up to four turns; past them the oldest half goes at once, so the prompt's start
    # stays the same for two replies (a local model keeps what it evaluated).
    assert asked[4] == ["question 0", "question 1", "question 2", "question 3", "question 4"]
    assert asked[5] == ["question 3", "question 4", "question 5"]
    assert asked[6] == ["other"]
    assert all(prompt[0].content == "Be brief." for prompt in llm.prompts)


def test_history_is_forgotten_in_steps_of_half():
    store = ConversationStore(max_turns=8, ttl_s=60, max_conversations=2)
    sizes = []
    for i in range(14):
        store.add("a", f"q{i}", "a")
        sizes.append(len(store.history("a")) // 2)
    assert sizes == [1, 2, 3, 4, 5, 6, 7, 8, 4, 5, 6, 7, 8, 4]
    assert store.history("a")[-2].content == "q13"
    one = ConversationStore(max_turns=1, ttl_s=60, max_conversations=2)
    one.add("a", "q0", "a")
    one.add("a", "q1", "a")
    assert [m.content for m in one.history("a")] == ["q1", "a"]
    none = ConversationStore(max_turns=0, ttl_s=60, max_conversations=2)
    none.add("a", "q0", "a")
    assert none.history("a") == []


def test_conversations_expire_and_are_capped():
    now = [0.0]
    store = ConversationStore(max_turns=3, ttl_s=10, max_conversations=2, clock=lambda: now[0])
    store.add("a", "hi", "hello")
    now[0] = 5
    store.add("b", "hi", "hello")
    now[0] = 8
    store.add("c", "hi", "hello")
    assert store.history("a") == [] and len(store) == 2
    now[0] = 16
    assert store.history("b") == [] and store.history("c") != []


async def test_history_is_trimmed_to_fit_the_context(tmp_path):
    llm = FakeLlm(["x" * 300], delay=0, context_tokens=400)
    _, chat = build(llm, tmp_path)
    for _ in range(5):
        _ = [p async for p in chat.chat("a", "tell me more " * 20)]
    assert llm.count_tokens(llm.prompts[-1]) <= 400 - Sampling().max_tokens


async def test_errors_become_one_run_error_event(tmp_path):
    class Failing(FakeLlm):
        async def stream_chat(self, messages, sampling):
            raise PromptTooLong("prompt is 9999 tokens")
            yield ""

    pipeline, _ = build(Failing([]), tmp_path)
    events = [e async for e in pipeline.run(text="hi")]
    assert events[-2:] == [RunError("prompt-too-long", "prompt is 9999 tokens"), RunEnded()]
    unknown = [e async for e in pipeline.run(text="hi", tts_options=SynthesisOptions(voice="nope"))]
    assert isinstance(unknown[0], RunError) and unknown[0].code == "unknown-voice"


async def test_prompt_limits(tmp_path):
    _, chat = build(FakeLlm(["ok"]), tmp_path)
    with pytest.raises(InvalidText):
        chat.build_messages("", "   ")
    with pytest.raises(TextTooLong):
        chat.build_messages("", "x" * 5000)


def speech_session(asr=None):
    from daemon.audio.pcm import AudioFormat
    from daemon.speech.endpoint import EndpointConfig
    from daemon.speech.session import SessionOptions, SessionSettings, SpeechSession
    from tests.helpers import EnergyVad, FakeAsr

    session = SpeechSession(
        asr or FakeAsr(),
        WorkerPool("asr", 1, 8),
        EnergyVad(),
        WorkerPool("vad", 1, 8),
        SessionSettings(endpoint=EndpointConfig(0.09, 0.24, 0.6)),
        SessionOptions(partials=False),
    )
    session.start(AudioFormat(16000, 2, 1))
    return session


async def feed(session, *parts):
    from tests.helpers import chunks

    for part in parts:
        for piece in chunks(part.tobytes(), (640,)):
            await session.feed(piece)
            await asyncio.sleep(0)


def read(run) -> asyncio.Task:
    """Read a run's one stream from the start, as adapters do."""

    async def collect():
        return [e async for e in run.events()]

    return asyncio.ensure_future(collect())


async def test_reply_starts_speculatively_and_is_used(tmp_path):
    from tests.helpers import eventually, silence, tone

    llm = FakeLlm(["Done. The lights", " are on."], delay=0.01)
    pipeline, chat = build(llm, tmp_path)
    session = speech_session()
    run = pipeline.start(session=session, conversation_id="k")
    reader = read(run)
    await feed(session, tone(1.0), silence(0.3))
    # The speculative reply runs while the client still sends silence.
    await eventually(lambda: len(llm.prompts) >= 1)
    assert len(llm.prompts) == 1, "the reply should start before the audio ends"
    await feed(session, silence(0.5))
    await asyncio.wait_for(session.finish(), 5)
    events = await asyncio.wait_for(reader, 5)
    assert run.speculation_used and len(llm.prompts) == 1
    kinds = [type(e) for e in events]
    # The session's events pass through the run: one stream for the adapter.
    assert kinds[0] is VoiceStarted and kinds.index(VoiceStopped) < kinds.index(FinalTranscript)
    assert any(isinstance(e, SpeechAudio) for e in events) and events[-1] == RunEnded()
    assert [m.content for m in chat.conversations.history("k")][1] == "Done. The lights are on."


async def test_speech_resuming_cancels_the_speculative_reply(tmp_path):
    from tests.helpers import eventually, silence, tone

    llm = FakeLlm(["Ok", " then", "."], delay=0.05)
    pipeline, chat = build(llm, tmp_path)
    session = speech_session()
    run = pipeline.start(session=session, conversation_id="k")
    reader = read(run)
    await feed(session, tone(0.6), silence(0.35))
    assert await eventually(lambda: bool(llm.prompts)), "no speculative reply"
    first_text = llm.prompts[0][-1].content
    await feed(session, tone(0.6), silence(0.8))
    await asyncio.wait_for(session.finish(), 5)
    events = await asyncio.wait_for(reader, 5)
    final = next(e for e in events if isinstance(e, FinalTranscript))
    assert final.text != first_text
    assert llm.prompts[-1][-1].content == final.text
    history = chat.conversations.history("k")
    assert [m.content for m in history][::2] == [final.text]  # the cancelled reply left no trace
    assert events[-1] == RunEnded()


async def test_every_run_ends_with_run_ended_even_without_text(tmp_path):
    pipeline, _ = build(FakeLlm(["x"]), tmp_path)
    assert [e async for e in pipeline.run(text="   ")] == [RunEnded()]
    session = speech_session()
    reader = read(pipeline.start(session=session))
    await asyncio.wait_for(session.finish(), 5)
    events = await asyncio.wait_for(reader, 5)
    assert events[0].text == "" and events[-1] == RunEnded()
    broken = speech_session()
    reader = read(pipeline.start(session=broken))
    await broken.close()  # e.g. the upload failed: no final, and still RunEnded
    assert await asyncio.wait_for(reader, 5) == [RunEnded()]


async def test_a_tts_failure_stops_the_llm(tmp_path):
    class Endless(FakeLlm):
        produced = 0

        async def stream_chat(self, messages, sampling):
            for i in range(1000):
                Endless.produced += 1
                await asyncio.sleep(0.005)
                yield f"Sentence number {i}. "

    class Broken(FakeTts):
        def synthesize(self, voice, sentence, options):
            raise RuntimeError("speaker exploded")

    pipeline, _ = build(Endless([]), tmp_path)
    pipeline.tts.engine = Broken()
    events = [e async for e in pipeline.run(text="talk")]
    assert events[-2] == RunError("internal-error", "RuntimeError: speaker exploded")
    produced = Endless.produced
    await asyncio.sleep(0.2)
    assert Endless.produced == produced < 100


async def test_a_reply_nobody_reads_waits_instead_of_growing(tmp_path):
    class Counting(FakeLlm):
        produced = 0

        async def stream_chat(self, messages, sampling):
            for i in range(1000):
                Counting.produced += 1
                await asyncio.sleep(0)
                yield f"word{i} "

    pipeline, _ = build(Counting([]), tmp_path)
    events = pipeline.run(text="talk", speak=False)
    first = await asyncio.wait_for(anext(events), 5)
    assert isinstance(first, ReplyStarted)
    await asyncio.sleep(0.2)
    assert Counting.produced <= MAX_REPLY_EVENTS + 2
    await asyncio.wait_for(events.aclose(), 5)


def test_a_failed_reply_reports_its_typed_error_and_logs_the_rest(caplog):
    group = BaseExceptionGroup(
        "stages", [RuntimeError("tts"), TextTooLong("too long"), asyncio.CancelledError()]
    )
    chosen = _one_error(group)
    assert isinstance(chosen, TextTooLong)
    assert "RuntimeError: tts" in caplog.text
    assert isinstance(_one_error(BaseExceptionGroup("x", [ValueError("v")])), ValueError)
    with pytest.raises(asyncio.CancelledError):
        _one_error(BaseExceptionGroup("x", [asyncio.CancelledError()]))
    with pytest.raises(BaseExceptionGroup):
        _one_error(BaseExceptionGroup("x", [KeyboardInterrupt(), ValueError("v")]))


async def test_hands_free_replies_start_on_the_speculative_transcript(tmp_path):
    from daemon.speech.events import SpeculationDiscarded, SpeculativeTranscript

    llm = FakeLlm(["Done.", " Lights on."], delay=0.01)
    pipeline, chat = build(llm, tmp_path)
    replies = pipeline.replies("hf")
    final = FinalTranscript("turn on the lights", "en", 1000, 800, 1.0, speculative=True)
    # A guess that speech then overtook is dropped, and the next guess is kept.
    await replies.observe(SpeculativeTranscript("turn on the", 600))
    await replies.observe(SpeculationDiscarded())
    await replies.observe(SpeculativeTranscript("turn on the lights", 800))
    for _ in range(100):
        await asyncio.sleep(0.01)
        if llm.prompts:
            break
    events = [e async for e in replies.start(final).events()]
    assert len(llm.prompts) == 1  # the final reused the running speculative reply
    assert llm.prompts[-1][-1].content == "turn on the lights"
    assert any(isinstance(e, SpeechAudio) for e in events) and events[-1] == RunEnded()
    assert [m.content for m in chat.conversations.history("hf")] == [
        "turn on the lights",
        "Done. Lights on.",
    ]
    # A final that differs from the guess gets a fresh reply; close drops a stray guess.
    await replies.observe(SpeculativeTranscript("what time", 500))
    other = FinalTranscript("what time is it", "en", 1000, 800, 1.0)
    assert [e async for e in replies.start(other).events()][-1] == RunEnded()
    assert llm.prompts[-1][-1].content == "what time is it"
    await replies.observe(SpeculativeTranscript("never claimed", 500))
    await replies.close()
