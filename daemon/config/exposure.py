"""What the configured listeners expose to the network without a key."""

from __future__ import annotations

import ipaddress

from daemon.config.root import Config


def _loopback(host: str) -> bool:
    """Whether ``host`` (a bind address or name) only reaches this machine."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def exposure_warnings(config: Config) -> list[str]:
    """What the listeners expose to the network without a key (for ``hearth check``).

    Empty when nothing is open to other machines without authentication.
    """
    warnings = []
    if not _loopback(config.http.host) and not config.auth.api_key:
        warnings.append(
            f"the HTTP API listens on {config.http.host} with no auth.api_key: anyone on the "
            "network can use it (speech, chat, voices, enrollment); set auth.api_key, or "
            "http.host: 127.0.0.1 behind a reverse proxy"
        )
    uri = config.wyoming.uri
    if uri.startswith("tcp://"):
        host = uri[len("tcp://") :].rpartition(":")[0]
        if not _loopback(host):
            warnings.append(
                f"Wyoming listens on {uri} and has no authentication (auth.api_key does not "
                "cover it): bind wyoming.uri to an address only Home Assistant reaches, or "
                f"allow only Home Assistant's address to port {uri.rpartition(':')[2]} in a "
                "firewall"
            )
    return warnings
