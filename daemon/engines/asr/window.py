"""Whisper's decode window cut to the utterance, and the guard that catches its failures.

Whisper pads every utterance to a 30 s window, and the encoder's cost follows the
window, not the speech: on tiny.en on two cores, 502 ms for 30 s against 58 ms for
10 s. CTranslate2 encodes a shorter window; the model was trained on 30 s ones, so
on a window cut close to the speech it sometimes repeats itself until the length
limit ("What time is it? What time is it? ..."), hears nothing, or hallucinates. The
window therefore comes in a few steps with a margin of silence
(:func:`choose_window`), and every windowed result passes :func:`judge`; one that
fails is decoded again with the full window. A prompt of names (a client's, the
household's) can make a decode loop, which the same checks catch, or copy the names
instead of the speech (:func:`echoes_prompt`): that one is decoded again without the
prompt, in any window. Telephone-band audio (nothing above
4 kHz, :func:`narrowband`) keeps the full window: on the held-out set tiny.en heard
it 1-2 points worse in a cut one.

Pure functions: no model here.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from enum import Enum

import numpy as np

FULL_S = 30.0
"""Whisper's own window."""
STEPS_S = (10.0, 15.0, 20.0, FULL_S)
"""The windows a decode may use (seconds)."""
MARGIN_S = 1.0
"""Silence the window keeps after the audio, at least."""

COMPRESSION_RATIO_MAX = 2.4
"""faster-whisper's threshold for a repetitive decode (text bytes / zlib bytes)."""
TOKENS_PER_S_MAX = 12.0
"""More tokens per second of audio than speech has (fast speech: about 6)."""
TOKENS_FLOOR = 16
"""Short audio may carry a few more tokens than its rate allows (punctuation)."""
NO_SPEECH_MAX = 0.6
"""Above this, Whisper says there is no speech; the VAD said there was."""
LOG_PROB_MIN = -1.0
"""faster-whisper's average log-probability threshold for a failed decode."""
NARROWBAND_HZ = 4200.0
"""Telephone audio (8 kHz sampling) carries nothing above 4 kHz."""
NARROWBAND_FRAME = 512
"""Samples per frame of the spectrum :func:`narrowband` sums (32 ms at 16 kHz)."""
_HANN = np.hanning(NARROWBAND_FRAME).astype(np.float32)
NARROWBAND_SHARE = 5e-4
"""Below this share of the energy above :data:`NARROWBAND_HZ`, audio is narrowband.

On the held-out set, 8 kHz clips upsampled to 16 kHz had at most 2.6e-4 there (int16
rounding noise) and wideband ones at least 9.0e-4 (median 1.3e-2)."""


class Verdict(Enum):
    """What the guard says of a windowed decode."""

    OK = "ok"
    REPEATS = "repeats"
    """The text repeats itself (a phrase again and again, the start of a sentence again
    after it, or a high compression ratio)."""
    TOO_MANY_TOKENS = "too-many-tokens"
    """More tokens than the audio's length can hold."""
    NO_END = "no-end"
    """The decode stopped at the length limit, not at end-of-text."""
    NO_SPEECH = "no-speech"
    """Whisper heard no speech where the VAD heard some."""
    PROMPT_ECHO = "prompt-echo"
    """The text copies the prompt's list of names: decoded again without the prompt."""
    UNSURE = "unsure"
    """Low average log-probability: the full window's temperature fallback decides."""
    NARROWBAND = "narrowband"
    """Telephone-band audio: decoded in the full window without trying a cut one."""
    REREAD = "reread"
    """Read a second time with a prompt of names resembling what was heard (counted
    beside the first reading's own verdict)."""
    REREAD_KEPT = "reread-kept"
    """The second reading wrote one of those names: it replaced the first."""
    INVENTED = "invented"
    """A last sentence written wholly after the end of speech was dropped (counted
    beside the decode's own verdict; :func:`~daemon.engines.asr.tail.said_words`)."""
    LOOP_CUT = "loop-cut"
    """The full window's decode looped too (its temperature fallback kept a repetition):
    the text is cut to the phrase's first time."""


@dataclass(frozen=True)
class Decode:
    """What the guard reads of one windowed decode."""

    text: str
    tokens: int
    """Text tokens generated (no special tokens)."""
    audio_s: float
    ended: bool
    """The decode ended on end-of-text (not on the length limit)."""
    no_speech_prob: float
    avg_logprob: float
    prompt: str | None = None
    """The decode's prompt (the names a client or the household gave)."""


def choose_window(audio_s: float, steps: tuple[float, ...] = STEPS_S) -> float:
    """The shortest step that holds ``audio_s`` plus :data:`MARGIN_S`; the last one else."""
    for step in steps:
        if audio_s + MARGIN_S <= step:
            return step
    return steps[-1]


def narrowband(audio: np.ndarray, rate: int = 16000) -> bool:
    """Whether ``audio`` (mono float) has next to no energy above 4 kHz: telephone band.

    The spectrum is summed over 512-sample frames: an FFT of the whole utterance costs
    up to 30 ms when its length has a large prime factor; frames cost about 1 ms.
    """
    frames = audio.size // NARROWBAND_FRAME
    if audio.size < rate // 10 or frames == 0:
        return False
    blocks = audio[: frames * NARROWBAND_FRAME].astype(np.float32).reshape(frames, -1)
    # A Hann window per frame: a frame's cut edges would leak the speech's low
    # frequencies into the whole spectrum.
    power = (np.abs(np.fft.rfft(blocks * _HANN, axis=1)) ** 2).sum(axis=0)
    total = float(power.sum())
    if total <= 0.0:
        return False
    high = float(power[np.fft.rfftfreq(NARROWBAND_FRAME, 1.0 / rate) > NARROWBAND_HZ].sum())
    return high / total < NARROWBAND_SHARE


def compression_ratio(text: str) -> float:
    """Text bytes over zlib-compressed bytes: high for repetitive text."""
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


_WORD = re.compile(r"[\w']+")
_SENTENCE_ENDS = (".", "!", "?")


def repeats(text: str, min_words: int = 2, times: int = 3) -> bool:
    """Whether a phrase of ``min_words`` or more words comes ``times`` times in a row,
    or a sentence of three or more words comes twice in a row.

    "no no no" passes (one word), as does "turn it up, turn it up" (twice, not a
    sentence each); "What time is it? What time is it?" does not.
    """
    return _first_loop(text, min_words, times) is not None


def echo_at(text: str) -> int | None:
    """Where an unfinished last sentence that repeats the start of the sentence before
    it begins, or None.

    A loop that stopped early: "Turn on the reading lamp. Turn on the reading" (tiny.en
    in a window cut with 0.16 s of silence after the speech). The echo has no end of
    its own and two or more words, all of them the first words of the sentence before
    it; a person who starts again says the whole command, or another one.
    """
    body = text.rstrip()
    if not body or body.endswith(_SENTENCE_ENDS):
        return None
    cut = max(body.rfind(end) for end in _SENTENCE_ENDS)
    if cut < 0:
        return None
    before = body[:cut]
    start = max(before.rfind(end) for end in _SENTENCE_ENDS) + 1
    echo = [w.lower() for w in _WORD.findall(body[cut + 1 :])]
    sentence = [w.lower() for w in _WORD.findall(before[start:])]
    if 2 <= len(echo) < len(sentence) and sentence[: len(echo)] == echo:
        return cut + 1
    return None


def unloop(text: str, min_words: int = 2, times: int = 3) -> str:
    """``text`` with each run of a repeated phrase cut to its first time.

    The same runs as :func:`repeats` finds: a phrase of ``min_words`` or more words
    ``times`` times or more in a row, or a sentence of three or more words twice in a
    row. "I'll tell you my fortnite, I'll tell you my fortnite, I'll tell you my
    fortnite" becomes "I'll tell you my fortnite". An echo that stopped early
    (:func:`echo_at`) is cut too. What is not a loop is unchanged.
    """
    while True:
        cut = _first_loop(text, min_words, times)
        if cut is None:
            echo = echo_at(text)
            return text if echo is None else text[:echo].strip()
        keep_end, drop_end = cut
        text = (text[:keep_end].rstrip(" ,;") + text[drop_end:]).strip()


def _first_loop(text: str, min_words: int, times: int) -> tuple[int, int] | None:
    """(end of the phrase's first time, end of its last) in ``text``, or None."""
    found = list(_WORD.finditer(text))
    words = [m.group().lower() for m in found]
    n = len(words)
    for start in range(n):
        for size in range(1, (n - start) // 2 + 1):
            phrase = words[start : start + size]
            count = 1
            while words[start + count * size : start + (count + 1) * size] == phrase:
                count += 1
            if size < 3 or not _sentence_at(text, found, start, size):
                sentences = 0
            else:  # the copies that are whole sentences too
                sentences, at = 1, start + size
                while sentences < count and _sentence_at(text, found, at, size):
                    sentences, at = sentences + 1, at + size
            if size >= min_words and count >= times:
                return found[start + size - 1].end(), found[start + count * size - 1].end()
            if sentences >= 2:
                return found[start + size - 1].end(), found[start + sentences * size - 1].end()
    return None


def _sentence_at(text: str, found: list[re.Match[str]], start: int, size: int) -> bool:
    """Whether words ``start``..``start + size`` make a whole sentence of ``text``."""
    before = text[: found[start].start()].rstrip()
    after = text[found[start + size - 1].end() :].lstrip()
    return (not before or before[-1] in ".!?") and (not after or after[0] in ".!?")


def echoes_prompt(text: str, prompt: str | None) -> bool:
    """Whether ``text`` copies the prompt's list: two of its entries in a row, in its
    order, with the comma between them ("Kitchen, Hallway").

    Under a prompt of names Whisper sometimes writes the prompt instead of the speech,
    names nobody said. People do not say two names of a list with a pause between them
    in the list's own order, so the copy tells itself from a command that names one.
    """
    if not prompt or "," not in text:
        return False
    entries = [e.strip().casefold() for e in re.split(r"[,.;]", prompt) if e.strip()]
    said = " ".join(text.casefold().split())
    for first, second in zip(entries, entries[1:], strict=False):
        if first in said and second in said:
            pair = rf"(?<!\w){re.escape(first)}\s*,\s*{re.escape(second)}(?!\w)"
            if re.search(pair, said):
                return True
    return False


def judge(decode: Decode) -> Verdict:
    """Whether a windowed decode can be trusted, or why not."""
    if not decode.ended:
        return Verdict.NO_END
    if repeats(decode.text) or echo_at(decode.text) is not None:
        return Verdict.REPEATS
    if compression_ratio(decode.text.strip()) > COMPRESSION_RATIO_MAX:
        return Verdict.REPEATS
    if echoes_prompt(decode.text, decode.prompt):
        return Verdict.PROMPT_ECHO
    if decode.tokens > max(TOKENS_FLOOR, TOKENS_PER_S_MAX * decode.audio_s):
        return Verdict.TOO_MANY_TOKENS
    if decode.no_speech_prob > NO_SPEECH_MAX:
        return Verdict.NO_SPEECH
    if decode.avg_logprob <= LOG_PROB_MIN:
        return Verdict.UNSURE
    return Verdict.OK
