"""The CPU's features, and which llama.cpp build it can run.

llama-cpp-python's libraries are compiled for a CPU: a build for x86-64-v3 dies with
SIGILL (or hangs) on a CPU without AVX2. The container image carries one build per
folder of the ``llama_cpp`` package, ``lib`` (the fast one) and ``lib-*`` (baselines,
e.g. ``lib-x86-64-v2``), each with a ``cpu-needs.json`` written when it was built
(``python -m daemon.engines.cpu record FOLDER``) naming the CPU features its code uses.
:func:`select_llama` reads the CPU's features and, before ``llama_cpp`` is imported,
points llama-cpp-python at the first build the CPU can run (``LLAMA_CPP_LIB_PATH``).
A folder without the file (a venv ``make install`` compiled for this machine) is
trusted.

The features are what ``/proc/cpuinfo`` lists (``flags`` on x86, ``Features`` on ARM),
less any that the CPUID instruction itself denies (numpy's dispatcher asks it): an
emulated CPU, or a hypervisor that hides a feature, can leave ``/proc/cpuinfo``
claiming more than the CPU will execute.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import importlib.util
import json
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

_LOGGER = logging.getLogger(__name__)

NEEDS_FILE = "cpu-needs.json"
"""Beside each llama.cpp library: the CPU features it needs (``/proc/cpuinfo`` names)."""
LIB_PATH_VARIABLE = "LLAMA_CPP_LIB_PATH"
"""llama-cpp-python loads ``libllama`` from this folder instead of its own ``lib``."""

GGML_FEATURES: Mapping[str, str] = {
    "sse3": "pni",
    "ssse3": "ssse3",
    "avx": "avx",
    "avx2": "avx2",
    "fma": "fma",
    "f16c": "f16c",
    "bmi2": "bmi2",
    "avx_vnni": "avx_vnni",
    "avx512": "avx512f",
    "avx512_vbmi": "avx512vbmi",
    "avx512_vnni": "avx512_vnni",
    "avx512_bf16": "avx512_bf16",
    "amx_int8": "amx_int8",
    "neon": "asimd",
    "fp16_va": "asimdhp",
    "dotprod": "asimddp",
    "matmul_int8": "i8mm",
    "sve": "sve",
    "sme": "sme",
}
"""``ggml_cpu_has_<name>()`` (what libggml-cpu was compiled to use) by its feature's
``/proc/cpuinfo`` name."""
CPUID_NAMES: Mapping[str, str] = {
    "pni": "SSE3",
    "ssse3": "SSSE3",
    "sse4_1": "SSE41",
    "sse4_2": "SSE42",
    "popcnt": "POPCNT",
    "avx": "AVX",
    "avx2": "AVX2",
    "fma": "FMA3",
    "f16c": "F16C",
    "avx512f": "AVX512F",
    "avx512vbmi": "AVX512VBMI",
    "avx512_vnni": "AVX512VNNI",
    "asimd": "ASIMD",
    "asimdhp": "ASIMDHP",
    "asimddp": "ASIMDDP",
    "sve": "SVE",
}
"""``/proc/cpuinfo`` names by numpy's names for what CPUID says (``__cpu_features__``)."""


@dataclass(frozen=True)
class LlamaBuild:
    """One folder of llama.cpp libraries and the CPU features its code needs."""

    path: Path
    needs: frozenset[str] | None
    """``/proc/cpuinfo`` feature names; None: not recorded (a native build, trusted)."""

    @property
    def name(self) -> str:
        """The folder's name: ``lib`` (the fast build) or ``lib-x86-64-v2``..."""
        return self.path.name

    def missing(self, features: frozenset[str]) -> tuple[str, ...]:
        """What this build needs that ``features`` lacks, sorted."""
        return tuple(sorted((self.needs or frozenset()) - features))


@dataclass(frozen=True)
class LlamaChoice:
    """The llama.cpp build this CPU runs, or why there is none."""

    build: LlamaBuild | None
    """None: no build can run here (the local LLM is off)."""
    reason: str
    """One line for the log and ``hearth check``: the build, or the missing features."""


def cpu_features(
    cpuinfo: str | None = None, cpuid: Mapping[str, bool] | None = None
) -> frozenset[str]:
    """The features this CPU runs, by their ``/proc/cpuinfo`` names.

    Args:
        cpuinfo: the text of ``/proc/cpuinfo`` (default: read it).
        cpuid: numpy's CPUID answers (default: ask numpy); a feature it knows and
            denies is left out, whatever ``/proc/cpuinfo`` says.
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            cpuinfo = ""
    listed: set[str] = set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            listed.update(value.split())
            break
    if cpuid is None:
        cpuid = _numpy_cpuid()
    denied = {name for name, key in CPUID_NAMES.items() if cpuid.get(key) is False}
    return frozenset(listed - denied)


def _numpy_cpuid() -> Mapping[str, bool]:
    """numpy's view of the CPU (it asks CPUID when it loads); empty when unavailable."""
    for module in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):
        try:
            features = importlib.import_module(module).__cpu_features__
        except (ImportError, AttributeError):
            continue
        return {str(k): bool(v) for k, v in features.items()}
    return {}


def read_needs(folder: Path) -> frozenset[str] | None:
    """The features a library folder records, or None when it records none."""
    try:
        data = json.loads((folder / NEEDS_FILE).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        _LOGGER.warning("%s: unreadable (%s); taken as not recorded", folder / NEEDS_FILE, exc)
        return None
    return frozenset(str(f) for f in data.get("needs", ()))


def llama_builds(package: Path | None = None) -> list[LlamaBuild]:
    """The llama.cpp builds installed: ``lib`` first, then each ``lib-*`` folder."""
    if package is None:
        spec = importlib.util.find_spec("llama_cpp")  # finds the package, runs nothing
        if spec is None or not spec.submodule_search_locations:
            return []
        package = Path(next(iter(spec.submodule_search_locations)))
    folders = [package / "lib", *sorted(package.glob("lib-*"))]
    return [
        LlamaBuild(folder, read_needs(folder))
        for folder in folders
        if (folder / "libllama.so").exists()
    ]


def choose(builds: Iterable[LlamaBuild], features: frozenset[str]) -> LlamaChoice:
    """The first build whose needs ``features`` meet (pure)."""
    builds = list(builds)
    for build in builds:
        if not build.missing(features):
            needs = ", ".join(sorted(build.needs)) if build.needs else "not recorded"
            return LlamaChoice(build, f"llama.cpp build {build.name} (needs: {needs})")
    if not builds:
        return LlamaChoice(None, "no llama.cpp library is installed")
    modest = min(builds, key=lambda b: len(b.missing(features)))
    missing = " ".join(modest.missing(features))
    names = ", ".join(b.name for b in builds)
    return LlamaChoice(
        None,
        f"the local LLM is off: this CPU lacks {missing}, which every llama.cpp build"
        f" here needs ({names})",
    )


_CHOSEN: LlamaChoice | None = None


def select_llama() -> LlamaChoice:
    """Choose the llama.cpp build for this CPU and point llama-cpp-python at it; call
    before ``llama_cpp`` is first imported (it loads its library then, once).

    ``LLAMA_CPP_LIB_PATH`` set by the operator wins; so does a library already loaded.
    The choice is made once per process and logged.
    """
    global _CHOSEN
    if _CHOSEN is not None:
        return _CHOSEN
    override = os.environ.get(LIB_PATH_VARIABLE)
    if override:
        _CHOSEN = LlamaChoice(LlamaBuild(Path(override), None), f"{LIB_PATH_VARIABLE}={override}")
    else:
        choice = choose(llama_builds(), cpu_features())
        if choice.build is not None and choice.build.name != "lib":
            os.environ[LIB_PATH_VARIABLE] = str(choice.build.path)
        if choice.build is None:
            _LOGGER.warning("%s", choice.reason)
        else:
            _LOGGER.info("LLM: %s", choice.reason)
        _CHOSEN = choice
    return _CHOSEN


def record(folder: Path, also: Iterable[str] = ()) -> frozenset[str]:
    """Write ``folder``'s ``cpu-needs.json``: what its libggml-cpu was compiled to use
    (asked of the library itself, on the build machine), and ``also``."""
    library = next(
        p for p in (folder / "libggml-cpu.so", folder / "libggml-cpu.so.0") if p.exists()
    )
    lib = ctypes.CDLL(str(library))
    needs = set(also)
    for ggml_name, flag in GGML_FEATURES.items():
        try:
            probe = getattr(lib, f"ggml_cpu_has_{ggml_name}")
        except AttributeError:
            continue
        probe.restype = ctypes.c_int
        if probe():
            needs.add(flag)
    (folder / NEEDS_FILE).write_text(
        json.dumps({"library": library.name, "needs": sorted(needs)}, indent=1) + "\n"
    )
    return frozenset(needs)


def main(argv: list[str] | None = None) -> None:
    """``python -m daemon.engines.cpu record FOLDER [--also FEATURE...]`` (image builds),
    or ``python -m daemon.engines.cpu`` (this CPU's features and its llama.cpp build)."""
    parser = argparse.ArgumentParser(prog="python -m daemon.engines.cpu")
    sub = parser.add_subparsers(dest="command")
    rec = sub.add_parser("record", help="write FOLDER/cpu-needs.json")
    rec.add_argument("folder", type=Path)
    rec.add_argument("--also", nargs="*", default=[], help="features the build flags add")
    args = parser.parse_args(argv)
    if args.command == "record":
        needs = record(args.folder, args.also)
        print(f"{args.folder}: needs {' '.join(sorted(needs)) or 'nothing recorded'}")
        return
    features = cpu_features()
    print(f"CPU features: {' '.join(sorted(features))}")
    print(choose(llama_builds(), features).reason)


if __name__ == "__main__":
    main()
