"""Client-side integrations served by the daemon: browser pages and the shared
WebRTC client module (also used by the Home Assistant card)."""
