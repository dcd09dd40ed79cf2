"""OpenAI Realtime API adapter: a speech-to-speech session over one WebSocket.

The session translates, and decides nothing: the conversation engine
(:mod:`daemon.speech.conversation`) hears, ends turns, replies, and stops a reply on
barge-in. ``session`` turns client events into conversation calls (in order, through
the ``lane``), ``items`` handles the items a client adds and the responses it asks
for, ``tools`` answers with function calls (the core's one generation) and their
outputs; ``state`` holds what they act on (the session's settings, conversation,
player, book, tool exchange), so they never import the session. ``responses`` keeps
the Realtime bookkeeping (ids, responses around replies) on top of ``user_items``
(items, turns and transcripts), mapping the conversation's events onto server events;
``objects`` writes items and responses as OpenAI does. ``config`` reads
``session.update`` (the generally available shape and the 2024 beta's) and writes the
session back; ``wire`` builds server events and errors; ``audio`` converts the wire
formats (24 kHz PCM, G.711). Reply audio is framed here as ``response.output_audio``
events and paced by the core's player (:mod:`daemon.speech.player`), which knows how
much of it played.

The route, with its authentication, lives in the HTTP room
(``protocols/http/realtime_route.py``) and hands the accepted socket over. ``calls``
carries the same session over a peer connection (``POST /v1/realtime/calls``): events
on the ``oai-events`` data channel, audio on the tracks, with the WebRTC room's peer
manager and tracks. This room imports ``protocols.webrtc`` and ``protocols.patches``
only; into the core it goes through the core's services, plus the vocabulary's value
types (both from ``daemon.runtime.api``).
"""
