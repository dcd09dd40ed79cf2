"""The household's names reach every speech session through the facade's one door,
after the client's own names, within each model's budget; a Wyoming request on the
wire shows it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from wyoming.asr import Transcribe, TranscriptStop

from daemon.engines.asr.base import TranscribeOptions
from daemon.engines.asr.prompt import MAX_PROMPT_CHARS
from daemon.house.names import HouseName, NameKind, Tier
from daemon.house.store import NameStore
from daemon.runtime.facade import Hearth
from daemon.runtime.profiles import Profile
from daemon.speech.conversation import Mode
from protocols.wyoming.server import WyomingServer
from tests.fakes import FakeEngines, fake_config, fake_engines, utterance
from tests.unit.protocols.wyoming.test_handler import Client

HOUSE = ["Niamh's Lamp", "Glimmerbox", "Przedpokój", "Kitchen"]


def words(text: str) -> int:
    """A tokenizer for the fake model: one token a word or punctuation mark."""
    return len(text.replace(",", " ,").replace(".", " .").split())


@pytest.fixture
def fakes(tmp_path: Path) -> Iterator[FakeEngines]:
    running = fake_engines(fake_config(tmp_path))
    yield running
    running.close()


@pytest.fixture
def store() -> NameStore:
    names = [HouseName(t, NameKind.ENTITY, Tier.COMMON_DEVICE) for t in HOUSE]
    found = NameStore()
    asyncio.run(found.publish(names, 1.0))
    return found


def prompt_of(open_session: Callable[[], object]) -> str | None:
    session = open_session()
    return session.options.transcribe.initial_prompt  # type: ignore[attr-defined]


def test_every_profile_gets_the_households_names_after_the_clients(fakes, store):
    hearth = Hearth(fakes.engines, house=store)
    client = TranscribeOptions(initial_prompt="Ada's lamp, porch.")
    wyoming = prompt_of(lambda: hearth._session(Profile.CLIENT_ENDED, None, client))
    assert wyoming == "Ada's lamp, porch. Niamh's Lamp, Glimmerbox, Przedpokój, Kitchen."
    for profile in Profile:  # every client's timing: no names of their own
        assert prompt_of(lambda p=profile: hearth._session(p)) == (
            "Niamh's Lamp, Glimmerbox, Przedpokój, Kitchen."
        )


async def test_a_conversation_hears_with_the_names(fakes, store):
    hearth = Hearth(fakes.engines, house=store)
    hearing = await hearth.hearing(lambda: hearth, Mode.HANDS_FREE)
    assert prompt_of(hearing.open_session).startswith("Niamh's Lamp")


def test_nothing_changes_without_names(fakes):
    client = TranscribeOptions(initial_prompt="Ada's lamp.")
    for hearth in (Hearth(fakes.engines), Hearth(fakes.engines, house=NameStore())):
        assert prompt_of(lambda h=hearth: h._session(Profile.CLIENT_ENDED)) is None
        same = hearth.household_prompt(None, client)
        assert same is client


def test_each_model_has_its_own_budget(fakes):
    many = [HouseName(f"Name{i:03d} Lamp", NameKind.ENTITY, Tier.DEVICE) for i in range(300)]
    store = NameStore()
    asyncio.run(store.publish(many, 1.0))
    hearth = Hearth(fakes.engines, house=store)
    whisper = hearth.household_prompt(None, TranscribeOptions()).initial_prompt
    assert whisper is not None and len(whisper) <= MAX_PROMPT_CHARS
    distil = fakes.asr["other"]
    distil.max_prompt_tokens = 48
    distil.token_counter = lambda: words  # type: ignore[method-assign]
    short = hearth.household_prompt("other", TranscribeOptions()).initial_prompt
    assert short is not None and words(" " + short) <= 48 < words(whisper)


@pytest.fixture
async def server(fakes: FakeEngines, store: NameStore) -> AsyncIterator[WyomingServer]:
    hearth = Hearth(fakes.engines, house=store)
    running = WyomingServer("tcp://127.0.0.1:0", lambda: hearth, 8, 65536, 2.0)
    await running.start()
    yield running
    await running.stop(grace_s=1.0)


async def test_a_wyoming_request_decodes_with_the_clients_names_then_the_households(fakes, server):
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    client = Client(reader, writer)
    await client.send(Transcribe(transcript_names=["Ada's lamp"], transcript_terms=["porch"]))
    await client.stream_audio(utterance(220.0))
    await client.until(TranscriptStop)
    await client.close()
    prompts = {call.options.initial_prompt for call in fakes.asr["fake"].calls}
    assert prompts == {"Ada's lamp, porch. Niamh's Lamp, Glimmerbox, Przedpokój, Kitchen."}
