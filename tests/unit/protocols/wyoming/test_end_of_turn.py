"""Who ends a Wyoming turn, on the wire over fake engines.

With ``wyoming.end_of_turn: server`` and the turn model on, Hearth tells clients
``requires_external_vad: false`` and sends the transcript as soon as its endpoint ends
the utterance, while audio still arrives (Home Assistant 2026 reads while it uploads);
the rest is dropped until ``audio-stop``. A client that reads only after its own
``audio-stop`` (Home Assistant 2024.x) gets the same transcript then, once. Each turn
ends: at a finished turn, the longest pause, the longest utterance, or with an empty
transcript when nobody speaks.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from wyoming.asr import Transcribe, Transcript, TranscriptStop, VadSensitivity
from wyoming.audio import AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event, async_read_event
from wyoming.info import Describe, Info
from wyoming.ping import Ping, Pong
from wyoming.vad import VoiceStopped

from daemon.audio.pcm import RATE
from daemon.config import parse_config
from daemon.engines.turn.base import TurnModel, TurnPrediction
from daemon.errors import RemoteUnavailable
from daemon.runtime.profiles import Sensitivity
from daemon.speech.intake import AudioIntake
from protocols.wyoming.asr import ends_turns, sensitivity_of
from protocols.wyoming.server import WyomingServer
from tests.fakes import KITCHEN, TEST_CONFIG, FakeEngines, fake_engines, silence, tone
from tests.helpers import eventually, noise
from tests.unit.protocols.wyoming.test_handler import Client

TIMEOUT_S = 10.0
START = AudioStart(rate=16000, width=2, channels=1)


class ScriptedTurn(TurnModel):
    """A turn model that always gives the same answer; counts its calls."""

    name = "scripted-turn"
    window_s = 8.0

    def __init__(self, complete: bool) -> None:
        self.complete = complete
        self.calls = 0

    def predict(self, audio: np.ndarray) -> TurnPrediction:
        self.calls += 1
        return TurnPrediction(1.0 if self.complete else 0.0, self.complete)


class Recorder:
    """Reads every event the server sends, in a task of its own (as Home Assistant 2026
    reads while it uploads)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.events: list[Event] = []
        self.closed = False
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        try:
            while (event := await async_read_event(self.client.reader)) is not None:
                self.events.append(event)
        except ConnectionError:
            pass
        self.closed = True

    def kinds(self) -> list[str]:
        return [e.type for e in self.events]

    def has(self, kind: type) -> bool:
        return any(kind.is_type(e.type) for e in self.events)  # type: ignore[attr-defined]

    async def until(self, kind: type, count: int = 1) -> list[Event]:
        """Every event so far, once ``count`` of type ``kind`` have come."""
        async with asyncio.timeout(TIMEOUT_S):
            while sum(kind.is_type(e.type) for e in self.events) < count:  # type: ignore[attr-defined]
                assert not self.closed, f"closed before {kind.__name__}: {self.kinds()}"
                await asyncio.sleep(0.005)
        return list(self.events)

    async def eof(self) -> None:
        async with asyncio.timeout(TIMEOUT_S):
            await self.task
        assert self.closed

    async def barrier(self) -> None:
        """Wait until the server has handled everything sent so far (a ping's pong),
        and a moment more for a decode it started."""
        count = self.kinds().count("pong")
        await self.client.send(Ping(text="barrier"))
        async with asyncio.timeout(TIMEOUT_S):
            while self.kinds().count("pong") == count:
                await asyncio.sleep(0.005)
        await asyncio.sleep(0.2)


@pytest.fixture(autouse=True)
def live_speaker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """These fake clients send a live speaker's audio as fast as they can: the session
    takes it for a speaker at the microphone, not a recording (whose end is its
    audio-stop), except in the tests that ask for ``as_recording``."""
    if "as_recording" not in request.fixturenames:
        monkeypatch.setattr(AudioIntake, "recording", lambda self: False)


@pytest.fixture
def as_recording() -> None:
    """The audio these clients send at once is taken for what it is: a recording."""


@dataclass
class Served:
    fakes: FakeEngines
    server: WyomingServer
    client: Client
    events: Recorder
    outcomes: list[str] = field(default_factory=list)


def config_with(tmp_path: Path, vad: str = "", wyoming: str = "") -> object:
    """The fakes' test config with more keys in its ``vad`` and ``wyoming`` sections."""
    text = TEST_CONFIG.format(state_dir=tmp_path)
    text = text.replace("vad:\n", "vad:\n" + vad, 1).replace("wyoming:\n", "wyoming:\n" + wyoming)
    return parse_config(text, "test-config.yaml")


@contextlib.asynccontextmanager
async def serving(
    tmp_path: Path, vad: str = "", wyoming: str = "", turn: TurnModel | None = None
) -> AsyncIterator[Served]:
    fakes = fake_engines(config_with(tmp_path, vad, wyoming))  # type: ignore[arg-type]
    fakes.engines.partials = False  # no partial decodes queued beside the turn checks
    fakes.engines.turn = turn
    outcomes: list[str] = []
    server = WyomingServer(
        "tcp://127.0.0.1:0", fakes.services, 8, 1 << 16, 2.0, observer=outcomes.append
    )
    async with asyncio.timeout(TIMEOUT_S):
        await server.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    client = Client(reader, writer)
    served = Served(fakes, server, client, Recorder(client), outcomes)
    try:
        yield served
    finally:
        served.events.task.cancel()
        with contextlib.suppress(ConnectionError):
            await client.close()
        async with asyncio.timeout(TIMEOUT_S):
            await server.stop(grace_s=1.0)
        fakes.close()


def pcm(*parts: np.ndarray) -> bytes:
    return np.concatenate(parts).astype("<i2").tobytes()


def transcripts(events: list[Event]) -> list[str]:
    return [Transcript.from_event(e).text for e in events if Transcript.is_type(e.type)]


# --------------------------------------------------------------------------- info


@pytest.mark.parametrize(
    ("vad", "wyoming", "external"),
    [
        ("", "", False),
        ("", "  end_of_turn: client\n", True),
        ('  turn: "off"\n', "", True),
    ],
    ids=["server-with-turn-model", "client", "turn-model-off"],
)
async def test_info_says_who_ends_the_turn(tmp_path, vad, wyoming, external):
    async with serving(tmp_path, vad, wyoming) as served:
        await served.client.send(Describe())
        (info_event,) = [e for e in await served.events.until(Info)]
        (asr,) = Info.from_event(info_event).asr
        assert asr.requires_external_vad is external
        # Whisper, the VAD and the turn model want the microphone's own audio.
        assert asr.prefers_auto_gain_enabled is False
        assert asr.prefers_noise_reduction_enabled is False
        assert ends_turns(served.fakes.services.house) is not external


# --------------------------------------------------------------------------- server mode


async def test_the_transcript_comes_before_audio_stop_and_the_rest_is_dropped(tmp_path):
    turn = ScriptedTurn(complete=True)
    async with serving(tmp_path, turn=turn) as served:
        client, asr = served.client, served.fakes.asr["fake"]
        await client.send(Transcribe(language="en"), START)
        await client.send_chunks(pcm(silence(0.3), tone(1.2), silence(0.4)))
        # No audio-stop yet: Home Assistant 2026 reads while it still uploads.
        events = await served.events.until(TranscriptStop)
        assert transcripts(events) == [KITCHEN]
        assert turn.calls >= 1
        kinds = served.events.kinds()
        assert kinds[0] == "transcript-start" and kinds[-2:] == ["transcript", "transcript-stop"]
        assert served.outcomes == [""]  # answered: counted now, not again at audio-stop
        decodes = len(asr.calls)

        # The speaker goes on (another phrase): dropped, never decoded.
        await client.send_chunks(pcm(tone(1.0, 440.0), silence(0.5)))
        await client.send(AudioStop())
        await served.events.barrier()
        after = served.events.kinds()[len(kinds) :]
        assert after == ["pong"]  # no second transcript, no error on audio-stop
        assert len(asr.calls) == decodes
        assert served.outcomes == [""]

        # The connection serves the next request as before.
        await client.send(Transcribe(), START)
        await client.send_chunks(pcm(silence(0.2), tone(1.2, 440.0), silence(0.4)))
        await client.send(AudioStop())
        events = await served.events.until(TranscriptStop, count=2)
        assert transcripts(events) == [KITCHEN, "What time is it"]
        assert served.outcomes == ["", ""]


async def test_a_client_that_reads_after_audio_stop_gets_the_transcript_once(tmp_path):
    # Home Assistant 2024.x: everything, then audio-stop, then it reads.
    async with serving(tmp_path, turn=ScriptedTurn(complete=True)) as served:
        client, asr = served.client, served.fakes.asr["fake"]
        served.events.task.cancel()  # this client does not read while it uploads
        await client.send(Transcribe(language="en"), START)
        # Speech, then the start of another phrase before the client's own VAD stops.
        await client.send_chunks(pcm(silence(0.3), tone(1.2), silence(0.4), tone(0.5, 440.0)))
        await client.send(AudioStop())
        events = await client.until(TranscriptStop)
        assert transcripts(events) == [KITCHEN]
        assert "error" not in [e.type for e in events]
        # Hearth's turn ended before the 440 Hz: no decode heard it (with the client
        # ending the turn, the final decode would run on past it, over 2 s).
        assert asr.calls and max(call.samples for call in asr.calls) < 1.6 * RATE
        await client.send(Ping(text="next"))
        assert Pong.from_event(await client.expect(Pong)).text == "next"
        assert served.outcomes == [""]


async def test_a_recording_sent_at_once_is_ended_by_its_audio_stop(tmp_path, as_recording):
    # The same audio as above, sent faster than it was spoken (a file): the pause inside
    # it ends nothing, and the transcript after audio-stop holds both phrases.
    async with serving(tmp_path, turn=ScriptedTurn(complete=True)) as served:
        client, asr = served.client, served.fakes.asr["fake"]
        served.events.task.cancel()
        await client.send(Transcribe(language="en"), START)
        await client.send_chunks(pcm(silence(0.3), tone(1.2), silence(0.9), tone(0.5, 440.0)))
        await client.send(AudioStop())
        events = await client.until(TranscriptStop)
        assert len(transcripts(events)) == 1 and "error" not in [e.type for e in events]
        assert max(call.samples for call in asr.calls) > 2.4 * RATE  # both phrases
        assert served.outcomes == [""]


async def test_in_client_mode_the_transcript_waits_for_audio_stop(tmp_path):
    turn = ScriptedTurn(complete=True)
    async with serving(tmp_path, wyoming="  end_of_turn: client\n", turn=turn) as served:
        client = served.client
        await client.send(Transcribe(language="en"), START)
        await client.send_chunks(pcm(silence(0.3), tone(1.2), silence(0.6)))
        # The endpoint ends the utterance (voice-stopped), but the client ends the turn.
        await served.events.until(VoiceStopped)
        await served.events.barrier()
        assert not served.events.has(Transcript)
        await client.send(AudioStop())
        assert transcripts(await served.events.until(TranscriptStop)) == [KITCHEN]
        assert served.outcomes == [""]


# --------------------------------------------------------------------------- every turn ends


@pytest.mark.parametrize(
    "quiet",
    [silence(1.5), noise(1.5, level=0.008)],
    ids=["silence", "noise-the-vad-does-not-call-speech"],
)
async def test_nobody_speaking_ends_the_request_with_an_empty_transcript(tmp_path, quiet):
    async with serving(tmp_path, vad="  no_speech_ms: 1000\n") as served:
        client = served.client
        await client.send(Transcribe(language="en"), START)
        await client.send_chunks(pcm(quiet))
        events = await served.events.until(TranscriptStop)
        # No voice started, so none stops either.
        assert [e.type for e in events] == ["transcript-start", "transcript", "transcript-stop"]
        assert transcripts(events) == [""]
        assert not served.fakes.asr["fake"].calls  # nothing to decode
        await client.send(AudioStop())
        await served.events.barrier()
        assert served.events.kinds()[3:] == ["pong"]
        assert served.outcomes == [""]


@pytest.mark.parametrize(
    ("sound", "text"),
    [(tone(3.0), KITCHEN), (noise(3.0, level=0.2, seed=3), None)],
    ids=["speech", "noise-the-vad-calls-speech"],
)
async def test_speech_that_never_pauses_ends_at_the_longest_utterance(tmp_path, sound, text):
    turn = ScriptedTurn(complete=False)
    async with serving(tmp_path, vad="  max_utterance_ms: 1000\n", turn=turn) as served:
        client, asr = served.client, served.fakes.asr["fake"]
        await client.send(Transcribe(language="en"), START)
        await client.send_chunks(pcm(silence(0.2), sound))
        events = await served.events.until(TranscriptStop)
        if text is not None:
            assert transcripts(events) == [text]
        # One decode, of about the longest utterance (plus padding), not of 3 s.
        (final,) = asr.calls
        assert 0.9 * RATE < final.samples < 1.5 * RATE
        assert served.outcomes == [""]
        await client.send(AudioStop())
        await served.events.barrier()
        assert transcripts(served.events.events) == transcripts(events)  # no second one


@pytest.mark.parametrize(
    "pause",
    [silence, lambda s: noise(s, level=0.005, seed=5)],
    ids=["silence", "noise-the-vad-does-not-call-speech"],
)
async def test_a_turn_the_model_calls_unfinished_ends_at_the_longest_pause(tmp_path, pause):
    turn = ScriptedTurn(complete=False)
    async with serving(tmp_path, vad="  max_pause_ms: 800\n", turn=turn) as served:
        client = served.client
        await client.send(Transcribe(language="en"), START)
        # Past the fixed trailing silence (300 ms), short of the longest pause (800 ms).
        await client.send_chunks(pcm(silence(0.3), tone(1.0), pause(0.5)))
        assert await eventually(lambda: turn.calls >= 1)
        await served.events.barrier()
        assert turn.calls == 1  # asked, and it said "not finished"
        assert not served.events.has(Transcript)
        await client.send_chunks(pcm(pause(0.4)))
        events = await served.events.until(TranscriptStop)
        assert transcripts(events) == [KITCHEN]
        assert served.outcomes == [""]


# --------------------------------------------------------------------------- sensitivity


@pytest.mark.parametrize(
    ("sensitivity", "pause_s", "ends"),
    [
        (VadSensitivity.AGGRESSIVE, 0.25, True),
        (None, 0.25, False),
        (VadSensitivity.DEFAULT, 0.45, True),
        (VadSensitivity.RELAXED, 0.45, False),
        ("some-future-value", 0.45, True),
    ],
)
async def test_vad_sensitivity_moves_the_end_of_the_turn(tmp_path, sensitivity, pause_s, ends):
    # No turn model: the fixed trailing silence (300 ms here) ends the turn.
    async with serving(tmp_path) as served:
        client = served.client
        await client.send(Transcribe(language="en", vad_sensitivity=sensitivity), START)
        await client.send_chunks(pcm(silence(0.3), tone(1.0), silence(pause_s)))
        if ends:  # before audio-stop
            await served.events.until(Transcript)
        else:
            await served.events.barrier()
            assert not served.events.has(Transcript)
        await client.send(AudioStop())
        assert transcripts(await served.events.until(TranscriptStop)) == [KITCHEN]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (VadSensitivity.RELAXED, Sensitivity.RELAXED),
        (VadSensitivity.AGGRESSIVE, Sensitivity.AGGRESSIVE),
        (VadSensitivity.DEFAULT, Sensitivity.DEFAULT),
        ("relaxed", Sensitivity.RELAXED),
        ("turbo", Sensitivity.DEFAULT),
        (None, Sensitivity.DEFAULT),
    ],
)
def test_wyoming_sensitivities_map_onto_the_cores(value, expected):
    assert sensitivity_of(value) is expected


# --------------------------------------------------------------------------- failures


async def test_a_failed_decode_is_an_error_before_audio_stop_then_eof(tmp_path):
    async with serving(tmp_path, turn=ScriptedTurn(complete=True)) as served:
        client = served.client

        def unreachable(audio, options):  # noqa: ANN001, ANN202
            raise RemoteUnavailable("the ASR server did not answer")

        served.fakes.asr["fake"].transcribe = unreachable  # type: ignore[method-assign]
        await client.send(Transcribe(language="en"), START)
        await client.send_chunks(pcm(silence(0.3), tone(1.2), silence(0.4)))
        events = await served.events.until(Error)
        assert Error.from_event(events[-1]).code == "remote-unavailable"
        await served.events.eof()  # Home Assistant 2026 ends its request at the error
        assert not served.events.has(Transcript)
        # A client that does not read goes on sending: dropped, no second error.
        with contextlib.suppress(ConnectionError):
            await client.send_chunks(pcm(silence(0.2)))
            await client.send(AudioStop())
        async with asyncio.timeout(TIMEOUT_S):
            while served.server.connections:
                await asyncio.sleep(0.01)
        assert served.events.kinds().count("error") == 1
        assert served.outcomes == ["remote-unavailable"]


async def test_audio_that_goes_on_after_the_transcript_is_still_bounded(tmp_path):
    # limits.max_audio_s is 4 in the fakes' config: the whole stream counts.
    async with serving(tmp_path, turn=ScriptedTurn(complete=True)) as served:
        client = served.client
        await client.send(Transcribe(language="en"), START)
        await client.send_chunks(pcm(silence(0.3), tone(1.2), silence(0.4)))
        await served.events.until(TranscriptStop)
        with contextlib.suppress(ConnectionError):
            await client.send_chunks(pcm(silence(3.0)))
        events = await served.events.until(Error)
        assert Error.from_event(events[-1]).code == "audio-too-long"
        await served.events.eof()
        assert transcripts(events) == [KITCHEN]
        assert served.outcomes == [""]  # the request was answered; counted once
