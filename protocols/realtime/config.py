"""A Realtime session's configuration: read from ``session.update``, written back.

:func:`updated` reads the generally available shape (``audio.input`` /
``audio.output``, ``output_modalities``, ``max_output_tokens``) and the 2024 beta's
flat one (``input_audio_format``, ``voice``, ``modalities``,
``max_response_output_tokens``...) into one :class:`SessionConfig`; a parameter it
does not know is refused (``unknown_parameter``), and a few it knows but has no use
for are accepted and ignored. :func:`render` writes the session object of
``session.created`` and ``session.updated`` with the values in force, Hearth's
defaults filled in.

``turn_detection`` maps onto the conversation's ways of hearing: ``server_vad`` is
hands-free with the fixed trailing silence, ``semantic_vad`` hands-free with the
turn model (``eagerness`` as a :class:`~daemon.runtime.profiles.Sensitivity`), and
null is push-to-talk, each turn committed by the client.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from daemon.config import Config
from daemon.errors import HearthError
from daemon.runtime.api import ChatOptions, Profile, Sensitivity, TranscribeOptions
from protocols.realtime.audio import PCM, WireFormat, wire_format
from protocols.realtime.wire import Refused

EAGERNESS = {
    "low": Sensitivity.RELAXED,
    "medium": Sensitivity.DEFAULT,
    "auto": Sensitivity.DEFAULT,
    "high": Sensitivity.AGGRESSIVE,
}
"""``semantic_vad``'s eagerness as the conversation's sensitivity."""
MODALITIES = ({"audio"}, {"text"}, {"text", "audio"})
"""Output modalities a client may ask for (the beta's ``["text", "audio"]`` is audio)."""
IGNORED = frozenset(
    {"type", "object", "id", "expires_at", "include", "tracing", "truncation", "prompt"}
    | {"client_secret", "parallel_tool_calls", "reasoning", "input_audio_noise_reduction"}
)
"""Session parameters accepted and left alone (their effect is Hearth's own)."""
MAX_TOOLS = 128
BETA_INPUT = {"input_audio_format": "format", "input_audio_transcription": "transcription"}
"""The beta's flat input parameters, by their place under ``audio.input``."""


@dataclass(frozen=True)
class TurnDetection:
    """How the end of a turn is found (``server_vad`` or ``semantic_vad``)."""

    type: str = "server_vad"
    eagerness: str = "auto"
    """``semantic_vad`` only: low, medium, high or auto."""
    create_response: bool = True
    """Answer each turn at once (else only on ``response.create``)."""
    threshold: float = 0.5
    """Echoed back; Hearth's VAD keeps its own threshold."""

    @property
    def profile(self) -> Profile:
        """The session timing: the fixed silence, or the turn model."""
        return Profile.HANDS_FREE if self.type == "semantic_vad" else Profile.HANDS_FREE_SILENCE

    @property
    def sensitivity(self) -> Sensitivity:
        """``eagerness`` as the conversation's sensitivity (``server_vad``: the default)."""
        return EAGERNESS[self.eagerness] if self.type == "semantic_vad" else Sensitivity.DEFAULT


@dataclass(frozen=True)
class Transcription:
    """How input audio is transcribed (it always is: the LLM reads the words)."""

    model: str | None = None
    """An ASR model name (OpenAI's names and None: Hearth's default model)."""
    language: str | None = None
    prompt: str | None = None


@dataclass(frozen=True)
class SessionConfig:
    """Everything ``session.update`` sets."""

    model: str = "hearth"
    instructions: str | None = None
    """None: Hearth's configured system prompt."""
    output_modalities: tuple[str, ...] = ("audio",)
    input_format: WireFormat = PCM
    output_format: WireFormat = PCM
    voice: str | None = None
    """A voice in Hearth's store, a speaker, or an OpenAI name (None: the default)."""
    speed: float = 1.0
    turn_detection: TurnDetection | None = field(default_factory=TurnDetection)
    """None: the client commits each turn."""
    transcription: Transcription = field(default_factory=Transcription)
    temperature: float | None = None
    max_output_tokens: int | None = None
    """None: ``inf`` (Hearth's ``llm.max_tokens``)."""
    tools: tuple[dict[str, Any], ...] = ()
    """Function tools the client offers (see :mod:`~protocols.realtime.tools`)."""
    tool_choice: str = "auto"

    @property
    def speaks(self) -> bool:
        """Whether replies are spoken (else text only)."""
        return "audio" in self.output_modalities

    def chat_options(self, system_items: list[str], configured: str = "") -> ChatOptions:
        """The replies' instructions and limits (``configured``: Hearth's own prompt);
        see :func:`reply_instructions`."""
        instructions = reply_instructions(self.instructions, system_items, configured, self.speaks)
        return ChatOptions(instructions, self.temperature, self.max_output_tokens)

    def transcribe_options(self) -> TranscribeOptions:
        """Language and prompt of the session's transcripts."""
        given = self.transcription
        return TranscribeOptions(language=given.language, initial_prompt=given.prompt)

    def hearing_key(self) -> tuple[object, ...]:
        """What the conversation hears with: a change means hearing afresh."""
        turn = self.turn_detection
        return (
            self.input_format,
            self.transcription,
            None if turn is None else (turn.profile, turn.sensitivity, turn.create_response),
            self.voice,
            self.speed,
            self.speaks,
            self.output_format.rate,
        )


def reply_instructions(
    instructions: str | None, system_items: list[str], configured: str, speaks: bool
) -> str | None:
    """A reply's system prompt (None: Hearth's configured one, ``configured``).

    A spoken reply keeps the configured prompt (``llm.system_prompt``) first, as every
    other spoken path has it: it says how to answer for the voice (short, plain words),
    and a local model's state of it, evaluated at load, is then the start of the prompt,
    so only the client's words after it are evaluated. The client's ``instructions``
    follow it; ones that already start with it (a client sending back what
    ``session.created`` showed) are used as they are, and empty ones leave it alone. A
    text reply has the client's instructions alone, as OpenAI's API does. System
    messages the client added to the conversation follow either.
    """
    if speaks and instructions is not None:
        if not instructions.strip():
            instructions = None
        elif configured and not instructions.startswith(configured):
            instructions = f"{configured}\n\n{instructions}"
    notes = "\n\n".join(system_items)
    if notes:
        base = configured if instructions is None else instructions
        instructions = f"{base}\n\n{notes}" if base else notes
    return instructions


@dataclass(frozen=True)
class Defaults:
    """Hearth's values for what a client leaves unset (written back to it)."""

    instructions: str
    voice: str
    transcription_model: str
    silence_ms: int
    padding_ms: int

    @classmethod
    def of(cls, config: Config) -> Defaults:
        """The values in force under the daemon's ``config``."""
        return cls(
            instructions=config.llm.system_prompt,
            voice=config.tts.default_voice,
            transcription_model=config.asr.default_model,
            silence_ms=config.vad.trailing_silence_ms,
            padding_ms=config.vad.padding_ms,
        )


def updated(config: SessionConfig, session: object) -> SessionConfig:
    """``config`` with the ``session`` object of a ``session.update`` applied.

    Raises :class:`Refused` (or another typed error) naming the parameter at fault;
    nothing changes then.
    """
    if not isinstance(session, dict):
        raise Refused("'session' must be an object", "invalid_type", "session")
    if session.get("type") not in (None, "realtime"):
        raise Refused(
            "only realtime sessions are served (not transcription sessions)",
            "invalid_value",
            "session.type",
        )
    changes: dict[str, Any] = {}
    audio = _object(session.get("audio"), "session.audio")
    for key, value in session.items():
        param = f"session.{key}"
        if key in IGNORED or key == "audio":
            continue
        if key == "model":
            changes["model"] = _text(value, param, 128)
        elif key == "instructions":
            changes["instructions"] = _text(value, param, None)
        elif key in ("output_modalities", "modalities"):
            changes["output_modalities"] = modalities(value, param)
        elif key in ("max_output_tokens", "max_response_output_tokens"):
            changes["max_output_tokens"] = max_tokens(value, param)
        elif key == "temperature":
            changes["temperature"] = number(value, param, 0.0, 2.0)
        elif key in ("voice", "speed", "output_audio_format"):
            audio = _merge(audio, "output", {"format" if "format" in key else key: value})
        elif key in ("input_audio_format", "input_audio_transcription", "turn_detection"):
            target = str(BETA_INPUT.get(key, key))
            audio = _merge(audio, "input", {target: value})
        elif key == "tools":
            changes["tools"] = _tools(value, param)
        elif key == "tool_choice":
            changes["tool_choice"] = _tool_choice(value, param)
        else:
            raise Refused(f"unknown parameter '{param}'", "unknown_parameter", param)
    changes |= _audio(config, audio)
    try:
        new = replace(config, **changes)
        new.chat_options([])  # the limits' own checks
    except Refused:
        raise
    except HearthError as exc:
        raise Refused(exc.message, "invalid_value") from None
    return new


def _audio(config: SessionConfig, audio: dict[str, Any]) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    for key in audio:
        if key not in ("input", "output"):
            raise Refused(f"unknown parameter 'session.audio.{key}'", "unknown_parameter")
    given = _object(audio.get("input"), "session.audio.input")
    for key, value in given.items():
        param = f"session.audio.input.{key}"
        if key == "format":
            changes["input_format"] = _format(value, param)
        elif key == "transcription":
            changes["transcription"] = _transcription(value, param)
        elif key == "turn_detection":
            changes["turn_detection"] = turn_detection(value, param)
        elif key != "noise_reduction":
            raise Refused(f"unknown parameter '{param}'", "unknown_parameter", param)
    given = _object(audio.get("output"), "session.audio.output")
    for key, value in given.items():
        param = f"session.audio.output.{key}"
        if key == "format":
            changes["output_format"] = _format(value, param)
        elif key == "voice":
            changes["voice"] = voice(value, param)
        elif key == "speed":
            changes["speed"] = number(value, param, 0.25, 1.5)
        else:
            raise Refused(f"unknown parameter '{param}'", "unknown_parameter", param)
    return changes


def turn_detection(value: object, param: str) -> TurnDetection | None:
    """``null``, or a ``server_vad`` / ``semantic_vad`` object."""
    if value is None:
        return None
    given = _object(value, param)
    kind = given.get("type", "server_vad")
    if kind not in ("server_vad", "semantic_vad"):
        raise Refused(f"unknown turn detection {kind!r}", "invalid_value", f"{param}.type")
    eagerness = given.get("eagerness", "auto")
    if eagerness not in EAGERNESS:
        raise Refused("eagerness is low, medium, high or auto", "invalid_value", param)
    create = given.get("create_response", True)
    if not isinstance(create, bool):
        raise Refused("create_response must be true or false", "invalid_type", param)
    threshold = given.get("threshold", 0.5)
    threshold = number(threshold, f"{param}.threshold", 0.0, 1.0)
    return TurnDetection(kind, eagerness, create, threshold)


def voice(value: object, param: str) -> str:
    """A voice name (or OpenAI's ``{"id": ...}``)."""
    if isinstance(value, dict):
        value = value.get("id")
    return _text(value, param, 64)


def max_tokens(value: object, param: str) -> int | None:
    """An integer from 1 to 4096, or ``"inf"`` (None)."""
    if value == "inf" or value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 4096:
        raise Refused("must be an integer from 1 to 4096, or 'inf'", "invalid_value", param)
    return value


def modalities(value: object, param: str) -> tuple[str, ...]:
    """``["audio"]`` or ``["text"]`` (the beta's ``["text", "audio"]`` is audio)."""
    if not isinstance(value, list) or set(value) not in MODALITIES:
        raise Refused('must be ["audio"] or ["text"]', "invalid_value", param)
    return ("audio",) if "audio" in value else ("text",)


def _transcription(value: object, param: str) -> Transcription:
    if value is None:
        return Transcription()
    given = _object(value, param)
    model, language, prompt = given.get("model"), given.get("language"), given.get("prompt")
    return Transcription(
        None if model is None else _text(model, f"{param}.model", 128),
        None if not language else _text(language, f"{param}.language", 16),
        None if not prompt else _text(prompt, f"{param}.prompt", 1000),
    )


def _tools(value: object, param: str) -> tuple[dict[str, Any], ...]:
    if not isinstance(value, list) or len(value) > MAX_TOOLS:
        raise Refused(f"must be a list of at most {MAX_TOOLS} tools", "invalid_value", param)
    for tool in value:
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise Refused("each tool is an object with a 'name'", "invalid_value", param)
    return tuple(value)


def _tool_choice(value: object, param: str) -> str:
    if isinstance(value, dict):
        value = value.get("name")
    return _text(value, param, 64)


def rendered_choice(choice: str) -> str | dict[str, Any]:
    """``tool_choice`` as OpenAI writes it (a name is a function's)."""
    return (
        choice if choice in ("auto", "none", "required") else {"type": "function", "name": choice}
    )


def _format(value: object, param: str) -> WireFormat:
    try:
        return wire_format(value, param)
    except HearthError as exc:
        raise Refused(exc.message, "invalid_value", param) from None


def _object(value: object, param: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Refused(f"'{param}' must be an object", "invalid_type", param)
    return value


def _merge(audio: dict[str, Any], side: str, more: dict[str, Any]) -> dict[str, Any]:
    """A beta flat parameter, put where the generally available shape has it."""
    return audio | {side: {**_object(audio.get(side), f"session.audio.{side}"), **more}}


def _text(value: object, param: str, limit: int | None) -> str:
    if not isinstance(value, str):
        raise Refused(f"'{param}' must be a string", "invalid_type", param)
    if limit is not None and len(value) > limit:
        raise Refused(f"'{param}' is longer than {limit} characters", "invalid_value", param)
    return value


def number(value: object, param: str, low: float, high: float) -> float:
    """A number within ``low``..``high``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise Refused(
            f"'{param}' must be a number from {low:g} to {high:g}", "invalid_value", param
        )
    return float(value)


# ---------------------------------------------------------------- writing back


def render(
    config: SessionConfig, defaults: Defaults, session_id: str, beta: bool
) -> dict[str, Any]:
    """The session object of ``session.created`` / ``session.updated``."""
    turn = config.turn_detection
    detection: dict[str, Any] | None = None
    if turn is not None:
        detection = {"type": turn.type, "create_response": turn.create_response}
        detection["interrupt_response"] = True
        if turn.type == "server_vad":
            detection |= {
                "threshold": turn.threshold,
                "prefix_padding_ms": defaults.padding_ms,
                "silence_duration_ms": defaults.silence_ms,
                "idle_timeout_ms": None,
            }
        else:
            detection["eagerness"] = turn.eagerness
    transcription = {
        "model": config.transcription.model or defaults.transcription_model,
        "language": config.transcription.language,
        "prompt": config.transcription.prompt,
    }
    instructions = defaults.instructions if config.instructions is None else config.instructions
    max_output: int | str = config.max_output_tokens or "inf"
    voice = config.voice or defaults.voice
    common = {
        "id": session_id,
        "object": "realtime.session",
        "model": config.model,
        "instructions": instructions,
        "tools": list(config.tools),
        "tool_choice": rendered_choice(config.tool_choice),
        "temperature": config.temperature,
    }
    if beta:
        return common | {
            "modalities": ["text", "audio"] if config.speaks else ["text"],
            "voice": voice,
            "speed": config.speed,
            "input_audio_format": config.input_format.beta,
            "output_audio_format": config.output_format.beta,
            "input_audio_transcription": transcription,
            "turn_detection": detection,
            "max_response_output_tokens": max_output,
        }
    return common | {
        "type": "realtime",
        "output_modalities": list(config.output_modalities),
        "audio": {
            "input": {
                "format": config.input_format.describe(),
                "transcription": transcription,
                "noise_reduction": None,
                "turn_detection": detection,
            },
            "output": {
                "format": config.output_format.describe(),
                "voice": voice,
                "speed": config.speed,
            },
        },
        "max_output_tokens": max_output,
        "tracing": None,
        "truncation": "auto",
        "prompt": None,
        "expires_at": 0,
        "include": None,
    }
