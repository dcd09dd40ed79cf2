"""systemd/hearth.service: systemd-analyze verifies it, and it asks for what the daemon does."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from daemon.errors import EXIT_CONFIG

ROOT = Path(__file__).resolve().parents[4]
UNIT = ROOT / "systemd" / "hearth.service"
INSTALLED_HEARTH = "/opt/hearth/bin/hearth"
MAX_EXPOSURE = 2.0
"""`systemd-analyze security` score to stay under (0 is best, 10 worst)."""


@pytest.fixture(scope="module")
def analyze() -> str:
    """systemd-analyze, installed from Debian when missing and running as root."""
    found = shutil.which("systemd-analyze")
    if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
        env = os.environ | {"DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-q"], env=env, check=False, timeout=300)
        subprocess.run(
            ["apt-get", "install", "-y", "-q", "--no-install-recommends", "systemd"],
            env=env,
            check=False,
            timeout=600,
        )
        found = shutil.which("systemd-analyze")
    if found is None:
        pytest.skip("systemd-analyze is missing and we are not root (apt-get install systemd)")
    return found


@pytest.fixture
def unit_here(tmp_path: Path) -> Path:
    """The unit with ExecStart pointing at this venv's hearth (/opt/hearth is not here)."""
    here = str(Path(sys.executable).parent / "hearth")
    path = tmp_path / "hearth.service"
    path.write_text(UNIT.read_text().replace(INSTALLED_HEARTH, here))
    return path


def test_systemd_analyze_verify_is_clean(analyze: str, unit_here: Path):
    proc = subprocess.run(
        [analyze, "verify", str(unit_here)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == "", proc.stderr  # not even a warning


def test_security_exposure_is_low(analyze: str, unit_here: Path):
    proc = subprocess.run(
        [analyze, "security", "--offline=true", "--no-pager", str(unit_here)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    match = re.search(r"Overall exposure level for hearth.service: ([\d.]+)", proc.stdout)
    assert match, proc.stdout + proc.stderr
    assert float(match.group(1)) <= MAX_EXPOSURE, proc.stdout


def test_unit_asks_for_notify_watchdog_and_its_own_user():
    text = UNIT.read_text()
    settings = dict(
        line.split("=", 1) for line in text.splitlines() if "=" in line and line[0] != "#"
    )
    assert settings["Type"] == "notify"
    assert int(settings["WatchdogSec"]) >= 10
    assert settings["Restart"] == "on-failure"
    # A config error stops the unit instead of restarting it every few seconds forever.
    assert settings["RestartPreventExitStatus"] == str(EXIT_CONFIG)
    assert settings["User"] == "hearth"
    assert settings["ExecStart"].startswith(INSTALLED_HEARTH + " --config /etc/hearth/config.yaml")
    assert settings["ExecReload"] == "/bin/kill -HUP $MAINPID"
    for key in ("StateDirectory", "CacheDirectory", "ConfigurationDirectory"):
        assert settings[key] == "hearth"
    assert "AF_INET AF_INET6" in settings["RestrictAddressFamilies"]  # mDNS, WebRTC
    assert "char-nvidia* rw" in text
    assert "PrivateDevices=yes" not in text  # it would hide /dev/nvidia*
