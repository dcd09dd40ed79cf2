"""The decode prompt: the client's words first, then the household's names that help,
within the model's budget; and the store that never makes a request wait."""

from __future__ import annotations

import asyncio
import threading

from daemon.house.names import HouseName, NameKind, Tier
from daemon.house.prompt import PromptBudget, compose, estimate_tokens, rank
from daemon.house.store import NameStore

WHOLE_WORDS = {"kitchen", "ceiling", "light", "lamp", "room", "hue", "go", "the", "'s"}


def count(text: str) -> int:
    """A tokenizer: a known word is one token, any other word one per three letters."""
    total = 0
    for word in text.replace(",", " , ").replace(".", " . ").replace("'s", " 's").split():
        low = word.lower()
        total += 1 if low in WHOLE_WORDS or not low.isalpha() else -(-len(word) // 3)
    return total


def names(*texts: str) -> list[HouseName]:
    return [HouseName(t, NameKind.ENTITY, Tier.COMMON_DEVICE) for t in texts]


def test_names_the_model_would_misspell_come_first():
    ranked = rank(names("Kitchen", "Glimmerbox", "Ceiling Light", "Przedpokoj"), count)
    assert [r.text for r in ranked] == ["Glimmerbox", "Przedpokoj", "Kitchen", "Ceiling Light"]
    assert [r.plain for r in ranked] == [False, False, True, True]
    # Without a tokenizer (a remote model): the household's own order, tokens estimated.
    blind = rank(names("Kitchen", "Glimmerbox"), None)
    assert [r.text for r in blind] == ["Kitchen", "Glimmerbox"]
    assert blind[0].tokens == estimate_tokens("Kitchen")


def test_the_client_comes_first_and_is_not_repeated():
    ranked = rank(names("Niamh's Lamp", "Hue Go", "Kitchen"), count)
    budget = PromptBudget("m", 400)
    assert compose("Kitchen, porch.", ranked, budget) == "Kitchen, porch. Niamh's Lamp, Hue Go."
    assert compose(None, ranked, budget) == "Niamh's Lamp, Hue Go, Kitchen."
    assert compose("An OpenAI prompt", ranked, budget).startswith("An OpenAI prompt. Niamh's")
    assert compose("x", [], budget) == "x" and compose(None, [], budget) is None


def test_the_character_cap_holds_and_shorter_names_fill_the_rest():
    ranked = rank(names("Aaaaaaaaaaaaaaaaaa", "Bbbbbbbbbbbbbbbbbbbbbbbbbb", "Ccc"), None)
    prompt = compose("Kitchen.", ranked, PromptBudget("m", 40))
    assert prompt == "Kitchen. Aaaaaaaaaaaaaaaaaa, Ccc."
    assert len(prompt) <= 40
    for cap in range(1, 60):
        out = compose("Kitchen.", ranked, PromptBudget("m", max(cap, 8)))
        assert out is not None and len(out) <= max(cap, 8)
    # A client prompt already over the cap: nothing is added (and it is not cut).
    long = "word " * 100
    assert compose(long, ranked, PromptBudget("m", 40)) == long


def test_the_token_cap_is_exact_with_the_models_tokenizer():
    many = names(*[f"Zyx{i:02d}qrw Lamp" for i in range(40)])
    budget = PromptBudget("distil", 400, max_tokens=20, count_tokens=count)
    prompt = compose("Kitchen.", rank(many, count), budget)
    assert prompt is not None and count(" " + prompt) <= 20
    assert prompt.count(",") >= 1  # some names fit


def publish(store: NameStore, *texts: str) -> None:
    asyncio.run(store.publish(names(*texts), 1.0))


def test_an_empty_store_asks_for_no_second_reading():
    store = NameStore()
    assert (
        store.second_prompt("Kitchen.", PromptBudget("m", 400, None, count), "Neve's lamp") is None
    )
    assert store.matcher(PromptBudget("m", 400, None, count)) is None


def test_the_second_prompt_holds_the_client_then_the_names_alike():
    store = NameStore()
    publish(store, "Kitchen", "Niamh's Lamp", "Glimmerbox", "Przedpokoj")
    budget = PromptBudget("m", 400, None, count)
    found = store.second_prompt("Ada's lamp.", budget, "Turn on Neve's lamp.")
    assert found == ("Ada's lamp. Niamh's Lamp.", ("Niamh's Lamp",))
    assert store.second_prompt(None, budget, "What time is it?") is None  # nothing alike
    # Only the names the budget let in are the ones a second reading is kept for.
    tight = PromptBudget("m", 26, None, count)
    found = store.second_prompt("Ada's lamp.", tight, "Neve's lamp, Glimmer box")
    assert found is not None and found[0].count(",") == 0  # room for one name only
    assert found[1] in (("Niamh's Lamp",), ("Glimmerbox",)) and found[1][0] in found[0]
    # Already written: nothing to gain from reading again.
    assert store.second_prompt(None, budget, "Turn on Niamh's lamp.") is None


async def test_a_new_model_is_matched_in_the_calling_thread_and_a_new_reading_before_use():
    store = NameStore()
    await store.publish(names("Kitchen", "Glimmerbox"), 1.0)
    threads: list[str] = []

    def counting(text: str) -> int:
        threads.append(threading.current_thread().name)
        return count(text)

    budget = PromptBudget("counting", 400, None, counting)
    # The first use (a worker thread in the daemon) makes the model's matcher.
    first = await asyncio.to_thread(store.second_prompt, None, budget, "the glimmer box")
    assert first == ("Glimmerbox.", ("Glimmerbox",))
    assert threads and threading.main_thread().name not in threads
    matcher = store.matcher(budget)
    assert matcher is store.matcher(budget) and len(matcher) == 1  # kept; Kitchen is plain
    # A new reading is matched for every model seen, in a thread, before it is swapped in.
    threads.clear()
    await store.publish(names("Hue Go", "Przedpokoj"), 2.0)
    assert threads and threading.main_thread().name not in threads
    assert store.second_prompt(None, budget, "the Przed Pokoy") == ("Przedpokoj.", ("Przedpokoj",))
    assert store.second_prompt(None, budget, "the glimmer box") is None  # gone with the reading


async def test_status_shows_counts_and_time_never_names():
    store = NameStore()
    assert store.status() == {"state": "off", "names": 0, "entity": 0, "alias": 0, "area": 0,
                              "floor": 0, "refreshed_at": None}  # fmt: skip
    await store.publish(
        [HouseName("Niamh's Lamp", NameKind.ENTITY, Tier.COMMON_DEVICE),
         HouseName("Oben", NameKind.ALIAS, Tier.ALIAS)], 1_700_000_000.0,
    )  # fmt: skip
    status = store.status()
    assert status["names"] == 2 and status["alias"] == 1
    assert status["refreshed_at"] == "2023-11-14T22:13:20+00:00"
    assert "Niamh" not in repr(status) and "Oben" not in repr(status)
    store.touch(1_700_000_060.0)
    assert store.status()["refreshed_at"].endswith("14:20+00:00")
    store.forget()
    assert store.status()["names"] == 0
