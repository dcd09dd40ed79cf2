"""WebRTC adapter: browsers and dashboards stream microphone audio over one long
session; a data channel carries control and results, a server audio track carries
spoken replies. Compatible with the Willow Inference Server's WebRTC protocol.

``session`` translates one peer's data-channel commands into calls on its
conversation (:mod:`daemon.speech.conversation`) and the conversation's events into
messages and reply audio; it decides nothing. ``manager`` holds the sessions,
``tracks`` the audio frames, ``ice`` and ``rtcp`` the transport's settings. The
signaling route lives in the HTTP room (``protocols/http/rtc.py``). Imports
``protocols.patches`` and ``protocols.listener`` of the protocols, and only the
core's services (``daemon.runtime.api``) into the core."""
