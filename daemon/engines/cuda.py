"""The CUDA 12 runtime libraries the engines load, from NVIDIA's Python wheels.

CTranslate2 opens ``libcublas.so.12`` by name when a model goes to the GPU, and
onnxruntime's CUDA provider needs cuDNN 9, cuFFT, cuRAND and the CUDA runtime too.
``make install`` puts them in the virtual env as ``nvidia-*-cu12`` wheels, whose
folders are not on the loader's search path. :func:`find` locates them with
importlib (no loading); :func:`preload` opens them with ``RTLD_GLOBAL`` at engine
load time, so a later ``dlopen`` by soname finds the copy already in the process
and nobody has to set ``LD_LIBRARY_PATH``. Nothing happens at import.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

_LOGGER = logging.getLogger(__name__)

FIX_COMMAND = "make install GPU=cuda"
"""The one command that installs every wheel below (see the Makefile)."""


@dataclass(frozen=True)
class CudaPackage:
    """One wheel of CUDA libraries and who needs it."""

    module: str
    """Import path of the wheel's package, e.g. ``nvidia.cublas``."""
    wheel: str
    """Distribution name, e.g. ``nvidia-cublas-cu12``."""
    sonames: tuple[str, ...]
    """Libraries the engines open by name, in dependency order."""
    users: tuple[str, ...]
    """Engine kinds that need it: asr (CTranslate2), tts (onnxruntime)."""


PACKAGES: tuple[CudaPackage, ...] = (
    CudaPackage("nvidia.cublas", "nvidia-cublas-cu12", ("libcublasLt.so.12", "libcublas.so.12"),
                ("asr", "tts")),
    # CTranslate2 4.5-4.6 opened cuDNN 9 for Whisper's convolutions; the pinned 4.8
    # wheel opens only cuBLAS, so cuDNN is onnxruntime's need alone.
    CudaPackage("nvidia.cudnn", "nvidia-cudnn-cu12", ("libcudnn.so.9",), ("tts",)),
    CudaPackage("nvidia.cuda_runtime", "nvidia-cuda-runtime-cu12", ("libcudart.so.12",), ("tts",)),
    CudaPackage("nvidia.cufft", "nvidia-cufft-cu12", ("libcufft.so.11",), ("tts",)),
    CudaPackage("nvidia.curand", "nvidia-curand-cu12", ("libcurand.so.10",), ("tts",)),
)  # fmt: skip


@dataclass(frozen=True)
class CudaLibrary:
    """Where one CUDA library was found, and whether it is loaded."""

    soname: str
    wheel: str
    users: tuple[str, ...]
    path: str = ""
    """File in the wheel's folder, ``system`` when only the loader knows it, or empty."""
    loaded: bool = False
    error: str = ""

    @property
    def found(self) -> bool:
        """True when a copy exists (in a wheel or on the system)."""
        return bool(self.path)


def _wheel_dir(module: str) -> Path | None:
    """The ``lib`` folder of an installed ``nvidia-*`` wheel, found with importlib."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        lib = Path(location) / "lib"
        if lib.is_dir():
            return lib
    return None


def _system_has(soname: str) -> bool:
    """True when the system loader knows ``soname`` (a CUDA toolkit in ldconfig)."""
    stem = soname.removeprefix("lib").split(".so", 1)[0]
    found = ctypes.util.find_library(stem)
    return found is not None and found.startswith(soname.split(".so", 1)[0] + ".so")


def find() -> tuple[CudaLibrary, ...]:
    """Every library the engines need, with where it lives (nothing is loaded)."""
    out: list[CudaLibrary] = []
    for package in PACKAGES:
        folder = _wheel_dir(package.module)
        for soname in package.sonames:
            path = ""
            if folder is not None and (folder / soname).exists():
                path = str(folder / soname)
            elif _system_has(soname):
                path = "system"
            out.append(CudaLibrary(soname, package.wheel, package.users, path, _is_loaded(soname)))
    return tuple(out)


def _is_loaded(soname: str) -> bool:
    return soname in _loaded


_loaded: dict[str, str] = {}
_lock = threading.Lock()


def preload() -> tuple[CudaLibrary, ...]:
    """Open every CUDA library found in a wheel, globally; safe to call again.

    Returns what :func:`find` reports afterwards, with load errors. Libraries
    known only to the system loader are left to it.
    """
    errors: dict[str, str] = {}
    with _lock:
        for package in PACKAGES:
            folder = _wheel_dir(package.module)
            if folder is None:
                continue
            # cuDNN 9 is split into sub-libraries that libcudnn.so.9 opens by name
            # later: load them all now, each after the ones it depends on.
            names = list(package.sonames)
            if package.module == "nvidia.cudnn":
                names = [*sorted(p.name for p in folder.glob("libcudnn_*.so.9")), *names]
            pending = [n for n in names if n not in _loaded and (folder / n).exists()]
            while pending:
                progress = False
                for name in list(pending):
                    try:
                        ctypes.CDLL(str(folder / name), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
                    except OSError as exc:
                        errors[name] = str(exc)
                        continue
                    _loaded[name] = str(folder / name)
                    errors.pop(name, None)
                    pending.remove(name)
                    progress = True
                if not progress:
                    break
    for name, error in errors.items():
        _LOGGER.warning("Could not load %s: %s", name, error)
    return tuple(
        CudaLibrary(
            lib.soname, lib.wheel, lib.users, lib.path, lib.loaded, errors.get(lib.soname, "")
        )
        for lib in find()
    )


def missing_for(kind: str, libraries: tuple[CudaLibrary, ...]) -> list[CudaLibrary]:
    """Libraries engine ``kind`` needs that were not found."""
    return [lib for lib in libraries if kind in lib.users and not lib.found]
