"""Which peers a listener answers with the LAN closed (``network.lan: false``)."""

from __future__ import annotations

import pytest

from daemon.config import NetworkConfig
from protocols.peers import peer_allowed

CLOSED = NetworkConfig(lan=False, allow=["172.30.32.0/23", "192.168.1.20"])


@pytest.mark.parametrize(
    ("peer", "local", "allowed"),
    [
        ("127.0.0.1", "127.0.0.1", True),  # Home Assistant on this host, loopback
        ("::1", "::1", True),
        ("192.168.1.5", "192.168.1.5", True),  # this host through its LAN address
        ("::ffff:192.168.1.5", "192.168.1.5", True),
        ("172.30.32.2", "172.30.32.1", True),  # the Supervisor's watchdog
        ("192.168.1.20", "192.168.1.5", True),  # listed in allow
        ("192.168.1.21", "192.168.1.5", False),  # a LAN machine
        ("fe80::1%eth0", "fe80::2%eth0", False),
        ("10.0.0.9", None, False),
        (None, None, True),  # a Unix socket's peer
    ],
)
def test_a_closed_lan_answers_this_machine_and_the_allowed_networks(peer, local, allowed):
    assert peer_allowed(CLOSED, peer, local) is allowed


def test_an_open_lan_answers_everyone():
    assert peer_allowed(NetworkConfig(), "203.0.113.9", "192.168.1.5")
