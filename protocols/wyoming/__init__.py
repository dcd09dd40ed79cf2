"""Wyoming protocol adapter: Home Assistant's speech-to-text, text-to-speech and
conversation over one framed event stream. Translates events to calls into
``daemon/`` and back; no engine logic lives here."""
