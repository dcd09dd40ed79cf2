"""``hearth health``: is the running daemon answering? (The container's health check.)

Asks the daemon of this configuration, on this machine, what the official Wyoming
add-ons' checks ask (a Wyoming ``describe`` that names its programs) and what an HTTP
monitor asks (``/healthz``: 200 once every engine has loaded). Exit 0 when both answer,
1 otherwise, with one line each saying what was found.
"""

from __future__ import annotations

from daemon.config import Config
from daemon.ops import probe


def run_health(config: Config, timeout_s: float = 5.0) -> int:
    """Probe Wyoming and ``/healthz``; print a line each; 0 when both are answered."""
    answers = []
    endpoint = probe.wyoming_endpoint(config.wyoming.uri)
    if endpoint is not None:
        answers.append(probe.describe(*endpoint, timeout_s=timeout_s))
    host = probe.local_host(config.http.host)
    if ":" in host:
        host = f"[{host}]"
    answers.append(probe.healthz(f"http://{host}:{config.http.port}/healthz", timeout_s))
    for answer in answers:
        print(("ok   " if answer.ok else "FAIL ") + answer.detail)
    return 0 if all(a.ok for a in answers) else 1
