"""How well a given text fits the audio, by Whisper's own reckoning.

CTranslate2's Whisper aligns a given text with an encoded window (what faster-whisper's
word timestamps use), and with the alignment returns the probability of each of the
text's tokens given the audio and the tokens before it: a forced decode. The mean of
their logarithms is the text's score, comparable with the score of the model's own
reading of the same audio (:mod:`daemon.engines.asr.commands`). Several texts are
scored in one call, the encoder output repeated for each.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

FLOOR = 1e-9
"""A token probability of 0 counts as this (log of 0 is no score)."""


def score(
    model: Any, tokenizer: Any, encoded: Any, frames: int, texts: Sequence[str]
) -> list[float]:
    """Each text's mean token log-probability on one encoded window (``encoded``: a
    batch of one; ``frames``: its mel frames of real audio)."""
    import ctranslate2

    tokens = [tokenizer.encode(" " + text.strip()) for text in texts]
    scores = [float("-inf")] * len(texts)
    wanted = [i for i, t in enumerate(tokens) if t]
    if not wanted:
        return scores
    batch = np.repeat(np.asarray(encoded), len(wanted), axis=0)
    start = [*tokenizer.sot_sequence, tokenizer.no_timestamps]
    results = model.model.align(
        ctranslate2.StorageView.from_array(batch), start, [tokens[i] for i in wanted], frames
    )
    for i, result in zip(wanted, results, strict=True):
        probs = np.maximum(np.asarray(result.text_token_probs, dtype=np.float64), FLOOR)
        scores[i] = float(np.mean(np.log(probs)))
    return scores
