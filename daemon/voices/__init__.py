"""Voices: making new voices for the voice store.

``importer`` adds Piper voices from files and archives; ``enroll`` records and
checks a person's takes against ``prompts``; ``training`` runs fine-tuning jobs
(``train_job`` is the child process of one job). The store the TTS engine reads
voices from lives below, in ``daemon.engines.tts.voices``: it is the engine's
model lookup, read on every request, while this room holds the slow workflows
that create voices and check takes with ASR and VAD.

Voices may import ``daemon.errors``, ``daemon.config``, ``daemon.ops``,
``daemon.audio`` and ``daemon.engines``; not ``speech``.
"""
