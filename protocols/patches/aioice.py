"""Patches to aioice (and to the event loop's UDP binds that aioice makes).

aioice gathers host candidates by binding a UDP socket to port 0 on every address
``aioice.ice.get_host_addresses`` returns (``Connection.get_component_candidates``);
aiortc offers neither a port range nor an address list. Hearth must keep media in
``webrtc.port_min``-``port_max`` (ports to open in a firewall) and, when
``webrtc.addresses`` is set, on those addresses only (tests use 127.0.0.1). So:

- **Host addresses** (``aioice.ice.get_host_addresses``): replaced by a function that
  answers the active policy's addresses, else the original's.
- **Port-0 binds** (the loop's ``create_datagram_endpoint``): on the loops Hearth
  serves on, a bind to port 0 made while a policy is active goes to the policy.

A policy is active only inside :func:`active` (a context variable, so only the task
that gathers candidates for a Hearth session): other users of aioice and of the loop
are unaffected.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Protocol

import aioice.ice

from protocols.patches import Patch, usable

_LOGGER = logging.getLogger(__name__)

VERSIONS = ("0.9", "0.14")
HOST_ADDRESSES = Patch(
    "aioice",
    "aioice.ice:get_host_addresses",
    ("use_ipv4", "use_ipv6"),
    False,
    VERSIONS,
    "webrtc.addresses is not applied: ICE offers every host address",
)
COMPONENT_CANDIDATES = Patch(
    "aioice",
    "aioice.ice:Connection.get_component_candidates",
    ("self", "component", "addresses", "timeout"),
    True,
    VERSIONS,
    "the webrtc.port_min-port_max range is not applied: media uses any UDP port",
)
"""Not replaced: the caller whose port-0 binds the loop patch redirects."""
PATCHES = (HOST_ADDRESSES, COMPONENT_CANDIDATES)

DatagramEndpoint = tuple[asyncio.DatagramTransport, asyncio.DatagramProtocol]
CreateEndpoint = Callable[..., Awaitable[DatagramEndpoint]]
"""The loop's own ``create_datagram_endpoint``."""


class BindPolicy(Protocol):
    """Where host candidates may bind (see :class:`protocols.webrtc.ice.IcePolicy`)."""

    @property
    def addresses(self) -> tuple[str, ...]:
        """Addresses to gather on; empty: every host address."""
        ...

    async def bind(
        self, create: CreateEndpoint, factory: Any, address: str, **kwargs: Any
    ) -> DatagramEndpoint:
        """Bind a UDP endpoint for ``address`` with ``create`` (where port 0 was asked)."""
        ...


_ACTIVE: contextvars.ContextVar[BindPolicy | None] = contextvars.ContextVar(
    "hearth_bind_policy", default=None
)
_original_host_addresses: Callable[[bool, bool], list[str]] | None = None


def _host_addresses(use_ipv4: bool, use_ipv6: bool) -> list[str]:
    policy = _ACTIVE.get()
    if policy is not None and policy.addresses:
        return list(policy.addresses)
    assert _original_host_addresses is not None
    return _original_host_addresses(use_ipv4, use_ipv6)


def install(loop: asyncio.AbstractEventLoop) -> None:
    """Route aioice's host addresses and this loop's port-0 binds through the active
    policy (idempotent; a patch that cannot apply is left out, with an error logged)."""
    global _original_host_addresses
    if _original_host_addresses is None and usable(HOST_ADDRESSES):
        _original_host_addresses = aioice.ice.get_host_addresses
        aioice.ice.get_host_addresses = _host_addresses
    if getattr(loop, "_hearth_bind_policy", False) or not usable(COMPONENT_CANDIDATES):
        return
    original: CreateEndpoint = loop.create_datagram_endpoint

    async def create_datagram_endpoint(factory: Any, *args: Any, **kwargs: Any) -> Any:
        policy = _ACTIVE.get()
        local = kwargs.get("local_addr")
        if policy is not None and not args and local is not None and local[1] == 0:
            kwargs.pop("local_addr")
            return await policy.bind(original, factory, local[0], **kwargs)
        return await original(factory, *args, **kwargs)

    loop.create_datagram_endpoint = create_datagram_endpoint  # type: ignore[method-assign,assignment]
    loop._hearth_bind_policy = True  # type: ignore[attr-defined]


@contextlib.contextmanager
def active(policy: BindPolicy) -> Iterator[None]:
    """Apply ``policy`` to candidate gathering inside this block (this task only)."""
    token = _ACTIVE.set(policy)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
