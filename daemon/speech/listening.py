"""How a conversation hears: what it is told (:class:`Hearing`), what it takes from the
loaded engines (:class:`Services`), and the speech session's end points.

A push-to-talk utterance is decoded beside the caller (:func:`finish_speech`); a
session that ended the turn itself and whose final decode failed is reported as soon
as its stream ends (:func:`own_end_failed`), while the client may still send.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from daemon.engines.access import AsrAccess
from daemon.engines.tts.base import SynthesisOptions
from daemon.engines.tts.service import TtsService
from daemon.engines.wake.library import WakeModelInfo
from daemon.errors import HearthError
from daemon.speakers.service import SpeakerService
from daemon.speech import conversation_state as cs
from daemon.speech import events as ev
from daemon.speech.finals import Identify
from daemon.speech.pipeline import SpeechPipeline
from daemon.speech.session import SpeechSession
from daemon.speech.wake_gate import WakeListener

_LOGGER = logging.getLogger(__name__)
Emit = Callable[[ev.RunError], Awaitable[None]]


class Services(AsrAccess, Protocol):
    """What a conversation takes from the loaded engines (read afresh after a reload)."""

    @property
    def pipeline(self) -> SpeechPipeline | None:
        """The speech pipeline (None: no LLM or no TTS)."""
        ...

    @property
    def tts(self) -> TtsService | None:
        """Text to speech (None: not loaded)."""
        ...

    @property
    def speakers(self) -> SpeakerService | None:
        """Speaker verification (None: off)."""
        ...


@dataclass(frozen=True)
class Hearing:
    """How a conversation hears, from one ``listen`` to the next."""

    mode: cs.Mode
    open_session: Callable[[], SpeechSession]
    """A speech session from the current engines (called again to renew it)."""
    reply: bool = False
    """Answer each utterance (else transcripts only)."""
    speak: bool = True
    """Speak the answer (else its text only)."""
    tts_options: SynthesisOptions = field(default_factory=SynthesisOptions)
    require_known: bool = False
    """The household gate (``speakers.require: known``)."""
    wake: WakeListener | None = None
    """Wake mode's detector (the conversation closes it)."""
    wake_model: WakeModelInfo | None = None
    command_timeout_s: float = 8.0
    speaker_wait_s: float | None = 0.25
    """How long a final waits for its speaker's name (the profile's; None: until known)."""
    identify: Identify = Identify.NAME
    """What the client wants to know of who spoke."""
    translate: bool = False
    """Each final carries its English translation too."""


async def open_session(hearing: Hearing) -> SpeechSession:
    """The hearing's speech session; when it cannot open, its wake listener is freed."""
    try:
        return hearing.open_session()
    except BaseException:
        if hearing.wake is not None:
            await hearing.wake.close()
        raise


async def finish_speech(speech: SpeechSession, emit: Emit, owner: str) -> None:
    """Push-to-talk: the final decode, beside the caller; a failure is the client's event
    (unless the session ended the turn itself: its reader reports that one)."""
    try:
        await speech.finish()
    except HearthError as exc:
        if speech.ended is None:
            await emit(ev.RunError(exc.code, exc.message))
    except Exception:  # noqa: BLE001 - the conversation lives on; the client hears why
        if speech.ended is None:
            _LOGGER.exception("[%s] final decode failed", owner)
            await emit(ev.RunError("internal-error", "internal error"))
    finally:
        await speech.close()


async def own_end_failed(speech: SpeechSession, emit: Emit, owner: str) -> None:
    """A session that ended the turn itself and whose final decode failed ends its
    stream without a final: the client hears why now, while it may still send."""
    ended = speech.ended
    if ended is None:
        return
    await asyncio.wait({ended})
    if ended.cancelled() or (exc := ended.exception()) is None:
        return
    if isinstance(exc, HearthError):
        _LOGGER.info("[%s] %s: %s", owner, exc.code, exc.message)
        await emit(ev.RunError(exc.code, exc.message))
    else:
        _LOGGER.error("[%s] the transcript failed", owner, exc_info=exc)
        await emit(ev.RunError("internal-error", "internal error"))
