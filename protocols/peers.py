"""Which machines a listener answers: the household's LAN, or only this machine.

With ``network.lan: false`` (the add-on's default) Wyoming and the HTTP API answer a
peer on this machine (a loopback address, or the connection's own local address: Home
Assistant on the same host reaching Hearth by the host's name or LAN address) and the
networks of ``network.allow`` (the add-on's: the Supervisor's internal network, for its
watchdog); every other peer is refused before a byte of its request is read.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
from collections.abc import Sequence

from daemon.config import NetworkConfig

_LOGGER = logging.getLogger(__name__)
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _address(text: str | None) -> Address | None:
    if not text:
        return None
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


@functools.lru_cache(maxsize=64)
def _networks(allow: Sequence[str]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(item, strict=False) for item in allow)


def peer_allowed(config: NetworkConfig, peer: str | None, local: str | None) -> bool:
    """Whether a connection from ``peer`` to this machine's ``local`` address is answered.

    A peer that is not an IP address (a Unix socket's) is this machine's.
    """
    if config.lan:
        return True
    address = _address(peer)
    if address is None:
        return True
    if address.is_loopback or address == _address(local):
        return True
    return any(address in network for network in _networks(tuple(config.allow)))


def refusal(peer: str | None) -> str:
    """What a refused peer is told."""
    return (
        f"connections from {peer} are refused: this Hearth answers only this machine "
        "(network.lan is false; the add-on's option lan_access opens it to the LAN)"
    )


class RefusalLog:
    """Logs a refused peer once (a LAN scanner is one line, not thousands); bounded."""

    LIMIT = 256

    def __init__(self, listener: str) -> None:
        self.listener = listener
        self._seen: set[str] = set()

    def note(self, peer: str | None) -> None:
        """Record one refused connection from ``peer``."""
        name = str(peer)
        if name in self._seen:
            return
        if len(self._seen) >= self.LIMIT:
            self._seen.clear()
        self._seen.add(name)
        _LOGGER.warning(
            "%s: refused a connection from %s (network.lan is false: only this machine "
            "and network.allow are answered)",
            self.listener,
            name,
        )
