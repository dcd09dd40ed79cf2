"""Both VADs on labeled audio (Piper speech with silence and with noise around it).

The numbers printed here are the ones bench/RESULTS.md records; the assertions
check each VAD is usable and that the configured default is the better one on noise.
"""

import numpy as np
import pytest

from daemon.audio import RATE
from daemon.config import Config
from daemon.vad import create_vad
from daemon.vad.evaluate import score, speech_labels
from tests.helpers import noise, silence

pytestmark = pytest.mark.e2e


def labeled(speak, noisy: bool):
    """[1 s][utterance][1.2 s][utterance][1 s], labels from the clean speech envelope."""
    first = speak("Turn on the kitchen lights.")
    second = speak("What is the weather like tomorrow morning?")
    parts, segments, pos = [], [], 0
    for piece in (silence(1.0), first, silence(1.2), second, silence(1.0)):
        if piece is first or piece is second:
            # Truth: from the first to the last sample above -40 dBFS of the phrase.
            loud = np.flatnonzero(np.abs(piece.astype(np.float32)) > 0.01 * 32768)
            segments.append((pos + int(loud[0]), pos + int(loud[-1])))
        parts.append(piece)
        pos += len(piece)
    audio = np.concatenate(parts)
    if noisy:
        # Fan-like noise at about 10 dB below the speech level.
        speech_rms = np.sqrt(np.mean((first.astype(np.float32) / 32768) ** 2))
        hum = noise(len(audio) / RATE + 1, level=float(speech_rms) / 3.2, seed=3)[: len(audio)]
        audio = np.clip(audio.astype(np.int32) + hum, -32768, 32767).astype(np.int16)
    return audio, speech_labels(segments, len(audio)), segments


@pytest.fixture(scope="module")
def scores(speak):
    out = {}
    for condition in ("clean", "noisy"):
        audio, labels, segments = labeled(speak, condition == "noisy")
        for engine in ("webrtc", "silero"):
            out[(engine, condition)] = score(create_vad(engine), audio, labels, segments)
    for key, value in sorted(out.items()):
        print(key, value)
    return out


@pytest.mark.parametrize("engine", ["webrtc", "silero"])
def test_each_vad_finds_both_utterances_in_clean_audio(scores, engine):
    result = scores[(engine, "clean")]
    assert result.utterances == 2
    assert result.f1 > 0.8
    assert result.onset_error_ms < 200


def test_the_default_vad_is_the_better_one_on_noise(scores):
    default = Config().vad.engine
    other = "webrtc" if default == "silero" else "silero"
    assert scores[(default, "noisy")].utterances == 2
    assert scores[(default, "noisy")].f1 >= scores[(other, "noisy")].f1
