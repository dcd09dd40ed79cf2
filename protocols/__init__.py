"""Thin protocol adapters: bytes in, calls into daemon/, bytes out.

Rooms, bottom to top (``tests/import_graph.py`` enforces the order): this package's
own modules (the listener contract); ``patches`` (library patches, one module per
library); ``webrtc`` (peer sessions and media); ``realtime`` (the OpenAI Realtime
API's sessions, over a WebSocket or a peer connection); ``http`` (the Willow, OpenAI
and Hearth HTTP APIs, WebRTC and Realtime signaling, the pages); ``wyoming`` (beside
the others, importing none of them). Into the core, adapters go through one door:
:class:`daemon.runtime.facade.Hearth` (with the names of its session profiles), plus
the value types of the vocabulary (options, events, errors, audio formats).
"""
