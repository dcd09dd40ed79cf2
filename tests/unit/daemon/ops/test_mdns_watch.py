"""The mDNS address check never dies in silence: a failure is logged and checking starts over."""

from __future__ import annotations

import asyncio
import logging

import pytest

from daemon.config import MdnsConfig
from daemon.ops import mdns
from daemon.ops.mdns import Advertiser

TIMEOUT_S = 10


class FakeZeroconf:
    """Records updates instead of multicasting them."""

    def __init__(self) -> None:
        self.updated: list[object] = []

    async def async_update_service(self, info: object) -> None:
        self.updated.append(info)

    async def async_unregister_all_services(self) -> None:
        pass

    async def async_close(self) -> None:
        pass


async def test_a_failed_address_check_is_logged_and_restarted(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[int] = []
    changed = asyncio.Event()

    def lan_addresses(interfaces: list[str]) -> list[str]:
        calls.append(1)
        if len(calls) == 1:
            raise OSError("netlink went away")
        changed.set()
        return ["192.0.2.7"]

    monkeypatch.setattr(mdns, "lan_addresses", lan_addresses)
    advertiser = Advertiser(MdnsConfig(), [mdns.Advertised(mdns.HTTP_TYPE, 8080, {})])
    advertiser.recheck_s = 0
    zc = FakeZeroconf()
    advertiser._zc = zc  # type: ignore[assignment]
    advertiser._addresses = ["192.0.2.1"]
    with caplog.at_level(logging.ERROR, logger="daemon.ops.mdns"):
        advertiser._watch_addresses()
        try:
            async with asyncio.timeout(TIMEOUT_S):
                await changed.wait()
                while not zc.updated:
                    await asyncio.sleep(0)
        finally:
            async with asyncio.timeout(TIMEOUT_S):
                await advertiser.close()
    assert "the address check failed (OSError('netlink went away'))" in caplog.text
    assert advertiser._addresses == ["192.0.2.7"]
    assert advertiser._watch is None


async def test_a_check_failing_after_close_says_announcements_stopped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    advertiser = Advertiser(MdnsConfig(), [])

    async def broken() -> None:
        raise RuntimeError("boom")

    task = asyncio.create_task(broken())
    advertiser._watch = task
    async with asyncio.timeout(TIMEOUT_S):
        await asyncio.wait([task])
    with caplog.at_level(logging.ERROR, logger="daemon.ops.mdns"):
        advertiser._watch_ended(task)
    assert "address checks stopped (RuntimeError('boom'))" in caplog.text
