"""Who is speaking: speaker embeddings, kept apart from voices (what Hearth speaks with).

``ge2e`` (the GE2E encoder from the Resemblyzer wheel, run in numpy: preprocessing,
mel frames, the LSTM, cosine similarity) and ``checkpoint`` (a torch-free, restricted
reader of the legacy PyTorch file its weights come in). Imports ``daemon.errors``,
``daemon.config``, ``daemon.ops`` and ``daemon.audio`` only, like every engine (and
the turn model's mel filters, in the same room).
"""

from __future__ import annotations

from daemon.engines.models import resolve_speaker_model
from daemon.engines.speaker.ge2e import Ge2eEncoder, similarity


def create_speaker_encoder(model: str = "") -> Ge2eEncoder:
    """Load the speaker encoder from ``model`` ("": the embedded GE2E weights; blocking).

    Raises:
        ModelUnavailable: the file is missing or is not a GE2E encoder.
    """
    return Ge2eEncoder(resolve_speaker_model(model))


__all__ = ["Ge2eEncoder", "create_speaker_encoder", "similarity"]
