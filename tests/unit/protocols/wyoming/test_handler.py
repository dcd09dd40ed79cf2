"""The Wyoming adapter on the wire, over fake engines: a scripted client on loopback.

The client writes and reads frames with the ``wyoming`` library's own event classes
and sends audio the way Home Assistant does: 10 ms chunks of 16 kHz s16 mono (320
bytes). Several requests share one connection, as satellites keep theirs open.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest
from wyoming.asr import Transcribe, Transcript, TranscriptChunk, TranscriptStart, TranscriptStop
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event, async_read_event, async_write_event
from wyoming.handle import Handled, HandledChunk, HandledStart, HandledStop
from wyoming.info import Describe, Info
from wyoming.ping import Ping, Pong
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeVoice,
)
from wyoming.vad import VoiceStarted, VoiceStopped

from daemon.ops.mdns import instance_name
from protocols.wyoming.server import WyomingServer
from tests.fakes import (
    KITCHEN,
    TIME,
    FakeEngines,
    add_user_voice,
    fake_config,
    fake_engines,
    fake_speech,
    silence,
    tone,
    utterance,
)

TIMEOUT_S = 10.0
HA_CHUNK = 320
"""Bytes per audio-chunk from Home Assistant: 10 ms of 16 kHz s16 mono."""
VOICE = "en_US-joe-medium"


class Client:
    """One Wyoming connection, written and read with the wyoming library."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def send(self, *events: object) -> None:
        for item in events:
            event = item if isinstance(item, Event) else item.event()  # type: ignore[attr-defined]
            async with asyncio.timeout(TIMEOUT_S):
                await async_write_event(event, self.writer)

    async def read(self) -> Event | None:
        """The next event (None when the server closed the connection)."""
        async with asyncio.timeout(TIMEOUT_S):
            return await async_read_event(self.reader)

    async def expect(self, kind: type) -> Event:
        event = await self.read()
        assert event is not None, f"connection closed; expected {kind.__name__}"
        assert kind.is_type(event.type), f"expected {kind.__name__}, got {event.type}"  # type: ignore[attr-defined]
        return event

    async def until(self, kind: type) -> list[Event]:
        """Every event up to and including the first of type ``kind``."""
        events: list[Event] = []
        while True:
            event = await self.read()
            assert event is not None, f"connection closed before {kind.__name__}: {events}"
            events.append(event)
            if kind.is_type(event.type):  # type: ignore[attr-defined]
                return events

    async def error(self) -> Error:
        return Error.from_event(await self.expect(Error))

    async def closed(self) -> bool:
        """Whether the server closed the connection (nothing more arrives)."""
        return await self.read() is None

    async def stream_audio(self, samples: np.ndarray, rate: int = 16000) -> None:
        """audio-start, 320-byte audio-chunks, audio-stop."""
        await self.send(AudioStart(rate=rate, width=2, channels=1))
        await self.send_chunks(samples.astype("<i2").tobytes(), rate)
        await self.send(AudioStop())

    async def send_chunks(self, pcm: bytes, rate: int = 16000) -> None:
        for offset in range(0, len(pcm), HA_CHUNK):
            chunk = pcm[offset : offset + HA_CHUNK]
            await self.send(AudioChunk(rate=rate, width=2, channels=1, audio=chunk))

    async def close(self) -> None:
        self.writer.close()
        try:
            async with asyncio.timeout(TIMEOUT_S):
                await self.writer.wait_closed()
        except (ConnectionError, TimeoutError):
            pass


class Daemon:
    """A real WyomingServer on 127.0.0.1 (port 0) over fake engines."""

    def __init__(self, fakes: FakeEngines, server: WyomingServer) -> None:
        self.fakes = fakes
        self.server = server
        self.outcomes: list[str] = []

    async def connect(self) -> Client:
        async with asyncio.timeout(TIMEOUT_S):
            reader, writer = await asyncio.open_connection("127.0.0.1", self.server.port)
        return Client(reader, writer)


async def start_daemon(tmp_path: Path, max_connections: int = 8) -> Daemon:
    config = fake_config(tmp_path)
    add_user_voice(config.voices_path, "de_DE-duo", "de_DE", 16000, ("anna", "bernd"))
    fakes = fake_engines(config)
    daemon: Daemon
    server = WyomingServer(
        "tcp://127.0.0.1:0",
        fakes.services,
        max_connections,
        config.wyoming.max_event_bytes,
        2.0,
        observer=lambda code: daemon.outcomes.append(code),
    )
    daemon = Daemon(fakes, server)
    async with asyncio.timeout(TIMEOUT_S):
        await server.start()
    return daemon


async def stop_daemon(daemon: Daemon) -> None:
    async with asyncio.timeout(TIMEOUT_S):
        await daemon.server.stop(grace_s=1.0)
    daemon.fakes.close()


@pytest.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[Daemon]:
    running = await start_daemon(tmp_path)
    yield running
    await stop_daemon(running)


@pytest.fixture
async def client(daemon: Daemon) -> AsyncIterator[Client]:
    connection = await daemon.connect()
    yield connection
    await connection.close()


def kinds(events: list[Event]) -> list[str]:
    return [e.type for e in events]


def audio_of(events: list[Event]) -> bytes:
    return b"".join(AudioChunk.from_event(e).audio for e in events if AudioChunk.is_type(e.type))


# --------------------------------------------------------------------------- describe


async def test_describe_lists_models_voices_and_the_conversation_agent(daemon, client):
    await client.send(Describe())
    info = Info.from_event(await client.expect(Info))

    (asr,) = info.asr
    assert asr.installed and asr.supports_transcript_streaming
    # Home Assistant titles the entry and the discovery card with the first program's name.
    title = instance_name(daemon.fakes.engines.config.mdns)
    assert title.startswith("Hearth on ")
    assert {p.name for p in [*info.asr, *info.tts, *info.handle]} == {title}
    assert {m.name: m.languages for m in asr.models} == {"fake": ["en"], "other": ["en"]}

    (tts,) = info.tts
    assert tts.installed and tts.supports_synthesize_streaming
    voices = {v.name: v for v in tts.voices}
    assert set(voices) == {VOICE, "de_DE-duo"}
    assert voices[VOICE].languages == ["en_US"] and not voices[VOICE].speakers
    assert [s.name for s in voices["de_DE-duo"].speakers or []] == ["anna", "bernd"]
    assert voices["de_DE-duo"].languages == ["de_DE"]

    (handle,) = info.handle
    assert handle.installed and handle.supports_handled_streaming
    assert [m.name for m in handle.models] == ["fake-llm"]
    assert not info.wake and not info.intent
    assert daemon.outcomes == [""]


async def test_a_voice_added_to_the_store_shows_up_in_the_next_describe(daemon, client):
    await client.send(Describe())
    before = Info.from_event(await client.expect(Info))
    add_user_voice(daemon.fakes.engines.config.voices_path, "en_GB-new", "en_GB", 22050)
    await client.send(Describe())
    after = Info.from_event(await client.expect(Info))
    names = lambda info: {v.name for v in info.tts[0].voices}  # noqa: E731
    assert names(after) - names(before) == {"en_GB-new"}


async def test_ping_answers_pong_with_its_text(client):
    await client.send(Ping(text="hello"))
    assert Pong.from_event(await client.expect(Pong)).text == "hello"


# --------------------------------------------------------------------------- ASR


async def test_transcribe_home_assistant_style_event_by_event(daemon, client):
    await client.send(Transcribe(language="en"))
    await client.stream_audio(utterance(220.0))
    events = await client.until(TranscriptStop)

    assert events[0].type == "transcript-start"
    assert TranscriptStart.from_event(events[0]).language == "en"
    transcript = Transcript.from_event(events[-2])
    assert (transcript.text, transcript.language) == (KITCHEN, "en")
    middle = kinds(events[1:-2])
    assert middle.count("voice-started") == 1 and middle.count("voice-stopped") == 1
    assert middle.index("voice-started") < middle.index("voice-stopped")
    assert set(middle) <= {"voice-started", "voice-stopped", "transcript-chunk"}
    # Appending every chunk gives the transcript: chunks are never retracted.
    chunks = [TranscriptChunk.from_event(e).text for e in events if e.type == "transcript-chunk"]
    assert chunks and "".join(chunks) == transcript.text

    started = VoiceStarted.from_event(events[middle.index("voice-started") + 1])
    stopped = VoiceStopped.from_event(events[middle.index("voice-stopped") + 1])
    assert 200 <= started.timestamp <= 400  # speech began 300 ms in
    assert 1400 <= stopped.timestamp <= 1600  # and ended 1.5 s in
    assert daemon.outcomes == [""]


async def test_partial_chunks_arrive_while_the_person_still_speaks(daemon, client):
    seen: list[Event] = []

    async def read_all() -> None:
        while (event := await client.read()) is not None:
            seen.append(event)
            if event.type == "transcript-stop":
                return

    reader = asyncio.create_task(read_all())
    await client.send(Transcribe(), AudioStart(rate=16000, width=2, channels=1))
    await client.send_chunks(silence(0.3).tobytes())
    # Keep speaking (10 ms at a time, a little paced) until a chunk comes back.
    speech = tone(3.0).tobytes()
    offset = 0
    async with asyncio.timeout(TIMEOUT_S):
        while not any(e.type == "transcript-chunk" for e in seen):
            assert offset < len(speech), "no transcript-chunk while speech was arriving"
            await client.send_chunks(speech[offset : offset + HA_CHUNK])
            offset += HA_CHUNK
            await asyncio.sleep(0.002)
    first = next(e for e in seen if e.type == "transcript-chunk")
    assert KITCHEN.startswith(TranscriptChunk.from_event(first).text.strip())
    await client.send_chunks(silence(0.5).tobytes())
    await client.send(AudioStop())
    async with asyncio.timeout(TIMEOUT_S):
        await reader
    assert seen[-1].type == "transcript-stop"
    assert Transcript.from_event(seen[-2]).text.startswith("Turn on")


async def test_one_connection_serves_many_requests_in_a_row(daemon, client):
    # Speech, silence, speech in a 48 kHz stream, TTS between: each answer is its own.
    await client.send(Transcribe())
    await client.stream_audio(utterance(220.0))
    assert Transcript.from_event((await client.until(TranscriptStop))[-2]).text == KITCHEN

    await client.send(Transcribe(name="other"))
    await client.stream_audio(silence(1.0))
    events = await client.until(TranscriptStop)
    assert kinds(events) == ["transcript-start", "transcript", "transcript-stop"]
    assert Transcript.from_event(events[1]).text == ""
    assert not daemon.fakes.asr["other"].calls  # no speech, no decode

    await client.send(Synthesize(text="Hello there."))
    assert (await client.until(AudioStop))[0].type == "audio-start"

    await client.send(Transcribe(name="other"))
    await client.stream_audio(utterance(440.0, rate=48000), rate=48000)
    assert Transcript.from_event((await client.until(TranscriptStop))[-2]).text == TIME
    assert daemon.fakes.asr["other"].calls
    assert daemon.outcomes == ["", "", "", ""]


async def test_transcribe_language_reaches_the_model(daemon, client):
    daemon.fakes.asr["fake"].languages = ("en", "de")
    await client.send(Transcribe(language="de"))
    await client.stream_audio(utterance(220.0))
    events = await client.until(TranscriptStop)
    assert TranscriptStart.from_event(events[0]).language == "de"
    assert Transcript.from_event(events[-2]).language == "de"
    assert {c.options.language for c in daemon.fakes.asr["fake"].calls} == {"de"}


async def test_names_and_terms_bias_the_decode(daemon, client):
    # wyoming 1.10: Home Assistant sends its area and device names with the request.
    await client.send(Transcribe(transcript_names=["Ada's lamp"], transcript_terms=["porch"]))
    await client.stream_audio(utterance(220.0))
    await client.until(TranscriptStop)
    prompts = {c.options.initial_prompt for c in daemon.fakes.asr["fake"].calls}
    assert prompts == {"Ada's lamp, porch."}
    await client.send(Transcribe())  # the next request on the connection has none
    await client.stream_audio(utterance(220.0))
    await client.until(TranscriptStop)
    assert daemon.fakes.asr["fake"].calls[-1].options.initial_prompt is None


async def test_unknown_model_is_an_error_then_eof(daemon, client):
    await client.send(Transcribe(name="large-v9"))
    error = await client.error()
    assert error.code == "unknown-model" and "large-v9" in error.text
    assert await client.closed()
    assert daemon.outcomes == ["unknown-model"]
    # The next request, on a new connection as Home Assistant makes it, works.
    other = await daemon.connect()
    await other.send(Transcribe())
    await other.stream_audio(utterance(220.0))
    assert Transcript.from_event((await other.until(TranscriptStop))[-2]).text == KITCHEN
    await other.close()


async def test_a_language_the_model_does_not_speak_is_refused_with_the_list(daemon, client):
    await client.send(Transcribe(language="de"))
    error = await client.error()
    assert error.code == "unsupported-language"
    assert "'de'" in error.text and "en" in error.text
    assert await client.closed()
    assert not daemon.fakes.asr["fake"].calls


async def test_audio_over_the_limit_is_one_error_then_eof(daemon, client):
    await client.send(Transcribe())
    await client.stream_audio(tone(5.0))  # limits.max_audio_s is 4
    events = await client.until(Error)
    assert Error.from_event(events[-1]).code == "audio-too-long"
    # The rest of that stream (its chunks and audio-stop) is dropped without more errors.
    assert await client.closed()


@pytest.mark.parametrize(
    ("first", "code"),
    [
        (AudioChunk(rate=16000, width=2, channels=1, audio=b"\0" * 320), "invalid-audio"),
        (AudioStop(), "invalid-audio"),
        (AudioStart(rate=16000, width=3, channels=1), "invalid-audio"),
        (SynthesizeChunk(text="x"), "invalid-request"),
        (SynthesizeStop(), "invalid-request"),
    ],
)
async def test_out_of_order_events_get_error_codes_then_eof(client, first, code):
    await client.send(first)
    assert (await client.error()).code == code
    assert await client.closed()


@pytest.mark.parametrize(
    "event",
    [Event(type="frobnicate", data={"x": 1}), Event(type="select-program", data={"name": "x"})],
)
async def test_an_unknown_event_or_select_program_is_skipped_silently(daemon, client, event):
    # The wyoming README asks servers to skip events they do not know; HA 2026 sends
    # select-program before a request, and an error there made it fail.
    await client.send(event)
    await client.send(Ping(text="still there"))
    assert Pong.from_event(await client.expect(Pong)).text == "still there"
    await client.send(Transcribe())
    await client.stream_audio(utterance(220.0))
    assert Transcript.from_event((await client.until(TranscriptStop))[-2]).text == KITCHEN


async def test_an_oversized_event_is_refused_and_the_connection_closed(daemon, client):
    header = {"type": "audio-chunk", "data_length": 0, "payload_length": 70_000}
    client.writer.write(json.dumps(header).encode() + b"\n")
    error = await client.error()
    assert error.code == "invalid-event" and "65536" in error.text
    assert await client.closed()
    # Other connections are unaffected.
    other = await daemon.connect()
    await other.send(Ping(text="ok"))
    assert Pong.from_event(await other.expect(Pong)).text == "ok"
    await other.close()


async def test_a_bad_header_line_is_an_error_then_eof(client):
    client.writer.write(b"this is not json\n")
    assert (await client.error()).code == "invalid-event"
    assert await client.closed()


async def test_connections_over_the_cap_get_busy(tmp_path):
    daemon = await start_daemon(tmp_path, max_connections=1)
    first = await daemon.connect()
    try:
        await first.send(Ping())
        await first.expect(Pong)
        # In a request: an idle connection would be closed to make room instead.
        await first.send(Transcribe())
        await first.send(AudioStart(rate=16000, width=2, channels=1))
        async with asyncio.timeout(TIMEOUT_S):
            while not daemon.server.busy():
                await asyncio.sleep(0.01)
        second = await daemon.connect()
        assert (await second.error()).code == "busy"
        assert await second.closed()
        await second.close()
    finally:
        await first.close()
        await stop_daemon(daemon)


# --------------------------------------------------------------------------- TTS


async def test_synthesize_sends_one_audio_group(daemon, client):
    text = "Dinner is ready. Come and eat!"
    await client.send(Synthesize(text=text))
    events = await client.until(AudioStop)
    assert events[0].type == "audio-start" and events[-1].type == "audio-stop"
    assert set(kinds(events[1:-1])) == {"audio-chunk"}
    start = AudioStart.from_event(events[0])
    assert (start.rate, start.width, start.channels) == (22050, 2, 1)
    expected = fake_speech("Dinner is ready.", 22050) + fake_speech("Come and eat!", 22050)
    assert audio_of(events) == expected
    spoken = daemon.fakes.tts.spoken
    assert [s.sentence for s in spoken] == ["Dinner is ready.", "Come and eat!"]
    assert {s.voice for s in spoken} == {VOICE}
    for event in events[1:-1]:
        chunk = AudioChunk.from_event(event)
        assert (chunk.rate, chunk.width, chunk.channels) == (22050, 2, 1)


async def test_synthesize_picks_voice_by_name_language_and_speaker(daemon, client):
    await client.send(Synthesize(text="Hallo.", voice=SynthesizeVoice(language="de_DE")))
    start = AudioStart.from_event((await client.until(AudioStop))[0])
    assert start.rate == 16000
    voice = SynthesizeVoice(name="de_DE-duo", speaker="bernd")
    await client.send(Synthesize(text="Guten Tag.", voice=voice))
    await client.until(AudioStop)
    assert [(s.voice, s.speaker) for s in daemon.fakes.tts.spoken] == [
        ("de_DE-duo", None),
        ("de_DE-duo", "bernd"),
    ]


@pytest.mark.parametrize(
    ("request_event", "code"),
    [
        (Synthesize(text="Hi.", voice=SynthesizeVoice(name="xx_XX-nobody")), "unknown-voice"),
        (Synthesize(text="word " * 100), "text-too-long"),
        (Synthesize(text="   "), "invalid-text"),
        (SynthesizeStart(voice=SynthesizeVoice(name="xx_XX-nobody")), "unknown-voice"),
    ],
)
async def test_synthesize_errors_have_codes_then_eof(daemon, client, request_event, code):
    await client.send(request_event)
    assert (await client.error()).code == code
    assert await client.closed()
    assert not daemon.fakes.tts.spoken


async def test_streaming_synthesis_sends_a_group_per_sentence(daemon, client):
    text = "The lights are on. The door is locked. Good night."
    await client.send(SynthesizeStart())
    for offset in range(0, len(text), 7):  # pieces as an LLM streams them
        await client.send(SynthesizeChunk(text=text[offset : offset + 7]))
    await client.send(Synthesize(text=text))  # the copy for old servers: ignored
    await client.send(SynthesizeStop())
    events = await client.until(SynthesizeStopped)

    groups: list[list[Event]] = []
    for event in events[:-1]:
        if event.type == "audio-start":
            groups.append([])
        groups[-1].append(event)
    sentences = ["The lights are on.", "The door is locked.", "Good night."]
    assert len(groups) == len(sentences)
    for group, sentence in zip(groups, sentences, strict=True):
        assert group[0].type == "audio-start" and group[-1].type == "audio-stop"
        assert audio_of(group) == fake_speech(sentence, 22050)
    assert [s.sentence for s in daemon.fakes.tts.spoken] == sentences
    assert daemon.outcomes == [""]


async def test_streaming_synthesis_over_the_text_limit_is_an_error(daemon, client):
    await client.send(SynthesizeStart())
    await client.send(SynthesizeChunk(text="word " * 70))  # limits.max_text_chars is 300
    events = await client.until(Error)
    assert Error.from_event(events[-1]).code == "text-too-long"
    assert await client.closed()


# --------------------------------------------------------------------------- conversation


@pytest.mark.parametrize(
    "context_tokens",
    # 0: the context size is unknown, as for a remote server; the history is kept whole.
    [4096, 0],
)
async def test_conversation_streams_handled_events_and_keeps_history(
    daemon, client, context_tokens
):
    llm = daemon.fakes.llm
    llm.context_tokens = context_tokens
    context = {"conversation_id": "kitchen-1"}
    await client.send(Transcript(text="Turn on the lights", language="en", context=context))
    events = await client.until(HandledStop)
    assert kinds(events)[0] == "handled-start"
    assert kinds(events)[-2:] == ["handled", "handled-stop"]
    pieces = [HandledChunk.from_event(e).text for e in events if e.type == "handled-chunk"]
    assert pieces == llm.tokens
    handled = Handled.from_event(events[-2])
    assert handled.text == llm.reply and handled.context == context
    assert HandledStart.from_event(events[0]).context == context

    await client.send(Transcript(text="And the porch?", language="en", context=context))
    await client.until(HandledStop)
    second = [(m.role, m.content) for m in llm.prompts[-1] if m.role != "system"]
    assert second == [
        ("user", "Turn on the lights"),
        ("assistant", llm.reply),
        ("user", "And the porch?"),
    ]


async def test_an_empty_prompt_is_an_error_before_any_handled_event(client):
    await client.send(Transcript(text="  "))
    assert (await client.error()).code == "invalid-text"
    assert await client.closed()
