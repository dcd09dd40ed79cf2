"""A client that leaves mid-encode: close() waits for the running write (PyAV is
not thread-safe; closing during a write used to crash the process)."""

import asyncio

import pytest

from daemon.audio.stream import FORMATS, StreamEncoder


@pytest.mark.parametrize("name", [n for n, f in FORMATS.items() if f.codec])
async def test_close_after_a_cancelled_write_is_safe(name):
    encoder = StreamEncoder(FORMATS[name], 22050)
    write = asyncio.ensure_future(asyncio.to_thread(encoder.write, b"\x01\x00" * 22050 * 20))
    await asyncio.sleep(0.01)
    write.cancel()
    await asyncio.to_thread(encoder.close)
    assert await asyncio.to_thread(encoder.close) == b""  # idempotent
