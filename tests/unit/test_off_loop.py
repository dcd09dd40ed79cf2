"""Blocking work (tokenizing, voice store reads, prompt files, Opus) stays off the event loop."""

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from types import SimpleNamespace

import av
import numpy as np
import pytest

from daemon.config import parse_config
from daemon.engines.llm.base import ChatMessage, LlmEngine, Sampling
from daemon.engines.llm.local import LocalLlm
from daemon.engines.tts import voices as voices_module
from daemon.engines.tts.base import SynthesisOptions, TtsEngine
from daemon.engines.tts.service import TtsService
from daemon.engines.tts.voices import VoiceInfo, VoiceStore
from daemon.engines.workers import WorkerPool
from daemon.errors import PromptTooLong, UnknownVoice
from daemon.runtime.context import Core
from daemon.runtime.requests import VoiceRequest
from daemon.runtime.services import Services
from daemon.speech.chat import ChatService, ChatSettings, ConversationStore
from daemon.voices.enroll import Enrollment
from protocols.webrtc import tracks
from protocols.webrtc.tracks import FRAME_SAMPLES, ReplyTrack
from protocols.wyoming.info import build_info

PIPER_CONFIG = {"audio": {"sample_rate": 22050}, "language": {"code": "en_US"}}


def make_voice(root, name):
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "v.onnx").write_bytes(b"not loaded by a listing")
    (folder / "v.onnx.json").write_text(json.dumps(PIPER_CONFIG))


class Threads:
    """Records the threads a fake's blocking methods ran on."""

    def __init__(self) -> None:
        self.seen: list[threading.Thread] = []

    def note(self) -> None:
        self.seen.append(threading.current_thread())

    def off_loop(self, loop_thread: threading.Thread) -> bool:
        return bool(self.seen) and loop_thread not in self.seen


# --------------------------------------------------------------------------- LLM


class CountingLlm(LlmEngine):
    name = "fake"
    device = "cpu"

    def __init__(self, threads: Threads) -> None:
        self.threads = threads
        self.context_tokens = 400

    def count_tokens(self, messages: list[ChatMessage]) -> int:
        self.threads.note()
        return super().count_tokens(messages)

    async def stream_chat(self, messages, sampling) -> AsyncIterator[str]:
        yield "x" * 300


async def test_the_history_is_measured_in_a_worker_thread():
    threads = Threads()
    chat = ChatService(CountingLlm(threads), ConversationStore(4, 60, 10), ChatSettings("Hi."))
    for _ in range(3):
        async with asyncio.timeout(5):
            _ = [p async for p in chat.chat("a", "tell me more " * 20)]
    assert threads.off_loop(threading.current_thread())


class FakeLlama:
    def __init__(self, threads: Threads) -> None:
        self.threads = threads

    def tokenize(self, data: bytes, add_bos: bool = False) -> list[int]:
        self.threads.note()
        return list(range(len(data) // 4))

    def create_chat_completion(self, **kwargs) -> Iterator[dict]:
        yield {"choices": [{"delta": {"content": "hello"}}]}


def local_llm(threads: Threads, context_tokens: int = 2048) -> LocalLlm:
    llm = LocalLlm.__new__(LocalLlm)  # no model file: the llama.cpp object is a fake
    llm.name, llm.device, llm.context_tokens = "fake", "cpu", context_tokens
    llm.pool = WorkerPool("llm", 1, 4)
    llm._lock = threading.Lock()
    llm._llama = FakeLlama(threads)
    return llm


async def test_the_local_model_tokenizes_in_its_worker():
    threads = Threads()
    llm = local_llm(threads)
    async with asyncio.timeout(5):
        pieces = [p async for p in llm.stream_chat([ChatMessage("user", "hi " * 50)], Sampling())]
    assert pieces == ["hello"]
    assert threads.off_loop(threading.current_thread())


async def test_a_prompt_too_long_for_the_local_model_is_still_refused():
    llm = local_llm(Threads(), context_tokens=64)
    with pytest.raises(PromptTooLong):
        async with asyncio.timeout(5):
            _ = [p async for p in llm.stream_chat([ChatMessage("user", "x" * 400)], Sampling())]


# --------------------------------------------------------------------------- voice store


class RecordingStore(VoiceStore):
    """A store that notes the thread of each read of the disk."""

    def __init__(self, root, threads: Threads) -> None:
        super().__init__(root)
        self.threads = threads

    def find(self, name: str) -> VoiceInfo | None:
        self.threads.note()
        return super().find(name)

    def list(self) -> list[VoiceInfo]:
        self.threads.note()
        return super().list()


class FakeTts(TtsEngine):
    device = "cpu"

    def preload(self, voice: VoiceInfo) -> None:
        pass

    def synthesize(self, voice, sentence, options) -> Iterator[bytes]:
        yield b"\x01\x00" * 100


def tts_service(store: VoiceStore) -> TtsService:
    return TtsService(FakeTts(), store, WorkerPool("tts", 1, 8), None, "mine", 0.0, 200)


async def test_synthesis_reads_the_voice_off_the_loop(tmp_path):
    make_voice(tmp_path, "mine")
    threads = Threads()
    tts = tts_service(RecordingStore(tmp_path, threads))
    async with asyncio.timeout(5):
        blocks = [b async for b in tts.stream("One. Two.", SynthesisOptions())]
        await tts.synthesize("One.", SynthesisOptions(), "pcm")
        _ = [b async for b in tts.stream_cached("One.", SynthesisOptions())]
    assert blocks and blocks[0].pcm
    assert threads.off_loop(threading.current_thread())


async def test_checks_on_the_loop_answer_from_memory(tmp_path, monkeypatch):
    make_voice(tmp_path, "mine")
    store = VoiceStore(tmp_path)
    tts = tts_service(store)
    await store.list_async()
    reads = []
    real = voices_module._read_folder
    monkeypatch.setattr(voices_module, "_read_folder", lambda f: reads.append(f) or real(f))
    assert tts.check_voice(SynthesisOptions()).name == "mine"
    assert tts.prepare("Hello.", SynthesisOptions(voice="mine"))[1] == ["Hello."]
    engines = SimpleNamespace(voices=store, tts=tts)
    core = Core(engines, parse_config("", "t.yaml"))  # type: ignore[arg-type]
    assert Services(lambda: core).voices.resolve_voice(VoiceRequest("mine")).voice == "mine"
    assert reads == []
    # A voice put in the folder since is found (its folder alone is read) ...
    make_voice(tmp_path, "new")
    assert store.lookup("new").name == "new" and len(reads) == 1
    # ... and a removed one is gone.
    await asyncio.to_thread(store.remove, "new")
    with pytest.raises(UnknownVoice, match=r"voices: .*mine\)"):
        store.lookup("new")


async def test_a_voice_changed_on_disk_is_synthesized_as_it_is_now(tmp_path):
    make_voice(tmp_path, "mine")
    store = VoiceStore(tmp_path)
    tts = tts_service(store)
    before = tts.check_voice(SynthesisOptions())
    (tmp_path / "mine" / "voice.json").write_text(json.dumps({"defaults": {"volume": 0.5}}))
    async with asyncio.timeout(5):
        voice, _ = await tts.prepare_async("Hi.", SynthesisOptions())
    assert before.volume == 1.0 and voice.volume == 0.5
    assert tts.check_voice(SynthesisOptions()).volume == 0.5  # memory follows the last read


async def test_describe_lists_the_store_off_the_loop_and_sees_new_voices(tmp_path):
    threads = Threads()
    store = RecordingStore(tmp_path, threads)
    config = parse_config("", "t.yaml")
    engines = SimpleNamespace(
        asr={}, voices=store, tts=object(), llm=None, wake=None, turn=None, config=config
    )
    core = Core(engines, config)  # type: ignore[arg-type]
    services = Services(lambda: core)
    async with asyncio.timeout(5):
        before = await build_info(services)
        make_voice(tmp_path, "fresh")
        after = await build_info(services)
    names = {v.name for v in after.tts[0].voices}
    assert "fresh" in names and "fresh" not in {v.name for v in before.tts[0].voices}
    assert threads.off_loop(threading.current_thread())


# --------------------------------------------------------------------------- enrollment


async def test_an_enrollment_reads_its_prompts_file_only_off_the_loop(tmp_path):
    prompts = tmp_path / "prompts.txt"
    config = parse_config(
        f"state_dir: {tmp_path}\nvoices:\n  prompts_file: {prompts}\n", "test-config.yaml"
    )
    enrollment = Enrollment(config, "me")  # no file yet: creating one reads nothing
    prompts.write_text("Hello there.\nGood night.\n")
    async with asyncio.timeout(5):
        assert await asyncio.to_thread(enrollment.prompt, 1) == "Good night."


# --------------------------------------------------------------------------- WebRTC


class FakeEncoder:
    def __init__(self, threads: Threads) -> None:
        self.threads = threads

    def encode(self, frame: av.AudioFrame) -> list[av.Packet]:
        self.threads.note()
        return [av.Packet(b"\xf8\xff\xfe")]


async def test_reply_audio_is_encoded_in_a_worker_thread(monkeypatch):
    threads = Threads()
    monkeypatch.setattr(tracks, "_opus_encoder", lambda: FakeEncoder(threads))
    track = ReplyTrack()
    track.play(np.zeros(16000 // 10, np.int16).tobytes(), 16000)  # 5 frames
    track.flush()
    async with asyncio.timeout(5):
        packets = [await track.recv() for _ in range(5)]
    assert [p.pts for p in packets] == [i * FRAME_SAMPLES for i in range(5)]
    assert threads.off_loop(threading.current_thread())
