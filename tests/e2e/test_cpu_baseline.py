"""The image on a CPU without AVX, and on one that no llama.cpp build of it can run.

The first test runs the image's Python under an emulated Nehalem (SSE4.2, no AVX:
``qemu-x86_64-static -cpu Nehalem`` inside the container): Hearth picks the x86-64-v2
llama.cpp build, Whisper tiny.en transcribes eSpeak NG's speech and the embedded LLM
answers a few tokens. Emulation is slow, so the work is tiny and the wait bounded.

The second runs ``hearth serve`` natively, with every llama.cpp build of the image
recorded as needing a feature no CPU has: the daemon serves ASR and TTS, says in one
log line why the LLM is off, and /healthz and ``hearth check`` say it too.
"""

from __future__ import annotations

import asyncio
import json
import platform
import re
import shutil
from pathlib import Path

import httpx
import numpy as np
import pytest
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.tts import Synthesize

from daemon.audio.pcm import RATE
from tests import containers
from tests.e2e.test_container import ask, run
from tests.helpers import assert_heard, espeak_pcm, silence

# The image is built from scratch on a fresh machine (its baseline llama.cpp compiled):
# the first test, whose fixtures build it, may take as long as the build's own limit.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(containers.BUILD_TIMEOUT_S + 300)]

QEMU = "qemu-x86_64-static"
EMULATED_S = 1800
"""Longest wait for the emulated run (Python, Whisper tiny.en and the LLM under TCG)."""
SPOKEN = "Turn on the kitchen lights."
NO_CPU_HAS = "hearth_test_feature"
"""A feature the tests record as needed: no CPU lists it."""

EMULATED = """
import json, os, sys, time
from pathlib import Path
began = time.monotonic()
from daemon.engines.cpu import cpu_features, select_llama
choice = select_llama()
out = {"build": choice.build and choice.build.name, "reason": choice.reason,
       "avx": "avx" in cpu_features(), "lib_path": os.environ.get("LLAMA_CPP_LIB_PATH")}
import numpy as np
from faster_whisper import WhisperModel
from daemon.engines.models import resolve_gguf, resolve_whisper
models = Path("/tmp/models")
t = time.monotonic()
asr = WhisperModel(str(resolve_whisper("tiny.en", models, False)), device="cpu",
                   compute_type="int8", cpu_threads=2)
audio = np.fromfile(sys.argv[1], dtype="<i2").astype(np.float32) / 32768
segments, _ = asr.transcribe(audio, language="en", beam_size=1)
out["text"] = " ".join(s.text for s in segments).strip()
out["asr_s"] = round(time.monotonic() - t, 1)
t = time.monotonic()
from llama_cpp import Llama
llm = Llama(model_path=str(resolve_gguf("", models, False)), n_ctx=256, n_threads=2,
            verbose=False)
reply = llm.create_chat_completion(
    messages=[{"role": "user", "content": "Say hello in three words."}],
    max_tokens=8, temperature=0.0)
out["reply"] = reply["choices"][0]["message"]["content"]
out["llm_s"] = round(time.monotonic() - t, 1)
out["total_s"] = round(time.monotonic() - began, 1)
print("RESULT " + json.dumps(out), flush=True)
"""


@pytest.fixture(scope="module")
def built() -> containers.Built:
    reason = containers.unusable()
    if reason is not None:
        pytest.skip(reason)
    return containers.build_image()


def llama_package(image: str) -> str:
    """Where the image's llama_cpp package is (its Python's version is the base's)."""
    code = "from daemon.engines.models import package_dir; print(package_dir('llama_cpp'))"
    found = containers.podman(
        "run", "--rm", "--entrypoint", "/opt/hearth/bin/python", image, "-c", code
    )
    return found.stdout.strip().splitlines()[-1]


def test_the_image_records_what_each_llama_build_needs(built):
    package = llama_package(built.image)
    show = f"cat {package}/lib/cpu-needs.json; echo; cat {package}/lib-x86-64-v2/cpu-needs.json"
    out = containers.podman("run", "--rm", "--entrypoint", "sh", built.image, "-c", show).stdout
    fast, base = (json.loads(part) for part in out.strip().split("\n\n", 1))
    assert "avx2" in fast["needs"], fast
    assert "sse4_2" in base["needs"], base
    assert not {"avx", "avx2", "fma", "f16c", "bmi2"} & set(base["needs"]), base


@pytest.mark.skipif(platform.machine() != "x86_64", reason="emulates an x86-64 CPU")
@pytest.mark.skipif(shutil.which(QEMU) is None, reason=f"{QEMU} is missing (make test installs it)")
def test_asr_and_the_local_llm_on_a_cpu_without_avx(built, tmp_path):
    pcm = np.concatenate([silence(0.2), espeak_pcm("en-us", 160, SPOKEN), silence(0.3)])
    pcm.astype("<i2").tofile(tmp_path / "audio.raw")
    (tmp_path / "check.py").write_text(EMULATED)
    tmp_path.chmod(0o755)
    qemu = str(Path(shutil.which(QEMU) or QEMU).resolve())
    result = containers.podman(
        "run", "--rm", "--network=none", "--entrypoint", "/qemu",
        "-v", f"{qemu}:/qemu:ro", "-v", f"{tmp_path}:/work:ro",
        built.image, "-cpu", "Nehalem", "/opt/hearth/bin/python", "/work/check.py",
        "/work/audio.raw",
        check=False, timeout=EMULATED_S,
    )  # fmt: skip
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith("RESULT ")]
    assert result.returncode == 0 and lines, (result.stdout + result.stderr)[-4000:]
    out = json.loads(lines[-1].removeprefix("RESULT "))
    print(f"under an emulated Nehalem: {out}")
    assert out["avx"] is False, out  # the emulated CPU, not the host's /proc/cpuinfo
    assert out["build"] == "lib-x86-64-v2" and out["lib_path"].endswith("lib-x86-64-v2"), out
    assert_heard(out["text"], SPOKEN, "kitchen")
    assert re.search(r"\w", out["reply"]), out


def test_without_a_llama_build_asr_and_tts_serve_and_the_llm_is_off(built, tmp_path):
    package = llama_package(built.image)
    needs = tmp_path / "needs.json"
    needs.write_text(json.dumps({"needs": ["sse4_2", NO_CPU_HAS]}))
    needs.chmod(0o644)
    data = tmp_path / "data"
    data.mkdir()
    mounts = []
    for folder in ("lib", "lib-x86-64-v2"):
        mounts += ["-v", f"{needs}:{package}/{folder}/cpu-needs.json:ro"]
    ctr = run(built, "hearth-test-no-llama", data, "--network=host", *mounts, env={})
    try:
        ctr.wait_ready()
        health = httpx.get(f"{ctr.url}/healthz", timeout=10).json()
        (llm,) = [e for e in health["engines"] if e["name"] == "llm"]
        assert llm["device"] == "off", llm
        assert NO_CPU_HAS in llm["reasons"][0], llm

        pcm = np.concatenate([silence(0.3), espeak_pcm("en-us", 160, SPOKEN), silence(1.0)])
        audio = pcm.astype("<i2").tobytes()
        chunks = [
            AudioChunk(rate=RATE, width=2, channels=1, audio=audio[i : i + 3200])
            for i in range(0, len(audio), 3200)
        ]
        start = AudioStart(rate=RATE, width=2, channels=1)
        request = [Transcribe(language="en"), start, *chunks, AudioStop()]
        events = asyncio.run(ask(ctr.wyoming_port, *request, until="transcript"))
        assert events[-1].type == "transcript", events[-1].data
        assert_heard(events[-1].data["text"], SPOKEN, "kitchen")

        events = asyncio.run(ask(ctr.wyoming_port, Synthesize(text="Dinner."), until="audio-stop"))
        assert sum(len(e.payload or b"") for e in events if e.type == "audio-chunk") > 8000

        health = containers.podman("exec", ctr.name, "hearth", "health", check=False)
        assert health.returncode == 0, health.stdout + health.stderr  # the image's HEALTHCHECK
        check = containers.podman("exec", ctr.name, "hearth", "check", check=False, timeout=300)
        assert NO_CPU_HAS in check.stdout, check.stdout + check.stderr
        said = [line for line in ctr.logs().splitlines() if "the local LLM is off" in line]
        assert len(said) == 1 and NO_CPU_HAS in said[0], ctr.logs()
    finally:
        ctr.remove()
