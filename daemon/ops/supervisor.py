"""The Home Assistant Supervisor, as seen from inside Hearth's add-on.

The Supervisor starts an add-on with ``SUPERVISOR_TOKEN`` in its environment and its
options in ``/data/options.json``. Once Hearth's Wyoming listener answers, the add-on
announces it (``POST http://supervisor/discovery``, service ``wyoming``, config
``{"uri": "tcp://HOST:PORT"}``): Home Assistant's Wyoming integration then offers Hearth
on its own, as it does for the official Whisper and Piper add-ons. The Supervisor
refuses a service the add-on's ``config.yaml`` does not list under ``discovery``.
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

_LOGGER = logging.getLogger(__name__)

SUPERVISOR_URL = "http://supervisor"
"""Where an add-on reaches the Supervisor (a host name the Supervisor's network has)."""
URL_VARIABLE = "HEARTH_SUPERVISOR_URL"
"""Overrides :data:`SUPERVISOR_URL` (tests talk to a fake Supervisor on loopback)."""
OPTIONS_PATH = Path("/data/options.json")
"""The add-on's options, written by the Supervisor before each start."""
ATTEMPTS = 8
"""Discovery calls before giving up (the Supervisor may be restarting too)."""
FIRST_WAIT_S = 1.0
"""Wait after the first failed call; it doubles up to :data:`LONGEST_WAIT_S`."""
LONGEST_WAIT_S = 30.0


class DiscoveryFailed(Exception):
    """The Supervisor did not take the announcement."""


@dataclass(frozen=True)
class AddonContext:
    """What the Supervisor gave the add-on."""

    token: str
    options_path: Path
    url: str = SUPERVISOR_URL


def addon_context(environ: Mapping[str, str] | None = None) -> AddonContext | None:
    """The add-on's context when the Supervisor runs Hearth (``SUPERVISOR_TOKEN`` set and
    the options file present), else None: plain Docker, Compose or a venv."""
    env = os.environ if environ is None else environ
    token = env.get("SUPERVISOR_TOKEN", "")
    path = Path(env.get("HEARTH_ADDON_OPTIONS", "") or OPTIONS_PATH)
    if not token or not path.is_file():
        return None
    return AddonContext(token, path, env.get(URL_VARIABLE, "") or SUPERVISOR_URL)


def _post(url: str, token: str, body: dict[str, object], timeout_s: float) -> dict[str, object]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
        answer = json.loads(response.read(65536) or b"{}")
    return answer if isinstance(answer, dict) else {}


def announce(
    context: AddonContext,
    service: str,
    config: dict[str, object],
    *,
    attempts: int = ATTEMPTS,
    sleep: Callable[[float], None] = time.sleep,
    timeout_s: float = 10.0,
) -> str:
    """Tell the Supervisor about ``service`` (its discovery API); the message's uuid.

    Retries with back-off while the Supervisor cannot be reached or answers 5xx; a 4xx
    (the service is not listed under ``discovery``, a bad token) is final.

    Raises:
        DiscoveryFailed: with what the Supervisor (or the network) said last.
    """
    url = f"{context.url.rstrip('/')}/discovery"
    body: dict[str, object] = {"service": service, "config": config}
    wait = FIRST_WAIT_S
    problem = "not tried"
    for attempt in range(1, attempts + 1):
        try:
            answer = _post(url, context.token, body, timeout_s)
        except urllib.error.HTTPError as exc:
            problem = f"{exc.code} {_message(exc)}"
            if exc.code < 500:
                refused = f"the Supervisor refused the {service} discovery: {problem}"
                raise DiscoveryFailed(refused) from None
        except (OSError, ValueError) as exc:
            problem = str(exc)
        else:
            data = answer.get("data")
            if answer.get("result") == "ok" and isinstance(data, dict):
                return str(data.get("uuid", ""))
            problem = f"unexpected answer {answer!r:.200}"
        if attempt < attempts:
            _LOGGER.info("Discovery try %d failed (%s); again in %.0f s", attempt, problem, wait)
            sleep(wait)
            wait = min(wait * 2, LONGEST_WAIT_S)
    raise DiscoveryFailed(f"the Supervisor did not take the {service} discovery: {problem}")


def _message(exc: urllib.error.HTTPError) -> str:
    try:
        answer = json.loads(exc.read(65536) or b"{}")
    except (OSError, ValueError):
        return str(exc.reason)
    if isinstance(answer, dict) and answer.get("message"):
        return str(answer["message"])
    return str(exc.reason)
