"""Real models: Piper speaks, Whisper hears, the session endpoints, the LLM streams."""

import asyncio
import itertools
import logging
import time
from dataclasses import replace

import numpy as np
import pytest

from daemon.audio.pcm import RATE, AudioFormat, decode_file, pcm_to_float
from daemon.config import parse_config
from daemon.engines.asr.base import TranscribeOptions
from daemon.engines.hardware import HardwareReport
from daemon.engines.llm.base import ChatMessage, Sampling
from daemon.engines.tts.base import SynthesisOptions
from daemon.errors import (
    InvalidAudio,
    ModelUnavailable,
    PromptTooLong,
    TextTooLong,
    UnknownModel,
    UnknownVoice,
)
from daemon.runtime.loading import load_engines
from daemon.speech.events import FinalTranscript, PartialTranscript, VoiceStarted, VoiceStopped
from daemon.speech.session import SessionOptions, SessionSettings
from tests.conftest import DETERMINISTIC
from tests.helpers import assert_heard, noise, silence, trimmed, words

pytestmark = pytest.mark.e2e
PHRASE = "turn on the kitchen lights"


async def run_session(
    engines,
    audio: np.ndarray,
    fmt=AudioFormat(RATE, 2, 1),
    realtime=False,
    options: SessionOptions | None = None,
    settings: SessionSettings | None = None,
):
    session = engines.new_session(options=options, settings=settings)
    session.start(fmt)
    events = []

    async def collect():
        async for event in session.events():
            events.append(event)

    collector = asyncio.ensure_future(collect())
    step = int(fmt.rate * fmt.width * fmt.channels * 0.02)  # 20 ms chunks
    data = audio.tobytes()
    for i in range(0, len(data), step):
        await session.feed(data[i : i + step])
        if realtime:
            await asyncio.sleep(0.02)
    await asyncio.wait_for(session.finish(), 60)
    await asyncio.wait_for(collector, 30)
    await session.close()
    final = events[-1]
    assert isinstance(final, FinalTranscript)
    return final, events, session


async def decode_alone(engines, session) -> str:
    """The default model's one-shot decode of the utterance ``session`` cut out.

    A reference computed in the same run from the same audio: an exact transcript
    stored in a test would hold only on CPUs whose int8 kernels round like this one's.
    """
    utterance = await session.utterance_audio()
    assert utterance is not None
    model = engines.asr_model(None)
    return (await asyncio.to_thread(model.transcribe, utterance, TranscribeOptions())).text


async def test_piper_says_it_and_whisper_hears_it(engines, kitchen):
    # 1.8 s of silence: past vad.max_pause_ms, so the utterance ends (VoiceStopped)
    # whatever the turn model answers, and however late its answer comes.
    final, events, session = await run_session(
        engines, np.concatenate([silence(0.5), kitchen, silence(1.8)])
    )
    # tiny.en's exact words vary with the CPU (its int8 kernels differ), so the exact
    # check is against the model itself, decoding the utterance the session cut out in
    # this run; against the sentence spoken, a word of difference is allowed.
    assert final.text == await decode_alone(engines, session)
    assert_heard(final.text, PHRASE, "kitchen")
    assert final.language == "en"
    kinds = [type(e) for e in events]
    assert kinds[0] is VoiceStarted and VoiceStopped in kinds and kinds[-1] is FinalTranscript
    # Leading and trailing silence were trimmed before decoding.
    assert final.speech_ms < final.audio_ms - 800


@pytest.mark.parametrize("kind", ["silence", "noise"])
async def test_no_speech_gives_empty_text_without_whisper(engines, kind):
    audio = silence(3.0) if kind == "silence" else noise(3.0, level=0.03)
    final, _, session = await run_session(engines, audio)
    assert final.text == ""
    assert session.asr_calls == 0


async def test_speculative_result_equals_one_shot_decode(engines, kitchen):
    audio = np.concatenate([silence(0.4), kitchen, silence(0.9)])
    # The speculative decode waits for the whole padding here, so that it decodes the
    # very samples the one-shot reference decodes.
    whole = replace(engines.session_settings, speculative_padding_s=None)
    final, _, session = await run_session(
        engines, audio, realtime=True, options=SessionOptions(partials=False), settings=whole
    )
    assert final.speculative and session.asr_calls == 1
    # The decode started while the audio still arrived is the one a decode of the whole
    # utterance gives at its end, on the same audio in this run (not on the untrimmed
    # clip: its silence may change a word on another CPU).
    assert final.text == await decode_alone(engines, session)
    assert_heard(final.text, PHRASE, "kitchen")


async def test_partials_arrive_before_the_final(engines, speak):
    said = "Please set a timer for ten minutes and then play some quiet music in the hall."
    audio = speak(said)
    assert engines.partials is False  # asr.partials: auto is off on CPU...
    final, events, _ = await run_session(  # ...but a client may ask for them
        engines,
        np.concatenate([audio, silence(0.8)]),
        realtime=True,
        options=SessionOptions(partials=True),
    )
    kinds = [type(e) for e in events]
    assert PartialTranscript in kinds
    assert kinds.index(PartialTranscript) < kinds.index(FinalTranscript)
    # Partials are decoded from a growing prefix: the last one already says most of it.
    last = [e for e in events if isinstance(e, PartialTranscript)][-1]
    overlap = set(words(last.text)) & set(words(final.text))
    assert len(overlap) >= len(set(words(last.text))) / 2, (last.text, final.text)
    assert_heard(final.text, said, "timer", "music")


async def test_any_rate_width_and_channels(engines, kitchen):
    import soxr

    stereo48 = soxr.resample(pcm_to_float(kitchen), RATE, 48000)
    pcm32 = (np.repeat(stereo48, 2) * 2147483647 * 0.9).astype("<i4")
    audio = np.concatenate([np.zeros(48000, "<i4"), pcm32, np.zeros(96000, "<i4")])
    final, _, _ = await run_session(engines, audio, fmt=AudioFormat(48000, 4, 2))
    assert_heard(final.text, PHRASE, "kitchen")


async def test_cached_tts_returns_identical_bytes(engines):
    text = "The front door is locked."
    options = DETERMINISTIC
    first = await engines.tts.synthesize(text, options, "wav")
    hits = engines.tts.cache.hits
    second = await engines.tts.synthesize(text, options, "wav")
    assert first == second and engines.tts.cache.hits == hits + 1
    heard = engines.asr_model(None).transcribe(
        pcm_to_float(decode_file(first)), TranscribeOptions()
    )
    assert_heard(heard.text, text, "door")


async def test_tts_streams_sentence_by_sentence_with_options(engines):
    text = "First sentence here. Second sentence there. Third one."
    blocks = [b async for b in engines.tts.stream(text, SynthesisOptions(sample_rate=22050))]
    # Each sentence in pieces, as the voice decodes it (the first piece 0.19 s), in order.
    assert len(blocks) > 3
    assert [s for s, _ in itertools.groupby(b.sentence for b in blocks)] == [
        "First sentence here.",
        "Second sentence there.",
        "Third one.",
    ]
    assert all(b.rate == 22050 for b in blocks)
    normal = b"".join([b.pcm async for b in engines.tts.stream("Hello there.", SynthesisOptions())])
    fast = b"".join(
        [b.pcm async for b in engines.tts.stream("Hello there.", SynthesisOptions(speed=2.0))]
    )
    assert len(fast) < 0.7 * len(normal)
    flac = await engines.tts.synthesize("Hello there.", SynthesisOptions(), "flac")
    assert flac[:4] == b"fLaC"


async def test_llm_streams_several_pieces(engines):
    pieces = [
        p
        async for p in engines.llm.stream_chat(
            [ChatMessage("user", "Name three colors.")], Sampling(max_tokens=32)
        )
    ]
    assert len(pieces) > 3 and "".join(pieces).strip()


async def test_pipeline_speaks_the_llm_reply(engines):
    events = [e async for e in engines.pipeline.run(text="Say hello.", conversation_id="t1")]
    audio = b"".join(e.pcm for e in events if hasattr(e, "pcm"))
    assert len(audio) > 16000
    assert len(engines.chat.conversations.history("t1")) == 2


async def feed_paced(session, audio: np.ndarray) -> None:
    """Feed int16 audio in 20 ms chunks at real time (a live speaker)."""
    step = int(RATE * 0.02)
    for i in range(0, len(audio), step):
        await session.feed(audio[i : i + step].tobytes())
        await asyncio.sleep(0.02)


async def pause_settled(session, seen: list[object]) -> None:
    """Wait (wall time, the audio clock stopped) until the pause's speculative decode
    and its turn decision are in: the speaker resumes after the decision, however
    slowly this machine decodes."""
    from daemon.speech.events import SpeculativeTranscript

    for _ in range(1200):  # 60 s at most
        decided = session.turn_checks + session.turn_skips >= 1 and not session.turns.in_flight
        if decided and any(isinstance(e, SpeculativeTranscript) for e in seen):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the pause was never decided: {seen}")


async def test_speech_that_goes_on_after_a_pause_gets_one_reply(engines, speak):
    # "Set a timer for ... ten minutes." hands-free, replies on. The head is spoken as a
    # sentence of its own, so it ends with a fall the turn model hears as finished; its
    # words ("for") keep the turn open. The pause is held until its speculative decode
    # and the turn decision are in (a slow machine decides the same), then speech
    # resumes: the guess and its reply are dropped, one final and one reply follow.
    from daemon.speech.endpoint import EndpointState
    from daemon.speech.events import (
        ReplyDone,
        RunEnded,
        SpeculationDiscarded,
        SpeculativeTranscript,
    )

    head, tail = trimmed(speak("Set a timer for")), trimmed(speak("ten minutes."))
    session = engines.new_session(options=SessionOptions(partials=False, hands_free=True))
    session.start(AudioFormat(RATE, 2, 1))
    replies = engines.pipeline.replies("goes-on", speak=True, tts_options=DETERMINISTIC)
    seen: list[object] = []
    runs = []

    async def listen() -> None:
        async for event in session.events():
            seen.append(event)
            if isinstance(event, FinalTranscript):
                runs.append([e async for e in replies.start(event).events()])
            else:
                await replies.observe(event)

    listener = asyncio.ensure_future(listen())
    await feed_paced(session, np.concatenate([silence(0.3), head, silence(0.3)]))
    await pause_settled(session, seen)
    # The decision: the sentence goes on (the words end in "for").
    assert session.endpointer.state is EndpointState.PAUSED, seen
    assert not any(isinstance(e, (VoiceStopped, FinalTranscript)) for e in seen), seen
    if session.judgements:
        assert not session.judgements[-1].complete, session.judgements
    await feed_paced(session, np.concatenate([silence(0.5), tail, silence(1.8)]))
    for _ in range(600):  # the reply is under way: wait for it to end (60 s at most)
        if runs:
            break
        await asyncio.sleep(0.1)
    await session.close()
    await asyncio.wait_for(listener, 60)
    await replies.close()

    guesses = [e.text for e in seen if isinstance(e, SpeculativeTranscript)]
    assert len(guesses) >= 2, guesses  # one at the pause, one at the end
    assert any(isinstance(e, SpeculationDiscarded) for e in seen)
    finals = [e for e in seen if isinstance(e, FinalTranscript)]
    assert len(finals) == 1 and len(runs) == 1, seen
    assert_heard(finals[0].text, "Set a timer for ten minutes.", "timer", "minutes")
    done = [e for e in runs[0] if isinstance(e, ReplyDone)]
    assert len(done) == 1 and done[0].text
    assert isinstance(runs[0][-1], RunEnded)
    # The dropped guess left nothing behind: one exchange remembered.
    history = engines.chat.conversations.history("goes-on")
    assert len(history) == 2 and "minutes" in history[0].content.lower()


async def test_a_finished_turn_plays_the_reply_prepared_on_its_speculative_words(
    engines, speak, monkeypatch
):
    # "Turn on the kitchen lights." hands-free, replies on: the reply starts on the
    # speculative words, before the turn is decided; the final says the same, so that
    # reply is the one played, and the LLM is asked once.
    from daemon.speech.events import SpeculativeTranscript, SpeechAudio

    llm = engines.chat.llm
    asked: list[str] = []
    stream_chat = llm.stream_chat

    def counted(messages, *args, **kwargs):
        asked.append(messages[-1].content)
        return stream_chat(messages, *args, **kwargs)

    monkeypatch.setattr(llm, "stream_chat", counted)
    session = engines.new_session(options=SessionOptions(partials=False, hands_free=True))
    session.start(AudioFormat(RATE, 2, 1))
    replies = engines.pipeline.replies("prepared", speak=True, tts_options=DETERMINISTIC)
    seen: list[object] = []
    runs: list[tuple[bool, list[object]]] = []

    async def listen() -> None:
        async for event in session.events():
            seen.append(event)
            if isinstance(event, FinalTranscript):
                run = replies.start(event)
                events = [e async for e in run.events()]
                runs.append((run.speculation_used, events))
                return
            await replies.observe(event)

    listener = asyncio.ensure_future(listen())
    await feed_paced(
        session,
        np.concatenate([silence(0.3), trimmed(speak("Turn on the kitchen lights.")), silence(1.8)]),
    )
    await asyncio.wait_for(listener, 120)
    await session.close()
    await replies.close()

    guesses = [e.text for e in seen if isinstance(e, SpeculativeTranscript)]
    finals = [e for e in seen if isinstance(e, FinalTranscript)]
    assert guesses and len(finals) == 1 and guesses[-1] == finals[0].text, seen
    ((used, events),) = runs
    assert used and asked == [finals[0].text]  # played, not asked again
    audio = b"".join(e.pcm for e in events if isinstance(e, SpeechAudio))
    assert len(audio) > 16000


async def test_bad_input_raises_typed_errors(engines):
    with pytest.raises(TextTooLong):
        await engines.tts.synthesize("x" * 100_000, SynthesisOptions())
    with pytest.raises(UnknownVoice, match="en_US-joe-medium"):
        await engines.tts.synthesize("hi", SynthesisOptions(voice="nobody"))
    with pytest.raises(UnknownModel, match="tiny.en"):
        engines.new_session(model="huge")
    with pytest.raises(PromptTooLong, match="context"):
        _ = [
            p
            async for p in engines.llm.stream_chat(
                [ChatMessage("user", "word " * 5000)], Sampling()
            )
        ]
    with pytest.raises(InvalidAudio):
        decode_file(b"RIFF\x00\x00\x00\x00WAVEjunkjunk")
    session = engines.new_session()
    with pytest.raises(InvalidAudio):
        session.start(AudioFormat(16000, 2, 1000))


def test_cuda_requested_but_absent_falls_back_to_cpu(state_dir, caplog):
    config = parse_config(
        f"state_dir: {state_dir}\nasr:\n  models:\n    tiny.en:\n      device: cuda\n"
        "tts:\n  device: cuda:0\n",
        "cuda.yaml",
    )
    with caplog.at_level(logging.WARNING, logger="daemon"):
        loaded = load_engines(config, HardwareReport(cpu_count=2), llm=False)
    assert loaded.asr_model(None).device == "cpu"
    status = {s.name: s for s in loaded.status}
    assert status["asr:tiny.en"].device == "cpu" and status["tts"].device == "cpu"
    assert "cuda requested but no CUDA device is available; falling back to CPU" in caplog.text
    loaded.close()


def test_cuda_load_failure_retries_on_cpu(state_dir, caplog):
    """A card the plan believes in, but CTranslate2 cannot use: load fails, CPU takes over."""
    from daemon.engines.hardware import GpuInfo

    fake_gpu = HardwareReport(gpus=(GpuInfo(0, "phantom", (8, 0), 8000, 8000),), ctranslate2_cuda=1)
    config = parse_config(f"state_dir: {state_dir}\n", "c.yaml")
    with caplog.at_level(logging.WARNING, logger="daemon"):
        loaded = load_engines(config, fake_gpu, tts=False, llm=False)
    assert loaded.asr_model(None).device == "cpu"
    assert "failed to load on cuda:0" in caplog.text
    loaded.close()


def test_a_model_not_on_disk_offline_is_served_by_tiny_en_and_named(state_dir, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = parse_config(
        f"state_dir: {state_dir}\nasr:\n  default_model: big\n  models:\n"
        "    big:\n      path: small.en\n",
        "c.yaml",
    )
    loaded = load_engines(config, HardwareReport(), tts=False, llm=False)
    try:
        assert loaded.asr_model("big").name == "big"
        [status] = [s for s in loaded.status if s.name == "asr:big"]
        assert "stand-in until small.en is fetched" in status.reasons
        deadline = time.monotonic() + 30
        while not [d for d in loaded.hub.downloads.describe() if d["state"] == "failed"]:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        [failed] = loaded.hub.downloads.describe()
        assert "ASR model 'small.en' is not on disk" in str(failed["error"])
        assert "big" in loaded.stand_ins
    finally:
        loaded.close()
    allow = replace(config, asr=replace(config.asr, allow_download=False))
    with pytest.raises(ModelUnavailable, match="ASR model 'small.en' is not on disk"):
        load_engines(allow, HardwareReport(), tts=False, llm=False)
