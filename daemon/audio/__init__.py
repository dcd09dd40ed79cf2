"""Audio: one internal format, and conversion at the edges.

``pcm`` defines the internal format (16 kHz mono s16) and converts any PCM
stream into it; ``decode`` turns whole files and streamed upload bodies into it;
``stream`` encodes outgoing audio (WAV, FLAC, MP3, Opus, AAC, raw PCM) as it is
produced. Audio may import ``daemon.errors`` and ``daemon.config`` only.
"""
