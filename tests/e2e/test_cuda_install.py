"""make install GPU=cuda's CUDA wheels, into a clean venv: they resolve, install and load.

Opt-in (about 1.5 GB of downloads): HEARTH_CUDA_INSTALL_TEST=1. No GPU is needed:
a library loads without a device, and CTranslate2 opens cuBLAS by soname, which
then resolves to the wheel's copy that Hearth preloaded.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.timeout(3600),
    pytest.mark.skipif(
        os.environ.get("HEARTH_CUDA_INSTALL_TEST") != "1",
        reason="downloads about 1.5 GB of CUDA wheels; set HEARTH_CUDA_INSTALL_TEST=1",
    ),
    pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed"),
]

PROBE = """
import ctypes, json
from daemon.engines import cuda
before = []
for soname in ("libcublas.so.12", "libcudnn.so.9"):
    try:
        ctypes.CDLL(soname)
        before.append(soname)
    except OSError:
        pass
libs = cuda.preload()
ctypes.CDLL("libcublas.so.12")  # by soname, as CTranslate2 opens it
ctypes.CDLL("libcudnn.so.9")  # as onnxruntime's CUDA provider opens it
import ctranslate2
print(json.dumps({
    "before": before,
    "libs": [[l.soname, l.path, l.loaded, l.error] for l in libs],
    "ct2_devices": ctranslate2.get_cuda_device_count(),
    "ct2_version": ctranslate2.__version__,
}))
"""


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def run(cmd, **kw):
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=3000, **kw)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_cuda_wheels_install_and_load_in_a_clean_venv(tmp_path):
    import json

    venv, cache = tmp_path / "venv", tmp_path / "pip-cache"
    run([sys.executable, "-m", "venv", str(venv)])
    py = str(venv / "bin" / "python")
    env = {**os.environ, "PIP_CACHE_DIR": str(cache)}
    run(
        [py, "-m", "pip", "install", "-q", "-c", "constraints.txt", "ctranslate2"],
        cwd=ROOT,
        env=env,
    )
    before_bytes, cache_before = du(venv), du(cache)
    run(["make", "--no-print-directory", "cuda-libs", f"VENV={venv}"], cwd=ROOT, env=env)
    grown, downloaded = du(venv) - before_bytes, du(cache) - cache_before
    print(f"\nCUDA wheels: downloaded {downloaded / 1e6:.0f} MB, venv grew {grown / 1e6:.0f} MB")

    out = json.loads(run([py, "-c", PROBE], cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)}))
    libs = {soname: (path, loaded, error) for soname, path, loaded, error in out["libs"]}
    for soname in ("libcublas.so.12", "libcublasLt.so.12", "libcudnn.so.9", "libcudart.so.12"):
        path, loaded, error = libs[soname]
        assert path.startswith(str(venv)), (soname, path)
        assert loaded, (soname, error)
    assert out["ct2_devices"] == 0 or shutil.which("nvidia-smi")
    freeze = run([py, "-m", "pip", "freeze"], env=env)
    pins = (ROOT / "constraints.txt").read_text().split()
    for pin in ("nvidia-cublas-cu12==12.9.3.13", "nvidia-cudnn-cu12==9.28.0.42"):
        assert pin in pins and pin in freeze
