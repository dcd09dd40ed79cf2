"""bench/harness.py: the shared arguments, the cells the tables print, and daemons
measured in turn (pure: nothing is served or checked out)."""

from __future__ import annotations

import asyncio

import pytest

from bench.harness import InTurn, arguments, median, ms, percentile, spread, timed


def test_a_bench_gets_only_the_shared_options_it_asks_for() -> None:
    args = arguments("Title.\n\nMore.", runs=3, before="main").parse_args([])
    assert (args.runs, args.before, args.no_write) == (3, "main", False)
    plain = arguments("Title.", write=False).parse_args([])
    assert vars(plain) == {}
    with pytest.raises(SystemExit):
        arguments("Title.", before=True).parse_args([])  # a revision must be named


def test_cells_are_milliseconds_and_missing_values_are_a_dash() -> None:
    assert ms(0.1234) == "123 ms"
    assert ms(float("nan")) == "-"
    assert spread([0.1, 0.2, 0.3, 0.4]) == "250 ms (400 ms)"
    assert spread([]) == "-"
    assert ms(median([])) == "-" and ms(percentile([], 0.9)) == "-"


def test_timed_runs_each_job_and_awaits_a_coroutine() -> None:
    calls: list[str] = []

    async def job() -> None:
        calls.append("ran")

    assert len(timed(job, 3, warmup=1)) == 3
    assert calls == ["ran"] * 4


def test_targets_measured_in_turn_keep_their_samples_and_lose_a_failure() -> None:
    turns = InTurn({"before": 1, "after": 2})
    order: list[int] = []

    async def job(target: int) -> float:
        order.append(target)
        if order == [1, 2, 1, 2]:  # the second round's "after"
            raise RuntimeError("no reply")
        return target / 10

    asyncio.run(turns.each("speech", job))
    asyncio.run(turns.each("speech", job))
    turns.note("speech", "after", None)  # no sample
    assert order == [1, 2, 1, 2]  # in turn
    assert turns.samples == {"speech": {"before": [0.1, 0.1], "after": [0.2]}}
