"""Thin protocol adapters: bytes in, calls into daemon/, bytes out.

Rooms, bottom to top (``tests/import_graph.py`` enforces the order): this package's
own modules (the listener contract); ``patches`` (library patches, one module per
library); ``webrtc`` (peer sessions and media); ``http`` (the Willow, OpenAI and
Hearth HTTP APIs, WebRTC signaling and the pages); ``wyoming`` (beside http and
webrtc, importing neither). Into the core, adapters go through one door:
:class:`daemon.runtime.facade.Hearth` (with the names of its session profiles), plus
the value types of the vocabulary (options, events, errors, audio formats).
"""
