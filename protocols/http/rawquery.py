"""Reading ``text=`` from a query string that a Willow device did not encode.

The firmware builds ``<wis_tts_url>?format=WAV&speaker=CLB&text=<text>`` with the
text as it is: spaces (which the HTTP server percent-encodes, see
``daemon/httpserver.py``), ``&``, ``+``, ``%`` and any punctuation. Ordinary
clients encode the text and may put other parameters after it. One parser serves
both.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, unquote_plus

TTS_PARAMS = ("format", "speaker", "voice", "nocache", "text")
"""Parameters of /api/tts; ``&name=`` for one of these ends the text."""


def raw_params(query: str, names: tuple[str, ...] = TTS_PARAMS) -> dict[str, str]:
    """Decode ``query`` with the ``text`` parameter read verbatim.

    The text runs from ``text=`` to the next ``&name=`` whose name is one of
    ``names`` (or to the end), so an unencoded ``&`` inside the text stays text.
    ``+`` means a space (form encoding) unless the text also holds an encoded
    space (``%20``): then the client encoded spaces that way, and a ``+`` is a plus.
    """
    match = re.search(r"(?:^|&)text=", query)
    if match is None:
        return dict(parse_qsl(query, keep_blank_values=True))
    before, rest = query[: match.start()], query[match.end() :]
    others = "|".join(re.escape(n) for n in names if n != "text")
    end = re.search(rf"&(?:{others})=", rest) if others else None
    raw_text, after = (rest[: end.start()], rest[end.start() + 1 :]) if end else (rest, "")
    params = dict(parse_qsl(before, keep_blank_values=True))
    params.update(parse_qsl(after, keep_blank_values=True))
    params["text"] = unquote(raw_text) if "%20" in raw_text else unquote_plus(raw_text)
    return params
