"""The CPU's features and the llama.cpp build chosen for it, with the CPU made up."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from daemon.engines import cpu
from daemon.engines.cpu import LlamaBuild, choose, cpu_features, llama_builds, read_needs

X86 = "processor\t: 0\nflags\t\t: fpu sse sse2 pni ssse3 sse4_1 sse4_2 popcnt avx avx2 fma f16c\n"
ARM = "processor\t: 0\nFeatures\t: fp asimd evtstrm crc32 cpuid\n"
V3 = frozenset({"avx", "avx2", "fma", "f16c", "bmi2", "pni", "ssse3"})
V2 = frozenset({"pni", "ssse3", "sse4_2"})


def test_features_come_from_proc_cpuinfo_on_x86_and_arm():
    assert {"avx2", "sse4_2", "pni"} <= cpu_features(X86, cpuid={})
    assert cpu_features(ARM, cpuid={}) == {"fp", "asimd", "evtstrm", "crc32", "cpuid"}


def test_cpuid_denies_what_proc_cpuinfo_claims():
    # qemu's emulated Nehalem on an AVX2 host: /proc/cpuinfo is the host's.
    nehalem = {"SSE3": True, "SSSE3": True, "SSE42": True, "AVX": False, "AVX2": False}
    features = cpu_features(X86, cpuid=nehalem)
    assert "avx" not in features and "avx2" not in features
    assert {"sse4_2", "pni", "ssse3", "fma"} <= features  # numpy's FMA3 unknown: kept


def test_the_fast_build_first_then_the_baseline():
    fast, base = LlamaBuild(Path("lib"), V3), LlamaBuild(Path("lib-x86-64-v2"), V2)
    assert choose([fast, base], V3 | V2).build is fast
    chosen = choose([fast, base], V2 | {"popcnt"})
    assert chosen.build is base and "lib-x86-64-v2" in chosen.reason


def test_no_build_names_the_features_the_most_modest_one_lacks():
    fast, base = LlamaBuild(Path("lib"), V3), LlamaBuild(Path("lib-x86-64-v2"), V2)
    chosen = choose([fast, base], frozenset({"pni"}))
    assert chosen.build is None
    assert "lacks sse4_2 ssse3" in chosen.reason and "lib, lib-x86-64-v2" in chosen.reason
    assert choose([], V3).build is None


def test_a_build_without_a_record_is_trusted():
    native = LlamaBuild(Path("lib"), None)
    assert choose([native], frozenset()).build is native


def test_builds_are_read_from_the_package_folders(tmp_path):
    for name, needs in (("lib", ["avx2"]), ("lib-x86-64-v2", ["sse4_2"]), ("lib-empty", None)):
        folder = tmp_path / name
        folder.mkdir()
        if name != "lib-empty":
            (folder / "libllama.so").write_bytes(b"")
        if needs is not None:
            (folder / cpu.NEEDS_FILE).write_text(json.dumps({"needs": needs}))
    builds = llama_builds(tmp_path)
    assert [b.name for b in builds] == ["lib", "lib-x86-64-v2"]  # no libllama: no build
    assert builds[0].needs == {"avx2"} and builds[1].needs == {"sse4_2"}
    assert read_needs(tmp_path / "lib-empty") is None


def test_select_points_llama_cpp_python_at_the_baseline(tmp_path, monkeypatch):
    for name, needs in (("lib", ["avx2"]), ("lib-x86-64-v2", ["sse4_2"])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "libllama.so").write_bytes(b"")
        (tmp_path / name / cpu.NEEDS_FILE).write_text(json.dumps({"needs": needs}))
    monkeypatch.setattr(cpu, "_CHOSEN", None)
    monkeypatch.delenv(cpu.LIB_PATH_VARIABLE, raising=False)
    monkeypatch.setattr(cpu, "llama_builds", lambda: llama_builds(tmp_path))
    monkeypatch.setattr(cpu, "cpu_features", lambda: frozenset({"sse4_2"}))
    choice = cpu.select_llama()
    assert choice.build is not None and choice.build.name == "lib-x86-64-v2"
    assert cpu.select_llama() is choice  # once per process
    assert os.environ[cpu.LIB_PATH_VARIABLE] == str(tmp_path / "lib-x86-64-v2")


@pytest.mark.skipif(not Path("/proc/cpuinfo").exists(), reason="no /proc/cpuinfo")
def test_this_machines_features_are_read():
    assert cpu_features()
