"""The Realtime API over WebRTC (``POST /v1/realtime/calls``): a session on a peer connection.

A call is a :class:`~protocols.realtime.session.RealtimeSession` on another transport,
as OpenAI serves it: events travel as JSON text on the ``oai-events`` data channel
(the client creates it), the microphone arrives on the client's audio track (the
session hears it as it would hear ``input_audio_buffer.append``), and reply audio
goes out on a server audio track instead of ``response.output_audio.delta`` events.
The client learns of that audio from ``output_audio_buffer.started``, ``stopped``
(the reply has played) and ``cleared`` (a barge-in, a cancel or a truncate cut it).

The session's paced player still decides when each piece of a reply goes out (at
most its lead ahead of playback), so what had played when the person cut in is
known as over a WebSocket; the track plays what it is handed and is emptied on a
cut. The peer connection is made by the WebRTC room's manager (its ICE settings,
ports, ``webrtc.max_sessions``, connect deadline, idle reaping and shutdown);
:class:`RealtimeCall` is the session it holds. The route is in the HTTP room.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import functools
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from aiortc import RTCPeerConnection
from aiortc.mediastreams import MediaStreamTrack

from daemon.errors import HearthError
from daemon.runtime.api import Services
from protocols.realtime import config as cfg
from protocols.realtime.audio import WireFormat
from protocols.realtime.lane import Step
from protocols.realtime.session import RealtimeSession
from protocols.realtime.wire import Event, Refused, event, hearth_error
from protocols.webrtc.tracks import RATE, ReplyTrack, keep_through_bye, microphone

_LOGGER = logging.getLogger(__name__)
CHANNEL = "oai-events"
"""The data channel that carries the events (other channels are ignored)."""
MAX_INBOX = 1024
"""Client events received and not yet read; a client that sends more is hung up on."""
CLEAR = "output_audio_buffer.clear"
MIC = WireFormat("audio/pcm", RATE, "pcm16")
"""The microphone as the session hears it: the track's 48 kHz, downmixed to mono."""


class ChannelSocket:
    """The ``oai-events`` data channel as the session's socket."""

    def __init__(self, touched: Callable[[], None] = lambda: None) -> None:
        self._touched = touched
        self._inbox: asyncio.Queue[str | bytes | None] = asyncio.Queue()
        self._open = asyncio.Event()
        self._channel: Any = None
        self.ended = False

    def attach(self, channel: Any) -> bool:
        """Take the client's channel if it is the events channel (False: ignored)."""
        if getattr(channel, "label", None) != CHANNEL or self._channel is not None:
            return False
        self._channel = channel
        channel.on("message", self._message)
        channel.on("close", self.end)
        if channel.readyState == "open":
            self._open.set()
        else:
            channel.on("open", self._open.set)
        return True

    def preload(self, text: str) -> None:
        """A client event to act on before the client's own."""
        self._inbox.put_nowait(text)

    def _message(self, raw: str | bytes) -> None:
        if self.ended:
            return
        self._touched()
        if self._inbox.qsize() >= MAX_INBOX:
            _LOGGER.warning("a Realtime call sent over %d unread events; hanging up", MAX_INBOX)
            self.end()
            return
        self._inbox.put_nowait(raw)

    def end(self) -> None:
        """The channel closed (or the call ends): reading ends; safe to call again."""
        if not self.ended:
            self.ended = True
            self._inbox.put_nowait(None)
            self._open.set()  # a writer waiting for the channel gives up

    async def receive(self) -> str | bytes | None:
        """The next client event; None once the channel is gone."""
        if self.ended and self._inbox.empty():
            return None
        return await self._inbox.get()

    async def send(self, text: str) -> None:
        """Send one event, once the channel is open (ConnectionError: it is gone)."""
        await self._open.wait()
        channel = self._channel
        if self.ended or channel is None or channel.readyState != "open":
            raise ConnectionError("the events channel is closed")
        channel.send(text)


class CallSession(RealtimeSession):
    """A Realtime session whose reply audio plays on a track (see the module docstring)."""

    def __init__(
        self, socket: ChannelSocket, services: Services, track: ReplyTrack, **options: Any
    ) -> None:
        super().__init__(socket, services, **options)
        self.track = track
        self._audible: set[str] = set()
        """Responses whose audio reached the track and has not stopped or been cut."""
        self._cleared: str | None = None
        """The response whose ``output_audio_buffer.cleared`` was sent last."""

    async def send(self, message: Event) -> None:
        """Queue one server event; reply audio goes to the track instead."""
        kind = message["type"]
        if kind == "response.output_audio.delta":
            await self._play(message)
            return
        if kind == "output_audio_buffer.cleared":
            self.track.clear()
            if message.get("response_id") == self._cleared:
                return  # already said when the response ended
            self._cleared = message.get("response_id")
        await super().send(message)
        if kind == "response.done":
            await self._response_done(message.get("response") or {})

    async def _receive(self, raw: str | bytes) -> None:
        # Over WebRTC, output_audio_buffer.clear also cuts a reply whose words are all
        # written while its audio still plays (the WebSocket's handler leaves that one).
        data: object = None
        if CLEAR in (raw if isinstance(raw, str) else raw.decode(errors="replace")):
            with contextlib.suppress(ValueError, RecursionError):
                data = json.loads(raw)
        if isinstance(data, dict) and data.get("type") == CLEAR:
            await self._clear_output()
        else:
            await super()._receive(raw)

    async def _clear_output(self) -> None:
        """``output_audio_buffer.clear``: the reply playing now stops (``cleared`` follows
        its ``response.done``); with none, the track is emptied."""
        response = self.book.response or self.book.draining
        if response is None:
            self.track.clear()
            return
        try:
            await self.cancel(response, "client_cancelled")
        except HearthError as exc:
            await super().send(hearth_error(exc))

    async def _play(self, message: Event) -> None:
        response_id = message.get("response_id")
        fmt = self._format_of(response_id)
        try:
            pcm = fmt.to_pcm(base64.b64decode(message.get("delta") or ""))
        except (binascii.Error, ValueError):  # never seen: the book encoded it
            return
        if isinstance(response_id, str) and response_id not in self._audible:
            self._audible.add(response_id)
            self.track.begin()
            await super().send(event("output_audio_buffer.started", response_id=response_id))
        self.track.play(pcm, fmt.rate)

    def _format_of(self, response_id: object) -> WireFormat:
        """The output format a response's audio was encoded in."""
        for response in (self.book.response, self.book.draining):
            if response is not None and response.id == response_id:
                return response.format
        return self.config.output_format

    async def _response_done(self, response: dict[str, Any]) -> None:
        """A response ended: its audio plays out (``stopped``) or was cut (``cleared``)."""
        response_id = response.get("id")
        if not isinstance(response_id, str) or response_id not in self._audible:
            return
        if response.get("status") == "completed":
            self.track.flush()
            ahead_s = max(0, self.playback.sent_ms - self.playback.played_ms) / 1000
            self.spawn(self._stopped(response_id, ahead_s), "stopped")
            return
        self._audible.discard(response_id)
        self.track.clear()
        if self._cleared != response_id:
            self._cleared = response_id
            await super().send(event("output_audio_buffer.cleared", response_id=response_id))

    async def _stopped(self, response_id: str, after_s: float) -> None:
        await asyncio.sleep(after_s)
        if response_id in self._audible:
            self._audible.discard(response_id)
            await super().send(event("output_audio_buffer.stopped", response_id=response_id))

    async def hear(self, frame_pcm_mono: bytes) -> None:
        """Microphone audio (48 kHz mono PCM), heard in order with the client's events."""
        run = functools.partial(self._feed, frame_pcm_mono, MIC)
        await self._lane.put(Step(run, None, len(frame_pcm_mono)))


class RealtimeCall:
    """One call: the peer connection the manager holds, and its Realtime session."""

    def __init__(
        self,
        call_id: str,
        pc: RTCPeerConnection,
        services: Services,
        *,
        model: str = "",
        session: dict[str, Any] | None = None,
        voice_aliases: frozenset[str] = frozenset(),
        asr_aliases: frozenset[str] = frozenset(),
    ) -> None:
        self.id = call_id
        self.pc = pc
        self.reply_track = ReplyTrack()
        self.last_activity = time.monotonic()
        self.socket = ChannelSocket(self._touch)
        self.session = CallSession(
            self.socket,
            services,
            self.reply_track,
            model=model,
            voice_aliases=voice_aliases,
            asr_aliases=asr_aliases,
        )
        if session:  # the offer's session: applied first, as a session.update
            self.socket.preload(json.dumps({"type": "session.update", "session": session}))
        self._closed = False
        self._run = asyncio.ensure_future(self._serve())

    def _touch(self) -> None:
        self.last_activity = time.monotonic()

    @property
    def busy(self) -> bool:
        """Whether an utterance is being heard or a reply is on its way."""
        return self.session.busy or self.reply_track.playing

    def on_engines_changed(self) -> None:
        """Nothing to do: the session moves to new engines with its next audio."""

    def attach_channel(self, channel: Any) -> None:
        """A data channel arrived: the events channel is the session's socket."""
        if not self.socket.attach(channel):
            _LOGGER.info("Realtime call %s: ignored data channel %r", self.id, channel.label)

    def attach_track(self, track: MediaStreamTrack) -> None:
        """The microphone arrived: the session hears it for the call's life."""
        keep_through_bye(self.pc, track, self.id)
        self.session.spawn(self._consume(track), "microphone")

    async def _consume(self, track: MediaStreamTrack) -> None:
        async for fmt, pcm in microphone(track):
            self._touch()
            if fmt.rate != RATE:  # never seen: Opus decodes at 48 kHz
                continue
            await self.session.hear(mono(pcm, fmt.channels))

    async def _serve(self) -> None:
        _LOGGER.info("Realtime call %s opened (session %s)", self.id, self.session.id)
        try:
            await self.session.run()
        except Exception:  # noqa: BLE001 - the call ends; the peer connection is closed below
            _LOGGER.exception("Realtime call %s failed", self.id)
        finally:
            _LOGGER.info("Realtime call %s ended", self.id)
            # The manager hears the peer connection close and drops the call.
            await self.pc.close()

    async def close(self) -> None:
        """Hang up: the session, the track, the peer connection; safe to call again."""
        if self._closed:
            return
        self._closed = True
        self.socket.end()
        await self.session.close()
        self.reply_track.stop()
        await self.pc.close()
        if self._run is not asyncio.current_task():
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._run), 5.0)


def mono(pcm: bytes, channels: int) -> bytes:
    """Interleaved 16-bit PCM downmixed to one channel."""
    if channels == 1:
        return pcm
    samples = np.frombuffer(pcm, dtype="<i2").reshape(-1, channels).astype(np.int32)
    return (samples.sum(axis=1) // channels).astype("<i2").tobytes()


def check_session(session: object) -> dict[str, Any] | None:
    """The offer's ``session`` as a ``session.update`` would take it (Refused: unusable)."""
    if session is None:
        return None
    if not isinstance(session, dict):
        raise Refused("session must be a JSON object", "invalid_value", "session")
    cfg.updated(cfg.SessionConfig(), session)
    return session
