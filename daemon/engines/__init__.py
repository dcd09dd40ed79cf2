"""Engines: the models, each behind the smallest interface a session needs.

``asr/`` (Whisper, batched decodes across sessions, remote transcription servers),
``vad/`` (Silero, WebRTC VAD), ``tts/`` (Piper, the voice store it reads voices from,
sentence splitting, the cache and the synthesis service), ``llm/`` (llama-cpp-python or
remote OpenAI-compatible servers), ``wake/`` (wake-word models, one stream per
listener), ``turn/`` (the end-of-turn model), ``speaker/`` (who is speaking: GE2E
speaker embeddings in numpy), ``workers`` (bounded thread pools: every model call runs
there, never on the event loop), ``models`` (finding model files: embedded packages,
folders, downloads), ``hub/`` (models and voices asked for by name, fetched once
from a Hugging Face hub: resumed, checked, renamed into place), ``hardware`` (which
device and compute type each engine gets, and
why), ``cpu`` (the CPU's features, and the llama.cpp build it can run), ``cuda`` (the
CUDA libraries from the NVIDIA wheels), ``remote`` (endpoints of
remote servers: choice, health, fallback) and ``access`` (what the rooms above need of
the loaded engines, as structural types).

Engines may import ``daemon.errors``, ``daemon.config``, ``daemon.ops`` and
``daemon.audio``; never ``speech``, ``voices``, ``runtime`` or anything above.
"""
