"""Wyoming request limits with fakes: the core's deadline, reported on the wire."""

import asyncio
import time
from dataclasses import replace

from wyoming.asr import Transcribe
from wyoming.error import Error

from protocols.wyoming.server import WyomingServer
from tests.fakes import fake_config, fake_engines, utterance
from tests.unit.protocols.wyoming.test_handler import Daemon


async def test_a_transcript_past_the_core_deadline_is_a_timeout_error(tmp_path):
    """The deadline is the request profile's (the core's): the adapter only reports it."""
    config = fake_config(tmp_path)
    fakes = fake_engines(replace(config, limits=replace(config.limits, request_timeout_s=1.0)))
    slow = fakes.asr["fake"]
    heard = slow.transcribe

    def transcribe(audio, options):
        time.sleep(2.5)  # in the ASR worker, past the one-second deadline
        return heard(audio, options)

    slow.transcribe = transcribe  # type: ignore[method-assign]
    daemon = Daemon(fakes, WyomingServer("tcp://127.0.0.1:0", fakes.services, 4, 1 << 20, 2.0))
    async with asyncio.timeout(10):
        await daemon.server.start()
        client = await daemon.connect()
        await client.send(Transcribe())
        await client.stream_audio(utterance())
        events = await client.until(Error)
        assert Error.from_event(events[-1]).code == "timeout"
        assert await client.closed()
        await client.close()
        await daemon.server.stop(grace_s=1.0)
    fakes.close()
