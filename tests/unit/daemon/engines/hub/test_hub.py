"""Folders fetched once from the loopback hub: a Whisper folder and a Piper voice."""

from __future__ import annotations

import hashlib
import json

import pytest

from daemon.engines.hub.hub import Hub, hub_url, repo_listing, voice_files
from daemon.engines.hub.names import piper_name
from daemon.engines.hub.progress import Downloads
from daemon.engines.hub.transfer import Limits, Offline
from daemon.errors import ModelUnavailable, UnknownVoice
from tests.loopback_hub import LoopbackHub

REPO = "Systran/faster-whisper-small.en"
WEIGHTS = bytes(range(200)) * 6000  # 1.2 MB: LFS
VOICE_WEIGHTS = bytes(range(100, 250)) * 8000  # other bytes: the CDN serves by digest
VOICE = "en_US-kitchen-medium"
ONNX = "en/en_US/kitchen/medium/en_US-kitchen-medium.onnx"


def add_voice(hub: LoopbackHub) -> None:
    files = {ONNX: VOICE_WEIGHTS, f"{ONNX}.json": b'{"audio": {"sample_rate": 22050}}'}
    listed = {}
    for path, data in files.items():
        hub.add("rhasspy/piper-voices", path, data)
        listed[path] = {"size_bytes": len(data), "md5_digest": hashlib.md5(data).hexdigest()}
    catalogue = {VOICE: {"language": {"code": "en_US"}, "files": listed}}
    hub.add("rhasspy/piper-voices", "voices.json", json.dumps(catalogue).encode())


@pytest.fixture
def hub():
    with LoopbackHub() as running:
        for name, data in (
            ("config.json", b"{}"),
            ("tokenizer.json", b'{"t": 1}'),
            ("vocabulary.txt", b"a\nb\n"),
            ("model.bin", WEIGHTS),
            ("README.md", b"never fetched"),
        ):
            running.add(REPO, name, data)
        add_voice(running)
        yield running


def make_hub(hub: LoopbackHub, downloads: Downloads | None = None) -> Hub:
    return Hub(hub.url, Limits(timeout_s=10, tries=3), downloads or Downloads())


def test_a_whisper_name_is_fetched_once_into_its_folder(hub, tmp_path):
    downloads = Downloads()
    hub.cut(REPO, "model.bin", after=500_000)
    folder = make_hub(hub, downloads).fetch_whisper("small.en", tmp_path)
    assert folder == tmp_path / "asr" / "small.en"
    assert sorted(p.name for p in folder.iterdir()) == [
        "config.json",
        "model.bin",
        "tokenizer.json",
        "vocabulary.txt",
    ]
    assert (folder / "model.bin").read_bytes() == WEIGHTS
    assert not (tmp_path / "asr" / ".small.en.partial").exists()
    assert [r.range for r in hub.gets("/model.bin")] == ["", "bytes=500000-"]
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        assert len(hub.gets(f"/{name}")) == 1
    assert hub.gets("README.md") == []
    [item] = downloads.describe()
    assert item["state"] == "done" and item["percent"] == 100.0
    assert item["done_bytes"] == item["total_bytes"] == len(WEIGHTS) + 2 + 8 + 4
    before = len(hub.requests)
    assert make_hub(hub).fetch_whisper("small.en", tmp_path) == folder
    assert len(hub.requests) == before  # on disk: nothing fetched, not even the listing


def test_files_whole_from_an_earlier_try_are_kept(hub, tmp_path):
    staging = tmp_path / "asr" / ".small.en.partial"
    staging.mkdir(parents=True)
    (staging / "config.json").write_bytes(b"{}")
    (staging / "tokenizer.json").write_bytes(b'{"t": 2}')  # whole size, other bytes
    (staging / "model.bin.partial").write_bytes(WEIGHTS[:1000])
    folder = make_hub(hub).fetch_whisper("small.en", tmp_path)
    assert hub.gets("/config.json") == []
    assert len(hub.gets("/tokenizer.json")) == 1
    assert (folder / "tokenizer.json").read_bytes() == b'{"t": 1}'
    assert [r.range for r in hub.gets("/model.bin")] == ["bytes=1000-"]


def test_an_unknown_name_is_refused_without_a_request(hub, tmp_path):
    with pytest.raises(ModelUnavailable, match="neither a folder, a Whisper name"):
        make_hub(hub).fetch_whisper("huge", tmp_path)
    assert hub.requests == []


def test_offline_names_the_model_and_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    downloads = Downloads()
    hub = Hub("http://127.0.0.1:9", Limits(), downloads)
    with pytest.raises(Offline) as info:
        hub.fetch_whisper("small.en", tmp_path)
    message = str(info.value)
    assert "ASR model 'small.en' is not on disk" in message
    assert "unset HF_HUB_OFFLINE" in message and "hub.url" in message
    assert str(tmp_path / "asr" / "small.en") in message
    [item] = downloads.describe()
    assert item["state"] == "failed" and "small.en" in str(item["error"])


def test_a_voice_is_fetched_once_with_its_catalogue(hub, tmp_path):
    cache = tmp_path / "models" / "piper" / "voices.json"
    hub.cut("rhasspy/piper-voices", ONNX, after=400_000)
    folder = make_hub(hub).fetch_voice(VOICE, tmp_path / "voices", cache)
    assert folder == tmp_path / "voices" / VOICE
    assert (folder / f"{VOICE}.onnx").read_bytes() == VOICE_WEIGHTS
    assert (folder / f"{VOICE}.onnx.json").is_file()
    assert json.loads((folder / "voice.json").read_text())["language"] == "en_US"
    assert [r.range for r in hub.gets(".onnx")] == ["", "bytes=400000-"]
    assert cache.is_file()
    before = len(hub.requests)
    make_hub(hub).fetch_voice(VOICE, tmp_path / "voices", cache)
    assert len(hub.requests) == before


def test_a_voice_not_in_the_catalogue_is_unknown(hub, tmp_path):
    cache = tmp_path / "voices.json"
    with pytest.raises(UnknownVoice, match="not in the Piper catalogue"):
        make_hub(hub).fetch_voice("en_US-nobody-low", tmp_path / "voices", cache)
    assert len(hub.gets("voices.json")) == 1
    # Read from the disk by a new start, it is fetched afresh once for a name it lacks,
    # then not again within the hour, whatever is asked.
    again = make_hub(hub)
    for name in ("en_US-nobody-low", "en_US-somebody-low", "en_US-anybody-high"):
        with pytest.raises(UnknownVoice):
            again.fetch_voice(name, tmp_path / "voices", cache)
    assert len(hub.gets("voices.json")) == 2
    assert not (tmp_path / "voices").exists()


def test_a_wrong_voice_file_never_lands(hub, tmp_path):
    hub.add("rhasspy/piper-voices", ONNX, VOICE_WEIGHTS[::-1])  # same size, other bytes
    with pytest.raises(ModelUnavailable, match="MD5"):
        make_hub(hub).fetch_voice(VOICE, tmp_path / "voices", tmp_path / "voices.json")
    assert not (tmp_path / "voices" / VOICE).exists()


def test_listing_and_voice_files_parse_the_hub_answers():
    commit, files = repo_listing(
        {
            "sha": "abc",
            "siblings": [
                {"rfilename": "model.bin", "size": 5, "lfs": {"sha256": "f" * 64, "size": 5}},
                {"rfilename": "config.json", "size": 2, "blobId": "e" * 40},
                {"rfilename": "odd"},
            ],
        }
    )
    assert commit == "abc"
    assert [(f.path, f.expected.sha256, f.expected.git_sha1) for f in files] == [
        ("model.bin", "f" * 64, ""),
        ("config.json", "", "e" * 40),
    ]
    name = piper_name("en_US-lessac-medium")
    assert name is not None
    entry = {
        "files": {
            name.model: {"size_bytes": 3, "md5_digest": "a" * 32},
            name.config: {"size_bytes": 2, "md5_digest": "b" * 32},
            "en/en_US/lessac/medium/MODEL_CARD": {"size_bytes": 1, "md5_digest": "c" * 32},
        }
    }
    assert [f.path for f in voice_files(entry, name)][-1] == name.model
    with pytest.raises(ModelUnavailable, match="lacks the model"):
        voice_files({"files": {name.config: {"size_bytes": 1, "md5_digest": ""}}}, name)


def test_the_hub_url_setting_then_hf_endpoint(monkeypatch):
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    assert hub_url("") == "https://huggingface.co"
    monkeypatch.setenv("HF_ENDPOINT", "http://mirror.lan/")
    assert hub_url("") == "http://mirror.lan"
    assert hub_url("http://127.0.0.1:8080/") == "http://127.0.0.1:8080"
