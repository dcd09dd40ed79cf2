"""Wyoming protocol adapter: Home Assistant's speech-to-text, text-to-speech, wake words
and conversation over one framed event stream. Translates events to calls into
``daemon/`` and back; no engine logic lives here.

``server`` listens and caps the connections; ``handler`` is one connection (dispatch,
errors, lingering), ``framing`` reads events within their deadline. Each service is a
module: ``asr`` (a ``transcribe`` request, a spoken request of the core; ``chunks``
splits its transcript into deltas), ``tts`` (``synthesize`` and streamed synthesis),
``wake`` (``detect``), ``agent`` (the conversation agent), ``info`` (``describe``);
``errors`` maps failures to ``error`` events."""
