"""OpenAI Realtime API adapter: a speech-to-speech session over one WebSocket.

The session translates, and decides nothing: the conversation engine
(:mod:`daemon.speech.conversation`) hears, ends turns, replies, and stops a reply on
barge-in. ``session`` turns client events into conversation calls and the
conversation's events into Realtime server events; ``responses`` keeps the
Realtime bookkeeping (items, responses, transcripts) that maps one onto the other;
``config`` reads ``session.update`` (the generally available shape and the 2024
beta's); ``wire`` builds server events and errors; ``audio`` converts the wire
formats (24 kHz PCM, G.711) and ``playback`` paces reply audio to the client and
knows how much of it was played.

The route, with its authentication, lives in the HTTP room
(``protocols/http/realtime_route.py``) and hands the accepted socket over. Imports
the listener contract of the protocols (nothing of ``http``), and only the facade's
door into the core plus the vocabulary's value types.
"""
