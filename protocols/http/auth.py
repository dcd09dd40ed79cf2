"""The optional shared API key (``auth.api_key``), as a reusable route dependency.

A request carries the key as ``X-API-Key: KEY``, ``Authorization: Bearer KEY``
(OpenAI clients), or HTTP Basic with the key as the password and any user name
(Willow firmware can only send credentials embedded in its URL:
``http://hearth:KEY@host:19000/api/willow``). Keys are compared in constant time.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Mapping

from starlette.requests import HTTPConnection

from protocols.http.errors import HttpError

BASIC_CHALLENGE = 'Basic realm="Hearth"'
"""What a 401 asks for when the request sent no key header."""


def offered_keys(headers: Mapping[str, str]) -> list[str]:
    """Every key a request offers, from the three accepted headers (lower-case names)."""
    keys = []
    if value := headers.get("x-api-key"):
        keys.append(value.strip())
    authorization = (headers.get("authorization") or "").strip()
    scheme, _, credentials = authorization.partition(" ")
    credentials = credentials.strip()
    if scheme.lower() == "bearer" and credentials:
        keys.append(credentials)
    elif scheme.lower() == "basic" and credentials:
        try:
            decoded = base64.b64decode(credentials, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            decoded = ""
        _, colon, password = decoded.partition(":")
        if colon:
            keys.append(password)
    return keys


def key_matches(expected: str, offered: list[str]) -> bool:
    """True when one offered key equals ``expected`` (constant-time per key)."""
    want = expected.encode("utf-8")
    found = False
    for key in offered:
        # Every offered key is compared, so the time does not tell which one matched.
        found |= hmac.compare_digest(want, key.encode("utf-8"))
    return found


def offers_key_header(headers: Mapping[str, str]) -> bool:
    """True when a request sent a key as ``X-API-Key`` or ``Authorization: Bearer``."""
    scheme = (headers.get("authorization") or "").strip().partition(" ")[0]
    return bool((headers.get("x-api-key") or "").strip()) or scheme.lower() == "bearer"


def has_api_key(conn: HTTPConnection) -> bool:
    """True when no key is configured or the request offers the configured one."""
    expected = conn.app.state.service.config.auth.api_key
    return not expected or key_matches(expected, offered_keys(conn.headers))


def check_api_key(conn: HTTPConnection) -> None:
    """Raise 401 unless the configured key is offered (no key configured: allow).

    The Basic challenge goes only to requests that sent no key header: Willow
    firmware needs it to retry with its URL credentials, while browsers would
    pop up a login dialog for a script that sent a wrong key.
    """
    expected = conn.app.state.service.config.auth.api_key
    if not expected:
        return
    if key_matches(expected, offered_keys(conn.headers)):
        return
    challenge = {} if offers_key_header(conn.headers) else {"WWW-Authenticate": BASIC_CHALLENGE}
    raise HttpError(
        "unauthorized",
        "a valid API key is required (X-API-Key, Authorization: Bearer, or Basic password)",
        headers=challenge,
    )


async def require_api_key(conn: HTTPConnection) -> None:
    """FastAPI dependency: the route needs the API key when one is configured."""
    check_api_key(conn)
