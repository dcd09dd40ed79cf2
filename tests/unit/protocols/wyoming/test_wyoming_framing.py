"""Wyoming framing with limits, and append-only transcript chunks (pure logic)."""

import asyncio
import json

import pytest

from protocols.wyoming.chunks import TranscriptChunker
from protocols.wyoming.framing import MAX_HEADER_BYTES, FrameError, parse_header, read_event


def reader_with(data: bytes) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=MAX_HEADER_BYTES + 1)
    reader.feed_data(data)
    reader.feed_eof()
    return reader


async def read(data: bytes, max_bytes: int = 1 << 20):
    return await read_event(reader_with(data), max_bytes, 5.0)


async def test_reads_header_data_and_payload():
    data = json.dumps({"rate": 16000}).encode()
    header = {"type": "audio-chunk", "data": {"width": 2}, "data_length": len(data)}
    header["payload_length"] = 4
    event = await read(json.dumps(header).encode() + b"\n" + data + b"\x01\x02\x03\x04")
    assert event.type == "audio-chunk"
    assert event.data == {"width": 2, "rate": 16000}
    assert event.payload == b"\x01\x02\x03\x04"


async def test_end_of_stream_is_none_and_a_cut_payload_is_a_close():
    assert await read(b"") is None
    cut = json.dumps({"type": "audio-chunk", "payload_length": 100}).encode() + b"\n" + b"x" * 10
    assert await read(cut) is None


@pytest.mark.parametrize(
    ("line", "fatal", "message"),
    [
        (b"{not json\n", False, "not valid JSON"),
        (b"[1, 2]\n", False, "JSON object"),
        (b'{"data": {}}\n', False, "'type'"),
        (b'{"type": "x", "data": 5}\n', False, "'data'"),
        (b'{"type": "x", "data_length": -1}\n', True, "non-negative"),
        (b'{"type": "x", "payload_length": "9"}\n', True, "non-negative"),
        (b'{"type": "x", "payload_length": 2000000}\n', True, "the limit is 1048576"),
        (b'{"type": "x", "data_length": 600000, "payload_length": 600000}\n', True, "limit"),
        (b"\n", False, "empty"),
    ],
)
async def test_bad_headers_name_the_problem(line, fatal, message):
    with pytest.raises(FrameError) as caught:
        await read(line)
    assert caught.value.fatal is fatal
    assert message in caught.value.message


async def test_a_header_line_over_64_kib_is_fatal():
    line = b'{"type": "x", "data": {"t": "' + b"a" * MAX_HEADER_BYTES + b'"}}\n'
    with pytest.raises(FrameError) as caught:
        await read(line)
    assert caught.value.fatal
    assert "64" in caught.value.message or str(MAX_HEADER_BYTES) in caught.value.message


async def test_a_payload_that_never_comes_times_out():
    reader = asyncio.StreamReader(limit=MAX_HEADER_BYTES + 1)
    reader.feed_data(b'{"type": "audio-chunk", "payload_length": 10}\n12345')
    with pytest.raises(FrameError, match="did not arrive"):
        await read_event(reader, 1 << 20, 0.05)


def test_parse_header_returns_lengths():
    header, data_length, payload_length = parse_header(
        b'{"type": "x", "data_length": 3, "payload_length": 5}', 100
    )
    assert (header["type"], data_length, payload_length) == ("x", 3, 5)


def test_chunks_only_carry_words_two_hypotheses_agree_on():
    chunker = TranscriptChunker()
    assert chunker.partial("Turn") is None
    assert chunker.partial("Turn on the") == "Turn"
    assert chunker.partial("Turn on the kitch") == " on the"
    # "kitch" was revised before it was sent: harmless.
    assert chunker.partial("Turn on the kitchen lights") is None
    assert chunker.partial("Turn on the kitchen lights now") == " kitchen lights"
    assert chunker.final("Turn on the kitchen lights.") == "."
    chunker = TranscriptChunker()
    chunker.partial("Turn on the kitchen")
    assert chunker.partial("Turn on the kitchen lights") == "Turn on the kitchen"
    assert chunker.final("Turn on the kitchen lights.") == " lights."
    assert chunker.sent == "Turn on the kitchen lights."


def test_chunks_join_to_the_final_or_defer_to_it():
    chunker = TranscriptChunker()
    assert chunker.final("") is None
    assert chunker.final("Hello.") == "Hello."
    assert chunker.final("Hello.") is None
    other = TranscriptChunker()
    other.partial("Turn off the")
    assert other.partial("Turn off the lights") == "Turn off the"
    # The final disagrees with what was sent: no chunk; the transcript corrects it.
    assert other.final("Turn on the lights.") is None
