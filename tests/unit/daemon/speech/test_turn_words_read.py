"""A pause's words, read for the turn decision: the more open reading counts."""

from __future__ import annotations

import asyncio

from daemon.engines.asr.base import Transcript
from daemon.speech.turn_checks import _read
from daemon.speech.turn_text import TextTurn


async def read(result: Transcript) -> tuple[str | None, TextTurn]:
    task: asyncio.Task[Transcript] = asyncio.ensure_future(asyncio.sleep(0, result))
    return await _read(task)


async def test_an_invented_last_word_no_longer_hides_an_open_ending() -> None:
    heard = Transcript("Set a timer for it.", "en", 1.3, heard_text="Set a timer for")
    assert await read(heard) == ("Set a timer for", TextTurn.INCOMPLETE)


async def test_leaving_a_word_out_never_closes_an_open_ending() -> None:
    # The alignment dropped a real "the": the whole text stays the one that counts.
    dropped = Transcript("Turn on the lights in the", "en", 1.3, heard_text="Turn on the lights")
    assert await read(dropped) == ("Turn on the lights in the", TextTurn.INCOMPLETE)


async def test_a_finished_command_reads_as_finished() -> None:
    done = Transcript("Turn the lights off.", "en", 1.0)
    assert await read(done) == ("Turn the lights off.", TextTurn.COMPLETE)
    german = Transcript("Stell einen Timer für", "de", 1.0)
    assert await read(german) == ("Stell einen Timer für", TextTurn.INCOMPLETE)


async def test_a_cancelled_decode_says_nothing() -> None:
    task: asyncio.Task[Transcript] = asyncio.ensure_future(asyncio.sleep(10))  # type: ignore[arg-type]
    task.cancel()
    assert await _read(task) == (None, TextTurn.UNKNOWN)


async def test_a_real_short_last_word_left_out_does_not_hold_a_question() -> None:
    # The alignment put the real "it?" mostly after the VAD's end: "What time is"
    # still reads as a possible end (a copula is no open ending).
    question = Transcript("What time is it?", "en", 1.0, heard_text="What time is")
    assert (await read(question))[1] is TextTurn.COMPLETE
