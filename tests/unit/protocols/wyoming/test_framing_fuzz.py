"""Property-based fuzz of the Wyoming event reader: whatever bytes a peer sends, it
returns an event or None, or raises FrameError; it never hangs, and never reads an
event larger than the limit."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocols.wyoming.framing import MAX_HEADER_BYTES, FrameError, read_event

LIMIT = 4096
"""max_event_bytes for the fuzz."""

lengths = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=0, max_value=LIMIT * 2),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.booleans(),
    st.none(),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=16),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
headers = st.fixed_dictionaries(
    {"type": st.one_of(st.text(max_size=80), json_values)},
    optional={
        "data": json_values,
        "data_length": lengths,
        "payload_length": lengths,
        "version": st.text(max_size=8),
    },
)


def header_line(header: dict[str, Any]) -> bytes:
    return json.dumps(header).encode() + b"\n"


async def read_all(raw: bytes, eof: bool) -> list[Any]:
    """Every event in ``raw`` (stopping at the first fatal error), under a deadline."""
    reader = asyncio.StreamReader(limit=MAX_HEADER_BYTES)
    reader.feed_data(raw)
    if eof:
        reader.feed_eof()
    out: list[Any] = []
    async with asyncio.timeout(5):
        while True:
            if not eof and b"\n" not in reader._buffer:  # noqa: SLF001
                # No whole header line is left and the peer is quiet: an idle
                # connection waits for its next event, under the server's idle deadline.
                return out
            try:
                event = await read_event(reader, LIMIT, body_timeout_s=0.05)
            except FrameError as exc:
                out.append(exc)
                if exc.fatal:
                    return out
                continue
            if event is None:
                return out
            assert len(event.payload or b"") <= LIMIT
            assert len(json.dumps(event.data)) <= LIMIT + MAX_HEADER_BYTES
            out.append(event)


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(header=headers, body=st.binary(max_size=LIMIT * 2), eof=st.booleans())
def test_announced_lengths(header: dict[str, Any], body: bytes, eof: bool) -> None:
    asyncio.run(read_all(header_line(header) + body, eof))


@FUZZ
@given(raw=st.binary(max_size=2048), eof=st.booleans())
def test_arbitrary_bytes(raw: bytes, eof: bool) -> None:
    asyncio.run(read_all(raw, eof))


@FUZZ
@given(lines=st.lists(st.text(max_size=64), max_size=6), eof=st.booleans())
def test_arbitrary_header_lines(lines: list[str], eof: bool) -> None:
    asyncio.run(read_all("".join(f"{line}\n" for line in lines).encode(), eof))


@FUZZ
@given(extra=st.integers(min_value=1, max_value=2**40))
def test_an_event_over_the_limit_is_refused_before_its_bytes(extra: int) -> None:
    async def run() -> None:
        reader = asyncio.StreamReader(limit=MAX_HEADER_BYTES)
        reader.feed_data(header_line({"type": "audio-chunk", "payload_length": LIMIT + extra}))
        async with asyncio.timeout(5):
            try:
                await read_event(reader, LIMIT, body_timeout_s=5.0)
            except FrameError as exc:
                assert exc.fatal
            else:
                raise AssertionError("an event over the limit was accepted")

    asyncio.run(run())


def test_an_overlong_header_line_is_fatal() -> None:
    results = asyncio.run(read_all(b"{" + b" " * (MAX_HEADER_BYTES + 10) + b"\n", eof=False))
    assert len(results) == 1 and isinstance(results[0], FrameError) and results[0].fatal
