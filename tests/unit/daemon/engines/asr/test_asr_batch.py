"""The ASR batcher: which requests go together and when, with a fake clock and a fake model."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from daemon.engines.asr.batch import Batcher, Pending, batch_size, take

WINDOW = 0.005


def pending(*arrivals, key="en"):
    return [Pending(key, i, t) for i, t in enumerate(arrivals)]


def test_a_lone_request_waits_only_the_rest_of_the_window():
    queue = pending(10.0)
    assert take(queue, 10.0, WINDOW, 8).wait_s == pytest.approx(WINDOW)
    assert take(queue, 10.003, WINDOW, 8).wait_s == pytest.approx(0.002)
    assert [p.item for p in take(queue, 10.005, WINDOW, 8).batch] == [0]


@pytest.mark.parametrize("now", [10.0, 10.001, 10.004999, 10.005, 10.2, 11.0])
def test_no_request_ever_waits_longer_than_the_window(now):
    """Stepping a fake clock: whenever take() says wait, the head's deadline is not passed."""
    queue = pending(10.0, 10.001, 10.002)
    decision = take(queue, now, WINDOW, 8)
    if decision.batch:
        assert now - queue[0].arrived >= WINDOW
        assert len(decision.batch) == 3
    else:
        assert now + decision.wait_s == pytest.approx(queue[0].arrived + WINDOW)


def test_a_full_batch_goes_at_once_and_the_cap_holds():
    queue = pending(*[10.0] * 11)
    decision = take(queue, 10.0, WINDOW, 8)
    assert [p.item for p in decision.batch] == list(range(8))


def test_only_requests_sharing_options_go_together():
    queue = [Pending("en", 0, 1.0), Pending("de", 1, 1.0), Pending("en", 2, 1.0)]
    assert [p.item for p in take(queue, 2.0, WINDOW, 8).batch] == [0, 2]


def test_batch_size_auto_is_per_device():
    assert batch_size(0, "cpu") == 1
    assert batch_size(0, "cuda:0") == 8
    assert batch_size(4, "cpu") == 4


class FakeModel:
    """Upper-cases its inputs; records every batch; can be held until released."""

    def __init__(self):
        self.batches = []
        self.gate = threading.Event()
        self.gate.set()

    def __call__(self, items):
        assert self.gate.wait(30)
        self.batches.append(list(items))
        return [item.upper() for item in items]


def test_concurrent_callers_share_one_batch_and_each_gets_its_own_result():
    model = FakeModel()
    # A window far beyond the test's timeout: only a full batch can make it go.
    batcher = Batcher(model, window_s=3600, max_batch=4)
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(batcher.submit, "en", word) for word in ("a", "b", "c", "d")]
        results = [f.result(timeout=30) for f in futures]
    assert results == ["A", "B", "C", "D"]
    assert len(model.batches) == 1 and sorted(model.batches[0]) == ["a", "b", "c", "d"]


def test_requests_arriving_during_a_batch_go_together_next():
    model = FakeModel()
    batcher = Batcher(model, window_s=0, max_batch=8)
    model.gate.clear()
    with ThreadPoolExecutor(4) as pool:
        first = pool.submit(batcher.submit, "en", "a")
        while not batcher._running:  # the first batch is in the model
            threading.Event().wait(0.001)
        rest = [pool.submit(batcher.submit, "en", w) for w in ("b", "c", "d")]
        while len(batcher._pending) < 3:
            threading.Event().wait(0.001)
        model.gate.set()
        assert first.result(timeout=30) == "A"
        assert [f.result(timeout=30) for f in rest] == ["B", "C", "D"]
    assert model.batches[0] == ["a"] and sorted(model.batches[1]) == ["b", "c", "d"]


def test_a_failing_batch_fails_every_caller_in_it():
    def broken(items):
        raise ValueError("decoder exploded")

    batcher = Batcher(broken, window_s=3600, max_batch=2)
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(batcher.submit, "en", w) for w in ("a", "b")]
        for future in futures:
            with pytest.raises(ValueError, match="decoder exploded"):
                future.result(timeout=30)
