"""mDNS (zeroconf) advertisement, so Home Assistant discovers Hearth on the LAN.

Two services are published: ``_wyoming._tcp`` (Home Assistant's Wyoming
integration browses for it) and ``_http._tcp`` for the HTTP API. The host's
addresses are checked every minute and the records updated when they change
(DHCP renewals, a new interface); everything is unregistered on shutdown. A
check that fails is logged and the checks start over, so the records never go
stale in silence.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
from dataclasses import dataclass

import ifaddr
from zeroconf import IPVersion, ServiceInfo
from zeroconf.asyncio import AsyncZeroconf

from daemon import __version__
from daemon.config import MdnsConfig

_LOGGER = logging.getLogger(__name__)

HTTP_TYPE = "_http._tcp.local."
RECHECK_S = 60.0


def instance_name(config: MdnsConfig) -> str:
    """The name Home Assistant shows: config, else "Hearth on <hostname>"."""
    name = config.name or f"Hearth on {socket.gethostname().split('.')[0]}"
    # A DNS-SD instance name is one DNS label: at most 63 bytes, no dots.
    name = name.replace(".", " ").strip()
    while len(name.encode()) > 63:
        name = name[:-1]
    return name or "Hearth"


def lan_addresses(interfaces: list[str]) -> list[str]:
    """Addresses to advertise: the configured ones, else every non-loopback,
    non-link-local address of the host (IPv4 first)."""
    if interfaces:
        return list(interfaces)

    found: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for adapter in ifaddr.get_adapters():
        for ip in adapter.ips:
            raw = ip.ip if isinstance(ip.ip, str) else ip.ip[0]
            try:
                addr = ipaddress.ip_address(raw.split("%")[0])
            except ValueError:
                continue
            if addr.is_loopback or addr.is_link_local or addr.is_multicast:
                continue
            found.append(addr)
    found.sort(key=lambda a: (a.version, str(a)))
    return [str(a) for a in dict.fromkeys(found)]


@dataclass(frozen=True)
class Advertised:
    """One service to publish."""

    type: str
    port: int
    properties: dict[str, str]


class Advertiser:
    """Registers services with zeroconf and keeps their addresses current."""

    def __init__(self, config: MdnsConfig, services: list[Advertised]) -> None:
        self.config = config
        self.services = services
        self.name = instance_name(config)
        self._zc: AsyncZeroconf | None = None
        self._infos: list[ServiceInfo] = []
        self._addresses: list[str] = []
        self._watch: asyncio.Task[None] | None = None
        self.recheck_s = RECHECK_S
        """Seconds between address checks."""

    def _build(self, addresses: list[str], names: list[str] | None = None) -> list[ServiceInfo]:
        host = socket.gethostname().split(".")[0] or "hearth"
        names = names or [f"{self.name}.{service.type}" for service in self.services]
        return [
            ServiceInfo(
                service.type,
                name,
                port=service.port,
                properties=service.properties | {"version": __version__},
                server=f"{host}.local.",
                parsed_addresses=addresses,
            )
            for service, name in zip(self.services, names, strict=True)
        ]

    async def start(self) -> None:
        """Register every service (a failure is logged; the daemon runs on)."""
        self._addresses = lan_addresses(self.config.interfaces)
        if not self._addresses:
            _LOGGER.warning("mDNS: no LAN address to advertise; Home Assistant must be told ours")
            return
        interfaces = list(self.config.interfaces) or None
        try:
            zc = (
                AsyncZeroconf(interfaces=interfaces, ip_version=IPVersion.All)
                if interfaces
                else AsyncZeroconf(ip_version=IPVersion.All)
            )
            self._zc = zc
            self._infos = self._build(self._addresses)
            for info in self._infos:
                await zc.async_register_service(info, allow_name_change=True)
        except Exception as exc:  # noqa: BLE001 - discovery is a convenience
            _LOGGER.warning("mDNS advertisement failed: %s", exc)
            await self.close()
            return
        _LOGGER.info(
            "mDNS: advertising '%s' (%s) on %s",
            self.name,
            ", ".join(f"{s.type.split('.')[0]} port {s.port}" for s in self.services),
            ", ".join(self._addresses),
        )
        if not self.config.interfaces:
            self._watch_addresses()

    def _watch_addresses(self) -> None:
        """Start the address checks, restarted by ``_watch_ended`` if they fail."""
        self._watch = asyncio.create_task(self._recheck(), name="mdns-recheck")
        self._watch.add_done_callback(self._watch_ended)

    def _watch_ended(self, task: asyncio.Task[None]) -> None:
        # The checks only end by close() (cancelled); anything else is a failure that
        # would leave stale addresses announced without a word.
        if task.cancelled() or task is not self._watch:
            return
        exc = task.exception()
        if self._zc is None:
            _LOGGER.error("mDNS: address checks stopped (%r)", exc, exc_info=exc)
            return
        _LOGGER.error(
            "mDNS: the address check failed (%r); checking again in %.0f s",
            exc,
            self.recheck_s,
            exc_info=exc,
        )
        self._watch_addresses()

    async def _recheck(self) -> None:
        while True:
            await asyncio.sleep(self.recheck_s)
            addresses = await asyncio.to_thread(lan_addresses, [])
            if addresses and addresses != self._addresses:
                _LOGGER.info("mDNS: addresses changed to %s", ", ".join(addresses))
                await self.update(addresses)

    async def update(self, addresses: list[str]) -> None:
        """Re-announce every service with new addresses."""
        if self._zc is None:
            return
        self._addresses = addresses
        # Keep the names zeroconf settled on (it renames on a conflict).
        self._infos = self._build(addresses, [info.name for info in self._infos])
        for info in self._infos:
            await self._zc.async_update_service(info)

    async def close(self) -> None:
        """Unregister and stop; safe to call more than once."""
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
            self._watch = None
        zc, self._zc = self._zc, None
        if zc is None:
            return
        with contextlib.suppress(Exception):
            await zc.async_unregister_all_services()
        with contextlib.suppress(Exception):
            await zc.async_close()
