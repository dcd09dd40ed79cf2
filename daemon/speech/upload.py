"""A whole recording as one request: decoded, transcribed and answered within its bounds.

``/v1/audio/transcriptions`` and ``/api/asr`` send a file and wait for its transcript
(segments and timestamps included, up to ``limits.max_file_audio_s`` of audio). A file
is decoded whole rather than heard as a live turn, but it keeps the profile's values
as every request does: the audio cap, the deadline (the whole request counts) and,
when the client wants it, the speaker, looked up beside the decode and awaited.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

from daemon.engines.access import AsrAccess
from daemon.engines.asr.base import Segment, TranscribeOptions, Transcript
from daemon.ops.deadline import Deadline, bounded
from daemon.speakers.service import SpeakerLookup, SpeakerService
from daemon.speech.finals import Identify
from daemon.speech.request import RequestLimits
from daemon.speech.transcribe import (
    FileTranscript,
    decode_upload,
    stream_segments,
    transcribe_samples,
)


async def transcribe_upload(
    engines: AsrAccess,
    speakers: SpeakerService | None,
    limits: RequestLimits,
    data: bytes,
    model: str | None,
    options: TranscribeOptions,
    *,
    translate: bool = False,
    identify: Identify = Identify.NONE,
) -> FileTranscript:
    """The transcript of a whole file (any format PyAV reads).

    Args:
        engines: the loaded engines.
        speakers: speaker verification (None: off).
        limits: the profile's cap and deadline.
        data: the file's bytes.
        model: ASR model name (None: the default).
        options: language, beam size, prompt, timestamps.
        translate: also decode it in English.
        identify: NAME: look for the enrolled speaker beside the decode.

    Raises:
        InvalidAudio, AudioTooLong, RequestTimeout, and the decode's errors.
    """
    engines.asr_model(model, options.language).check_options(options)
    deadline = Deadline(limits.deadline_s)
    lookup = SpeakerLookup(speakers if identify is not Identify.NONE else None)
    try:
        async with deadline.bound():
            samples = await decode_upload(data, limits.max_audio_s)
            lookup.start(samples)
            result = await transcribe_samples(engines, samples, model, options, translate)
            match = await lookup.match()
    finally:
        lookup.cancel()
    if match is None:
        return result
    return dataclasses.replace(result, speaker=match.name, identified=True)


async def stream_upload(
    engines: AsrAccess,
    limits: RequestLimits,
    data: bytes,
    model: str | None,
    options: TranscribeOptions,
) -> AsyncIterator[Segment | Transcript]:
    """A whole file's segments as they are decoded, then its Transcript.

    The file is decoded before this returns (a bad file fails here, not mid-stream);
    the stream fails with RequestTimeout past the deadline.
    """
    engines.asr_model(model, options.language).check_options(options)
    deadline = Deadline(limits.deadline_s)
    async with deadline.bound():
        samples = await decode_upload(data, limits.max_audio_s)
    return bounded(deadline, stream_segments(engines, samples, model, options))
