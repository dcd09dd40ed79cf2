"""Speech: what happens to an utterance, from audio in to a spoken answer.

``events`` is the one event vocabulary every protocol translates; ``stream`` is the
bounded event stream a session and a pipeline run hand their events through;
``endpoint`` is the pure endpointing state machine; ``session`` is the streaming
speech session (conversion, VAD, endpointing, speculative and partial decodes);
``pipeline`` runs speech → transcript → LLM → sentences → TTS; ``chat`` is the LLM
with a system prompt, limits and per-conversation history; ``transcribe`` decodes
whole files; ``speak`` streams synthesized speech in any output format;
``wake_gate`` lets only the audio after a wake word reach a session.

Speech may import ``daemon.errors``, ``daemon.config``, ``daemon.ops``,
``daemon.audio`` and ``daemon.engines``.
"""
