"""Device placement is pure: hardware reports are injected."""

from daemon.engines.hardware import (
    EngineRequest,
    GpuInfo,
    HardwareReport,
    cuda_compute_type,
    parse_nvidia_smi,
    plan,
)

CPU_ONLY = HardwareReport(cpu_count=2)


def gpu_box(free_mb: int, capability=(8, 6)) -> HardwareReport:
    gpu = GpuInfo(0, "RTX 3060", capability, 12000, free_mb)
    return HardwareReport(gpus=(gpu,), ctranslate2_cuda=1, onnx_cuda=True, llama_gpu=True)


REQUESTS = [
    EngineRequest("asr:small", "asr", "auto", vram_mb=1000),
    EngineRequest("tts", "tts", "auto", vram_mb=400),
    EngineRequest("llm", "llm", "auto", vram_mb=1500),
]


def by_name(placements):
    return {p.name: p for p in placements}


def test_cpu_only_machine_uses_cpu_and_int8():
    result = by_name(plan(REQUESTS, CPU_ONLY))
    assert {p.label for p in result.values()} == {"cpu"}
    assert result["asr:small"].compute_type == "int8"


def test_cuda_requested_but_absent_falls_back_with_reason():
    placement = plan([EngineRequest("asr:x", "asr", "cuda")], CPU_ONLY)[0]
    assert placement.label == "cpu"
    assert (
        "cuda requested but no CUDA device is available; falling back to CPU"
        in (placement.reasons[0])
    )


def test_compute_types_by_capability():
    assert cuda_compute_type((8, 9)) == "float16"
    assert cuda_compute_type((7, 0)) == "float16"
    assert cuda_compute_type((6, 1)) == "int8"
    assert cuda_compute_type((5, 2)) == "float32"
    assert by_name(plan(REQUESTS, gpu_box(10000)))["asr:small"].compute_type == "float16"
    assert by_name(plan(REQUESTS, gpu_box(10000, (6, 1))))["asr:small"].compute_type == "int8"


def test_everything_fits_on_a_big_card():
    result = by_name(plan(REQUESTS, gpu_box(10000)))
    assert all(p.label == "cuda:0" for p in result.values())


def test_short_vram_moves_llm_then_tts_then_asr():
    # 2000 MB free -> budget 1800: LLM (1500) leaves, ASR+TTS (1400) fit.
    result = by_name(plan(REQUESTS, gpu_box(2000)))
    assert result["llm"].label == "cpu" and "not enough VRAM" in result["llm"].reasons[-1]
    assert result["tts"].label == "cuda:0" and result["asr:small"].label == "cuda:0"
    # 1200 MB free -> budget 1080: TTS leaves too, ASR (1000) stays.
    result = by_name(plan(REQUESTS, gpu_box(1200)))
    assert [result[n].label for n in ("llm", "tts", "asr:small")] == ["cpu", "cpu", "cuda:0"]
    # 500 MB free: nothing fits.
    result = by_name(plan(REQUESTS, gpu_box(500)))
    assert all(p.label == "cpu" for p in result.values())


def test_library_without_cuda_keeps_that_engine_on_cpu():
    report = HardwareReport(
        gpus=(GpuInfo(0, "T4", (7, 5), 15000, 15000),), ctranslate2_cuda=1, onnx_cuda=False
    )
    result = by_name(plan([EngineRequest("tts", "tts", "cuda")], report))
    assert result["tts"].label == "cpu"
    assert "onnxruntime has no CUDA execution provider" in result["tts"].reasons[0]


def test_missing_device_index():
    result = plan([EngineRequest("asr:x", "asr", "cuda:3")], gpu_box(10000))[0]
    assert result.label == "cpu" and "no CUDA device 3" in result.reasons[0]


def test_explicit_compute_type_wins():
    req = EngineRequest("asr:x", "asr", "auto", compute_type="int8_float16")
    assert plan([req], gpu_box(10000))[0].compute_type == "int8_float16"


def test_parse_nvidia_smi():
    out = "0, NVIDIA GeForce RTX 3090, 8.6, 24576, 23000\n1, Tesla P40, 6.1, 24576, 100\nbad\n"
    gpus = parse_nvidia_smi(out)
    assert gpus[0] == GpuInfo(0, "NVIDIA GeForce RTX 3090", (8, 6), 24576, 23000)
    assert gpus[1].capability == (6, 1) and len(gpus) == 2


def test_compute_type_the_cpu_lacks_is_not_forced():
    req = EngineRequest("asr:x", "asr", "auto", compute_type="float16")
    placement = plan([req], CPU_ONLY)[0]
    assert placement.compute_type == "int8"
    assert "float16 set in config is not supported on this CPU" in placement.reasons[-1]


# CUDA libraries: a driver without the wheels, the wheels without a card, and both.

from daemon.engines.cuda import PACKAGES, CudaLibrary  # noqa: E402


def libraries(found: bool) -> tuple[CudaLibrary, ...]:
    return tuple(
        CudaLibrary(soname, p.wheel, p.users, f"/venv/nvidia/lib/{soname}" if found else "")
        for p in PACKAGES
        for soname in p.sonames
    )


def card_box(libs_found: bool, **extra) -> HardwareReport:
    gpu = GpuInfo(0, "RTX 4090", (8, 9), 24000, 23000)
    fields = {"ctranslate2_cuda": 1, "onnx_cuda": True, "llama_gpu": True, "nvcc": "/usr/bin/nvcc"}
    fields.update(extra)
    return HardwareReport(
        gpus=(gpu,), driver_version="550.54", cuda_libraries=libraries(libs_found), **fields
    )


def test_driver_present_libraries_missing_falls_back_with_the_fix():
    result = by_name(plan(REQUESTS, card_box(libs_found=False)))
    for name in ("asr:small", "tts"):
        p = result[name]
        assert p.label == "cpu"
        assert "libcublas.so.12 (nvidia-cublas-cu12)" in p.reasons[0]
        assert p.fix == "make install GPU=cuda"
    assert result["asr:small"].compute_type == "int8"
    assert any("int8: the fastest compute type on CPU" in r for r in result["asr:small"].reasons)
    # llama.cpp brings its own CUDA libraries (built with nvcc): the wheels do not matter.
    assert result["llm"].label == "cuda:0"


def test_libraries_present_no_device_says_the_driver_is_missing():
    report = HardwareReport(cuda_libraries=libraries(True))
    for p in plan([EngineRequest("asr:x", "asr", "cuda")], report):
        assert p.label == "cpu"
        assert "nvidia-smi sees no card" in p.reasons[0]
        assert p.fix == "nvidia-smi"
    auto = plan([EngineRequest("asr:x", "asr", "auto")], report)[0]
    assert auto.label == "cpu" and "nvidia-smi sees no card" in auto.reasons[0]


def test_driver_and_libraries_present_put_everything_on_the_card():
    result = by_name(plan(REQUESTS, card_box(libs_found=True)))
    assert {p.label for p in result.values()} == {"cuda:0"}
    asr = result["asr:small"]
    assert asr.compute_type == "float16" and not asr.fix
    assert "float16: compute capability 8.9 has fast half precision" in asr.reasons


def test_cpu_only_llama_without_nvcc_names_the_compiler_to_install():
    report = card_box(libs_found=True, llama_gpu=False, nvcc="")
    llm = by_name(plan(REQUESTS, report))["llm"]
    assert llm.label == "cpu"
    assert "nvcc" in llm.reasons[0] and "apt-get install nvidia-cuda-toolkit" in llm.fix
    with_nvcc = by_name(plan(REQUESTS, card_box(libs_found=True, llama_gpu=False)))["llm"]
    assert with_nvcc.fix == "make install GPU=cuda"


def test_onnxruntime_without_cuda_provider_points_at_the_install():
    tts = by_name(plan(REQUESTS, card_box(libs_found=True, onnx_cuda=False)))["tts"]
    assert tts.label == "cpu" and "onnxruntime-gpu is not installed" in tts.reasons[0]
    assert tts.fix == "make install GPU=cuda"


def test_nvidia_smi_with_driver_column_parses():
    gpus = parse_nvidia_smi("0, NVIDIA H100 80GB HBM3, 9.0, 81559, 81000, 550.54.15\n")
    assert gpus[0].name == "NVIDIA H100 80GB HBM3" and gpus[0].capability == (9, 0)
