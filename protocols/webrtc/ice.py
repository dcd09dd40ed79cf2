"""Where ICE may bind: a UDP port range and, optionally, a fixed address list.

aioice binds each host candidate's socket to port 0 on every interface. Hearth
limits media to ``webrtc.port_min``-``port_max`` (to open in a firewall) and, when
``addresses`` is set, to those addresses (tests use 127.0.0.1). The policy applies
only while a Hearth session gathers candidates (inside :func:`applied`), so other
users of aioice are unaffected. The hooks into aioice and the loop are in
:mod:`protocols.patches.aioice`.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from protocols.patches import aioice as aioice_patch
from protocols.patches.aioice import CreateEndpoint, DatagramEndpoint


@dataclass(frozen=True)
class IcePolicy:
    """Ports and addresses for host candidates."""

    port_min: int
    port_max: int
    addresses: tuple[str, ...] = ()

    async def bind(
        self, create: CreateEndpoint, factory: Any, address: str, **kwargs: Any
    ) -> DatagramEndpoint:
        """Bind on ``address`` in this policy's port range."""
        return await bind_in_range(create, factory, self, address, **kwargs)


async def bind_in_range(
    original: CreateEndpoint,
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
            return await original(factory, local_addr=(address, port), **kwargs)
        except OSError as exc:
            last = exc
    raise OSError(f"no free UDP port in {policy.port_min}-{policy.port_max} on {address} ({last})")


def install(loop: asyncio.AbstractEventLoop) -> None:
    """Let policies steer candidate gathering on this loop (idempotent)."""
    aioice_patch.install(loop)


@contextlib.contextmanager
def applied(policy: IcePolicy) -> Iterator[None]:
    """Apply ``policy`` to candidate gathering inside this block (this task only)."""
    with aioice_patch.active(policy):
        yield
