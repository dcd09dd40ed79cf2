"""hearth install-service, staged into a folder: what it writes, idempotence, uninstall."""

import subprocess
import sys
from pathlib import Path

from daemon.cli import install as installer
from daemon.cli.install import Layout, install, render_unit, uninstall

ROOT = Path(__file__).resolve().parents[4]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "daemon.cli", "install-service", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


def test_staged_install_is_idempotent_and_uninstall_keeps_the_config(tmp_path):
    first = run_cli("--root", str(tmp_path), "--no-venv")
    assert first.returncode == 0, first.stderr
    unit = tmp_path / "etc/systemd/system/hearth.service"
    config = tmp_path / "etc/hearth/config.yaml"
    assert unit.read_text() == (ROOT / "systemd/hearth.service").read_text()
    assert config.read_text() == (ROOT / "config.yaml").read_text()
    assert config.stat().st_mode & 0o777 == 0o640
    assert "unit: installed" in first.stdout and "config: installed" in first.stdout

    config.write_text("log:\n  level: debug\n")  # the owner's edits survive an upgrade
    again = run_cli("--root", str(tmp_path), "--no-venv")
    assert again.returncode == 0, again.stderr
    assert "is up to date" in again.stdout and "config: kept" in again.stdout
    assert config.read_text() == "log:\n  level: debug\n"

    gone = run_cli("--root", str(tmp_path), "--uninstall")
    assert gone.returncode == 0, gone.stderr
    assert not unit.exists() and config.exists()
    assert "unit: removed" in gone.stdout


def test_a_custom_prefix_and_config_path_go_into_the_unit():
    text = render_unit(ROOT, Layout(prefix="/srv/hearth", config="/srv/hearth.yaml"))
    assert "ExecStart=/srv/hearth/bin/hearth --config /srv/hearth.yaml serve" in text


def test_the_venv_step_installs_this_tree_with_the_constraints(tmp_path, monkeypatch):
    commands: list[list[str]] = []
    monkeypatch.setattr(installer, "_run", lambda args, say: commands.append(args))
    said: list[str] = []
    install(Layout(root=tmp_path), ROOT, say=said.append)
    prefix = str(tmp_path / "opt/hearth")
    assert commands[0] == [sys.executable, "-m", "venv", prefix]
    hearth = next(c for c in commands if c[-1] == str(ROOT))
    assert hearth[:3] == [f"{prefix}/bin/python", "-m", "pip"]
    assert ["-c", str(ROOT / "constraints.txt")] == hearth[
        hearth.index("-c") : hearth.index("-c") + 2
    ]
    assert f"venv: Hearth installed into {prefix}" in said
    uninstall(Layout(root=tmp_path), say=said.append)  # no pyvenv.cfg: the folder is left alone


def test_installing_onto_the_machine_needs_root(monkeypatch):
    monkeypatch.setattr(installer.os, "geteuid", lambda: 1000)

    def refuse(args, say):  # should the check ever break: touch nothing here
        raise AssertionError(f"ran {args}")

    monkeypatch.setattr(installer, "_run", refuse)
    said: list[str] = []
    try:
        install(Layout(), ROOT, say=said.append)
    except installer.InstallError as exc:
        assert "run as root" in str(exc)
    else:
        raise AssertionError("installed without root")
    assert said == []
