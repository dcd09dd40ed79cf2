"""Typed errors with stable kebab-case codes.

Engines and the session raise these; each protocol maps them to its wire form in
exactly one place (an HTTP status, a Wyoming ``error`` event, a data-channel message).
"""

from __future__ import annotations

STATUS: dict[str, int] = {
    "invalid-audio": 400,
    "invalid-text": 400,
    "invalid-request": 400,
    "invalid-voice": 400,
    "invalid-event": 400,
    "unsupported-language": 400,
    "unauthorized": 401,
    "cors-forbidden": 403,
    "origin-forbidden": 403,
    "forbidden": 403,
    "unknown-model": 404,
    "unknown-voice": 404,
    "unknown-speaker": 404,
    "voice-not-authorized": 406,
    "header-timeout": 408,
    "body-timeout": 408,
    "voice-exists": 409,
    "speakers-off": 409,
    "audio-too-long": 413,
    "text-too-long": 413,
    "prompt-too-long": 413,
    "upload-too-large": 413,
    "unknown-host": 421,
    "not-implemented": 501,
    "storage-unwritable": 507,
    "llm-unavailable": 502,
    "remote-unavailable": 502,
    "model-unavailable": 503,
    "training-unavailable": 503,
    "busy": 503,
    "not-ready": 503,
    "timeout": 504,
    "invalid-config": 500,
    "internal-error": 500,
}
"""Every error code a client may see, with the class of failure it is, as an HTTP
status: 4xx the request was refused, 503 try again later, other 5xx the server failed.
Every protocol (and the request metrics) reads it from here."""


def status_of(code: str) -> int:
    """The HTTP status for an error code (500 for codes not listed)."""
    return STATUS.get(code, 500)


class HearthError(Exception):
    """Base class: every error a client may see has a stable ``code``."""

    code = "internal-error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ConfigError(HearthError):
    """The configuration file is missing, unreadable or invalid."""

    code = "invalid-config"


EXIT_CONFIG = 78
"""sysexits' EX_CONFIG, the exit status of a config error: the unit's
``RestartPreventExitStatus`` stops restarting on it."""


class InvalidAudio(HearthError):
    """Audio could not be decoded, or its format is out of range."""

    code = "invalid-audio"


class AudioTooLong(HearthError):
    """More audio arrived than ``limits.max_audio_s`` allows."""

    code = "audio-too-long"


class InvalidText(HearthError):
    """Text is empty or otherwise unusable."""

    code = "invalid-text"


class TextTooLong(HearthError):
    """Text is longer than ``limits.max_text_chars``."""

    code = "text-too-long"


class UnknownModel(HearthError):
    """No ASR model of that name is configured."""

    code = "unknown-model"


class UnknownVoice(HearthError):
    """No voice (or speaker) of that name is in the voice store."""

    code = "unknown-voice"


class UnknownSpeaker(HearthError):
    """No person of that name is enrolled as a speaker."""

    code = "unknown-speaker"


class SpeakersOff(HearthError):
    """Speaker verification is off (``speakers.enabled: false``) or its model did not load."""

    code = "speakers-off"


class InvalidRequest(HearthError):
    """A request option is out of range (beam size, speed, language...)."""

    code = "invalid-request"


class UnsupportedLanguage(HearthError):
    """The ASR model does not speak the requested language; the message lists those it does."""

    code = "unsupported-language"


class PromptTooLong(HearthError):
    """The LLM prompt does not fit the model's context window."""

    code = "prompt-too-long"


class ModelUnavailable(HearthError):
    """A model is neither on disk nor downloadable (offline, bad name)."""

    code = "model-unavailable"


class LlmUnavailable(HearthError):
    """The remote LLM server failed or could not be reached."""

    code = "llm-unavailable"


class RemoteUnavailable(HearthError):
    """Every endpoint of a remote ASR model or voice failed, and it has no fallback."""

    code = "remote-unavailable"


class RequestTimeout(HearthError):
    """A request ran past its deadline (``limits.request_timeout_s``)."""

    code = "timeout"


class Busy(HearthError):
    """Too many requests are already queued for an engine."""

    code = "busy"


class InvalidVoice(HearthError):
    """A voice upload or name is unusable (bad files, bad name); the message says why."""

    code = "invalid-voice"


class VoiceExists(HearthError):
    """A voice of that name is already in the store."""

    code = "voice-exists"


class TrainingUnavailable(HearthError):
    """Voice training needs the optional training extra, or a setting, that is missing."""

    code = "training-unavailable"


class StorageUnwritable(HearthError):
    """A file under the state directory cannot be written; the message names the path."""

    code = "storage-unwritable"


def error_for(code: str, message: str) -> HearthError:
    """The typed error of ``code`` carrying ``message``: an error that travelled as an
    event (a conversation's ``RunError``) raised again as the class it was."""
    pending: list[type[HearthError]] = [HearthError]
    while pending:
        kind = pending.pop()
        if kind.code == code and "code" in vars(kind):
            return kind(message)
        pending.extend(kind.__subclasses__())
    error = HearthError(message)
    error.code = code  # a code only an edge knows (an HTTP refusal): kept as it came
    return error
