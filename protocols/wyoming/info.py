"""The ``info`` answer to ``describe``: what Home Assistant offers as entities.

Built on every request from the loaded engines and the voice store, so a voice
added to the store appears in the next ``info`` without a restart.

Home Assistant titles the integration entry and its discovery card with the name of
the first installed program, and names each entity after its program. Every program
therefore carries the name Hearth announces over mDNS (``mdns.name``, default "Hearth
on <hostname>"), and the descriptions tell them apart.
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
from daemon.ops.mdns import instance_name
from daemon.runtime.engines import Engines

HEARTH = Attribution(name="Hearth", url="")
WHISPER = Attribution(
    name="OpenAI Whisper (faster-whisper)", url="https://github.com/openai/whisper"
)


async def build_info(engines: Engines) -> Info:
    """Every ASR model, every voice in the store, and the LLM as a handler."""
    # The store is read afresh (a voice just added shows up), in a worker thread.
    store = await engines.voices.list_async()
    title = instance_name(engines.config.mdns)
    asr_models = [
        AsrModel(
            name=name,
            attribution=WHISPER,
            installed=True,
            description=f"Whisper {name} on {model.device}",
            version=__version__,
            languages=list(model.languages),
        )
        for name, model in engines.asr.items()
    ]
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
    info = Info(
        asr=[
            AsrProgram(
                name=title,
                attribution=HEARTH,
                installed=bool(asr_models),
                description="Hearth speech-to-text (VAD-gated, speculative Whisper)",
                version=__version__,
                models=asr_models,
                supports_transcript_streaming=True,
            )
        ],
        tts=[
            TtsProgram(
                name=title,
                attribution=HEARTH,
                installed=engines.tts is not None and bool(voices),
                description="Hearth text-to-speech (Piper)",
                version=__version__,
                voices=voices,
                supports_synthesize_streaming=True,
            )
        ],
    )
    if engines.llm is not None:
        languages = sorted({lang for m in engines.asr.values() for lang in m.languages})
        info.handle = [
            HandleProgram(
                name=title,
                attribution=HEARTH,
                installed=True,
                description="Hearth conversation agent (local or remote LLM)",
                version=__version__,
                models=[
                    HandleModel(
                        name=engines.llm.name,
                        attribution=HEARTH,
                        installed=True,
                        description=f"{engines.llm.name} on {engines.llm.device}",
                        version=__version__,
                        languages=languages or ["en"],
                    )
                ],
                supports_handled_streaming=True,
            )
        ]
    if engines.wake is not None:
        info.wake = [await _wake_program(engines, title)]
    return info


MICRO_WAKE = Attribution(name="microWakeWord", url="https://github.com/kahrendt/microWakeWord")
OPEN_WAKE = Attribution(name="openWakeWord", url="https://github.com/dscripka/openWakeWord")


async def _wake_program(engines: Engines, title: str) -> WakeProgram:
    """The wake models: built-in ones and the custom folder as it is now."""
    wake = engines.wake
    assert wake is not None
    await engines.wake_pool.run(wake.refresh)  # a model just dropped in shows up
    return WakeProgram(
        name=title,
        attribution=HEARTH,
        installed=bool(wake.models),
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
            for m in wake.models.values()
        ],
    )
