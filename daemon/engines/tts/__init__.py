"""Text-to-speech: the engine interface, Piper, the voice store, sentence splitting,
the disk cache and the service that synthesizes sentence by sentence."""
