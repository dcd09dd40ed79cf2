"""Piper voices spoken as they are decoded: a sentence's first audio is ready once its
first fifth of a second is, not once all of it is.

A Piper voice (VITS) is one ONNX graph. Its text encoder, duration predictor and flow
make the sentence's latent frames (``z``: 1 x C x T, one frame per ``hop_length``
samples), and its decoder (HiFi-GAN, convolutions only) makes the audio from them. A
decoded frame depends only on frames near it, so the decoder runs piece by piece: each
piece with :data:`CONTEXT` frames on both sides, of which only its own part is kept.
The graph is split at the decoder's input when the voice loads; a voice whose graph
has no such point is spoken whole, as Piper speaks it.

Piper scales each sentence to a peak of 1, which needs the whole sentence first. A
sentence spoken as it is decoded gets one gain per voice instead, measured when the
voice loads on :data:`CALIBRATION` (so every sentence of a voice is as loud as the
next, and the same text gives the same audio), under a soft limit above :data:`KNEE`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

_LOGGER = logging.getLogger(__name__)
DECODER_ENTRY = "/dec/conv_pre/Conv"
"""The decoder's first node in Piper's exported graphs: its first input is ``z``."""
CONTEXT = 10
"""Latent frames decoded on each side of a piece (its audio is cut off)."""
FIRST_FRAMES = 16
"""The first piece of a sentence (16 frames: 0.19 s at 22050 Hz): the sooner it is
decoded, the sooner the sentence is heard. Each later piece is twice the one before:
decoded well within the audio before it even on a board four times slower than a
two-core x86 box, in few runs (each run costs more than its frames: measured,
doubling pieces take 1.2 times the whole graph's time, pieces of 64 frames 1.22)."""
KNEE = 0.9
"""Samples above this are limited softly towards 1 instead of clipped."""
CALIBRATION = ("Sorry, I did not catch that. The kitchen lights are on now.",)
"""Sentences whose loudest sample sets a voice's gain (noise off, its own length)."""


@dataclass(frozen=True)
class SplitGraph:
    """A Piper graph cut at the decoder's input."""

    encoder: bytes
    decoder: bytes
    z: str
    """The latent frames' name: the encoder's output, the decoder's input."""
    speaker: bool
    """Whether the decoder takes the speaker id too (multi-speaker voices)."""


def split_graph(model_path: Path) -> SplitGraph | None:
    """The voice's graph as encoder and decoder; None where it has no decoder entry."""
    import onnx
    import onnx.utils

    model = onnx.load(str(model_path))
    entry = next((n for n in model.graph.node if n.name == DECODER_ENTRY), None)
    if entry is None:
        return None
    inputs = [i.name for i in model.graph.input]
    outputs = [o.name for o in model.graph.output]
    if "input" not in inputs or not outputs:
        return None
    z = entry.input[0]
    speaker = "sid" in inputs
    extractor = onnx.utils.Extractor(model)
    encoder = extractor.extract_model(inputs, [z])
    decoder = extractor.extract_model([z, "sid"] if speaker else [z], outputs[:1])
    return SplitGraph(encoder.SerializeToString(), decoder.SerializeToString(), z, speaker)


def soft_limit(audio: np.ndarray) -> np.ndarray:
    """``audio`` with samples beyond :data:`KNEE` bent smoothly towards 1."""
    size = np.abs(audio)
    over = size > KNEE
    if not over.any():
        return audio
    room = 1.0 - KNEE
    bent = KNEE + room * np.tanh((size[over] - KNEE) / room)
    out = audio.copy()
    out[over] = np.sign(audio[over]) * bent
    return out


def pieces(frames: int) -> Iterator[tuple[int, int]]:
    """The ``(start, end)`` frames of each piece of a sentence of ``frames`` frames."""
    start, size = 0, FIRST_FRAMES
    while start < frames:
        end = min(frames, start + size)
        yield start, end
        start, size = end, size * 2


class StreamingVoice:
    """A Piper voice whose sentences come out piece by piece (see the module docstring).

    ``voice``: Piper's own loaded voice, for its text to phonemes and its config.
    """

    def __init__(self, voice: Any, encoder: Any, decoder: Any, graph: SplitGraph) -> None:
        self.voice = voice
        self.config = voice.config
        self.encoder = encoder
        self.decoder = decoder
        self.graph = graph
        self.hop = int(getattr(voice.config, "hop_length", 256) or 256)
        self.gain = 1.0 / max(self._peak(text) for text in CALIBRATION)

    @property
    def sessions(self) -> tuple[Any, ...]:
        """Its onnxruntime sessions."""
        return (self.encoder, self.decoder)

    def _peak(self, text: str) -> float:
        """The loudest sample of ``text`` as the voice speaks it, noise off, ungained."""
        from piper import SynthesisConfig

        quiet = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)
        peak = 0.0
        for ids in self._sentences(text):
            for audio in self._decoded(ids, quiet):
                peak = max(peak, float(np.abs(audio).max(initial=0.0)))
        return max(peak, 1e-3)

    def _sentences(self, text: str) -> Iterator[list[int]]:
        for phonemes in self.voice.phonemize(text):
            if phonemes:
                yield self.voice.phonemes_to_ids(phonemes)

    def _decoded(self, ids: list[int], syn: Any) -> Iterator[np.ndarray]:
        """One sentence's audio (float, ungained), piece by piece."""
        config = self.config
        length_scale = syn.length_scale if syn.length_scale is not None else config.length_scale
        noise = syn.noise_scale if syn.noise_scale is not None else config.noise_scale
        noise_w = syn.noise_w_scale if syn.noise_w_scale is not None else config.noise_w_scale
        feeds: dict[str, Any] = {
            "input": np.array([ids], dtype=np.int64),
            "input_lengths": np.array([len(ids)], dtype=np.int64),
            "scales": np.array([noise, length_scale, noise_w], dtype=np.float32),
        }
        sid = None
        if self.graph.speaker:
            speaker = syn.speaker_id
            sid = np.array([config.default_speaker_id if speaker is None else speaker], np.int64)
            feeds["sid"] = sid
        z = self.encoder.run(None, feeds)[0]
        frames = z.shape[2]
        for start, end in pieces(frames):
            low, high = max(0, start - CONTEXT), min(frames, end + CONTEXT)
            given: dict[str, Any] = {self.graph.z: np.ascontiguousarray(z[:, :, low:high])}
            if sid is not None:
                given["sid"] = sid
            audio = self.decoder.run(None, given)[0].reshape(-1)
            yield audio[(start - low) * self.hop : (end - low) * self.hop]

    def synthesize(self, text: str, syn: Any) -> Iterator[bytes]:
        """Mono s16 PCM of ``text``, a piece at a time (blocking; in a worker)."""
        gain = self.gain * syn.volume
        for ids in self._sentences(text):
            for audio in self._decoded(ids, syn):
                limited = soft_limit(audio * gain)
                yield (np.clip(limited, -1.0, 1.0) * 32767).astype("<i2").tobytes()


def load_streaming(
    model_path: Path, config_path: Path, providers: list[Any], options: Any
) -> StreamingVoice | None:
    """The voice split for streaming, or None where its graph cannot be split."""
    import onnxruntime
    from piper import PiperVoice
    from piper.config import PiperConfig
    from piper.voice import ESPEAK_DATA_DIR

    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    # The two sessions run one after the other: threads that spin waiting for work
    # would take the cores the other session's threads need (measured: a sentence
    # 1.4 times slower with spinning than without).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        graph = split_graph(model_path)
        if graph is None:
            return None
        encoder = onnxruntime.InferenceSession(
            graph.encoder, sess_options=options, providers=providers
        )
        decoder = onnxruntime.InferenceSession(
            graph.decoder, sess_options=options, providers=providers
        )
        voice = PiperVoice(
            config=PiperConfig.from_dict(config),
            session=encoder,  # never run whole: the pieces are decoded here
            espeak_data_dir=Path(ESPEAK_DATA_DIR),
            download_dir=Path.cwd(),
        )
        return StreamingVoice(voice, encoder, decoder, graph)  # measures its gain: runs it
    except Exception as exc:  # noqa: BLE001 - a graph that cannot be cut is spoken whole
        _LOGGER.info("Voice %s is spoken whole: its graph cannot be split (%s)", model_path, exc)
        return None
