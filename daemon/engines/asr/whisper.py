"""faster-whisper (CTranslate2) speech-to-text."""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from daemon.audio.pcm import RATE
from daemon.engines.asr import tail
from daemon.engines.asr.base import AsrModel, Segment, TranscribeOptions, Transcript
from daemon.engines.asr.batch import Batcher
from daemon.engines.asr.commands import CommandReader
from daemon.engines.asr.hints import Hinter, keeps
from daemon.engines.asr.window import (
    FULL_S,
    TOKENS_FLOOR,
    TOKENS_PER_S_MAX,
    Decode,
    Verdict,
    choose_window,
    echoes_prompt,
    judge,
    narrowband,
    unloop,
)
from daemon.engines.asr.window_reading import WindowReading

_LOGGER = logging.getLogger(__name__)

# Languages Whisper's multilingual models know, in the order of their tokens (ISO 639-1
# where one exists).
MULTILINGUAL = (
    "en zh de es ru ko fr ja pt tr pl ca nl ar sv it id hi fi vi he uk el ms cs ro da hu "
    "ta no th ur hr bg lt la mi ml cy sk te fa lv bn sr az sl kn et mk br eu is hy ne mn "
    "bs kk sq sw gl mr pa si km sn yo so af oc ka be tg sd gu am yi lo uz fo ht ps tk nn "
    "mt sa lb my bo tl mg as tt haw ln ha ba jw su yue"
).split()

WINDOW_S = FULL_S
"""Whisper decodes 30 s windows: longer audio takes the sequential path."""
MAX_INITIAL_TIMESTAMP_S = 1.0
DISTIL_MAX_PROMPT_TOKENS = 48
"""Distil-Whisper's decoder is damaged by prompts of 52 tokens or more: a model whose
name or folder says "distil" takes at most this many."""


@dataclass
class _Job:
    """One utterance of a batch, with the options resolved for this model."""

    audio: np.ndarray
    options: TranscribeOptions
    language: str
    beam_size: int
    narrowband: bool | None = None
    """Telephone-band audio (None: not looked at yet)."""


class WhisperAsr(AsrModel):
    """A loaded faster-whisper model."""

    def __init__(
        self,
        name: str,
        path: Path,
        device: str = "cpu",
        device_index: int = 0,
        compute_type: str = "int8",
        cpu_threads: int = 0,
        workers: int = 1,
        beam_size: int = 1,
        language: str = "",
        batch_window_ms: int = 0,
        max_batch: int = 1,
        window: str = "30",
    ) -> None:
        if device != "cpu":
            from daemon.engines import cuda

            # Before CTranslate2 opens libcublas.so.12 by name (at model load).
            cuda.preload()
        from faster_whisper import WhisperModel

        self.name = name
        self.path = path
        self.device = "cpu" if device == "cpu" else f"cuda:{device_index}"
        self.compute_type = compute_type
        self.default_beam = beam_size
        self._model = WhisperModel(
            str(path),
            device=device,
            device_index=device_index,
            compute_type=compute_type,
            # CTranslate2 defaults to 4 threads; more than the cores only slows it.
            cpu_threads=cpu_threads or min(4, os.cpu_count() or 1),
            num_workers=workers,
        )
        self.multilingual = bool(self._model.model.is_multilingual)
        if "distil" in f"{name} {path}".lower():
            self.max_prompt_tokens = DISTIL_MAX_PROMPT_TOKENS
        self.default_language = language or ("" if self.multilingual else "en")
        # Whisper's language tokens come in MULTILINGUAL's order; large-v3 added the
        # 100th (yue), which base and the other earlier models do not have.
        count = int(self._model.model.num_languages)
        self.languages = tuple(MULTILINGUAL[:count]) if self.multilingual else ("en",)
        self.windowed = window == "auto"
        """Decode in a window cut to the utterance (checked, else the 30 s one)."""
        self._counts: Counter[tuple[str, str]] = Counter()
        self._counts_lock = threading.Lock()
        self.batcher: Batcher[_Job, Transcript] | None = None
        """Batches utterances that are ready together (None: batching off)."""
        if max_batch > 1:
            self.batcher = Batcher(
                self._decode_batch, batch_window_ms / 1000, max_batch, runners=workers
            )

    def transcribe(self, audio: np.ndarray, options: TranscribeOptions) -> Transcript:
        """Decode 16 kHz mono float32 audio.

        Args:
            audio: samples in [-1, 1] at 16 kHz.
            options: beam size, language (None: default, "auto": detect), task, prompt,
                timestamps.

        Returns:
            The joined text of every segment, the segments, and the language used or
            detected.
        """
        job = self._batchable(audio, options)
        if job is not None and self.batcher is not None:
            return self.batcher.submit(self._batch_key(job), job)
        if job is not None and self._cut(job):
            return self._decode_windows([job])[0]
        return self._whole(audio, options)

    def transcribe_hinted(
        self,
        audio: np.ndarray,
        options: TranscribeOptions,
        hinter: Hinter | None,
        commands: CommandReader | None = None,
    ) -> Transcript:
        """:meth:`transcribe`, with a second reading when ``hinter`` gives a prompt for
        what the first heard (:mod:`daemon.engines.asr.hints`). In a cut window the
        second reading reuses the first's encoder output (the encoder is about half of
        a short utterance's decode); elsewhere it decodes twice. A first reading the
        guard sends to the full window's temperature fallback gets no second one."""
        job = self._batchable(audio, options)
        if job is None or self.batcher is not None or not self._cut(job):
            return super().transcribe_hinted(audio, options, hinter, commands)
        return self._decode_windows([job], hinter, commands)[0]

    def score_texts(
        self, audio: np.ndarray, options: TranscribeOptions, texts: Sequence[str]
    ) -> list[float] | None:
        """Each text's mean token log-probability on ``audio`` (:mod:`.score`), in the
        window a cut decode would use."""
        from faster_whisper.audio import pad_or_trim

        language = self._language(options) or "en"
        job = _Job(audio.astype(np.float32, copy=False), options, language, 1)
        fw = self._model
        mel = fw.feature_extractor(job.audio)
        size = min(fw.feature_extractor.nb_max_frames, mel.shape[-1] - 1)
        window_s = choose_window(len(job.audio) / RATE)
        frames = int(round(window_s / fw.feature_extractor.time_per_frame))
        encoded = fw.encode(np.stack([pad_or_trim(mel[:, :size], frames)]))
        return self._window(encoded, job, size).scores(texts)

    def _window(self, encoded: Any, job: _Job, frames: int) -> WindowReading:
        """A second look at ``job``'s encoded window (:mod:`.window_reading`)."""
        return WindowReading(
            self._model, self.multilingual, encoded, job.audio, job.options, job.language, frames
        )

    def token_counter(self) -> Callable[[str], int]:
        """How many tokens a text takes in this model's prompt (its own tokenizer)."""
        return self._count_tokens

    def _count_tokens(self, text: str) -> int:
        return len(self._model.hf_tokenizer.encode(text, add_special_tokens=False).ids)

    def _language(self, options: TranscribeOptions) -> str | None:
        """The language to decode in (None: detect)."""
        language = options.language
        if language is None:
            language = self.default_language or None
        if language == "auto":
            language = None
        return language if self.multilingual else "en"

    def _batchable(self, audio: np.ndarray, options: TranscribeOptions) -> _Job | None:
        """The batch job for this call, or None when it needs the sequential path.

        A batch decodes one 30 s window per utterance with options all its members
        share; long audio, timestamps and language detection go the normal way.
        """
        language = self._language(options)
        if language is None or options.timestamps or len(audio) >= WINDOW_S * RATE:
            return None
        beam = options.beam_size or self.default_beam
        return _Job(audio.astype(np.float32, copy=False), options, language, beam)

    @staticmethod
    def _batch_key(job: _Job) -> Hashable:
        task = job.options.task
        return (job.language, task, job.beam_size, job.options.initial_prompt)

    def window_counts(self) -> dict[tuple[str, str], int]:
        """Decodes so far by (window, outcome): ``("10", "ok")``, ``("10", "repeats")``..."""
        with self._counts_lock:
            return dict(self._counts)

    def _count(self, window_s: float, verdict: Verdict) -> None:
        with self._counts_lock:
            self._counts[(f"{window_s:g}", verdict.value)] += 1

    def _cut(self, job: _Job) -> bool:
        """Whether ``job`` may decode in a cut window (telephone band may not)."""
        if not self.windowed:
            return False
        if job.narrowband is None:
            job.narrowband = narrowband(job.audio)
            if job.narrowband:
                self._count(FULL_S, Verdict.NARROWBAND)
        return not job.narrowband

    def _decode_batch(self, jobs: list[_Job]) -> list[Transcript]:
        """The batcher's call: one window for the batch, or faster-whisper's own path."""
        if len(jobs) == 1 and not self._cut(jobs[0]):
            return [self._sequential(jobs[0])]
        return self._decode_windows(jobs)

    def _decode_windows(
        self,
        jobs: list[_Job],
        hinter: Hinter | None = None,
        commands: CommandReader | None = None,
    ) -> list[Transcript]:
        """Encode and decode utterances sharing options in one CTranslate2 call.

        Mirrors faster-whisper's first-window decode (same features, prompt and
        generation settings, greedy or beam) in the window :func:`choose_window` gives
        the longest utterance (30 s with ``window: 30``). A result the guard
        (:func:`judge`) does not trust, a repetition, a decode cut at the length limit,
        Whisper hearing no speech, or one that would have needed faster-whisper's
        temperature fallback, is decoded again on the sequential 30 s path, so no
        looping transcript comes back. With ``hinter`` (one job), a second reading
        with its prompt reuses the encoder's output (see :meth:`transcribe_hinted`).
        """
        from faster_whisper.audio import pad_or_trim

        fw = self._model
        longest_s = max(len(job.audio) for job in jobs) / RATE
        cut = all([self._cut(job) for job in jobs])  # every job counted
        window_s = choose_window(longest_s) if cut else FULL_S
        frames = int(round(window_s / fw.feature_extractor.time_per_frame))
        features = []
        sizes = []
        for job in jobs:
            mel = fw.feature_extractor(job.audio)
            size = min(fw.feature_extractor.nb_max_frames, mel.shape[-1] - 1)
            sizes.append(size)
            features.append(pad_or_trim(mel[:, :size], frames))
        encoded = fw.encode(np.stack(features))
        prompt = jobs[0].options.initial_prompt
        out: list[Transcript] = []
        decoded = _generate(self, encoded, jobs, window_s, prompt)
        placed = self._placed(encoded, jobs, sizes, [text for text, _ in decoded])
        for job, size, (text, verdict), words in zip(jobs, sizes, decoded, placed, strict=True):
            self._count(window_s, verdict)
            if verdict is Verdict.PROMPT_ECHO:
                out.append(self._whole(job.audio, replace(job.options, initial_prompt=None)))
                continue
            if verdict is not Verdict.OK:
                if window_s < FULL_S:
                    _LOGGER.debug("%g s window: %s, decoding again in 30 s", window_s, verdict)
                out.append(self._sequential(job))
                continue
            end_s = job.options.speech_end_s
            if words is not None and end_s is not None:
                said = self._said(window_s, words, end_s)
                text = _text_of(said) if said is not words else text
                words = said
            window = self._window(encoded, job, size) if len(jobs) == 1 else None
            first = text
            command = None if commands is None or window is None else window.command(text, commands)
            if command is not None:
                text = command
            elif hinter is not None and len(jobs) == 1:
                text = self._reread(encoded, job, window_s, text, hinter)
            piece = Segment(0.0, size * fw.feature_extractor.time_per_frame, text)
            if text != first or words is None or end_s is None:
                heard = None if window is None else window.heard(text)
            else:
                heard = tail.heard_text(words, end_s)
            out.append(
                Transcript(
                    text=text,
                    language=job.language,
                    audio_s=len(job.audio) / RATE,
                    segments=(piece,),
                    heard_text=heard,
                )
            )
        return out

    def _placed(
        self, encoded: Any, jobs: list[_Job], sizes: list[int], texts: list[str]
    ) -> list[list[tail.TimedWord] | None]:
        """Each decoded text's words in time (:func:`tail.align`, one pass for the
        batch) where the jobs say where their speech ends; None for the others."""
        if all(job.options.speech_end_s is None for job in jobs):
            return [None] * len(jobs)
        try:
            window = self._window(encoded, jobs[0], max(sizes))
            found = tail.align(
                self._model, window.tokenizer(), encoded, [t or "." for t in texts], sizes
            )
        except Exception as exc:  # noqa: BLE001 - the words stand as decoded
            _LOGGER.warning("Placing the words in time failed (%s)", type(exc).__name__)
            return [None] * len(jobs)
        return [
            words if job.options.speech_end_s is not None and text else None
            for job, text, words in zip(jobs, texts, found, strict=True)
        ]

    def _said(
        self, window_s: float, words: list[tail.TimedWord], end_s: float
    ) -> list[tail.TimedWord]:
        """``words`` without the sentences written after the end of speech
        (:func:`tail.said_words`); the same list when none was."""
        said = tail.said_words(words, end_s)
        if len(said) == len(words):
            return words
        self._count(window_s, Verdict.INVENTED)
        _LOGGER.info(
            "Dropped what Whisper wrote after the end of speech: %.80r",
            _text_of(words[len(said) :]),
        )
        return said

    def _reread(self, encoded: Any, job: _Job, window_s: float, text: str, hinter: Hinter) -> str:
        """The second reading of ``job``'s encoded window with the prompt ``hinter`` gives
        for ``text``: its text when the guard trusts it and :func:`keeps` says so, else
        ``text`` (also when it fails)."""
        hint = hinter.hint(text)
        if hint is None:
            return text
        self._count(window_s, Verdict.REREAD)
        try:
            second, verdict = _generate(self, encoded, [job], window_s, hint.prompt)[0]
        except Exception as exc:  # noqa: BLE001 - the first reading stands
            _LOGGER.warning("The second reading failed (%s); the first stands", type(exc).__name__)
            return text
        if verdict is not Verdict.OK or not keeps(text, second, hint.names):
            return text
        self._count(window_s, Verdict.REREAD_KEPT)
        return second

    def _sequential(self, job: _Job) -> Transcript:
        return self._whole(job.audio, job.options)

    def _whole(self, audio: np.ndarray, options: TranscribeOptions) -> Transcript:
        """faster-whisper's own decode in 30 s windows; once more without the prompt when
        the text copies the prompt's names (:func:`echoes_prompt`)."""
        result = None
        for item in self.transcribe_segments(audio, options):
            if isinstance(item, Transcript):
                result = item
        assert result is not None
        if echoes_prompt(result.text, options.initial_prompt):
            self._count(FULL_S, Verdict.PROMPT_ECHO)
            _LOGGER.debug("The decode copied its prompt; decoding again without it")
            return self._whole(audio, replace(options, initial_prompt=None))
        return result

    def transcribe_segments(
        self, audio: np.ndarray, options: TranscribeOptions
    ) -> Iterator[Segment | Transcript]:
        """Yield each segment as faster-whisper decodes it, then the Transcript."""
        language = self._language(options)
        task = options.task if self.multilingual else "transcribe"
        segments, info = self._model.transcribe(
            audio.astype(np.float32, copy=False),
            beam_size=options.beam_size or self.default_beam,
            language=language,
            task=task,
            initial_prompt=options.initial_prompt,
            condition_on_previous_text=False,
            # Words placed in time need Whisper's timestamp tokens too: without them
            # faster-whisper moves on from the last word's end and decodes the silence
            # after the speech again, where Whisper writes a sentence of its own
            # ("Lock the front door." + "Thank you.", the added words placed
            # from the real last word's end on, before the end of speech).
            without_timestamps=not options.timestamps and options.speech_end_s is None,
            word_timestamps=options.speech_end_s is not None,
            vad_filter=False,
        )
        # The generator decodes lazily: consume it here, inside the worker.
        parts: list[Segment] = []
        raw: list[Any] = []
        for segment in segments:
            raw.append(segment)
            heard = segment.text.strip()
            text = unloop(heard)
            if text != heard:
                # The temperature fallback ends on its last try, loop or not.
                self._count(FULL_S, Verdict.LOOP_CUT)
                _LOGGER.info("Whisper looped; kept the phrase once: %.80r", text)
            piece = Segment(float(segment.start), float(segment.end), text)
            parts.append(piece)
            yield piece
        end_s = options.speech_end_s
        text = " ".join(p.text for p in parts if p.text)
        heard = None
        if end_s is not None:
            words = tail.from_segments(raw)
            said = self._said(FULL_S, words, end_s)
            if said is not words:
                text = _text_of(said)
                parts = [Segment(parts[0].start_s, parts[-1].end_s, text)]
            heard = tail.heard_text(said, end_s)
        yield Transcript(
            text=text,
            language=info.language,
            audio_s=len(audio) / RATE,
            language_probability=float(info.language_probability or 1.0),
            segments=tuple(parts),
            heard_text=heard,
        )


def _text_of(words: Sequence[tail.TimedWord]) -> str:
    return "".join(w.text for w in words).strip()


def _generate(
    asr: WhisperAsr, encoded: Any, jobs: list[_Job], window_s: float, prompt_text: str | None
) -> list[tuple[str, Verdict]]:
    """Decode the encoded window of each job with ``prompt_text``: its text and the
    guard's verdict."""
    from faster_whisper.tokenizer import Tokenizer
    from faster_whisper.transcribe import get_suppressed_tokens

    fw = asr._model
    first = jobs[0]
    task = first.options.task if asr.multilingual else "transcribe"
    tokenizer = Tokenizer(fw.hf_tokenizer, asr.multilingual, task=task, language=first.language)
    longest_s = max(len(job.audio) for job in jobs) / RATE
    previous: list[int] = []
    if prompt_text is not None:
        previous = tokenizer.encode(" " + prompt_text.strip())
    prompt = fw.get_prompt(tokenizer, previous, without_timestamps=True)
    # A loop ends at the guard's token limit, not at Whisper's 448: it is redone anyway.
    budget = TOKENS_PER_S_MAX * longest_s if window_s < FULL_S else fw.max_length
    max_length = min(fw.max_length, len(prompt) + max(TOKENS_FLOOR, int(budget)) + 1)
    results: list[Any] = fw.model.generate(
        encoded,
        [list(prompt) for _ in jobs],
        beam_size=first.beam_size,
        patience=1,
        length_penalty=1,
        repetition_penalty=1,
        no_repeat_ngram_size=0,
        max_length=max_length,
        return_scores=True,
        return_no_speech_prob=True,
        suppress_blank=True,
        suppress_tokens=get_suppressed_tokens(tokenizer, [-1]),
        max_initial_timestamp_index=int(round(MAX_INITIAL_TIMESTAMP_S / fw.time_precision)),
    )
    out = []
    for job, result in zip(jobs, results, strict=True):
        generated = result.sequences_ids[0]
        tokens = [t for t in generated if t < tokenizer.eot]
        text = tokenizer.decode(tokens)
        avg_logprob = result.scores[0] * len(generated) / (len(generated) + 1)
        verdict = judge(
            Decode(
                text=text,
                tokens=len(tokens),
                audio_s=len(job.audio) / RATE,
                ended=len(prompt) + len(generated) < max_length,
                no_speech_prob=float(result.no_speech_prob),
                avg_logprob=float(avg_logprob),
                prompt=prompt_text,
            )
        )
        out.append((text.strip(), verdict))
    return out
