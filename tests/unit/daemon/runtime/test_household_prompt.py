"""The household's names reach every speech session the core's services open, as
a second reading's prompt after the client's own names, within each model's budget; a
Wyoming request on the wire shows it."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from wyoming.asr import Transcribe, TranscriptStop
from wyoming.asr import Transcript as Transcript_

from daemon.engines.asr.base import TranscribeOptions, Transcript
from daemon.engines.asr.prompt import MAX_PROMPT_CHARS
from daemon.house.names import HouseName, NameKind, SourceState, Tier
from daemon.house.prompt import PromptBudget
from daemon.house.store import NameStore
from daemon.runtime.context import Core
from daemon.runtime.profiles import Profile
from daemon.runtime.requests import Listening
from daemon.runtime.services import Services
from daemon.runtime.sessions import HouseHints, household_hints, open_session
from daemon.speech.conversation import Mode
from protocols.wyoming.server import WyomingServer
from tests.fakes import FakeAsr, FakeEngines, fake_config, fake_engines, utterance
from tests.unit.protocols.wyoming.test_handler import Client

HOUSE = ["Niamh's Lamp", "Glimmerbox", "Przedpokój", "Kitchen"]


def halves(text: str) -> int:
    """A tokenizer for a model that long prompts harm: two characters a token."""
    return max(1, len(text.strip()) // 2)


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


def hints_of(open_session: Callable[[], object]) -> HouseHints | None:
    session = open_session()
    return session.options.hints  # type: ignore[attr-defined]


def test_every_profile_reads_a_second_time_with_the_names_after_the_clients(fakes, store):
    core = Core(fakes.engines, house=store)
    client = TranscribeOptions(initial_prompt="Ada's lamp, porch.")
    session = open_session(core, Profile.CLIENT_ENDED, None, client)
    assert session.options.transcribe.initial_prompt == "Ada's lamp, porch."  # first reading
    wyoming = session.options.hints
    assert isinstance(wyoming, HouseHints)
    hint = wyoming.hint("Turn on Neve's lamp.")
    assert hint is not None and hint.prompt == "Ada's lamp, porch. Niamh's Lamp."
    assert hint.names == ("Niamh's Lamp",)
    assert wyoming.hint("What time is it?") is None
    for profile in Profile:  # every client's timing: no names of their own
        hints = hints_of(lambda p=profile: open_session(core, p))
        assert hints is not None
        assert hints.hint("the glimmer box").prompt == "Glimmerbox."  # type: ignore[union-attr]


async def test_a_conversation_hears_with_the_names(fakes, store):
    core = Core(fakes.engines, house=store)
    hearing = await Services(lambda: core).speech.hearing(Listening(Mode.HANDS_FREE))
    assert hints_of(hearing.open_session) is not None


def test_nothing_changes_without_home_assistant(fakes):
    for core in (Core(fakes.engines), Core(fakes.engines, house=NameStore())):
        assert hints_of(lambda c=core: open_session(c, Profile.CLIENT_ENDED)) is None
        assert household_hints(core, None, TranscribeOptions()) is None


def test_names_published_after_a_session_opened_reach_it(fakes):
    store = NameStore()
    store.state = SourceState.CONNECTING
    core = Core(fakes.engines, house=store)
    hints = hints_of(lambda: open_session(core, Profile.CLIENT_ENDED))
    assert hints is not None and hints.hint("Turn on Neve's lamp.") is None
    asyncio.run(store.publish([HouseName("Niamh's Lamp", NameKind.ENTITY, Tier.DEVICE)], 1.0))
    assert hints.hint("Turn on Neve's lamp.") is not None  # the same session, the new names


def test_each_model_has_its_own_budget(fakes):
    many = [HouseName(f"Lampa {a}{b}", NameKind.ENTITY, Tier.DEVICE) for a in "bcdfghjk"
            for b in "mnpqrstv"]  # fmt: skip
    store = NameStore()
    asyncio.run(store.publish(many, 1.0))
    core = Core(fakes.engines, house=store)
    whisper = household_hints(core, None, TranscribeOptions(initial_prompt="x " * 180))
    long = whisper.hint("lampa")  # type: ignore[union-attr]
    assert long is not None and len(long.prompt) <= MAX_PROMPT_CHARS
    distil = fakes.asr["other"]
    distil.max_prompt_tokens = 12
    distil.token_counter = lambda: halves  # type: ignore[method-assign]
    short = household_hints(core, "other", TranscribeOptions()).hint("lampa")  # type: ignore[union-attr]
    assert short is not None and halves(" " + short.prompt) <= 12 < halves(" " + long.prompt)


class Misspeller(FakeAsr):
    """Hears "turn on Neve's lamp" in a 220 Hz tone, and writes "Niamh's Lamp" when its
    prompt holds it (as Whisper does)."""

    def transcribe(self, audio: np.ndarray, options: TranscribeOptions) -> Transcript:
        heard = super().transcribe(audio, options)
        if "Niamh's Lamp" in (options.initial_prompt or ""):
            return dataclasses.replace(
                heard, text=heard.text.replace("Neve's lamp", "Niamh's Lamp")
            )
        return heard


@pytest.fixture
async def server(fakes: FakeEngines, store: NameStore) -> AsyncIterator[WyomingServer]:
    misspeller = Misspeller("fake", phrases={220.0: "turn on Neve's lamp"}, words_per_s=20)
    fakes.engines.asr["fake"] = misspeller
    fakes.asr["fake"] = misspeller
    core = Core(fakes.engines, house=store)
    running = WyomingServer("tcp://127.0.0.1:0", Services(lambda: core), 8, 65536, 2.0)
    await running.start()
    yield running
    await running.stop(grace_s=1.0)


async def test_a_wyoming_request_reads_again_with_the_clients_names_then_the_households(
    fakes, server
):
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    client = Client(reader, writer)
    await client.send(Transcribe(transcript_names=["Ada's lamp"], transcript_terms=["porch"]))
    await client.stream_audio(utterance(220.0))
    transcript = Transcript_.from_event((await client.until(Transcript_))[-1])
    await client.until(TranscriptStop)
    await client.close()
    assert transcript.text == "turn on Niamh's Lamp"
    prompts = [call.options.initial_prompt for call in fakes.asr["fake"].calls]
    # Every first reading (partials included) has the client's names only; the final
    # one's second reading has the household's after them, once.
    second = "Ada's lamp, porch. Niamh's Lamp."
    assert prompts[-1] == second and prompts.count(second) == 1
    assert set(prompts[:-1]) == {"Ada's lamp, porch."}


def test_a_failing_match_leaves_the_first_reading_and_logs_no_name(store, caplog):
    class Broken(NameStore):
        def second_prompt(self, *args: object) -> None:
            raise RuntimeError("Niamh's Lamp")

    hints = HouseHints(Broken(), None, PromptBudget("m", 400))
    assert hints.hint("Turn on Neve's lamp.") is None
    assert "RuntimeError" in caplog.text and "Niamh" not in caplog.text
