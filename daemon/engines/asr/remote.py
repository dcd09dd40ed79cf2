"""A speech-to-text model served by an OpenAI-compatible server (vLLM, speaches, Hearth).

Only the decode moves: the session keeps its VAD, trimming, speculative decode and
empty result on silence, and calls :meth:`RemoteAsr.transcribe` in the ASR pool as
it would a local model. The trimmed utterance goes out as 16 kHz WAV to
``POST {base_url}/audio/transcriptions`` (``/audio/translations`` to translate).
When every endpoint fails, the named local fallback model decodes instead.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np

from daemon.audio.pcm import RATE, float_to_pcm
from daemon.audio.stream import wav_header
from daemon.engines.asr.base import AsrModel, Segment, TranscribeOptions, Transcript
from daemon.engines.asr.whisper import MULTILINGUAL
from daemon.engines.remote import (
    AllEndpointsFailed,
    EndpointSet,
    RemoteEndpoint,
    RemoteFailure,
    classify,
    read_capped,
    status_failure,
)
from daemon.errors import RemoteUnavailable

_LOGGER = logging.getLogger(__name__)
MAX_RESPONSE = 4 << 20
"""Largest transcription answer read (bytes): a long verbose_json is well below."""
MAX_EVENT_LINE = 1 << 16
"""Longest server-sent-event line of a streamed transcription (bytes)."""


def wav_bytes(audio: np.ndarray) -> bytes:
    """16 kHz mono float32 samples as a complete s16 WAV file."""
    pcm = float_to_pcm(audio)
    return wav_header(RATE, len(pcm)) + pcm


class RemoteAsr(AsrModel):
    """An ``asr.models`` entry with ``backend: remote``; calls are blocking (ASR pool)."""

    def __init__(
        self,
        name: str,
        endpoints: EndpointSet,
        model: str,
        timeout_s: float = 30.0,
        language: str = "",
        stream: bool = True,
        fallback: AsrModel | None = None,
    ) -> None:
        self.name = name
        self.endpoints = endpoints
        self.model = model
        self.timeout_s = timeout_s
        self.device = "remote"
        self.stream = stream
        """Ask for ``stream=true`` in :meth:`transcribe_segments` (servers that cannot
        answer JSON and are read the same)."""
        self.fallback = fallback
        # Whisper names ending in .en hear only English; other remote models are
        # taken to be multilingual and the server judges the language.
        english = model.lower().endswith(".en") or language == "en"
        self.languages = ("en",) if english else tuple(MULTILINGUAL)
        self.default_language = language or ("en" if english else "")
        headers = {"Authorization": f"Bearer {endpoints.api_key}"} if endpoints.api_key else {}
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(timeout_s),
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
        )

    # ------------------------------------------------------------- requests

    def _form(self, options: TranscribeOptions, stream: bool) -> dict[str, str]:
        form = {"model": self.model, "response_format": "json", "temperature": "0"}
        if options.timestamps:
            form["response_format"] = "verbose_json"
        language = options.language if options.language is not None else self.default_language
        if options.task == "transcribe" and language and language != "auto":
            form["language"] = language
        if options.initial_prompt:
            form["prompt"] = options.initial_prompt
        if stream:
            form["stream"] = "true"
        return form

    def _path(self, options: TranscribeOptions) -> str:
        return "/audio/translations" if options.task == "translate" else "/audio/transcriptions"

    def _post(
        self, ep: RemoteEndpoint, left: float, audio: bytes, options: TranscribeOptions
    ) -> Transcript:
        deadline = time.monotonic() + left
        try:
            with self._client.stream(
                "POST",
                ep.url + self._path(options),
                data=self._form(options, stream=False),
                files={"file": ("audio.wav", audio, "audio/wav")},
                timeout=httpx.Timeout(left),
            ) as resp:
                body = read_capped(resp.iter_bytes(), MAX_RESPONSE, deadline)
                if resp.status_code >= 400:
                    raise status_failure(resp.status_code, body)
        except httpx.HTTPError as exc:
            raise classify(exc) from None
        return self._parse(body, options, len(audio))

    def _parse(self, body: bytes, options: TranscribeOptions, wav_len: int) -> Transcript:
        try:
            data = json.loads(body)
            text = data["text"]
            if not isinstance(text, str):
                raise TypeError("text is not a string")
        except (ValueError, KeyError, TypeError) as exc:
            raise RemoteFailure(
                "garbage", f"answered something other than a transcript ({exc})"
            ) from None
        segments = _segments(data.get("segments"))
        language = data.get("language") if isinstance(data.get("language"), str) else None
        return Transcript(
            text=text.strip(),
            language=_language_code(language) or self._requested_language(options),
            audio_s=(wav_len - 44) / 2 / RATE,
            segments=segments,
        )

    def _requested_language(self, options: TranscribeOptions) -> str:
        language = options.language if options.language is not None else self.default_language
        return "" if not language or language == "auto" else language

    # ------------------------------------------------------------- interface

    def transcribe(self, audio: np.ndarray, options: TranscribeOptions) -> Transcript:
        """Decode on a remote endpoint (blocking), or on the fallback when all fail.

        Args:
            audio: the trimmed utterance, 16 kHz float32.
            options: language, prompt and task are passed on; beam size is the server's.

        Returns:
            The server's transcript (segments with ``timestamps``).
        """
        wav = wav_bytes(audio)
        try:
            return self.endpoints.run(
                lambda ep, left: self._post(ep, left, wav, options),
                self.timeout_s,
                allow_down=self.fallback is None,
            )
        except AllEndpointsFailed as exc:
            fallback = self._fallback_for(exc)
        return fallback.transcribe(audio, options)

    def transcribe_segments(
        self, audio: np.ndarray, options: TranscribeOptions
    ) -> Iterator[Segment | Transcript]:
        """Yield text as the server streams it (``stream=true``), then the Transcript."""
        if not self.stream or options.timestamps:
            yield from super().transcribe_segments(audio, options)
            return
        wav = wav_bytes(audio)
        try:
            # The first event decides the endpoint; a failure after text went out
            # cannot move to another endpoint and ends the stream with an error.
            events = self.endpoints.run(
                lambda ep, left: self._open_stream(ep, left, wav, options),
                self.timeout_s,
                allow_down=self.fallback is None,
            )
        except AllEndpointsFailed as exc:
            yield from self._fallback_for(exc).transcribe_segments(audio, options)
            return
        yield from events

    def _open_stream(
        self, ep: RemoteEndpoint, left: float, wav: bytes, options: TranscribeOptions
    ) -> Iterator[Segment | Transcript]:
        """Send a streamed request; return its items once the first has arrived."""
        deadline = time.monotonic() + left
        try:
            cm = self._client.stream(
                "POST",
                ep.url + self._path(options),
                data=self._form(options, stream=True),
                files={"file": ("audio.wav", wav, "audio/wav")},
                timeout=httpx.Timeout(left),
            )
            resp = cm.__enter__()
        except httpx.HTTPError as exc:
            raise classify(exc) from None
        try:
            if resp.status_code >= 400:
                raise status_failure(
                    resp.status_code, read_capped(resp.iter_bytes(), MAX_RESPONSE, deadline)
                )
            if "text/event-stream" not in resp.headers.get("content-type", ""):
                # A server without streaming answers the whole transcript at once.
                body = read_capped(resp.iter_bytes(), MAX_RESPONSE, deadline)
                result = self._parse(body, options, len(wav))
                cm.__exit__(None, None, None)
                return iter([Segment(0.0, result.audio_s, result.text), result])
            items = self._sse_items(resp, options, len(wav), deadline)
            first = next(items)
        except httpx.HTTPError as exc:
            cm.__exit__(None, None, None)
            raise classify(exc) from None
        except StopIteration:
            cm.__exit__(None, None, None)
            raise RemoteFailure("garbage", "ended its stream without a transcript") from None
        except BaseException:
            cm.__exit__(None, None, None)
            raise

        def rest() -> Iterator[Segment | Transcript]:
            try:
                yield first
                yield from items
            except (httpx.HTTPError, RemoteFailure) as exc:
                raise RemoteUnavailable(
                    f"remote ASR model '{self.name}' at {ep.url} broke off its stream: {exc}"
                ) from None
            finally:
                cm.__exit__(None, None, None)

        return rest()

    def _sse_items(
        self, resp: httpx.Response, options: TranscribeOptions, wav_len: int, deadline: float
    ) -> Iterator[Segment | Transcript]:
        """Text deltas of OpenAI's (``transcript.text.delta``) and vLLM's (``choices``)
        streamed transcriptions, then the whole Transcript."""
        text = ""
        audio_s = (wav_len - 44) / 2 / RATE
        for line in resp.iter_lines():
            if len(line) > MAX_EVENT_LINE:
                raise RemoteFailure("oversized", "sent an oversized event")
            if time.monotonic() > deadline:
                raise RemoteFailure("timeout", "did not finish its stream in time")
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            try:
                event: Any = json.loads(data)
                done, delta = _event_text(event)
            except (ValueError, KeyError, IndexError, TypeError):
                raise RemoteFailure("garbage", "sent a malformed event") from None
            if done is not None:
                text = done
                break
            if delta:
                text += delta
                if delta.strip():
                    yield Segment(0.0, audio_s, delta.strip())
        else:
            if not text:
                raise RemoteFailure("garbage", "ended its stream without a transcript")
        yield Transcript(text.strip(), self._requested_language(options), audio_s)

    def _fallback_for(self, exc: AllEndpointsFailed) -> AsrModel:
        """The local model that decodes when the remote cannot, or RemoteUnavailable."""
        if self.fallback is None:
            raise RemoteUnavailable(
                f"remote ASR model '{self.name}' failed and has no fallback: {exc.detail}"
            ) from None
        _LOGGER.warning(
            "Remote ASR model '%s' failed (%s: %s); decoding with '%s'",
            self.name,
            exc.reason,
            exc.detail,
            self.fallback.name,
        )
        self.endpoints.count_fallback(exc.reason)
        return self.fallback

    def close(self) -> None:
        """Close the HTTP client and stop health checks; safe to call more than once."""
        self.endpoints.close()
        self._client.close()


def _event_text(event: Any) -> tuple[str | None, str]:
    """(the whole text when this event ends the stream, else None; a text delta)."""
    kind = event.get("type")
    if kind == "transcript.text.done":
        return str(event["text"]), ""
    if kind == "transcript.text.delta":
        return None, str(event["delta"])
    if kind == "error":
        raise RemoteFailure("status", f"sent an error event: {str(event)[:300]}")
    choices = event.get("choices")
    if choices:
        delta = choices[0].get("delta") or {}
        return None, str(delta.get("content") or "")
    return None, ""


def _segments(raw: Any) -> tuple[Segment, ...]:
    """Segments of a verbose_json answer (none when absent or unreadable)."""
    if not isinstance(raw, list):
        return ()
    out = []
    for item in raw[:10000]:
        try:
            out.append(Segment(float(item["start"]), float(item["end"]), str(item["text"]).strip()))
        except (KeyError, TypeError, ValueError):
            return ()
    return tuple(out)


def _language_code(name: str | None) -> str | None:
    """An ISO code from a server's language (OpenAI answers "english")."""
    if not name:
        return None
    name = name.strip().lower()
    if len(name) <= 3:
        return name
    return _NAMES.get(name)


_NAMES = {
    "english": "en",
    "german": "de",
    "french": "fr",
    "spanish": "es",
    "italian": "it",
    "dutch": "nl",
    "portuguese": "pt",
    "russian": "ru",
    "chinese": "zh",
    "japanese": "ja",
    "korean": "ko",
    "polish": "pl",
    "swedish": "sv",
    "turkish": "tr",
}
"""Full language names some servers answer, for the commonest languages."""
