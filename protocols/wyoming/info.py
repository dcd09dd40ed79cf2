"""The ``info`` answer to ``describe``: what Home Assistant offers as entities.

Built on every request from the loaded engines and the voice store, so a voice
added to the store appears in the next ``info`` without a restart.

Home Assistant titles the integration entry and its discovery card with the name of
the first installed program, and names each entity after its program. Every program
therefore carries the name Hearth announces over mDNS (``mdns.name``, default "Hearth
on <hostname>"), and the descriptions tell them apart.

Home Assistant 2026 takes its audio settings from the first ASR program (wyoming 1.10):
``requires_external_vad`` false makes it skip its own voice-command segmenter and let
Hearth end the turn (:mod:`protocols.wyoming.asr`); the two ``prefers_*`` flags ask it
not to process the audio first (see :data:`PREFERS_PROCESSED_AUDIO`).
"""

from __future__ import annotations

from wyoming.info import (
    AsrModel,
    AsrProgram,
    Attribution,
    HandleModel,
    HandleProgram,
    Info,
    TtsProgram,
    TtsVoice,
    TtsVoiceSpeaker,
    WakeModel,
    WakeProgram,
)

from daemon import __version__
from daemon.runtime.api import HouseView, ModelView, Services, VoiceInfo, WakeWords
from protocols.wyoming.asr import ends_turns

HEARTH = Attribution(name="Hearth", url="")
WHISPER = Attribution(
    name="OpenAI Whisper (faster-whisper)", url="https://github.com/openai/whisper"
)
PREFERS_PROCESSED_AUDIO = False
"""Whether Hearth asks Home Assistant for automatic gain and noise reduction: no, for
either. Whisper was trained on unprocessed audio from the web, noise included, and
noise suppression leaves artefacts it was never trained on; Silero VAD is trained on
noisy audio too. Automatic gain lifts the noise floor in the pauses, which is exactly
where the VAD and the turn model decide whether the speaker has finished. Home
Assistant dropped its own WebRTC gain and noise suppression in 2024.8 (core#122861)
after Whisper did as well on unfiltered audio."""


async def build_info(services: Services) -> Info:
    """Every ASR model, every voice in the store, and the LLM as a handler."""
    # The store is read afresh (a voice just added shows up), in a worker thread.
    store = await services.voices.list_voices()
    house = services.house
    title = house.display_name
    models = house.asr_models()
    info = Info(
        asr=[_asr_program(house, models, title)],
        tts=[_tts_program(store, services.voices.speaks, title)],
    )
    llm = services.chat.llm
    if llm is not None:
        languages = sorted({lang for m in models for lang in m.languages})
        info.handle = [_handle_program(llm, languages, house.home_control, title)]
    if services.wake.enabled:
        info.wake = [await _wake_program(services.wake, title)]
    return info


def _asr_program(house: HouseView, models: list[ModelView], title: str) -> AsrProgram:
    """The ASR models, and whether Hearth ends each request's turn itself."""
    asr_models = [
        AsrModel(
            name=model.name,
            attribution=WHISPER,
            installed=True,
            description=f"Whisper {model.name} on {model.device}",
            version=__version__,
            languages=list(model.languages),
        )
        for model in models
    ]
    return AsrProgram(
        name=title,
        attribution=HEARTH,
        installed=bool(asr_models),
        description="Hearth speech-to-text (VAD-gated, speculative Whisper)",
        version=__version__,
        models=asr_models,
        supports_transcript_streaming=True,
        # False: Hearth ends each request's turn itself (wyoming.end_of_turn).
        requires_external_vad=not ends_turns(house),
        prefers_auto_gain_enabled=PREFERS_PROCESSED_AUDIO,
        prefers_noise_reduction_enabled=PREFERS_PROCESSED_AUDIO,
    )


def _tts_program(store: list[VoiceInfo], speaks: bool, title: str) -> TtsProgram:
    """Every voice in the store (installed once TTS is loaded)."""
    voices = [
        TtsVoice(
            name=voice.name,
            attribution=Attribution(name=voice.attribution_name, url=voice.attribution_url),
            installed=True,
            description=voice.display_name,
            version=__version__,
            languages=[voice.language],
            speakers=[TtsVoiceSpeaker(name=s) for s in voice.speakers] or None,
        )
        for voice in store
    ]
    return TtsProgram(
        name=title,
        attribution=HEARTH,
        installed=speaks and bool(voices),
        description="Hearth text-to-speech (Piper)",
        version=__version__,
        voices=voices,
        supports_synthesize_streaming=True,
    )


def _handle_program(
    llm: ModelView, languages: list[str], home_control: bool, title: str
) -> HandleProgram:
    """The LLM as a conversation agent."""
    return HandleProgram(
        name=title,
        attribution=HEARTH,
        installed=True,
        description="Hearth conversation agent (local or remote LLM)",
        version=__version__,
        models=[
            HandleModel(
                name=llm.name,
                attribution=HEARTH,
                installed=True,
                description=f"{llm.name} on {llm.device}",
                version=__version__,
                languages=languages or ["en"],
            )
        ],
        supports_handled_streaming=True,
        supports_home_control=home_control,
    )


MICRO_WAKE = Attribution(name="microWakeWord", url="https://github.com/kahrendt/microWakeWord")
OPEN_WAKE = Attribution(name="openWakeWord", url="https://github.com/dscripka/openWakeWord")


async def _wake_program(wake: WakeWords, title: str) -> WakeProgram:
    """The wake models: built-in ones and the custom folder as it is now."""
    models = await wake.models()  # a model just dropped in shows up
    return WakeProgram(
        name=title,
        attribution=HEARTH,
        installed=bool(models),
        description="Hearth wake-word detection (microWakeWord, openWakeWord)",
        version=__version__,
        models=[
            WakeModel(
                name=m.name,
                attribution=MICRO_WAKE if m.library == "micro" else OPEN_WAKE,
                installed=True,
                description=m.phrase,
                version=__version__,
                languages=list(m.languages),
                phrase=m.phrase,
            )
            for m in models
        ],
    )
