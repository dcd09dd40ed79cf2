"""sd_notify messages and the event-loop watchdog, against a fake systemd socket."""

import asyncio
import os
import time

import pytest

from daemon.ops.notify import Notifier, keep_alive, watchdog_interval
from tests.helpers import eventually
from tests.notify_listener import NotifyListener


@pytest.fixture
def listener():
    fake = NotifyListener()
    yield fake
    fake.close()


def wait_until(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_messages_reach_the_socket(listener):
    notifier = Notifier(listener.address)
    notifier.status("Loading models")
    notifier.ready("Ready: 3 models")
    notifier.reloading()
    notifier.stopping()
    notifier.close()
    notifier.close()
    wait_until(lambda: len(listener.messages) == 4)
    fields = [m for _, m in listener.messages]
    assert fields[0] == {"STATUS": "Loading models"}
    assert fields[1] == {"READY": "1", "STATUS": "Ready: 3 models"}
    assert fields[2]["RELOADING"] == "1" and int(fields[2]["MONOTONIC_USEC"]) > 0
    assert fields[3]["STOPPING"] == "1"


def test_without_notify_socket_nothing_happens(monkeypatch):
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    notifier = Notifier()
    assert not notifier.enabled
    assert notifier.send(READY=1) is False


def test_an_unreachable_socket_is_logged_not_raised(caplog):
    assert Notifier("@hearth-test-nobody-listens").send(READY=1) is False
    assert "sd_notify READY failed" in caplog.text


def test_watchdog_interval_is_half_of_watchdog_sec():
    assert watchdog_interval({"WATCHDOG_USEC": "30000000"}) == 15.0
    assert watchdog_interval({}) is None
    assert watchdog_interval({"WATCHDOG_USEC": "0"}) is None
    mine = str(os.getpid())
    assert watchdog_interval({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": mine}) == 1.0
    assert watchdog_interval({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "1"}) is None


class StampedNotifier(Notifier):
    """Notes when each watchdog ping is sent (on the loop's thread, so exactly)."""

    def __init__(self, address: str) -> None:
        super().__init__(address)
        self.sent: list[float] = []

    def send(self, **fields: str | int) -> bool:
        if "WATCHDOG" in fields:
            self.sent.append(time.monotonic())
        return super().send(**fields)


async def test_a_blocked_event_loop_stops_the_watchdog_pings(listener):
    notifier = StampedNotifier(listener.address)
    task = asyncio.create_task(keep_alive(notifier, 0.1))
    try:
        await asyncio.sleep(0.55)
        assert len(notifier.sent) >= 4
        blocked_at = time.monotonic()
        time.sleep(1.0)  # a blocking call on the loop: the pings must stop
        unblocked_at = time.monotonic()
        await asyncio.sleep(0.35)
    finally:
        task.cancel()
    assert [t for t in notifier.sent if blocked_at < t < unblocked_at] == []
    assert len([t for t in notifier.sent if t >= unblocked_at]) >= 2  # back once the loop runs
    # And they reached systemd's socket.
    assert await eventually(lambda: len(listener.times("WATCHDOG")) == len(notifier.sent))
