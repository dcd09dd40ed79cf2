"""The add-on as a folder the Supervisor builds itself (``make addon-local``)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

from tests import addon_rules

ROOT = Path(__file__).resolve().parents[1].parent


def test_the_local_folder_is_an_add_on_the_supervisor_builds(tmp_path):
    dest = tmp_path / "addons" / "hearth"
    done = subprocess.run(
        [sys.executable, str(ROOT / "addon" / "local_build.py"), str(dest)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert str(dest) in done.stdout
    config = addon_rules.load(dest / "config.yaml")
    published = addon_rules.load(ROOT / "addon" / "config.yaml")
    # No image: the Supervisor builds the folder's Dockerfile; everything else is the same.
    assert "image" not in config and config == {k: v for k, v in published.items() if k != "image"}
    assert addon_rules.addon_problems(config) == []
    build = yaml.safe_load((dest / "build.yaml").read_text())
    assert set(build["build_from"]) == set(config["arch"])
    # Only the add-on's own config.yaml is one the Supervisor's scan reads.
    scanned = [p for p in dest.rglob("config.*") if p.suffix in addon_rules.CONFIG_SUFFIXES]
    assert scanned == [dest / "config.yaml"]
    # Every file the Dockerfile copies from its context is in the folder.
    dockerfile = (dest / "Dockerfile").read_text()
    copied = [
        source
        for line in re.findall(r"^COPY (?!--from)(.+)$", dockerfile, re.M)
        for source in [word for word in line.split() if not word.startswith("--")][:-1]
    ]
    assert "hearth-config.yaml" in copied and "config.yaml" not in copied
    for name in copied:
        assert (dest / name).exists(), name
    assert (dest / "hearth-config.yaml").read_text() == (ROOT / "config.yaml").read_text()
    assert (dest / "daemon" / "service.py").is_file()
    assert not list(dest.rglob("__pycache__"))
