"""Reading Wyoming events with limits.

The ``wyoming`` library writes events and provides the event classes; reading is
done here because every length on the wire comes from outside and must be bounded:
a header line of at most 64 KiB that ends within a deadline once it has begun,
non-negative ``data_length``/``payload_length`` whose sum stays under
``max_event_bytes``, and a deadline for the announced bytes.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from wyoming.event import Event

MAX_HEADER_BYTES = 64 * 1024
"""Longest header line accepted (the JSON line before data and payload)."""


class FrameError(Exception):
    """A malformed event. ``fatal`` means the stream cannot be resynchronized."""

    def __init__(self, message: str, fatal: bool) -> None:
        super().__init__(message)
        self.message = message
        self.fatal = fatal


def _length(header: dict[str, Any], key: str) -> int:
    value = header.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FrameError(f"{key} must be a non-negative integer, got {value!r}", fatal=True)
    return value


def _json_object(raw: bytes, what: str) -> dict[str, Any]:
    """``raw`` as a JSON object (an event's header line, or its separate data block)."""
    try:
        value = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        raise FrameError(f"{what} is not valid JSON", fatal=False) from None
    if not isinstance(value, dict):
        raise FrameError(f"{what} must be a JSON object", fatal=False)
    return value


def parse_header(line: bytes, max_event_bytes: int) -> tuple[dict[str, Any], int, int]:
    """Parse one header line; return (header, data_length, payload_length)."""
    header = _json_object(line, "event header")
    event_type = header.get("type")
    if not isinstance(event_type, str) or not event_type or len(event_type) > 64:
        raise FrameError("event header needs a string 'type'", fatal=False)
    if not isinstance(header.get("data", {}), dict):
        raise FrameError("event 'data' must be a JSON object", fatal=False)
    data_length = _length(header, "data_length")
    payload_length = _length(header, "payload_length")
    if data_length + payload_length > max_event_bytes:
        raise FrameError(
            f"event announces {data_length + payload_length} bytes of data and payload; "
            f"the limit is {max_event_bytes}",
            fatal=True,
        )
    return header, data_length, payload_length


async def read_event(
    reader: asyncio.StreamReader, max_event_bytes: int, body_timeout_s: float
) -> Event | None:
    """The next event, or None when the peer closed the connection.

    The reader must have been created with a limit of at least MAX_HEADER_BYTES
    (``asyncio.start_server(limit=...)``). An event whose data or payload is cut off
    by a disconnect counts as a closed connection: nothing of it is used.
    """
    # Waiting for an event to start has no deadline here (the server's idle timeout
    # covers that); once it has started, the rest of it (header line, data, payload)
    # is due within body_timeout_s, or a client trickling a byte at a time could hold
    # the connection. One deadline for the whole event: a timer costs about 10 us to
    # arm and cancel, and a recording sent at once is hundreds of events.
    first = await reader.read(1)
    if not first:
        return None
    in_header = True
    try:
        async with asyncio.timeout(body_timeout_s):
            line = first if first == b"\n" else first + await reader.readuntil(b"\n")
            if len(line) > MAX_HEADER_BYTES:
                raise FrameError(f"event header line is over {MAX_HEADER_BYTES} bytes", True)
            if not line.strip():
                raise FrameError("empty event header line", fatal=False)
            header, data_length, payload_length = parse_header(line, max_event_bytes)
            in_header = False
            data: dict[str, Any] = dict(header.get("data") or {})
            payload: bytes | None = None
            if data_length:
                data.update(_json_object(await reader.readexactly(data_length), "event data"))
            if payload_length:
                payload = await reader.readexactly(payload_length)
    except asyncio.IncompleteReadError as exc:
        if in_header and (first + exc.partial).strip():
            raise FrameError("connection closed in the middle of an event header", True) from None
        return None
    except asyncio.LimitOverrunError:
        raise FrameError(f"event header line is over {MAX_HEADER_BYTES} bytes", True) from None
    except TimeoutError:
        if in_header:
            message = f"event header line did not end within {body_timeout_s:g} s"
        else:
            message = f"event data or payload did not arrive within {body_timeout_s:g} s"
        raise FrameError(message, fatal=True) from None
    return Event(type=header["type"], data=data, payload=payload)
