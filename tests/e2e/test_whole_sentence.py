"""The whole sentence over Wyoming: a pause inside a sentence does not end the turn.

A real ``hearth serve`` (Whisper tiny.en, Silero VAD, Smart Turn v3.2) ending the turn
itself (``wyoming.end_of_turn: server``), driven like Home Assistant 2026: 10 ms
chunks at real time, reading while it uploads; the first ``transcript`` ends the
request. The pause is held until the daemon has decided about it (its log says so):
the daemon's clock is the audio, so a machine that decodes slowly decides the same
thing, and the test asserts the decision, not a race.
"""

from __future__ import annotations

import asyncio
import re
import time

import numpy as np
import pytest
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event

from daemon.audio.pcm import RATE
from tests.daemon import Daemon
from tests.helpers import assert_heard, silence, trimmed

pytestmark = pytest.mark.e2e

DECIDED = re.compile(r"Turn check(: p\(complete\)=\S+,| skipped;) words (.*)")
"""The daemon's debug line for a pause's decision (the model's, or the words' alone)."""


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory):
    extra = (
        "asr:\n  partials: off\n"
        "log:\n  level: debug\n"
        "limits:\n  max_audio_s: 30\n  request_timeout_s: 60\n"
    )
    path = tmp_path_factory.mktemp("whole-sentence")
    yield from Daemon(path, extra, wyoming="  end_of_turn: server\n").serve()


async def ha_2026(
    daemon: Daemon, parts: list[np.ndarray], hold_after: int | None
) -> tuple[list[Event], list[str]]:
    """Stream ``parts`` at real time in 10 ms chunks while reading; after part
    ``hold_after`` wait (sending nothing) until the daemon logged a new turn decision.
    Returns the events up to the first transcript, and the words of the decisions
    logged during the hold."""
    events: list[Event] = []
    held: list[str] = []
    decided_before = len(DECIDED.findall(daemon.log))
    async with AsyncTcpClient("127.0.0.1", daemon.wyoming_port) as c:
        await c.write_event(Transcribe(language="en").event())
        await c.write_event(AudioStart(rate=RATE, width=2, channels=1).event())

        async def upload() -> None:
            for n, part in enumerate(parts):
                pcm = part.astype("<i2").tobytes()
                began = time.monotonic()
                for i in range(0, len(pcm), 320):
                    delay = began + i / (RATE * 2) - time.monotonic()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    chunk = AudioChunk(rate=RATE, width=2, channels=1, audio=pcm[i : i + 320])
                    await c.write_event(chunk.event())
                if n == hold_after:
                    for _ in range(600):  # 60 s at most
                        found = DECIDED.findall(daemon.log)[decided_before:]
                        if found:
                            held.extend(words for _, words in found)
                            break
                        await asyncio.sleep(0.1)
                    else:
                        raise AssertionError("the pause was never decided")
            await c.write_event(AudioStop().event())

        async def receive() -> None:
            while (event := await c.read_event()) is not None:
                events.append(event)
                if Transcript.is_type(event.type) or event.type == "error":
                    return

        sending = asyncio.create_task(upload())
        try:
            async with asyncio.timeout(120):
                await receive()
        finally:
            sending.cancel()
            await asyncio.gather(sending, return_exceptions=True)
        if sending.done() and not sending.cancelled() and sending.exception() is not None:
            raise sending.exception()  # type: ignore[misc]
    return events, held


async def test_a_pause_after_in_the_keeps_the_turn_open(daemon, speak):
    # "Turn on the lights in the ... living room." The head is said as a sentence of its
    # own (it ends with a fall), and 0.8 s of silence follows: only the words ("the")
    # tell that it goes on.
    head, tail = trimmed(speak("Turn on the lights in the")), trimmed(speak("living room."))
    parts = [silence(0.3), head, silence(0.3), silence(0.5), tail, silence(3.0)]
    events, held = await ha_2026(daemon, parts, hold_after=2)
    kinds = [e.type for e in events]
    assert kinds.count("transcript") == 1 and "error" not in kinds, kinds
    assert kinds.count("voice-stopped") == 1, kinds
    text = Transcript.from_event(events[-1]).text
    assert_heard(text, "Turn on the lights in the living room.", "lights", "living", "room")
    # The pause was decided "goes on" (its words, when read, end open: "... in the").
    assert held and ("(incomplete)" in held[0] or held[0].endswith(": not complete")), held
    assert "(complete)" not in held[0], held


async def test_a_finished_command_is_still_ended_by_the_decision(daemon, speak):
    # "Turn on the lights." ends at the turn decision, not at the longest pause.
    speech = trimmed(speak("Turn on the lights."))
    ended_before = daemon.log.count("Utterance ended by")
    events, _ = await ha_2026(daemon, [silence(0.3), speech, silence(4.0)], hold_after=None)
    kinds = [e.type for e in events]
    assert kinds.count("transcript") == 1 and "error" not in kinds, kinds
    assert_heard(Transcript.from_event(events[-1]).text, "Turn on the lights.", "lights")
    ends = re.findall(r"Utterance ended by (\S+)", daemon.log)[ended_before:]
    assert ends == ["turn"], ends
