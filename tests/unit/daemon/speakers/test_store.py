"""The speaker store: private files, atomic changes, matching by cosine similarity."""

from __future__ import annotations

import json
import stat

import numpy as np
import pytest

from daemon.errors import InvalidRequest, UnknownSpeaker
from daemon.speakers.store import SpeakerStore, check_name


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(256).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
def store(tmp_path):
    return SpeakerStore(tmp_path / "speakers", max_speakers=3)


def test_enroll_list_rename_remove(store):
    store.save("Ada", unit(1), 3)
    store.save("Grace Hopper", unit(2), 4)
    assert [(s.name, s.takes) for s in store.list()] == [("Ada", 3), ("Grace Hopper", 4)]
    assert store.rename("Ada", "Ada L.").name == "Ada L."
    assert [s.name for s in store.list()] == ["Ada L.", "Grace Hopper"]
    assert store.match(unit(1), 0.9).name == "Ada L."  # the embedding went with the name
    store.remove("Grace Hopper")
    assert [s.name for s in store.list()] == ["Ada L."]
    with pytest.raises(UnknownSpeaker):
        store.remove("Grace Hopper")
    with pytest.raises(UnknownSpeaker):
        store.get("Nobody")


def test_embeddings_are_private_and_go_with_their_speaker(store):
    store.save("Ada", unit(1), 3)
    (path,) = store.folder.glob("*.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.folder.stat().st_mode) == 0o700
    assert "embedding" in json.loads(path.read_text())
    assert not hasattr(store.list()[0], "embedding")  # what may be shown has none
    store.remove("Ada")
    assert not list(store.folder.iterdir())  # no temporary file, no copy left behind


def test_enrolling_again_replaces_and_names_are_case_blind(store):
    store.save("Ada", unit(1), 3)
    store.save("ada", unit(2), 5)
    (only,) = store.list()
    assert only.takes == 5
    assert store.match(unit(2), 0.9).name == "ada"
    store.save("Bob", unit(3), 1)
    with pytest.raises(InvalidRequest, match="already enrolled"):
        store.rename("Bob", "ADA")


def test_the_number_of_speakers_is_bounded(store):
    for i, name in enumerate(["A1", "B2", "C3"]):
        store.save(name, unit(i), 1)
    with pytest.raises(InvalidRequest, match="max_speakers"):
        store.save("D4", unit(9), 1)
    store.save("A1", unit(8), 2)  # enrolling a known speaker again is no new one


def test_match_ranks_everyone_and_needs_the_threshold(store):
    store.save("Ada", unit(1), 1)
    store.save("Bob", unit(2), 1)
    near = unit(1) * 0.9 + unit(2) * 0.1
    near /= np.linalg.norm(near)
    match = store.match(near, 0.8)
    assert match.name == "Ada" and list(match.scores) == ["Ada", "Bob"]
    assert match.scores["Ada"] > 0.9 > match.scores["Bob"]
    assert store.match(unit(7), 0.5).name is None  # a stranger: nobody is close
    assert SpeakerStore(store.folder.parent / "empty").match(unit(1), 0.1).name is None


def test_a_damaged_file_is_nobody(store):
    store.save("Ada", unit(1), 1)
    (store.folder / "broken.json").write_text("{not json")
    short = {"name": "X", "takes": 1, "enrolled_at": 0, "embedding": [1, 2]}
    (store.folder / "short.json").write_text(json.dumps(short))
    assert [s.name for s in store.list()] == ["Ada"]
    assert store.match(unit(1), 0.9).name == "Ada"


@pytest.mark.parametrize("name", ["Ada", "Grace Hopper", "Zoë", "O'Neil", "Jean-Luc", "R2"])
def test_names_a_person_could_have(name):
    assert check_name(f"  {name} ") == name


@pytest.mark.parametrize("name", ["", " ", "../etc", "a/b", "x" * 65, "-lead", "nul\x00", "a*b"])
def test_names_that_are_refused(name):
    with pytest.raises(InvalidRequest):
        check_name(name)


def test_a_bad_embedding_is_refused(store):
    with pytest.raises(InvalidRequest):
        store.save("Ada", np.ones(10), 1)
    with pytest.raises(InvalidRequest):
        store.save("Ada", np.full(256, np.nan), 1)
