"""The add-on answers Home Assistant, not the LAN, and is discovered once.

A real ``hearth serve`` run as the add-on (``SUPERVISOR_TOKEN`` and its options file)
listens on one end of a veth pair; the other end is in a network namespace this test
makes: a second machine on the household's LAN. Wyoming and the HTTP API answer a client
on this machine (through the LAN address, as Home Assistant on the host does) and refuse
the LAN machine with a message naming the option that opens them; no mDNS goes out, so
the Supervisor's discovery is Home Assistant's one card. The same daemon outside the
add-on answers the LAN machine and announces itself over mDNS.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.daemon import Daemon
from tests.helpers import free_port

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("ip") is None,
        reason="a network namespace needs root and iproute2",
    ),
]

OPTIONS = {
    "voice": "en_US-joe-medium",
    "asr_model": "tiny.en",
    "wake_words": [],
    "llm": "remote",
    "llm_url": "http://127.0.0.1:9/v1",
    "speakers": False,
    "home_assistant_names": False,
    "home_assistant_commands": False,
    "lan_access": False,
    "log_level": "info",
}
ASK_WYOMING = """
import asyncio, json, sys
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe

async def main():
    async with AsyncTcpClient(sys.argv[1], int(sys.argv[2])) as client:
        await client.write_event(Describe().event())
        event = await asyncio.wait_for(client.read_event(), 30)
        print(json.dumps(None if event is None else {"type": event.type, "data": event.data}))

asyncio.run(main())
"""
ASK_HTTP = """
import json, sys, httpx
answer = httpx.get(sys.argv[1], timeout=30)
print(json.dumps({"status": answer.status_code, "body": answer.text}))
"""


@dataclass(frozen=True)
class Lan:
    """A namespace (the LAN machine) joined to this one by a veth pair."""

    namespace: str
    host_address: str
    """This machine's address on the LAN."""

    def run(self, script: str, *args: str) -> dict:
        """Run a Python ``script`` on the LAN machine; its JSON answer."""
        done = subprocess.run(
            ["ip", "netns", "exec", self.namespace, sys.executable, "-c", script, *args],
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        return json.loads(done.stdout.strip().splitlines()[-1])


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def lan() -> Iterator[Lan]:
    tag = os.getpid() % 10000
    namespace, outside, inside = f"hearth-lan{tag}", f"hl{tag}h", f"hl{tag}n"
    subnet = f"10.213.{tag % 250}"
    _ip("netns", "add", namespace)
    try:
        _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        _ip("link", "set", inside, "netns", namespace)
        _ip("addr", "add", f"{subnet}.1/24", "dev", outside)
        _ip("link", "set", outside, "up")
        _ip("-n", namespace, "addr", "add", f"{subnet}.2/24", "dev", inside)
        _ip("-n", namespace, "link", "set", inside, "up")
        _ip("-n", namespace, "link", "set", "lo", "up")
        yield Lan(namespace, f"{subnet}.1")
    finally:
        subprocess.run(["ip", "link", "del", outside], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", namespace], capture_output=True, check=False)


class LanDaemon(Daemon):
    """A daemon whose listeners are on this machine's LAN address only."""

    def __init__(self, workdir: Path, address: str, env: dict[str, str]) -> None:
        super().__init__(workdir, "wake:\n  enabled: false\n", mdns=False, env=env)
        self.address = address
        self.wyoming_port = free_port()
        self.config_path.write_text(
            f"state_dir: {workdir / 'state'}\n"
            f"http:\n  host: {address}\n  port: {self.http_port}\n"
            "https:\n  enabled: false\n"
            f"wyoming:\n  uri: tcp://{address}:{self.wyoming_port}\n"
            f"mdns:\n  enabled: true\n  interfaces: [{address}]\n"
            "llm:\n  backend: remote\n  remote:\n    base_url: http://127.0.0.1:9/v1\n"
            "wake:\n  enabled: false\nspeakers:\n  enabled: false\n"
        )

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.http_port}"


def _as_addon(workdir: Path, **options: object) -> dict[str, str]:
    path = workdir / "options.json"
    path.write_text(json.dumps({**OPTIONS, **options}))
    return {
        "SUPERVISOR_TOKEN": "test-token",
        "HEARTH_ADDON_OPTIONS": str(path),
        # The add-on keeps voices in /config/voices; here, in the test's folder.
        "HEARTH_VOICES__DIR": str(workdir / "voices"),
    }


def test_the_add_on_answers_this_machine_not_the_lan_and_is_discovered_once(lan, tmp_path):
    daemon = LanDaemon(tmp_path, lan.host_address, _as_addon(tmp_path))
    with daemon.start():
        here = subprocess.run(
            [sys.executable, "-c", ASK_WYOMING, lan.host_address, str(daemon.wyoming_port)],
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        assert json.loads(here.stdout)["type"] == "info"  # Home Assistant on this host
        assert httpx.get(f"{daemon.url}/api/ping", timeout=10).status_code == 200

        wyoming = lan.run(ASK_WYOMING, lan.host_address, str(daemon.wyoming_port))
        assert wyoming["type"] == "error" and wyoming["data"]["code"] == "forbidden", wyoming
        assert "lan_access" in wyoming["data"]["text"]
        http = lan.run(ASK_HTTP, f"{daemon.url}/api/ping")
        assert http["status"] == 403 and "lan_access" in http["body"], http
        assert "refused a connection from" in daemon.log
        # The Supervisor's discovery is the one card: no mDNS under the add-on.
        assert "mDNS: advertising" not in daemon.log


def test_outside_the_add_on_the_lan_is_answered_and_mdns_announces(lan, tmp_path):
    daemon = LanDaemon(tmp_path, lan.host_address, {})
    with daemon.start():
        wyoming = lan.run(ASK_WYOMING, lan.host_address, str(daemon.wyoming_port))
        assert wyoming["type"] == "info", wyoming
        assert lan.run(ASK_HTTP, f"{daemon.url}/api/ping")["status"] == 200
        daemon.wait_for_log("mDNS: advertising")
