"""The household: the names the people in it say, read from Home Assistant.

``names`` holds the value types and ``store`` the names every request reads (in memory
only, never logged); ``registry`` turns Home Assistant's answers into names ranked by
how likely they are to be said; ``match`` finds the names that resemble what a first
reading heard, and ``prompt`` composes a second reading's prompt from them (the client's
own words first, then those names, within the model's budget); ``endpoint``
says where Home Assistant is (``homeassistant.url``, or the Supervisor's proxy inside
the add-on); ``client`` speaks its websocket API; ``source`` keeps the store current
(registry events, reconnection with back-off); ``service`` is what the composition
root starts, reconfigures, stops and asks for status.

Nothing here blocks a request: a transcription uses whatever names are known at that
moment, and none when Home Assistant is not configured (then nothing connects).

House may import ``daemon.errors``, ``daemon.config`` and ``daemon.ops``; the engines
it needs (a model's tokenizer) are handed in as plain callables by the runtime.
"""
