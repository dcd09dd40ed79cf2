"""Request lines as Willow devices send them: repaired before HTTP parsing.

The lenient request-line patch (:mod:`protocols.patches.uvicorn`) applies this
before uvicorn's parser sees a line; it is pure bytes in, bytes out."""

from __future__ import annotations

MAX_TARGET = 65000
"""Longest request target served: uvicorn's URL parser keeps offsets in 16 bits."""
URI_TOO_LONG = (
    b'{"error":"the URL is longer than 65000 bytes; send long text in a POST body",'
    b'"code":"uri-too-long"}'
)
_HEX = b"0123456789abcdefABCDEF"
_UNSAFE = frozenset(b' "#<>\\^`{|}') | frozenset(range(0x20)) | frozenset(range(0x7F, 0x100))


def repair_request_line(line: bytes) -> bytes:
    """Percent-encode what is not allowed in a request target, as nginx tolerates it.

    Willow devices append the text to speak to their TTS URL without encoding it, so
    ``GET /api/tts?text=Turn on the light. HTTP/1.1`` must parse. The target is
    everything between the method and the last ``HTTP/x.y``; spaces, ``#``, quotes,
    control and non-ASCII bytes in it are encoded, and a ``%`` that starts no escape
    becomes ``%25``. A valid request line comes back unchanged.
    """
    parts = line.split(b" ")
    if len(parts) < 3 or not parts[-1].startswith(b"HTTP/"):
        return line
    target = b" ".join(parts[1:-1])
    out = bytearray()
    for i, byte in enumerate(target):
        if byte == 0x25 and not (
            i + 2 < len(target) and target[i + 1] in _HEX and target[i + 2] in _HEX
        ):
            out += b"%25"
        elif byte in _UNSAFE:
            out += b"%%%02X" % byte
        else:
            out.append(byte)
    return parts[0] + b" " + bytes(out) + b" " + parts[-1]


def too_long_response() -> bytes:
    """A complete 414 response with a JSON body, as the app would answer."""
    return (
        b"HTTP/1.1 414 URI Too Long\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(URI_TOO_LONG), URI_TOO_LONG)
    )
