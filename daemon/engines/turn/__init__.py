"""End-of-turn models: has the speaker finished, judged from how the speech ends.

``base`` (the interface), ``smart_turn`` (Pipecat's Smart Turn v3.2 on ONNX
Runtime, the embedded default) and ``features`` (its Whisper log-mel features in
numpy). Imports ``daemon.errors``, ``daemon.config``, ``daemon.ops`` and
``daemon.audio`` only, like every engine.
"""

from __future__ import annotations

from daemon.engines.models import resolve_turn_model
from daemon.engines.turn.base import TurnModel, TurnPrediction


def create_turn(engine: str, model: str = "", threshold: float = 0.5) -> TurnModel:
    """Load the turn model named ``engine`` (smart-turn) from ``model`` ("" : embedded).

    Raises:
        ModelUnavailable: the model file is missing.
    """
    if engine == "smart-turn":
        from daemon.engines.turn.smart_turn import SmartTurn

        return SmartTurn(resolve_turn_model(model), threshold)
    raise ValueError(f"unknown turn engine {engine!r}")


__all__ = ["TurnModel", "TurnPrediction", "create_turn"]
