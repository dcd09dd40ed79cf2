"""The llama.cpp that ``make install`` compiles: for this CPU, without Intel AMX (whose
kernels die with an illegal instruction on AMX CPUs), kept per version and per CPU."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import llama_cpp
import pytest

ROOT = Path(__file__).resolve().parents[2]
X86 = os.uname().machine == "x86_64"


def dry_run(tmp_path: Path) -> str:
    venv = tmp_path / "venv"
    done = subprocess.run(
        [
            "make",
            "-n",
            "-B",
            "-C",
            str(ROOT),
            f"VENV={venv}",
            "GPU=cpu",
            f"{venv}/.installed-stamp",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def test_the_wheel_is_compiled_once_per_version_and_cpu(tmp_path: Path) -> None:
    out = dry_run(tmp_path)
    version = llama_cpp.__version__
    line = next(x for x in out.splitlines() if "pip wheel" in x or "CMAKE_ARGS" in x)
    assert "--no-cache-dir" in out and f"llama-cpp-python/{version}-" in out, out
    assert "--find-links" in out, out
    if X86:
        assert "-mno-amx-tile" in line and "-mno-amx-int8" in line, line


@pytest.mark.skipif(not X86, reason="AMX is an x86-64 extension")
def test_the_installed_llama_cpp_has_no_amx_kernels() -> None:
    lib = Path(llama_cpp.__file__).parent / "lib" / "libggml-cpu.so"
    if not lib.is_file():
        pytest.skip("llama.cpp's CPU backend is not a library of its own here")
    symbols = subprocess.run(
        ["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True
    ).stdout
    assert "ggml_backend_amx_buffer_type" not in symbols, (
        "llama-cpp-python was built with AMX kernels: reinstall with 'make install'"
    )
