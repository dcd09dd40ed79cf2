"""Hardware detection and device placement.

:func:`probe` returns a :class:`HardwareReport`; :func:`plan` is pure: given the
report and what each engine asks for, it decides devices and compute types, moving
engines to CPU (LLM first, then TTS, then ASR) when VRAM is short. Every decision
carries a human-readable reason that is logged and shown by ``hearth check``, and
every fallback the one command that fixes it.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Literal

from daemon.engines.cuda import FIX_COMMAND, CudaLibrary, missing_for

_LOGGER = logging.getLogger(__name__)

EngineKind = Literal["asr", "tts", "llm"]
# When VRAM is short, engines leave the GPU in this order.
EVICTION_ORDER: tuple[EngineKind, ...] = ("llm", "tts", "asr")
VRAM_HEADROOM = 0.9
"""Fraction of free VRAM the plan may use; the rest is left for activations."""


@dataclass(frozen=True)
class GpuInfo:
    """One CUDA device."""

    index: int
    name: str
    capability: tuple[int, int]
    """CUDA compute capability (major, minor)."""
    total_mb: int
    free_mb: int


@dataclass(frozen=True)
class HardwareReport:
    """What the machine offers each engine library."""

    gpus: tuple[GpuInfo, ...] = ()
    ctranslate2_cuda: int = 0
    """CUDA devices CTranslate2 (faster-whisper) can use."""
    onnx_cuda: bool = False
    """onnxruntime has the CUDA execution provider (Piper on GPU)."""
    llama_gpu: bool = False
    """llama-cpp-python was built with GPU offload."""
    cpu_count: int = 1
    cpu_compute_types: tuple[str, ...] = ("int8", "int8_float32", "float32")
    """CTranslate2 compute types this CPU supports."""
    notes: tuple[str, ...] = ()
    driver_version: str = ""
    """NVIDIA driver version from nvidia-smi; empty when there is no working driver."""
    cuda_libraries: tuple[CudaLibrary, ...] | None = None
    """CUDA 12 libraries found (None: not looked for; the plan then trusts the engines)."""
    nvcc: str = ""
    """Path of the CUDA compiler, needed to build llama-cpp-python with CUDA."""

    @property
    def cuda_available(self) -> bool:
        """True when at least one CUDA device is visible."""
        return bool(self.gpus) or self.ctranslate2_cuda > 0

    def engine_cuda(self, kind: EngineKind) -> bool:
        """True when the library behind ``kind`` can run on CUDA."""
        if self.cuda_libraries is not None and missing_for(kind, self.cuda_libraries):
            return False
        if kind == "asr":
            return self.ctranslate2_cuda > 0
        if kind == "tts":
            return self.onnx_cuda and self.cuda_available
        return self.llama_gpu and self.cuda_available


@dataclass(frozen=True)
class EngineRequest:
    """What one engine asks for."""

    name: str
    """Display name, e.g. ``asr:tiny.en``."""
    kind: EngineKind
    device: str
    """auto, cpu, cuda or cuda:N."""
    compute_type: str = "auto"
    vram_mb: int = 0
    """Estimated VRAM need on CUDA."""


@dataclass
class Placement:
    """The decision for one engine."""

    name: str
    kind: EngineKind
    device: str
    """cpu or cuda."""
    device_index: int = 0
    compute_type: str = "default"
    reasons: list[str] = field(default_factory=list)
    fix: str = ""
    """The one command that would put this engine on the GPU, when it fell back."""

    @property
    def label(self) -> str:
        """cpu or cuda:N."""
        return "cpu" if self.device == "cpu" else f"cuda:{self.device_index}"

    def to_cpu(self, reason: str) -> None:
        """Move to CPU, recording why."""
        self.device = "cpu"
        self.device_index = 0
        self.compute_type = cpu_compute_type(self.kind)
        self.reasons.append(reason)


def cpu_compute_type(kind: EngineKind) -> str:
    """CTranslate2 compute type on CPU; other engines have none to choose."""
    return "int8" if kind == "asr" else "default"


def compute_reason(capability: tuple[int, int]) -> str:
    """Why :func:`cuda_compute_type` chose what it chose, for the logs and ``hearth check``."""
    cap = f"{capability[0]}.{capability[1]}"
    if capability >= (7, 0):
        return f"float16: compute capability {cap} has fast half precision"
    if capability >= (6, 1):
        return f"int8: compute capability {cap} has fast int8 but slow float16"
    return f"float32: compute capability {cap} has neither fast float16 nor int8"


def cuda_compute_type(capability: tuple[int, int]) -> str:
    """float16 on cards with fast half precision (7.0+), int8 on 6.1, float32 older."""
    if capability >= (7, 0):
        return "float16"
    if capability >= (6, 1):
        return "int8"
    return "float32"


def plan(requests: list[EngineRequest], report: HardwareReport) -> list[Placement]:
    """Decide device and compute type for each engine; pure, reasons attached."""
    placements: list[Placement] = []
    for req in requests:
        placements.append(_place_one(req, report))

    # VRAM: per device, evict in order LLM, TTS, ASR until the rest fits.
    need = {p.name: r.vram_mb for p, r in zip(placements, requests, strict=True)}
    for gpu in report.gpus:
        budget = int(gpu.free_mb * VRAM_HEADROOM)
        on_gpu = [p for p in placements if p.device == "cuda" and p.device_index == gpu.index]
        used = sum(need[p.name] for p in on_gpu)
        for kind in EVICTION_ORDER:
            for p in [p for p in on_gpu if p.kind == kind]:
                if used <= budget:
                    break
                used -= need[p.name]
                p.to_cpu(
                    f"not enough VRAM on cuda:{gpu.index} ({gpu.free_mb} MB free, "
                    f"{used + need[p.name]} MB needed); moved to CPU"
                )
    return placements


def _place_one(req: EngineRequest, report: HardwareReport) -> Placement:
    p = Placement(req.name, req.kind, "cpu", 0, cpu_compute_type(req.kind))
    if req.device == "cpu":
        p.reasons.append("cpu requested")
    else:
        index = int(req.device.split(":", 1)[1]) if ":" in req.device else 0
        gpu = next((g for g in report.gpus if g.index == index), None)
        usable = report.engine_cuda(req.kind) and (gpu is not None or not report.gpus)
        if usable:
            p.device, p.device_index = "cuda", index
            cap = gpu.capability if gpu else (7, 0)
            p.compute_type = cuda_compute_type(cap) if req.kind == "asr" else "default"
            p.reasons.append(
                f"{req.device} requested; using cuda:{index}"
                + (f" ({gpu.name}, compute capability {cap[0]}.{cap[1]})" if gpu else "")
            )
            if req.kind == "asr" and req.compute_type == "auto":
                p.reasons.append(compute_reason(cap))
        else:
            why, p.fix = _no_cuda_reason(req.kind, report, index)
            if req.device == "auto" and not report.cuda_available:
                p.reasons.append("no usable CUDA device; using CPU" + (f": {why}" if p.fix else ""))
            elif req.device == "auto":
                p.reasons.append(f"{why}; using CPU")
            else:
                p.reasons.append(f"{req.device} requested but {why}; falling back to CPU")
        if p.device == "cpu" and req.kind == "asr" and req.compute_type == "auto":
            p.reasons.append("int8: the fastest compute type on CPU")
    if req.compute_type != "auto" and req.kind == "asr":
        if p.device == "cpu" and req.compute_type not in report.cpu_compute_types:
            p.reasons.append(
                f"compute type {req.compute_type} set in config is not supported on this CPU "
                f"(supported: {', '.join(report.cpu_compute_types)}); using {p.compute_type}"
            )
        else:
            p.compute_type = req.compute_type
            p.reasons.append(f"compute type {req.compute_type} set in config")
    return p


NVCC_INSTALL = (
    "sudo apt-get install nvidia-cuda-toolkit (or NVIDIA's cuda-toolkit-12 package), "
    "then make install GPU=cuda"
)


def _no_cuda_reason(kind: EngineKind, report: HardwareReport, index: int) -> tuple[str, str]:
    """Why ``kind`` cannot use CUDA, and the one command that fixes it ("" if none)."""
    if not report.cuda_available:
        if report.cuda_libraries is not None and any(lib.found for lib in report.cuda_libraries):
            return (
                "no CUDA device is available (the CUDA libraries are installed, but "
                "nvidia-smi sees no card: is the NVIDIA driver loaded?)",
                "nvidia-smi",
            )
        return "no CUDA device is available", ""
    if report.gpus and all(g.index != index for g in report.gpus):
        return f"there is no CUDA device {index}", "nvidia-smi -L"
    missing = missing_for(kind, report.cuda_libraries or ())
    if missing:
        names = ", ".join(f"{lib.soname} ({lib.wheel})" for lib in missing)
        return f"the CUDA 12 libraries {names} are not installed", FIX_COMMAND
    if kind == "asr":
        return "CTranslate2 sees no CUDA device", FIX_COMMAND
    if kind == "tts":
        return (
            "onnxruntime has no CUDA execution provider (onnxruntime-gpu is not installed)",
            FIX_COMMAND,
        )
    if report.nvcc:
        return "llama-cpp-python was built without GPU offload", FIX_COMMAND
    return (
        "llama-cpp-python was built without GPU offload, and nvcc (the CUDA compiler "
        "needed to rebuild it) is not installed",
        NVCC_INSTALL,
    )


def probe() -> HardwareReport:
    """Look at the machine: CUDA devices and which engine libraries can use them."""
    notes: list[str] = []
    ct2 = 0
    cpu_types: tuple[str, ...] = HardwareReport.cpu_compute_types
    try:
        import ctranslate2

        ct2 = ctranslate2.get_cuda_device_count()
        cpu_types = tuple(sorted(ctranslate2.get_supported_compute_types("cpu")))
    except Exception as exc:  # noqa: BLE001 - a broken CUDA runtime must not stop start-up
        notes.append(f"CTranslate2 CUDA probe failed: {exc}")
    onnx_cuda = False
    try:
        import onnxruntime

        onnx_cuda = "CUDAExecutionProvider" in onnxruntime.get_available_providers()
    except Exception as exc:  # noqa: BLE001
        notes.append(f"onnxruntime probe failed: {exc}")
    llama_gpu = False
    try:
        from daemon.engines.cpu import select_llama

        # llama_cpp loads its library when imported: the one this CPU can run, or none.
        if select_llama().build is not None:
            import llama_cpp

            llama_gpu = bool(llama_cpp.llama_supports_gpu_offload())
    except Exception as exc:  # noqa: BLE001
        notes.append(f"llama-cpp-python probe failed: {exc}")
    gpus, driver = _nvidia_smi(notes)
    from daemon.engines import cuda

    return HardwareReport(
        gpus=tuple(gpus),
        ctranslate2_cuda=ct2,
        onnx_cuda=onnx_cuda,
        llama_gpu=llama_gpu,
        cpu_count=os.cpu_count() or 1,
        cpu_compute_types=cpu_types,
        notes=tuple(notes),
        driver_version=driver,
        # Only worth looking for where a driver is: a CPU box reports nothing missing.
        cuda_libraries=cuda.find() if driver else None,
        nvcc=shutil.which("nvcc") or "",
    )


def _nvidia_smi(notes: list[str]) -> tuple[list[GpuInfo], str]:
    """The cards nvidia-smi lists, and the driver version ("" without a working driver)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return [], ""
    query = "index,name,compute_cap,memory.total,memory.free,driver_version"
    try:
        out = subprocess.run(
            [exe, f"--query-gpu={query}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        notes.append(f"nvidia-smi failed (is the NVIDIA driver loaded?): {exc}")
        return [], ""
    lines = [line for line in out.strip().splitlines() if line.count(",") >= 5]
    driver = lines[0].rsplit(",", 1)[1].strip() if lines else ""
    return parse_nvidia_smi(out), driver


def parse_nvidia_smi(out: str) -> list[GpuInfo]:
    """Parse ``nvidia-smi --query-gpu=index,name,compute_cap,memory.total,memory.free[,...]``."""
    gpus = []
    for line in out.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 5:
            continue
        try:
            major, _, minor = parts[2].partition(".")
            gpus.append(
                GpuInfo(
                    index=int(parts[0]),
                    name=parts[1],
                    capability=(int(major), int(minor or 0)),
                    total_mb=int(float(parts[3])),
                    free_mb=int(float(parts[4])),
                )
            )
        except ValueError:
            continue
    return gpus
