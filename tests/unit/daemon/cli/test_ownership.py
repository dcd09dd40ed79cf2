"""One state for the shell and the service: a command typed in a shell works on the
system install's config and state, and what it writes as root is the daemon's user's."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from daemon.cli import main as cli
from daemon.cli import ownership
from daemon.engines.tts.voices import VoiceStore

NOBODY = 65534

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="giving files away needs root")


@pytest.fixture
def system_install(tmp_path, monkeypatch):
    """A system install in tmp_path: its config and a state folder the daemon's user
    owns (as ``hearth install-service`` and the unit's StateDirectory leave them)."""
    state = tmp_path / "var-lib-hearth"
    state.mkdir()
    os.chown(state, NOBODY, NOBODY)
    config = tmp_path / "etc-hearth" / "config.yaml"
    config.parent.mkdir()
    config.write_text("log:\n  level: warning\n")
    monkeypatch.setattr(ownership, "SYSTEM_CONFIG", config)
    monkeypatch.setattr(ownership, "SYSTEM_STATE", state)
    monkeypatch.delenv("HEARTH_CONFIG", raising=False)
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
    monkeypatch.setenv("STATE_DIRECTORY", "")  # restored after the test
    return config, state


def test_a_shell_command_adds_a_voice_the_service_can_read(system_install, tmp_path, capsys):
    config, state = system_install
    bundled = VoiceStore(tmp_path / "none").get("en_US-joe-medium")
    source = tmp_path / "import"
    source.mkdir()
    onnx = Path(shutil.copy(bundled.model_path, source / "kitchen.onnx"))
    shutil.copy(bundled.config_path, source / "kitchen.onnx.json")
    assert cli.main(["voices", "add", str(onnx), "--name", "kitchen"]) == 0
    assert cli.load_settings(None).source == str(config)
    added = state / "voices" / "kitchen"
    assert added.is_dir(), sorted(p.name for p in state.rglob("*"))
    for path in [added, *added.rglob("*")]:
        assert path.stat().st_uid == NOBODY, path
    capsys.readouterr()
    assert cli.main(["voices", "list"]) == 0
    assert "kitchen" in capsys.readouterr().out


def test_an_explicit_config_or_variable_wins_over_the_system_install(system_install, tmp_path):
    own = tmp_path / "own.yaml"
    own.write_text("log:\n  level: error\n")
    assert cli.load_settings(own).source == str(own)
    os.environ["HEARTH_CONFIG"] = str(own)
    try:
        assert ownership.installed_config(os.environ) is None
        assert cli.load_settings(None).source == str(own)
    finally:
        del os.environ["HEARTH_CONFIG"]


def test_nothing_is_handed_over_where_root_owns_the_state(tmp_path):
    (tmp_path / "voices").mkdir()
    (tmp_path / "voices" / "a.txt").write_text("x")
    assert ownership.hand_to_owner(tmp_path, [tmp_path]) == 0
    assert (tmp_path / "voices" / "a.txt").stat().st_uid == 0
