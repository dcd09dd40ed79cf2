"""The source of names against a fake Home Assistant: reading, registry events,
reconnecting after a restart, refusals; and that nothing polls."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable

import pytest

from daemon.config import HomeAssistantConfig
from daemon.house.endpoint import Endpoint, websocket_url
from daemon.house.names import SourceState
from daemon.house.service import House, probe
from daemon.house.source import HomeAssistantSource
from daemon.house.store import NameStore
from tests.fake_ha import TOKEN, Area, Entity, FakeHomeAssistant, Floor

TIMEOUT_S = 10.0


def household(fake: FakeHomeAssistant) -> None:
    """A small house: two floors, three areas, four entities (one hidden)."""
    fake.add_floor(Floor("upstairs", "Upstairs", ["First Floor"]))
    fake.add_floor(Floor("cellar", "Piwnica"))
    fake.add_area(Area("niamh", "Niamh's Room", ["The Nursery"], floor_id="upstairs"))
    fake.add_area(Area("kitchen", "Kitchen"))
    fake.add_area(Area("attic", "Dachboden"))
    fake.add_entity(Entity("light.niamh_lamp", "Niamh's Lamp", ["Moon Lamp"], area_id="niamh"))
    fake.add_entity(Entity("switch.kettle", "Kettlo", device_id="dev1"))
    fake.add_entity(Entity("sensor.damp", "Damp Sensor"))
    fake.add_entity(Entity("light.secret", "Secret Lamp", exposed=False))
    fake.devices["dev1"] = {"id": "dev1", "name": "Kettle", "area_id": "kitchen"}


@pytest.fixture
async def fake() -> AsyncIterator[FakeHomeAssistant]:
    server = FakeHomeAssistant()
    household(server)
    await server.start()
    yield server
    await server.stop()


class Quick(HomeAssistantSource):
    """No sleeps: the waits are recorded instead."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.waits: list[float] = []
        self.settles = 0

    async def on_reconnect(self, delay_s: float) -> None:
        self.waits.append(delay_s)
        await asyncio.sleep(0.01)

    async def on_settle(self, delay_s: float) -> None:
        self.settles += 1
        await asyncio.sleep(0.05)  # long enough for a burst of events to gather


def config(**keys: object) -> HomeAssistantConfig:
    return HomeAssistantConfig(**{"url": "http://x", "token": TOKEN, **keys})  # type: ignore[arg-type]


async def until(check: Callable[[], bool], timeout: float = TIMEOUT_S) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.01)


async def running(fake: FakeHomeAssistant, token: str = TOKEN, **keys: object) -> Quick:
    store = NameStore()
    source = Quick(Endpoint(websocket_url(fake.url), token), config(**keys), store)
    source.task = asyncio.create_task(source.run())  # type: ignore[attr-defined]
    return source


async def stop(source: Quick) -> None:
    source.task.cancel()  # type: ignore[attr-defined]
    with pytest.raises(asyncio.CancelledError):
        await source.task  # type: ignore[attr-defined]


def texts(store: NameStore) -> list[str]:
    return [name.text for name in store.current.names]


async def test_reads_the_exposed_names_ranked_and_follows_a_rename(fake):
    source = await running(fake)
    store = source.store
    await until(lambda: source.readings == 1)
    assert store.state is SourceState.CONNECTED
    # Aliases, places in use, common devices, other places, other devices.
    assert texts(store) == [
        "Moon Lamp", "The Nursery", "First Floor",
        "Niamh's Room", "Kitchen", "Upstairs",
        "Niamh's Lamp", "Kettlo",
        "Dachboden", "Piwnica",
        "Damp Sensor",
    ]  # fmt: skip
    assert "Secret Lamp" not in texts(store)
    first = store.current
    await fake.rename("light.niamh_lamp", "Aoife's Lamp")
    await until(lambda: source.readings == 2)
    assert "Aoife's Lamp" in texts(store) and "Niamh's Lamp" not in texts(store)
    assert store.current.generation == first.generation + 1
    await stop(source)


async def test_a_burst_of_changes_is_one_reading_and_nothing_polls(fake):
    source = await running(fake)
    await until(lambda: source.readings == 1)
    reads = fake.commands.count("get_states")
    for i in range(5):
        await fake.rename("switch.kettle", f"Kettlo {i}")
    await until(lambda: source.readings == 2)
    await asyncio.sleep(0.3)  # quiet: nothing more is asked
    assert source.readings == 2 and fake.commands.count("get_states") == reads + 1
    assert texts(source.store).count("Kettlo 4") == 1
    # One connection, subscribed once to each registry.
    assert fake.connections == 1 and fake.commands.count("subscribe_events") == 4
    await stop(source)


async def test_reconnects_with_back_off_after_a_restart_and_keeps_the_names(fake):
    source = await running(fake, retry_min_s=1.0, retry_max_s=8.0)
    await until(lambda: source.readings == 1)
    known = texts(source.store)
    await fake.stop()  # Home Assistant restarts: down for a while
    await until(lambda: len(source.waits) >= 4)
    assert source.waits[:4] == [1.0, 2.0, 4.0, 8.0]
    assert source.store.state is SourceState.RETRYING
    assert texts(source.store) == known  # a request still gets them
    await fake.start(fake.port)
    await until(lambda: source.readings == 2)
    assert source.store.state is SourceState.CONNECTED
    served = len(source.waits)
    await fake.stop()  # a served connection ending starts a new streak at the first wait
    await until(lambda: len(source.waits) >= served + 2)
    assert source.waits[served : served + 2] == [1.0, 2.0]
    await stop(source)


async def test_a_refused_token_waits_the_longest(fake, caplog):
    caplog.set_level(logging.DEBUG, logger="daemon.house")
    source = await running(fake, token="wrong", retry_max_s=60.0)
    await until(lambda: len(source.waits) >= 2)
    assert source.waits[:2] == [60.0, 60.0]
    assert source.readings == 0 and not source.store.current.names
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "refused the token" in warnings[0]
    assert "wrong" not in caplog.text
    await stop(source)


async def test_a_token_that_is_not_an_administrators_is_named(fake, caplog):
    fake.admin = False
    source = await running(fake)
    await until(lambda: len(source.waits) >= 1)
    assert "administrator" in caplog.text
    await stop(source)


async def test_a_release_before_floors_still_reads(fake):
    fake.floors_supported = False
    source = await running(fake)
    await until(lambda: source.readings == 1)
    assert "Piwnica" not in texts(source.store) and "Niamh's Room" in texts(source.store)
    await stop(source)


async def test_a_message_over_the_limit_ends_the_connection(fake):
    for i in range(400):
        fake.add_entity(Entity(f"light.l{i}", "x" * 60 + f"{i:03d}"[:3]))
    source = await running(fake, max_message_mb=1)
    fake.entities["light.big"] = Entity("light.big", "y" * 2_000_000)
    await until(lambda: len(source.waits) >= 1)
    assert source.readings == 0
    await stop(source)


async def test_names_are_never_logged(fake, caplog):
    caplog.set_level(logging.DEBUG)
    source = await running(fake)
    await until(lambda: source.readings == 1)
    await fake.rename("light.niamh_lamp", "Aoife's Lamp")
    await until(lambda: source.readings == 2)
    await stop(source)
    for name in ("Niamh", "Aoife", "Kettlo", "Moon Lamp", "Piwnica", "niamh_lamp"):
        assert name not in caplog.text


async def test_the_service_is_off_without_home_assistant_and_reads_with_one(fake, tmp_path):
    off = House(HomeAssistantConfig(), environ={})
    off.start()
    assert off.endpoint is None and off.status()["state"] == "off"
    await off.stop()
    on = House(config(url=fake.url), environ={})
    on.start()
    await until(lambda: on.status()["names"] == 11)
    status = on.status()
    assert status["state"] == "connected" and status["refreshed_at"]
    assert set(status) == {"state", "names", "entity", "alias", "area", "floor", "refreshed_at"}
    await on.reconfigure(HomeAssistantConfig())  # turned off by a reload: forgotten
    assert on.status()["names"] == 0 and on.status()["state"] == "off"
    await on.stop()
    await on.stop()


async def test_probe_reads_once_for_hearth_check(fake):
    read = await probe(config(url=fake.url), environ={})
    assert read["names"] == 11 and read["url"].startswith("ws://127.0.0.1:")
    assert await probe(HomeAssistantConfig(), environ={}) == {"state": "off"}
    refused = await probe(config(url=fake.url, token="wrong"), environ={})
    assert "refused the token" in refused["error"]
    await fake.stop()
    down = await probe(config(url=fake.url, connect_timeout_s=1.0), environ={})
    assert "error" in down


async def test_a_bug_is_logged_without_its_message_and_the_source_goes_on(
    fake, caplog, monkeypatch
):
    def broken(*args: object) -> None:
        raise KeyError("Niamh's Lamp")

    monkeypatch.setattr("daemon.house.source.household_names", broken)
    source = await running(fake)
    await until(lambda: len(source.waits) >= 2)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors and all("KeyError at " in e and "Niamh" not in e for e in errors)
    await stop(source)
