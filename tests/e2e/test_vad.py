"""Both VADs on labeled audio (Piper speech with silence and with noise around it).

The numbers printed here are the ones bench/RESULTS.md records; the assertions
check each VAD is usable and that the configured default is the better one on noise.
"""

import pytest

from bench.vad_eval import labeled_mix, score
from daemon.config import Config
from daemon.engines.vad import create_vad

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def scores(speak):
    out = {}
    for condition in ("clean", "noisy"):
        utterances = [
            speak("Turn on the kitchen lights."),
            speak("What is the weather like tomorrow morning?"),
        ]
        audio, labels, segments = labeled_mix(utterances, condition == "noisy")
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
