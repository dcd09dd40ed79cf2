"""`hearth check` lists every setting that is not the default, where it came from."""

import json
import re

from daemon.cli.check import run_check
from daemon.config import load_config


def test_settings_in_text_and_json(tmp_path, capsys):
    path = tmp_path / "config.yaml"
    path.write_text(f"state_dir: {tmp_path}\nhttp:\n  host: 127.0.0.1\n")
    secret = tmp_path / "key"
    secret.write_text("hunter2\n")
    config = load_config(
        path,
        environ={"HEARTH_AUTH__API_KEY_FILE": str(secret), "HEARTH_HTTPS__ENABLED": "false"},
        addon={("log", "level"): "debug"},
    )
    run_check(config, load=False, as_json=True)
    out = json.loads(capsys.readouterr().out)
    assert out["settings"] == [
        {"key": "state_dir", "value": str(tmp_path), "origin": f"{path}:1"},
        {"key": "http.host", "value": "127.0.0.1", "origin": f"{path}:3"},
        {"key": "https.enabled", "value": False, "origin": "env HEARTH_HTTPS__ENABLED"},
        {"key": "auth.api_key", "value": "(set)", "origin": "env HEARTH_AUTH__API_KEY_FILE"},
        {"key": "log.level", "value": "debug", "origin": "add-on options"},
    ]
    run_check(config, load=False)
    text = capsys.readouterr().out
    assert "settings    5 set as below; everything else is the default" in text
    assert re.search(r"\n  https\.enabled +false +env HEARTH_HTTPS__ENABLED\n", text)
    assert re.search(r"\n  auth\.api_key +\(set\) +env HEARTH_AUTH__API_KEY_FILE\n", text)
    assert "hunter2" not in text


def test_all_defaults(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path))
    run_check(load_config(None, environ={}), load=False)
    assert "settings    all built-in defaults" in capsys.readouterr().out
