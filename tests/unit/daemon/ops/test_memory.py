"""The process's memory as glibc sees it, and giving freed memory back."""

import ctypes

from daemon.ops import memory


def test_the_heap_follows_allocations_and_a_trim_gives_back_what_was_freed():
    before = memory.native_heap()
    assert before is not None  # glibc, as on every machine Hearth runs on
    blocks = [ctypes.create_string_buffer(64 * 1024) for _ in range(400)]  # 25 MB
    during = memory.native_heap()
    assert during is not None and during.in_use > before.in_use + 20e6
    del blocks
    after = memory.native_heap()
    assert after is not None and after.in_use < during.in_use - 20e6
    assert memory.trim() >= 0
    assert memory.resident_bytes() > 0


def test_the_operators_arena_limit_wins(monkeypatch):
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert memory.limit_arenas(2) is False
    monkeypatch.delenv("MALLOC_ARENA_MAX")
    assert memory.limit_arenas(0) is False
    assert memory.limit_arenas(2) is True


async def test_the_trimmer_gives_memory_back_until_stopped():
    trimmer = memory.Trimmer(every_s=0.01)
    trimmer.start()
    trimmer.start()  # once is enough
    blocks = [ctypes.create_string_buffer(64 * 1024) for _ in range(200)]
    del blocks
    import asyncio

    await asyncio.sleep(0.1)
    await trimmer.stop()
    await trimmer.stop()  # safe twice
    assert trimmer.freed >= 0 and trimmer._task is None
