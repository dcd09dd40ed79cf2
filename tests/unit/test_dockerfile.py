"""The Dockerfile's pins agree with the project's (no build needed)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_baseline_llama_cpp_is_the_version_the_venv_pins():
    dockerfile = (ROOT / "Dockerfile").read_text()
    (built,) = re.findall(r"^ARG LLAMA_CPP_VERSION=(\S+)$", dockerfile, re.MULTILINE)
    constraints = (ROOT / "constraints.txt").read_text()
    (pinned,) = re.findall(r"^llama[-_]cpp[-_]python==(\S+)$", constraints, re.MULTILINE | re.I)
    # The x86-64-v2 CPU backend is built from this version's llama.cpp and loaded beside
    # the venv's libllama: the two must be the same release.
    assert built == pinned
