"""Hearth: a self-hosted voice daemon for homes.

``daemon/`` is the core, cut into rooms; each room's ``__init__`` says what lives
there and what it may import. From the bottom up:

* ``errors.py`` and ``config/``: the typed errors and the typed configuration
  that every room uses. They import nothing of Hearth's.
* ``ops/``: running on a host (logs, metrics, systemd notify, mDNS, TLS,
  in-flight tracking, atomic files and locks).
* ``house/``: the household's names, read from Home Assistant and kept in memory,
  and the decode prompt they make (the client's words first, then the house's).
* ``audio/``: the one internal PCM format, decoding and encoding.
* ``engines/``: the models behind narrow interfaces (ASR, VAD, TTS, LLM), the
  worker pools, model lookup and the hardware plan.
* ``speakers/``: the people Hearth knows by voice: their store and the lookup.
* ``speech/``: what happens to an utterance: events, endpointing, the streaming
  session, the speech-to-speech pipeline, chat, file transcription, TTS streaming.
* ``voices/``: making voices: import, enrollment, prompts, training.
* ``runtime/``: the loaded engines as one object, start-up, reload.
* ``protocols/`` (beside ``daemon/``) adapts the rooms above to the wire.
* ``service.py``: the one composition root; it wires rooms and protocols together.
* ``cli/``: the ``hearth`` command, the process's entry point.

Imports only go downward in that list (``tests/import_graph.py`` checks it).
"""

__version__ = "0.1.0"
