"""Hearth's image for 64-bit Arm (Home Assistant Green and Yellow, Raspberry Pi 4 and 5),
built and run here under emulation, beside the native amd64 image.

The Supervisor pulls an aarch64 image that the project's workflow builds natively on an
arm64 runner; this machine is amd64, so the same Dockerfile is built for linux/arm64 with
Debian's qemu-user-static (binfmt_misc, registered here if it is not) on an arm64 Debian
base made from the archive (mmdebstrap). llama-cpp-python, which ships no wheels, is
cross-compiled once for armv8-a with Debian's aarch64 cross compilers (compiling it
under emulation would take hours) and handed to the build through ``.wheels/``, as the
tests hand over the amd64 wheel; everything else the image installs is PyPI's aarch64
wheels, installed by the image's own pip under emulation. The emulated container is shown
a Raspberry Pi 4's /proc/cpuinfo (QEMU 7.2 passes the host's through).

Each image then starts on a fresh data volume and answers, over its real doors: Wyoming
``describe``, a transcription of eSpeak NG speech, a spoken reply (Wyoming
``synthesize``) and a chat reply from the embedded LLM (``/v1/chat/completions``). The
times are for the record: emulation is many times slower than a real Arm board.

    .venv/bin/python -m bench.arm64_image [--no-build] [--no-write]
"""

from __future__ import annotations

import asyncio
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize

from bench.container_bench import environment
from bench.harness import ROOT, arguments, machine, publish
from daemon.ops import probe
from tests import containers
from tests.helpers import assert_heard, espeak_pcm, free_port, silence

BASE = "localhost/debian-arm64:bookworm-slim"
IMAGE = "localhost/hearth:arm64"
LLAMA = "llama-cpp-python==0.3.36"
CACHE = ROOT / "build" / "arm64"
"""Where the arm64 base's archive and the cross-compiled wheel are kept between runs."""
BINFMT = Path("/proc/sys/fs/binfmt_misc")
QEMU_CONF = Path("/usr/lib/binfmt.d/qemu-aarch64.conf")
CROSS = (
    "-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 "
    "-DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc -DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++ "
    "-DGGML_NATIVE=OFF -DGGML_CPU_ARM_ARCH=armv8-a -DGGML_OPENMP=OFF"
)
"""llama.cpp for every 64-bit Arm board (armv8-a with NEON), as the Dockerfile's own."""
CPUINFO = "".join(
    f"processor\t: {n}\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm crc32 cpuid\n"
    "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd08\n"
    "CPU revision\t: 3\n\n"
    for n in range(4)
)
"""A Raspberry Pi 4's /proc/cpuinfo (Cortex-A72), shown to the emulated container: QEMU
7.2's user mode passes the host's x86 one through, and onnxruntime's CPU probe waits
forever on it (``import onnxruntime`` hangs with no CPU use)."""
SPOKEN = "Turn on the kitchen lights."
READY_S = 3600.0


def register_binfmt() -> None:
    """Let the kernel run aarch64 programs through qemu-user-static (as root)."""
    if (BINFMT / "qemu-aarch64").exists():
        return
    if not (BINFMT / "register").exists():
        subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)], check=True)
    (BINFMT / "register").write_text(QEMU_CONF.read_text().strip())


def ensure_base() -> float:
    """The arm64 Debian bookworm base (mmdebstrap, then ``podman import``); seconds."""
    if containers.podman("image", "exists", BASE, check=False).returncode == 0:
        return 0.0
    began = time.monotonic()
    CACHE.mkdir(parents=True, exist_ok=True)
    rootfs = CACHE / "rootfs.tar"
    if not rootfs.exists():
        options = [f"--dpkgopt={rule}" for rule in containers.SLIM]
        subprocess.run(
            ["mmdebstrap", "--arch=arm64", "--variant=minbase", "--include=ca-certificates",
             *options, "bookworm", str(rootfs), containers.MIRROR],
            check=True, capture_output=True, timeout=3600,
        )  # fmt: skip
    containers.podman("import", "--arch", "arm64", str(rootfs), BASE, timeout=600)
    return time.monotonic() - began


def cross_wheel() -> Path:
    """llama-cpp-python for aarch64, compiled here with the cross compilers (once)."""
    made = sorted(CACHE.glob("llama_cpp_python-*-linux_aarch64.whl"))
    if made:
        return made[-1]
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "CMAKE_ARGS": CROSS, "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count())}
        pip = [sys.executable, "-m", "pip"]
        fetch = ["download", "-q", "--no-deps", "--no-binary", ":all:", "-d", tmp, LLAMA]
        subprocess.run([*pip, *fetch], check=True, timeout=600)
        (sdist,) = Path(tmp).glob("llama_cpp_python-*.tar.gz")
        subprocess.run([*pip, "wheel", "-q", "--no-deps", "--no-cache-dir", "-w", tmp, str(sdist)],
                       check=True, env=env, timeout=7200)  # fmt: skip
        (built,) = Path(tmp).glob("llama_cpp_python-*.whl")
        # The wheel holds only Python and the libraries it loads with ctypes: only its
        # platform tag says the build machine's.
        subprocess.run([*pip, "install", "-q", "wheel"], check=True, timeout=600)
        subprocess.run([sys.executable, "-m", "wheel", "tags", "--remove", "--platform-tag",
                        "linux_aarch64", str(built)], check=True, timeout=120)  # fmt: skip
        (tagged,) = Path(tmp).glob("llama_cpp_python-*-linux_aarch64.whl")
        return Path(shutil.copy2(tagged, CACHE / tagged.name))


def build() -> float:
    """Build the repository's Dockerfile (as committed) for linux/arm64; seconds.

    The context is a copy of the commit with only the aarch64 wheel in ``.wheels/``: the
    tests' own builds may change the working tree's ``.wheels/`` meanwhile."""
    wheel = cross_wheel()
    args = ["build", "--pull=never", "--format=docker", "--platform", "linux/arm64",
            "--build-arg", f"BUILD_FROM={BASE}", "-t", IMAGE]  # fmt: skip
    if (bundle := containers.ca_bundle()) is not None:
        args += ["--secret", f"id=ca,src={bundle}"]
    with tempfile.TemporaryDirectory() as tmp:
        context = Path(tmp)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", "HEAD"],
            check=True, capture_output=True, timeout=300,
        ).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(context)], input=archive, check=True)
        (context / ".wheels").mkdir(exist_ok=True)
        shutil.copy2(wheel, context / ".wheels")
        began = time.monotonic()
        result = containers.podman(*args, str(context), check=False, timeout=4 * 3600)
    if result.returncode != 0:
        raise SystemExit(f"podman build failed:\n{(result.stdout + result.stderr)[-6000:]}")
    return time.monotonic() - began


@dataclass
class Run:
    """One image's start and answers on a fresh volume."""

    image: str
    arch: str
    describe_s: float = 0.0
    ready_s: float = 0.0
    transcribe_s: float = 0.0
    heard: str = ""
    speak_s: float = 0.0
    spoken_s: float = 0.0
    chat_s: float = 0.0
    reply: str = ""


def _wait(ready: object, timeout: float) -> float:
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if ready():  # type: ignore[operator]
            return time.monotonic() - began
        time.sleep(0.2)
    raise TimeoutError("not ready")


async def _transcribe(port: int, pcm: np.ndarray) -> str:
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Transcribe(language="en").event())
        await client.write_event(AudioStart(rate=16000, width=2, channels=1).event())
        audio = pcm.astype("<i2").tobytes()
        for at in range(0, len(audio), 3200):
            chunk = AudioChunk(rate=16000, width=2, channels=1, audio=audio[at : at + 3200])
            await client.write_event(chunk.event())
        await client.write_event(AudioStop().event())
        while True:
            event = await asyncio.wait_for(client.read_event(), 600)
            assert event is not None, "the connection closed before the transcript"
            if Transcript.is_type(event.type):
                return Transcript.from_event(event).text


async def _synthesize(port: int, text: str) -> float:
    """Seconds of audio the reply took."""
    samples = 0
    rate = 22050
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Synthesize(text=text).event())
        while True:
            event = await asyncio.wait_for(client.read_event(), 600)
            assert event is not None, "the connection closed before audio-stop"
            if AudioChunk.is_type(event.type):
                chunk = AudioChunk.from_event(event)
                rate = chunk.rate
                samples += len(chunk.audio) // (chunk.width * chunk.channels)
            elif AudioStop.is_type(event.type):
                return samples / rate


def measure(image: str, arch: str) -> Run:
    """Start ``image`` on a fresh volume; its answers and how long each took."""
    run = Run(image, arch)
    wyoming, http = free_port(), free_port()
    name = f"hearth-{arch}-{wyoming}"
    with tempfile.TemporaryDirectory() as data:
        args = [
            "run",
            "-d",
            "--arch",
            arch,
            "--name",
            name,
            "--network=host",
            "-v",
            f"{data}:/data",
        ]
        if arch == "arm64":
            cpuinfo = Path(data) / "cpuinfo"
            cpuinfo.write_text(CPUINFO)
            args += ["-v", f"{cpuinfo}:/proc/cpuinfo:ro"]
        args += environment(wyoming, http, HEARTH_LIMITS__REQUEST_TIMEOUT_S="600")
        began = time.monotonic()
        containers.podman(*args, image)
        try:
            run.describe_s = _wait(lambda: probe.describe("127.0.0.1", wyoming, 5.0).ok, READY_S)
            url = f"http://127.0.0.1:{http}"
            _wait(lambda: probe.healthz(f"{url}/healthz", 5.0).ok, READY_S)
            run.ready_s = time.monotonic() - began
            pcm = np.concatenate([silence(0.3), espeak_pcm("en-us", 150, SPOKEN), silence(0.5)])
            began = time.monotonic()
            run.heard = asyncio.run(_transcribe(wyoming, pcm))
            run.transcribe_s = time.monotonic() - began
            assert_heard(run.heard, SPOKEN, "kitchen")
            began = time.monotonic()
            run.spoken_s = asyncio.run(_synthesize(wyoming, "The kitchen lights are on."))
            run.speak_s = time.monotonic() - began
            assert run.spoken_s > 0.5, run.spoken_s
            began = time.monotonic()
            answer = httpx.post(
                f"{url}/v1/chat/completions",
                json={"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8},
                timeout=900,
            )
            run.chat_s = time.monotonic() - began
            answer.raise_for_status()
            run.reply = answer.json()["choices"][0]["message"]["content"].strip()
            assert run.reply, answer.text
        finally:
            logs = containers.podman("logs", name, check=False).stdout
            containers.podman("rm", "-f", "-t", "30", name, check=False, timeout=300)
            if not run.reply:
                print(logs[-4000:])
    print(run)
    return run


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    if (reason := containers.unusable()) is not None:
        raise SystemExit(reason)
    register_binfmt()
    base_s = ensure_base()
    build_s = float("nan") if args.no_build else build()
    native = containers.IMAGE  # the tests' amd64 image, as they last built it
    size = float(containers.podman("image", "inspect", "--format", "{{.Size}}", IMAGE).stdout)
    runs = [measure(native, "amd64"), measure(IMAGE, "arm64")]
    today = datetime.date.today().isoformat()
    qemu = subprocess.run(["qemu-aarch64-static", "--version"], capture_output=True, text=True)
    lines = [
        "## The arm64 image under emulation (`bench/arm64_image.py`)",
        "",
        f"{machine()}; {qemu.stdout.splitlines()[0]}; {today}. The image for linux/arm64 "
        "built from the repository's Dockerfile on an arm64 Debian base, llama-cpp-python "
        "cross-compiled for armv8-a; each image started once on a fresh volume. Times under "
        "emulation are for the record only: a real board runs natively.",
        "",
        f"Build for arm64 (emulated, layer cache as it was): {build_s:.0f} s; arm64 base "
        f"made in {base_s:.0f} s (0: it existed); arm64 image {size / 1e6:.0f} MB on disk.",
        "",
        "| image | describe | ready | transcription | heard | spoken reply | chat reply |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *(
            f"| {r.arch} | {r.describe_s:.1f} s | {r.ready_s:.1f} s | {r.transcribe_s:.2f} s "
            f"| {r.heard} | {r.speak_s:.2f} s for {r.spoken_s:.1f} s of audio "
            f'| {r.chat_s:.1f} s: "{r.reply}" |'
            for r in runs
        ),
    ]
    table = "\n".join(lines)
    publish("arm64", table, not args.no_write)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
