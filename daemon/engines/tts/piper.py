"""Piper (piper-tts) synthesis with a bounded set of loaded voices."""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from daemon.engines.tts.base import SynthesisOptions, TtsEngine
from daemon.engines.tts.piper_stream import StreamingVoice, load_streaming
from daemon.engines.tts.voices import VoiceInfo
from daemon.errors import UnknownVoice

_LOGGER = logging.getLogger(__name__)
_Key = tuple[str, str, int]
"""A loaded voice: name, model path and model change time."""


def session_options() -> Any:
    """onnxruntime options for a Piper voice: no memory arena, no memory patterns.

    Every sentence is one run whose input is as long as its phonemes. onnxruntime's
    defaults keep an arena that grows to the longest sentence ever spoken and is never
    given back, and a memory plan for each input length seen, never dropped: a daemon
    that speaks new sentences for months would hold more of both every week
    (bench/RESULTS.md, "Soak"). Allocations go to the C allocator instead, whose free
    memory the daemon gives back (:mod:`daemon.ops.memory`).
    """
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.enable_cpu_mem_arena = False
    options.enable_mem_pattern = False
    return options


def load_voice(
    model_path: Path, config_path: Path, use_cuda: bool = False, streaming: bool = True
) -> Any:
    """A Piper voice with :func:`session_options`: split for speaking as it is decoded
    (:mod:`~daemon.engines.tts.piper_stream`) where its graph allows and ``streaming``,
    else as Piper's own loader makes it."""
    import onnxruntime
    from piper import PiperVoice
    from piper.config import PiperConfig
    from piper.voice import ESPEAK_DATA_DIR

    providers: list[Any] = ["CPUExecutionProvider"]
    if use_cuda:
        providers = [("CUDAExecutionProvider", {"cudnn_conv_algo_search": "HEURISTIC"})]
    if streaming:
        voice = load_streaming(model_path, config_path, providers, session_options())
        if voice is not None:
            return voice
    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    session = onnxruntime.InferenceSession(
        str(model_path), sess_options=session_options(), providers=providers
    )
    return PiperVoice(
        config=PiperConfig.from_dict(config),
        session=session,
        espeak_data_dir=Path(ESPEAK_DATA_DIR),
        download_dir=Path.cwd(),
    )


class PiperTts(TtsEngine):
    """Keeps the ``max_loaded`` most recently used voices in memory."""

    def __init__(self, use_cuda: bool = False, max_loaded: int = 4) -> None:
        self.use_cuda = use_cuda
        self.device = "cuda" if use_cuda else "cpu"
        self.max_loaded = max_loaded
        self._voices: OrderedDict[_Key, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[_Key, threading.Lock] = {}
        """One lock per voice being loaded: a second thread asking for it waits."""

    def _load(self, voice: VoiceInfo) -> Any:
        key = (voice.name, str(voice.model_path), voice.version)
        with self._lock:
            loaded = self._loaded(key)
            if loaded is not None:
                return loaded
            gate = self._loading.setdefault(key, threading.Lock())
        # Single flight: loading a voice takes seconds and hundreds of MB, so threads
        # asking for the same voice at once wait for the first instead of loading it too.
        with gate:
            with self._lock:
                loaded = self._loaded(key)
            if loaded is not None:
                return loaded
            try:
                _LOGGER.info("Loading voice %s (%s)", voice.name, self.device)
                loaded = self._read(voice)
                with self._lock:
                    self._voices[key] = loaded
                    while len(self._voices) > self.max_loaded:
                        self._voices.popitem(last=False)
            finally:
                with self._lock:
                    self._loading.pop(key, None)
        return loaded

    def _loaded(self, key: _Key) -> Any:
        """The loaded voice under ``key`` (most recently used now), or None; hold the lock."""
        loaded = self._voices.get(key)
        if loaded is not None:
            self._voices.move_to_end(key)
        return loaded

    def _read(self, voice: VoiceInfo) -> Any:
        """Load the voice's model from disk (blocking, seconds)."""
        return load_voice(voice.model_path, voice.config_path, self.use_cuda)

    def preload(self, voice: VoiceInfo) -> None:
        """Load the voice now."""
        self._load(voice)

    def synthesize(
        self, voice: VoiceInfo, sentence: str, options: SynthesisOptions
    ) -> Iterator[bytes]:
        """Yield native-rate PCM for the sentence: piece by piece as it is decoded (or
        one piece per sentence Piper splits it into, for a voice spoken whole)."""
        from piper import SynthesisConfig

        piper_voice = self._load(voice)
        speaker_id = None
        # The voice's own defaults (from the store) sit under each request's options.
        speaker = options.speaker or voice.default_speaker
        if speaker:
            speaker_map = piper_voice.config.speaker_id_map or {}
            if speaker in speaker_map:
                speaker_id = speaker_map[speaker]
            elif speaker.isdigit() and int(speaker) < piper_voice.config.num_speakers:
                speaker_id = int(speaker)
            elif piper_voice.config.num_speakers > 1 or speaker_map:
                known = ", ".join(speaker_map) or "none"
                raise UnknownVoice(
                    f"voice '{voice.name}' has no speaker '{speaker}' (speakers: {known})"
                )
        noise_scale = options.noise_scale
        noise_w_scale = options.noise_w_scale
        syn = SynthesisConfig(
            speaker_id=speaker_id,
            length_scale=(piper_voice.config.length_scale / (options.speed * voice.speed)),
            noise_scale=noise_scale if noise_scale is not None else voice.noise_scale,
            noise_w_scale=noise_w_scale if noise_w_scale is not None else voice.noise_w_scale,
            volume=options.volume * voice.volume,
        )
        if isinstance(piper_voice, StreamingVoice):
            yield from piper_voice.synthesize(sentence, syn)
            return
        for chunk in piper_voice.synthesize(sentence, syn_config=syn):
            yield chunk.audio_int16_bytes
