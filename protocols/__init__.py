"""Thin protocol adapters: bytes in, calls into daemon/, bytes out.

Rooms, bottom to top (``tests/import_graph.py`` enforces the order): this package's
own modules (the listener contract); ``patches`` (library patches, one module per
library); ``webrtc`` (peer sessions and media); ``realtime`` (the OpenAI Realtime
API's sessions, over a WebSocket or a peer connection); ``http`` (the Willow, OpenAI
and Hearth HTTP APIs, WebRTC and Realtime signaling, the pages); ``wyoming`` (beside
the others, importing none of them). Into the core, adapters go through
:mod:`daemon.runtime.api`: the core's services (:class:`~daemon.runtime.services.Services`:
speech in, wake words, voices and speech out, chat, the people known by voice, views of
the house), the small request types they take, and what they open (a conversation, a
spoken request, a voice for streamed text, a wake listener, the reply player a transport
frames audio for) with the value types of the vocabulary (events, options, results);
besides, errors, host plumbing, conversion at the edge and the voice workflows. They never open a
speech session, wait for a speaker, arm a deadline or pace reply audio themselves: the
core does, from a profile's values. ``tests/import_graph.py`` lists every core module
they may import by name (``ADAPTERS_MAY_IMPORT``) and fails on any other.
"""
