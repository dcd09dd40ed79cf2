"""Read-only views of the house: the name it announces, what it can do, the models to
advertise and the limits in force (see :mod:`daemon.runtime.services`)."""

from __future__ import annotations

from dataclasses import dataclass

from daemon.config import Config, LimitsConfig
from daemon.ops.deadline import Deadline
from daemon.ops.mdns import instance_name
from daemon.runtime.context import CurrentCore


@dataclass(frozen=True)
class ModelView:
    """A loaded model as clients are told of it (Wyoming ``info``, ``/v1/models``)."""

    name: str
    device: str
    """Where it runs: ``cpu``, ``cuda``, ``remote``..."""
    languages: tuple[str, ...] = ()
    """Languages it speaks (ASR models; empty for the LLM)."""


class HouseView:
    """What the house is and may do now, read from the core in force at each call."""

    def __init__(self, current: CurrentCore) -> None:
        self._current = current

    def check_loaded(self) -> None:
        """Fail now (ModelUnavailable) while the engines load, before any work."""
        self._current()

    @property
    def config(self) -> Config:
        """The configuration in force (a listener's own keys, a session's defaults)."""
        return self._current().config

    @property
    def limits(self) -> LimitsConfig:
        """The request limits in force."""
        return self._current().limits

    def request_deadline(self) -> Deadline:
        """A request's deadline, from now (``limits.request_timeout_s``): for a request
        the adapter begins and no single call of the core covers."""
        return self._current().request_deadline()

    @property
    def display_name(self) -> str:
        """The name Hearth announces over mDNS (``mdns.name``)."""
        return instance_name(self._current().config.mdns)

    @property
    def home_control(self) -> bool:
        """Whether a conversation may carry out home commands (Home Assistant's agent
        does them: ``homeassistant`` configured with ``commands`` on)."""
        chat = self._current().engines.chat
        return chat is not None and chat.home is not None

    @property
    def can_end_turns(self) -> bool:
        """Whether the turn model is on (``vad.turn``): a session can tell a finished turn
        from a pause. Without it a client's own segmenter ends turns as well as a fixed
        silence here would, so a client is better left to end them."""
        return self._current().config.vad.turn != "off"

    def asr_models(self) -> list[ModelView]:
        """Every configured ASR model, in configuration order."""
        return [
            ModelView(name, model.device, tuple(model.languages))
            for name, model in self._current().engines.asr.items()
        ]

    def has_asr_model(self, name: str) -> bool:
        """Whether an ASR model called ``name`` is configured."""
        return name in self._current().engines.asr
