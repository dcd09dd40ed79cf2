"""Engines: the models, each behind the smallest interface a session needs.

``asr/`` (Whisper), ``vad/`` (Silero, WebRTC VAD), ``tts/`` (Piper, the voice
store it reads voices from, sentence splitting, the cache and the synthesis
service), ``llm/`` (llama-cpp-python or a remote OpenAI-compatible server),
``workers`` (bounded thread pools: every model call runs there, never on the
event loop), ``models`` (finding model files: embedded packages, folders,
downloads) and ``hardware`` (which device and compute type each engine gets).
The coming wake-word and turn-detection engines belong here too.

Engines may import ``daemon.errors``, ``daemon.config``, ``daemon.ops`` and
``daemon.audio``; never ``speech``, ``voices``, ``runtime`` or anything above.
"""
