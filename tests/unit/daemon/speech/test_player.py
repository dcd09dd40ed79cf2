"""The one reply player: audio sent ahead of the client's playback by the lead, counted,
cut on barge-in; and a real-time transport's schedule."""

from __future__ import annotations

import asyncio
from typing import Any

from daemon.speech.player import ReplyPlayer


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_audio_goes_out_no_further_ahead_than_the_lead():
    clock, sent = Clock(), []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message["n"])

    playback: ReplyPlayer[dict[str, Any]] = ReplyPlayer(lead_s=0.5, clock=clock)
    playback.start(send)
    playback.begin()
    for n in range(10):  # 1 s of audio in 100 ms pieces
        playback.play({"n": n}, 0.1)
    await asyncio.sleep(0.05)
    # 0.5 s ahead, and the piece that crosses the lead.
    assert sent == [0, 1, 2, 3, 4, 5]
    assert playback.playing and playback.played_ms == 0 and playback.sent_ms == 600
    clock.now += 0.35
    assert playback.played_ms == 350
    await playback.close()


async def test_clear_drops_the_rest_and_remembers_what_played():
    clock, sent, after = Clock(), [], []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message["n"])

    async def done() -> None:
        after.append("done")

    playback: ReplyPlayer[dict[str, Any]] = ReplyPlayer(lead_s=0.2, clock=clock)
    playback.start(send)
    playback.begin()
    for n in range(10):
        playback.play({"n": n}, 0.1)
    playback.after(done)
    await settle()
    clock.now += 0.15
    playback.clear()
    assert playback.cut_ms == 150 and not playback.playing
    clock.now += 1.0
    playback.clear()  # again: the first cut's count stands
    assert playback.cut_ms == 150
    assert not playback.play({"n": 99}, 0.1)  # the cut reply's late audio is dropped
    await asyncio.sleep(0.05)
    assert 99 not in sent and after == []
    playback.begin()  # the next reply plays
    assert playback.play({"n": 100}, 0.1)
    await asyncio.sleep(0.05)
    assert sent[-1] == 100
    await playback.close()


async def test_events_after_the_audio_wait_for_it():
    clock, order = Clock(), []

    async def send(message: dict[str, Any]) -> None:
        order.append(message["n"])

    async def done() -> None:
        order.append("done")

    playback: ReplyPlayer[dict[str, Any]] = ReplyPlayer(lead_s=10.0, clock=clock)
    playback.start(send)
    playback.begin()
    playback.play({"n": 0}, 0.1)
    playback.play({"n": 1}, 0.1)
    playback.after(done)
    await asyncio.sleep(0.05)
    assert order == [0, 1, "done"]
    await playback.close()
    await playback.close()


async def test_a_real_time_transport_keeps_its_schedule_and_jumps_over_pauses():
    clock = Clock()
    player: ReplyPlayer[int] = ReplyPlayer(lead_s=0.0, late_s=0.1, clock=clock)
    player.begin()
    for n in range(3):
        player.play(n, 0.02)
    first = await player.next()
    assert (first.frame, first.at) == (0, 100.0)
    clock.now += 0.03  # the loop ran 10 ms late: the schedule holds, the next catches up
    second = await player.next()
    assert second.at == 100.02
    clock.now += 1.0  # a pause: a new schedule, one second later
    third = await player.next()
    assert third.at == clock.now
    await player.close()
