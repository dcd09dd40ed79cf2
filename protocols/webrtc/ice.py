"""Where ICE may bind: a UDP port range and, optionally, a fixed address list.

aioice binds each host candidate's socket to port 0 on every interface. Hearth
limits media to ``webrtc.port_min``-``port_max`` (to open in a firewall) and, when
``addresses`` is set, to those addresses (tests use 127.0.0.1). The policy applies
only while a Hearth session gathers candidates: it is held in a context variable
set around ``setLocalDescription``, so other users of aioice are unaffected.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import aioice.ice


@dataclass(frozen=True)
class IcePolicy:
    """Ports and addresses for host candidates."""

    port_min: int
    port_max: int
    addresses: tuple[str, ...] = ()


_POLICY: contextvars.ContextVar[IcePolicy | None] = contextvars.ContextVar(
    "hearth_ice_policy", default=None
)
_installed = False


def _host_addresses(use_ipv4: bool, use_ipv6: bool) -> list[str]:
    policy = _POLICY.get()
    if policy is not None and policy.addresses:
        return list(policy.addresses)
    return _ORIGINAL_HOST_ADDRESSES(use_ipv4, use_ipv6)


_ORIGINAL_HOST_ADDRESSES = aioice.ice.get_host_addresses


async def bind_in_range(
    original: Any,
    factory: Any,
    policy: IcePolicy,
    address: str,
    **kwargs: Any,
) -> tuple[asyncio.DatagramTransport, asyncio.DatagramProtocol]:
    """Bind a UDP endpoint on the first free port of the range (random start)."""
    ports = list(range(policy.port_min, policy.port_max + 1))
    start = random.randrange(len(ports))
    last: OSError | None = None
    for port in ports[start:] + ports[:start]:
        try:
            result: tuple[asyncio.DatagramTransport, asyncio.DatagramProtocol] = await original(
                factory, local_addr=(address, port), **kwargs
            )
            return result
        except OSError as exc:
            last = exc
    raise OSError(f"no free UDP port in {policy.port_min}-{policy.port_max} on {address} ({last})")


def install(loop: asyncio.AbstractEventLoop) -> None:
    """Route aioice's port-0 binds on this loop through the active policy (idempotent)."""
    global _installed
    if not _installed:
        aioice.ice.get_host_addresses = _host_addresses
        _installed = True
    if getattr(loop, "_hearth_ice", False):
        return
    original = loop.create_datagram_endpoint

    async def create_datagram_endpoint(factory: Any, *args: Any, **kwargs: Any) -> Any:
        policy = _POLICY.get()
        local = kwargs.get("local_addr")
        if policy is not None and not args and local is not None and local[1] == 0:
            kwargs.pop("local_addr")
            return await bind_in_range(original, factory, policy, local[0], **kwargs)
        return await original(factory, *args, **kwargs)

    loop.create_datagram_endpoint = create_datagram_endpoint  # type: ignore[method-assign,assignment]
    loop._hearth_ice = True  # type: ignore[attr-defined]


@contextlib.contextmanager
def applied(policy: IcePolicy) -> Iterator[None]:
    """Apply ``policy`` to candidate gathering inside this block (this task only)."""
    token = _POLICY.set(policy)
    try:
        yield
    finally:
        _POLICY.reset(token)
