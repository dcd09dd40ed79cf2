"""Batched Whisper decodes give the transcripts the one-by-one decodes give (real tiny.en)."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from daemon.engines.asr.base import TranscribeOptions
from daemon.engines.asr.whisper import WhisperAsr
from daemon.engines.asr.window import choose_window
from daemon.engines.models import EMBEDDED_ASR, embedded_path

pytestmark = pytest.mark.e2e

SENTENCES = (
    "Turn on the kitchen lights.",
    "Set a timer for ten minutes.",
    "What is the weather like tomorrow?",
    "Close the blinds in the living room.",
)


@pytest.fixture(scope="module")
def utterances(speak):
    return [speak(text).astype(np.float32) / 32768 for text in SENTENCES]


@pytest.fixture(scope="module")
def batching_model():
    path = embedded_path(EMBEDDED_ASR["tiny.en"])
    # A window far beyond the test's timeout: the batch goes only once all four are in.
    # Whisper's 30 s window, as the sequential path has: the same decode, batched or not.
    return WhisperAsr(
        "tiny.en", path, batch_window_ms=1_000_000, max_batch=len(SENTENCES), window="30"
    )


def test_sessions_decoded_in_one_batch_match_one_by_one(batching_model, utterances):
    options = TranscribeOptions()
    one_by_one = [
        batching_model._sequential(batching_model._batchable(a, options)) for a in utterances
    ]
    with ThreadPoolExecutor(len(utterances)) as pool:
        futures = [pool.submit(batching_model.transcribe, a, options) for a in utterances]
        batched = [f.result(timeout=120) for f in futures]
    assert batching_model.batcher is not None
    assert batching_model.batcher.batches[-1] == len(SENTENCES)
    assert [t.text for t in batched] == [t.text for t in one_by_one]
    assert all(t.text for t in batched)
    for b, s in zip(batched, one_by_one, strict=True):
        assert b.language == s.language == "en"
        assert b.audio_s == pytest.approx(s.audio_s)
        assert b.segments[0].end_s == pytest.approx(s.segments[0].end_s)


def test_a_windowed_batch_pads_to_its_longest_utterance(utterances):
    path = embedded_path(EMBEDDED_ASR["tiny.en"])
    model = WhisperAsr("tiny.en", path, batch_window_ms=1_000_000, max_batch=2, window="auto")
    long = np.concatenate([utterances[0], np.zeros(16000 * 10, np.float32), utterances[1]])
    options = TranscribeOptions()
    alone = [
        model._decode_windows([model._batchable(a, options)])[0] for a in (utterances[2], long)
    ]
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(model.transcribe, a, options) for a in (utterances[2], long)]
        batched = [f.result(timeout=120) for f in futures]
    assert model.batcher is not None and model.batcher.batches[-1] == 2
    counts = model.window_counts()
    assert counts.get(("10", "ok"), 0) >= 1  # the short one alone
    padded = f"{choose_window(len(long) / 16000):g}"
    assert padded != "10" and sum(n for (w, _), n in counts.items() if w == padded) >= 2
    assert all(b.text for b in batched)
    assert [b.text for b in batched][0].split()[:2] == alone[0].text.split()[:2]


def test_options_a_batch_cannot_share_take_the_sequential_path(batching_model, utterances):
    with_timestamps = TranscribeOptions(timestamps=True)
    assert batching_model._batchable(utterances[0], with_timestamps) is None
    long_audio = np.zeros(16000 * 31, np.float32)
    assert batching_model._batchable(long_audio, TranscribeOptions()) is None
    before = list(batching_model.batcher.batches)
    result = batching_model.transcribe(utterances[0], with_timestamps)
    assert result.text and batching_model.batcher.batches == before
