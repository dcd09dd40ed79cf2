"""Importing voices: a good one (the bundled voice under a new name), broken ones refused
with the reason, changes seen at once over HTTP, and a kill mid-import leaves no half voice."""

import io
import json
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import httpx
import pytest

from daemon.cli.main import main
from daemon.engines.tts.voices import VoiceStore
from daemon.errors import InvalidRequest, InvalidVoice, VoiceExists
from daemon.voices.importer import import_files
from tests.daemon import Daemon

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def bundled():
    voice = VoiceStore(Path("/nonexistent")).get("en_US-joe-medium")
    return voice.model_path, voice.config_path


def user_names(store: VoiceStore) -> list[str]:
    return [v.name for v in store.list() if v.source == "user"]


def test_import_the_bundled_voice_under_a_new_name(tmp_path, bundled):
    store = VoiceStore(tmp_path / "voices")
    started = time.perf_counter()
    voice = import_files(store, "joe-copy", *bundled, {"display_name": "Joe again"})
    took = time.perf_counter() - started
    print(f"import and check: {took:.2f} s")
    assert voice.source == "user" and voice.display_name == "Joe again"
    assert voice.language == "en_US" and voice.origin == "imported" and voice.created
    with pytest.raises(VoiceExists):
        import_files(store, "joe-copy", *bundled)
    with pytest.raises(VoiceExists):
        import_files(store, "en_US-joe-medium", *bundled)
    # Change, rename, remove.
    voice = store.update("joe-copy", None, {"speed": 1.2, "volume": 0.8})
    assert voice.speed == 1.2 and voice.volume == 0.8
    with pytest.raises(InvalidRequest):
        store.update("joe-copy", None, {"speed": 9})
    with pytest.raises(InvalidRequest):
        store.update("joe-copy", None, {"default_speaker": "nobody"})
    with pytest.raises(InvalidRequest):
        store.remove("en_US-joe-medium")
    assert store.rename("joe-copy", "joe2").speed == 1.2
    store.remove("joe2")
    assert user_names(store) == []
    assert [p.name for p in store.user_dir.iterdir()] == [".lock"]


@pytest.mark.parametrize(
    "case, reason",
    [
        ("bad-json", "not valid JSON"),
        ("no-phonemes", "phoneme_id_map"),
        ("wrong-model", "does not load or speak"),
        ("../escape", "invalid voice name"),
        (".hidden", "invalid voice name"),
    ],
)
def test_broken_voices_are_refused_with_the_reason(tmp_path, bundled, case, reason):
    model, config = bundled
    store = VoiceStore(tmp_path / "voices")
    bad_model, bad_config = tmp_path / "m.onnx", tmp_path / "m.onnx.json"
    shutil.copy(model, bad_model)
    shutil.copy(config, bad_config)
    name = "broken"
    if case == "bad-json":
        bad_config.write_text("{not json")
    elif case == "no-phonemes":
        data = json.loads(bad_config.read_text())
        del data["phoneme_id_map"]
        bad_config.write_text(json.dumps(data))
    elif case == "wrong-model":
        # An ONNX file that is not a Piper voice: Silero VAD's model, else garbage.
        silero = list(Path(sys.prefix).glob("lib/python*/site-packages/*/data/silero_vad*.onnx"))
        if silero:
            shutil.copy(silero[0], bad_model)
        else:
            bad_model.write_bytes(b"\x08\x07" + b"not a model" * 100)
    else:
        name = case
    with pytest.raises(InvalidVoice, match=reason):
        import_files(store, name, bad_model, bad_config)
    assert user_names(store) == []
    if store.user_dir.exists():
        assert {p.name for p in store.user_dir.iterdir()} <= {".lock"}
    assert not (tmp_path / "escape").exists()


def test_cli_add_list_set_remove(tmp_path, bundled, capsys):
    config = tmp_path / "config.yaml"
    config.write_text(f"state_dir: {tmp_path / 'state'}\n")
    folder = tmp_path / "download"
    folder.mkdir()
    shutil.copy(bundled[0], folder / "en_GB-test-medium.onnx")
    shutil.copy(bundled[1], folder / "en_GB-test-medium.onnx.json")
    assert main(["--config", str(config), "voices", "add", str(folder)]) == 0
    assert (
        main(["--config", str(config), "voices", "set", "en_GB-test-medium", "--speed", "1.1"]) == 0
    )
    assert main(["--config", str(config), "voices", "list"]) == 0
    out = capsys.readouterr().out
    assert "added voice en_GB-test-medium" in out and "en_GB-test-medium" in out
    assert main(["--config", str(config), "voices", "remove", "en_GB-test-medium"]) == 0
    assert main(["--config", str(config), "voices", "add", str(tmp_path / "nothing.zip")]) == 1


def test_a_kill_in_the_middle_of_an_import_leaves_the_store_consistent(tmp_path, bundled):
    """Kill `hearth voices add` at several points; only whole voices are ever listed."""
    config = tmp_path / "config.yaml"
    config.write_text(f"state_dir: {tmp_path / 'state'}\n")
    store = VoiceStore(tmp_path / "state" / "voices")
    cmd = [sys.executable, "-m", "daemon.cli", "--config", str(config), "voices", "add"]
    cmd += [str(bundled[0]), "--name", "killed"]
    for delay in (0.3, 0.8, 1.5, 2.5):
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        names = user_names(store)
        assert names in ([], ["killed"])
        for voice in store.list():
            if voice.name == "killed":
                assert voice.model_path.stat().st_size == bundled[0].stat().st_size
                store.remove("killed")
    # Leftovers are swept by the next change, which then succeeds.
    assert subprocess.run(cmd, capture_output=True, timeout=120).returncode == 0
    assert user_names(store) == ["killed"]
    assert sorted(p.name for p in store.user_dir.iterdir()) == [".lock", "killed"]


def tar_of(files: dict[str, Path]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, path in files.items():
            archive.add(path, arcname=f"voice/{name}")
    return buffer.getvalue()


def test_http_import_is_seen_by_every_protocol_at_once(tmp_path, bundled):
    with Daemon(tmp_path) as daemon:
        url = daemon.url
        archive = tar_of({"kitchen.onnx": bundled[0], "kitchen.onnx.json": bundled[1]})
        resp = httpx.post(
            f"{url}/api/voices",
            data={"name": "kitchen", "display_name": "Kitchen"},
            files={"archive": ("kitchen.tar.gz", archive)},
            timeout=120,
        )
        assert resp.status_code == 201, resp.text
        assert resp.json()["display_name"] == "Kitchen"
        assert "kitchen" in httpx.get(f"{url}/api/speaker").json()["speakers"]
        names = [v["name"] for v in httpx.get(f"{url}/api/voices").json()["voices"]]
        assert names == ["en_US-joe-medium", "kitchen"]
        speech = httpx.post(
            f"{url}/v1/audio/speech",
            json={
                "model": "tts-1",
                "voice": "kitchen",
                "input": "Hello.",
                "response_format": "wav",
            },
            timeout=60,
        )
        assert speech.status_code == 200 and len(speech.content) > 10000
        # Broken uploads: the reason comes back.
        resp = httpx.post(
            f"{url}/api/voices",
            data={"name": "bad"},
            files={"model": ("bad.onnx", b"junk"), "config": ("bad.onnx.json", b"{}")},
        )
        assert resp.status_code == 400 and "sample_rate" in resp.json()["error"]
        resp = httpx.post(
            f"{url}/api/voices",
            data={"name": "kitchen"},
            files={"archive": ("k.tar.gz", archive)},
            timeout=120,
        )
        assert resp.status_code == 409
        resp = httpx.patch(f"{url}/api/voices/kitchen", json={"name": "pantry"})
        assert resp.status_code == 200 and resp.json()["name"] == "pantry"
        resp = httpx.patch(f"{url}/api/voices/pantry", json={"defaults": {"speed": 5}})
        assert resp.status_code == 400
        page = httpx.get(f"{url}/enroll")
        assert page.status_code == 200 and "/web/enroll.js" in page.text
        assert httpx.get(f"{url}/web/enroll.js").status_code == 200
        enrollment = httpx.get(f"{url}/api/voices/me/enrollment").json()
        assert enrollment["takes"] == 0 and enrollment["next_prompt"] == 0
        assert httpx.get(f"{url}/api/voices/me/training").json()["status"] == "none"
        resp = httpx.delete(f"{url}/api/speaker?speaker=pantry")
        assert resp.status_code == 200
        assert httpx.get(f"{url}/api/speaker").json()["speakers"] == ["en_US-joe-medium"]
