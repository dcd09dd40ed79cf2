"""Names to places: Whisper names to repositories, Piper names to catalogue paths."""

from __future__ import annotations

import pytest

from daemon.engines.hub.names import (
    piper_name,
    wanted_whisper_files,
    whisper_folder_name,
    whisper_repo,
)


@pytest.mark.parametrize(
    ("name", "repo"),
    [
        ("tiny.en", "Systran/faster-whisper-tiny.en"),
        ("base", "Systran/faster-whisper-base"),
        ("small.en", "Systran/faster-whisper-small.en"),
        ("medium", "Systran/faster-whisper-medium"),
        ("large-v3", "Systran/faster-whisper-large-v3"),
        ("large", "Systran/faster-whisper-large-v3"),
        ("turbo", "mobiuslabsgmbh/faster-whisper-large-v3-turbo"),
        ("distil-large-v3", "Systran/faster-distil-whisper-large-v3"),
        ("distil-small.en", "Systran/faster-distil-whisper-small.en"),
        ("Systran/faster-whisper-tiny.en", "Systran/faster-whisper-tiny.en"),
    ],
)
def test_whisper_names_and_repository_ids(name, repo):
    assert whisper_repo(name) == repo


@pytest.mark.parametrize("name", ["huge", "", "a/b/c", "../x", "x/..", "/etc/passwd", "a b/c"])
def test_anything_else_is_no_repository(name):
    assert whisper_repo(name) is None


def test_the_folder_of_a_repository_id_is_one_name():
    assert (
        whisper_folder_name("Systran/faster-whisper-tiny.en") == "Systran--faster-whisper-tiny.en"
    )
    assert whisper_folder_name("small.en") == "small.en"


def test_the_wanted_files_come_in_order_with_the_weights_last():
    listing = [
        "README.md",
        "model.bin",
        "vocabulary.json",
        "config.json",
        ".gitattributes",
        "tokenizer.json",
        "preprocessor_config.json",
        "sub/model.bin",
    ]
    assert wanted_whisper_files(listing) == [
        "config.json",
        "preprocessor_config.json",
        "tokenizer.json",
        "vocabulary.json",
        "model.bin",
    ]


def test_a_piper_name_gives_its_catalogue_paths_and_rate():
    name = piper_name("en_US-lessac-medium")
    assert name is not None
    assert name.model == "en/en_US/lessac/medium/en_US-lessac-medium.onnx"
    assert name.config == "en/en_US/lessac/medium/en_US-lessac-medium.onnx.json"
    assert (name.language, name.sample_rate) == ("en_US", 22050)
    low = piper_name("de_DE-thorsten_emotional-x_low")
    assert low is not None and low.voice == "thorsten_emotional" and low.sample_rate == 16000


@pytest.mark.parametrize(
    "name", ["kitchen-joe", "en_US-lessac", "en_US-lessac-best", "EN_us-a-low", "en_US-../x-low"]
)
def test_other_names_are_not_piper_names(name):
    assert piper_name(name) is None
