"""What an utterance's final transcript carries before a client sees it.

The speaker's name is found in the speaker worker beside the final decode (from the
moment the session hands over the utterance's audio) and waited for as long as the
profile says; a client that asks for verification waits until it is known and gets the
scores of the enrolled voices that passed. A client that asks for a translation gets a
second decode of the same audio in English. Every client's final goes through here, so
none of them waits for a speaker or decodes again on its own.
"""

from __future__ import annotations

import enum
from dataclasses import replace

import numpy as np

from daemon.engines.access import AsrAccess
from daemon.engines.asr.base import AsrModel, TranscribeOptions
from daemon.speakers.service import SpeakerLookup, SpeakerService
from daemon.speech.events import FinalTranscript
from daemon.speech.transcribe import translate_audio


class Identify(enum.Enum):
    """What a client wants to know of who spoke."""

    NONE = "none"
    """Nothing: no embedding is made."""
    NAME = "name"
    """The enrolled speaker's name, when it is known within the profile's wait."""
    VERIFY = "verify"
    """The name, waited for until known, and the scores of the voices that passed."""


class Utterance:
    """One utterance's work beside its final decode: the speaker, the translation."""

    def __init__(
        self, speakers: SpeakerService | None, identify: Identify, translate: bool
    ) -> None:
        self._speakers = speakers if identify is not Identify.NONE else None
        self._identify = identify
        self._translate = translate
        self._lookup = SpeakerLookup(self._speakers)
        self.audio: np.ndarray | None = None
        """The trimmed utterance (16 kHz float32), once its final decode started."""

    def start(self, audio: np.ndarray) -> None:
        """The final decode starts on ``audio``: look for the speaker beside it (the
        session's ``on_utterance``)."""
        self.audio = audio
        self._lookup.start(audio)

    async def complete(
        self,
        final: FinalTranscript,
        wait_s: float | None,
        engines: AsrAccess,
        asr: AsrModel,
        options: TranscribeOptions,
    ) -> FinalTranscript:
        """``final`` with its speaker (waiting at most ``wait_s``; verification waits
        until known) and, when asked, its translation."""
        verify = self._identify is Identify.VERIFY
        match = await self._lookup.match(None if verify else wait_s)
        if match is not None and match.name is not None:
            final = replace(final, speaker=match.name)
            if verify and self._speakers is not None:
                threshold = self._speakers.settings.threshold
                passed = tuple((n, s) for n, s in match.scores.items() if s >= threshold)
                final = replace(final, verified=passed)
        if self._translate:
            text = final.text
            if self.audio is not None:
                text = await translate_audio(engines, asr, self.audio, options, final.text)
            final = replace(final, translation=text)
        return final

    def cancel(self) -> None:
        """The utterance is over or dropped: stop a lookup still running."""
        self._lookup.cancel()
