"""The loaded engines as one object: every model, its worker pool, and the services
built on them.

:class:`Engines` is built by :func:`~daemon.runtime.loading.load_engines` at start-up
(service) or by the CLI, then shared by all sessions; :class:`EngineStatus` is what
``hearth check`` and ``/healthz`` report of each engine.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TypeVar

from daemon.config import Config
from daemon.engines.asr.base import AsrModel
from daemon.engines.hardware import HardwareReport
from daemon.engines.hub.hub import Hub, hub_url
from daemon.engines.hub.progress import Downloads
from daemon.engines.hub.transfer import Limits
from daemon.engines.llm.base import LlmEngine, Sampling
from daemon.engines.tts.base import TtsEngine
from daemon.engines.tts.cache import TtsCache
from daemon.engines.tts.service import TtsService
from daemon.engines.tts.voices import VoiceStore
from daemon.engines.turn.base import TurnModel
from daemon.engines.vad import Vad
from daemon.engines.wake import WakeLibrary
from daemon.engines.workers import WorkerPool
from daemon.errors import UnknownModel
from daemon.ops.metrics import EngineGauges
from daemon.runtime.profiles import Profile, base_settings, session_profiles
from daemon.runtime.remote import (
    endpoint_sets,
    remote_gauges,
)
from daemon.speakers.service import SpeakerService
from daemon.speech.chat import ChatService, ChatSettings, ConversationStore
from daemon.speech.pipeline import SpeechPipeline
from daemon.speech.session import SessionOptions, SessionSettings, SpeechSession

_LOGGER = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class EngineStatus:
    """What ``hearth check`` and /healthz report for one engine."""

    name: str
    kind: str
    device: str
    compute_type: str
    path: str
    size_mb: float
    load_s: float
    reasons: list[str] = field(default_factory=list)
    fix: str = ""
    """The one command that would put this engine on the GPU, when it fell back."""
    cuda_libraries: list[dict[str, object]] = field(default_factory=list)
    """The CUDA libraries this engine needs: soname, wheel, path, loaded (CUDA boxes only)."""
    max_batch: int = 1
    """ASR: most utterances decoded in one batched call (1: batching off)."""


class Engines:
    """Every loaded engine, its worker pool, and the services built on them."""

    def __init__(
        self, config: Config, asr_batch: int = 1, downloads: Downloads | None = None
    ) -> None:
        self.config = config
        self.hub = _hub(config, downloads or Downloads())
        """Fetches models and voices asked for by name (``hub.*``)."""
        self.stand_ins: set[str] = set()
        """ASR models served by the embedded tiny.en until theirs is fetched."""
        limits = config.limits
        # A batching model gathers its batch from callers blocked in transcribe(),
        # so the pool holds a thread for every place in a batch.
        self.asr_pool = WorkerPool("asr", config.asr.workers * asr_batch, limits.max_queue)
        self.vad_pool = WorkerPool("vad", 2, limits.max_queue * 8)
        self.tts_pool = WorkerPool("tts", config.tts.workers, limits.max_queue)
        self.llm_pool = WorkerPool("llm", 1, limits.max_queue)
        # Wake streams feed a batch every few tens of ms each: a deep queue.
        self.wake_pool = WorkerPool("wake", config.wake.workers, config.wake.max_streams * 4)
        self.turn_pool = WorkerPool("turn", 1, limits.max_queue * 8)
        self.speaker_pool = WorkerPool("speaker", 1, limits.max_queue)
        self.speakers: SpeakerService | None = None
        """Speaker verification (None when speakers.enabled is false or it cannot load)."""
        self.turn: TurnModel | None = None
        """End-of-turn model (None when vad.turn is off)."""
        self.wake: WakeLibrary | None = None
        """Wake models (None when wake.enabled is false)."""
        self.asr: dict[str, AsrModel] = {}
        self.vad: Vad | None = None
        self.tts: TtsService | None = None
        self.llm: LlmEngine | None = None
        self.chat: ChatService | None = None
        self.pipeline: SpeechPipeline | None = None
        self.status: list[EngineStatus] = []
        self.report: HardwareReport | None = None
        """The hardware report the engines were placed by."""
        self.partials = config.asr.partials == "on"
        """Whether sessions decode partial transcripts by default."""
        self.voices = VoiceStore(
            config.voices_path, self._fetch_voice if config.hub.voices else None
        )
        self.profiles = session_profiles(config)
        """Each client profile's session settings (see :mod:`daemon.runtime.profiles`)."""
        self.session_settings = base_settings(config)
        """The daemon-wide session settings (``vad.*``)."""
        self.push_to_talk_settings = self.profiles[Profile.PUSH_TO_TALK].settings
        """Sessions that a button ends (WebRTC push-to-talk) speculate sooner."""

    def _fetch_voice(self, name: str) -> object:
        """Fetch Piper voice ``name`` into the voices folder (blocking)."""
        config = self.config
        return self.hub.fetch_voice(
            name, config.voices_path, config.models_path / "piper" / "voices.json"
        )

    # ---------------------------------------------------------------- use

    def asr_model(self, name: str | None, language: str | None = None) -> AsrModel:
        """The ASR model called ``name``.

        Without a name: the default model, unless ``language`` is one it does not speak
        and another configured model does (the first in configuration order). A client
        that names only a language (Home Assistant's speech-to-text sends no model) is
        then heard by a model that understands it: ``de`` goes to ``base`` beside an
        English-only default.
        """
        key = name or self.config.asr.default_model
        if name is None and language and language != "auto" and key in self.asr:
            wanted = language.lower()
            if wanted not in self.asr[key].languages:
                key = next((n for n, m in self.asr.items() if wanted in m.languages), key)
        if key not in self.asr:
            known = ", ".join(self.asr) or "none loaded"
            raise UnknownModel(f"unknown ASR model '{key}' (models: {known})")
        return self.asr[key]

    def new_session(
        self,
        model: str | None = None,
        options: SessionOptions | None = None,
        settings: SessionSettings | None = None,
    ) -> SpeechSession:
        """A speech session for one utterance (or a hands-free stream).

        ``settings`` replaces the daemon-wide session settings (a protocol whose
        clients end their uploads sooner may speculate sooner)."""
        assert self.vad is not None, "engines not loaded"
        options = options or SessionOptions(partials=self.partials)
        return SpeechSession(
            self.asr_model(model, options.transcribe.language),
            self.asr_pool,
            self.vad,
            self.vad_pool,
            settings or self.session_settings,
            options,
            turn=self.turn,
            turn_pool=self.turn_pool,
        )

    def attach_tts(self, engine: TtsEngine, cache: TtsCache | None) -> None:
        """Serve speech with ``engine`` (loaded): the TTS service, and the pipeline
        once an LLM is attached too."""
        config = self.config
        self.tts = TtsService(
            engine,
            self.voices,
            self.tts_pool,
            cache,
            config.tts.default_voice,
            config.tts.sentence_silence_ms / 1000,
            config.limits.max_text_chars,
        )
        self._assemble_pipeline()

    def attach_llm(self, llm: LlmEngine, conversations: ConversationStore | None = None) -> None:
        """Converse with ``llm``: the chat service (keeping ``conversations`` across a
        reload), and the pipeline once TTS is attached too."""
        config = self.config
        self.llm = llm
        self.chat = ChatService(
            llm,
            conversations
            or ConversationStore(
                config.llm.history_turns, config.llm.history_ttl_s, config.llm.max_conversations
            ),
            ChatSettings(
                system_prompt=config.llm.system_prompt,
                sampling=Sampling(
                    config.llm.temperature,
                    config.llm.top_p,
                    config.llm.max_tokens,
                    config.llm.repeat_penalty,
                ),
                max_prompt_chars=config.limits.max_prompt_chars,
            ),
        )
        self._assemble_pipeline()

    def _assemble_pipeline(self) -> None:
        if self.tts is not None and self.chat is not None:
            self.pipeline = SpeechPipeline(self.chat, self.tts)

    def describe(self) -> list[dict[str, object]]:
        """Engine status as plain data (for /healthz and ``hearth check --json``)."""
        return [s.__dict__ | {"reasons": list(s.reasons)} for s in self.status]

    @property
    def pools(self) -> tuple[WorkerPool, ...]:
        """Every worker pool."""
        return (
            self.asr_pool,
            self.vad_pool,
            self.tts_pool,
            self.llm_pool,
            self.wake_pool,
            self.turn_pool,
            self.speaker_pool,
        )

    def gauges(self) -> EngineGauges:
        """Loaded models, queues and the TTS cache, for a metrics scrape."""
        cache = self.tts.cache if self.tts is not None else None
        return EngineGauges(
            models=tuple((s.name, s.kind, s.device) for s in self.status),
            pools=tuple((p.name, p.queued, p.pending - p.queued) for p in self.pools),
            cache=(cache.hits, cache.misses, cache.size_bytes, len(cache), cache.corrupt)
            if cache is not None
            else None,
            remote=remote_gauges(
                endpoint_sets([*self.asr.values(), self.llm, self.tts and self.tts.engine])
            ),
            asr_windows=tuple(
                (name, window, verdict, count)
                for name, model in self.asr.items()
                for (window, verdict), count in sorted(model.window_counts().items())
            ),
        )

    def close(self) -> None:
        """Stop the worker pools and the fetches (their partial files stay); safe to
        call more than once."""
        self.hub.cancel.set()
        for pool in self.pools:
            pool.close()


def _hub(config: Config, downloads: Downloads) -> Hub:
    """The hub ``hub.*`` names, with its limits."""
    hub = config.hub
    limits = Limits(hub.timeout_s, hub.deadline_s, hub.max_mb * 1_000_000, hub.tries)
    return Hub(hub_url(hub.url), limits, downloads)
