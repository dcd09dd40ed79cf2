"""Speech profiles: each kind of client's timing and limits, from the configuration, in one place.

A profile says how a client's speech arrives and ends, named by what it does, never by
which protocol asks: how soon a session may speculate, how much audio it keeps around
speech, whether the turn model is asked, whether the stream holds many utterances,
whether partial transcripts are wanted, and who ends the turn (the client, or the
session itself). For a request (one utterance a client waits on) it also says how long
its final waits for the speaker's name, how much audio it may send, and when its
deadline starts. :func:`session_profile` is a pure function of the configuration:
adapters name a :class:`Profile` and never assemble :class:`SessionSettings`, caps or
deadlines themselves. A client's wish for a quicker or a more patient end of turn
(wyoming 1.10's ``vad_sensitivity``) is a :class:`Sensitivity`, which
:func:`with_sensitivity` maps onto the settings.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from daemon.config import Config
from daemon.speech.endpoint import EndpointConfig
from daemon.speech.session import SessionSettings
from daemon.speech.turn_text import TurnPolicy


class Profile(enum.Enum):
    """How a client's speech arrives and ends."""

    PUSH_TO_TALK = "push-to-talk"
    """A button ends the utterance: speculate early (``vad.push_to_talk_silence_ms``)."""
    HANDS_FREE = "hands-free"
    """An open microphone, utterance after utterance: the endpointer and the turn model
    end each one."""
    WAKE = "wake"
    """Hands-free behind a wake word."""
    HANDS_FREE_SILENCE = "hands-free-silence"
    """An open microphone whose utterances end after the fixed trailing silence
    (``vad.trailing_silence_ms``), never the turn model."""
    DEVICE_UPLOAD = "device-upload"
    """An upload its device ends with its own VAD (``willow.padding_ms``,
    ``willow.speculative_silence_ms``): speculate early, no turn model, no partial
    transcripts; the whole exchange, upload included, counts against the deadline."""
    DEVICE_TURN = "device-turn"
    """A device upload that may stream on after the speaker is done: as
    :attr:`DEVICE_UPLOAD`, with the turn model deciding where the turn ends."""
    CLIENT_ENDED = "client-ended"
    """One live utterance the client ends with its stop (its own VAD): the daemon-wide
    endpointing (``vad.*``); the deadline starts at the end of the audio."""
    SERVER_ENDED = "server-ended"
    """One live utterance the session ends itself, while the client still sends: at a
    finished turn, the longest pause, within ``vad.max_utterance_ms`` and
    ``vad.no_speech_ms``; audio after the end is dropped (and counted against the cap)."""
    FILE = "file"
    """A whole recording decoded at once (``limits.max_file_audio_s``); the speaker's
    name, when asked, is awaited."""


class Sensitivity(enum.Enum):
    """How soon a client wants the end of its turn found (wyoming 1.10's
    ``vad_sensitivity``)."""

    DEFAULT = "default"
    """The configured end of turn (``vad.*``)."""
    RELAXED = "relaxed"
    """Wait longer: for people who pause mid-sentence."""
    AGGRESSIVE = "aggressive"
    """End sooner: for short commands in a quiet room."""


RELAXED_PAUSES = 1.75
"""Relaxed: the longest pause and the fixed trailing silence grow by this factor (Home
Assistant's own segmenter waits 1.25 s relaxed against 0.7 s by default: 1.8 times)."""
AGGRESSIVE_PAUSES = 0.5
"""Aggressive: the longest pause and the fixed trailing silence shrink by this factor
(Home Assistant's segmenter goes from 0.7 s to 0.25 s; Hearth's turn model ends most
turns long before the longest pause, so halving it is enough and cuts fewer people off)."""
MODEL_BOUNDARY = 0.5
"""The turn model's own boundary between "finished" and "not finished": an aggressive
threshold moves towards it and never below it, so a turn never ends on a pause the
model thinks more likely unfinished than finished."""


SPEAKER_WAIT_S = 0.25
"""How long a conversation's transcript waits for its speaker's name before the reply
starts without it (an embedding takes about 30 ms)."""
REQUEST_SPEAKER_WAIT_S = 1.0
"""How long a request's transcript waits for it: the name is part of the answer, and
nothing else waits on it."""


@dataclass(frozen=True)
class SessionProfile:
    """What a profile sets for one speech session, and for a request of it."""

    settings: SessionSettings
    hands_free: bool = False
    """Many utterances in one stream (idle audio is dropped as it ages)."""
    partials: bool = True
    """Whether partial transcripts are wanted (they come only when the daemon decodes
    them: ``asr.partials``)."""
    ends_turn: bool = False
    """The session ends the utterance itself and the final transcript comes at once,
    while the client still sends."""
    speaker_wait_s: float | None = SPEAKER_WAIT_S
    """How long a final transcript waits for its speaker's name (None: until known)."""
    max_audio_s: float = 60.0
    """The most audio a request may send (s), audio dropped after its end included."""
    deadline_s: float = 120.0
    """How long a request may take to be answered (``limits.request_timeout_s``)."""
    deadline_counts_audio: bool = True
    """Whether the audio's arrival counts against the deadline (an upload, whose sender
    may be slow) or the deadline starts at the end of the audio (a live stream, paced
    by the speaker and bounded by :attr:`max_audio_s`)."""


def base_settings(config: Config) -> SessionSettings:
    """The daemon-wide session settings (``vad.*``, ``asr.partial_interval_ms``, limits)."""
    vad = config.vad
    limits = config.limits
    return SessionSettings(
        endpoint=EndpointConfig(
            speech_start_s=vad.speech_start_ms / 1000,
            speculative_silence_s=vad.speculative_silence_ms / 1000,
            trailing_silence_s=vad.trailing_silence_ms / 1000,
            turn=vad.turn != "off",
            turn_check_s=vad.turn_check_ms / 1000,
            turn_early_check_s=vad.turn_early_check_ms / 1000 or None,
            turn_recheck_s=vad.turn_recheck_ms / 1000,
            max_pause_s=vad.max_pause_ms / 1000,
        ),
        padding_s=vad.padding_ms / 1000,
        speculative_padding_s=min(vad.speculative_silence_ms, vad.padding_ms) / 1000,
        partial_interval_s=config.asr.partial_interval_ms / 1000,
        turn=TurnPolicy(text=vad.turn_text, text_threshold=vad.turn_text_threshold),
        max_audio_s=limits.max_audio_s,
        max_sample_rate=limits.max_sample_rate,
        max_channels=limits.max_channels,
    )


def _device(base: SessionSettings, config: Config, turn: bool) -> SessionSettings:
    """Device uploads end soon after the speaker pauses: the device's padding, and
    speculation as early as a button's (the device ends the upload itself)."""
    device = replace(
        base,
        padding_s=config.willow.padding_ms / 1000,
        endpoint=replace(base.endpoint, turn=turn and base.endpoint.turn),
    )
    return device.push_to_talk(config.willow.speculative_silence_ms / 1000)


def session_profile(config: Config, profile: Profile) -> SessionProfile:
    """What ``profile`` sets for a session under ``config``."""
    base = base_settings(config)
    limits = config.limits
    if profile is Profile.FILE:
        file = replace(base, max_audio_s=limits.max_file_audio_s)
        return SessionProfile(
            file,
            partials=False,
            speaker_wait_s=None,
            max_audio_s=limits.max_file_audio_s,
            deadline_s=limits.request_timeout_s,
        )
    chosen = _shape(base, config, profile)
    live = profile in (Profile.CLIENT_ENDED, Profile.SERVER_ENDED)
    return replace(
        chosen,
        max_audio_s=limits.max_audio_s,
        deadline_s=limits.request_timeout_s,
        speaker_wait_s=REQUEST_SPEAKER_WAIT_S if live else SPEAKER_WAIT_S,
        deadline_counts_audio=not live,
    )


def _shape(base: SessionSettings, config: Config, profile: Profile) -> SessionProfile:
    """How ``profile``'s sessions hear (before the request's cap, wait and deadline)."""
    if profile is Profile.PUSH_TO_TALK:
        return SessionProfile(base.push_to_talk(config.vad.push_to_talk_silence_ms / 1000))
    if profile in (Profile.HANDS_FREE, Profile.WAKE):
        return SessionProfile(base, hands_free=True)
    if profile is Profile.HANDS_FREE_SILENCE:
        silence = replace(base, endpoint=replace(base.endpoint, turn=False))
        return SessionProfile(silence, hands_free=True)
    if profile is Profile.DEVICE_UPLOAD:
        return SessionProfile(_device(base, config, turn=False), partials=False)
    if profile is Profile.DEVICE_TURN:
        return SessionProfile(_device(base, config, turn=True), partials=False)
    if profile is Profile.SERVER_ENDED:
        return SessionProfile(_ending_turns(base, config), ends_turn=True)
    return SessionProfile(base)


def _ending_turns(base: SessionSettings, config: Config) -> SessionSettings:
    """A session that owns the end of the turn must always end it: after the longest
    utterance (a television the VAD hears as speech never pauses) and, when nobody
    speaks at all, after ``vad.no_speech_ms`` with an empty transcript."""
    vad = config.vad
    endpoint = replace(
        base.endpoint,
        max_utterance_s=vad.max_utterance_ms / 1000,
        no_speech_s=vad.no_speech_ms / 1000,
    )
    return replace(base, endpoint=endpoint)


def with_sensitivity(
    settings: SessionSettings, sensitivity: Sensitivity, turn_threshold: float
) -> SessionSettings:
    """``settings`` for a client that wants its turn ended sooner or later.

    Relaxed moves the turn thresholds halfway towards 1 (the model must be surer that
    the speaker has finished) and stretches the pauses by :data:`RELAXED_PAUSES`.
    Aggressive moves them halfway towards :data:`MODEL_BOUNDARY` and shortens the
    pauses by :data:`AGGRESSIVE_PAUSES`. The pauses are the longest pause inside a turn
    and the fixed trailing silence (no turn model, or a pause it was not asked about).

    Args:
        settings: the profile's settings.
        sensitivity: what the client asked for.
        turn_threshold: the turn model's own threshold (``vad.turn_threshold``), used
            where the settings leave the acoustic threshold to the model.

    Returns:
        The adjusted settings (``settings`` itself for the default).
    """
    if sensitivity is Sensitivity.DEFAULT:
        return settings
    relaxed = sensitivity is Sensitivity.RELAXED
    factor = RELAXED_PAUSES if relaxed else AGGRESSIVE_PAUSES

    def lean(threshold: float) -> float:
        if relaxed:
            return max(threshold, (threshold + 1.0) / 2)
        return min(threshold, (threshold + MODEL_BOUNDARY) / 2)

    policy = settings.turn
    acoustic = turn_threshold if policy.threshold is None else policy.threshold
    endpoint = settings.endpoint
    return replace(
        settings,
        endpoint=replace(
            endpoint,
            max_pause_s=endpoint.max_pause_s * factor,
            trailing_silence_s=endpoint.trailing_silence_s * factor,
        ),
        turn=replace(policy, threshold=lean(acoustic), text_threshold=lean(policy.text_threshold)),
    )


def session_profiles(config: Config) -> dict[Profile, SessionProfile]:
    """Every profile's settings under ``config``."""
    return {profile: session_profile(config, profile) for profile in Profile}
