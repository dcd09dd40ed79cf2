"""Hearth's container image for the tests: a Debian base made here, the image built from
the repository's Dockerfile, and podman driven through the project's own settings.

No registry is reachable from the machines the tests run on, so the base is made from
the Debian archive (mmdebstrap, then ``podman import``) and reused once it exists. The
image build reuses the llama-cpp-python wheel that ``make install`` compiled (from pip's
cache), so the container's part of ``make test`` compiles nothing a second time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONF = Path(__file__).with_name("containers.conf")
BASE = "localhost/debian:bookworm-slim"
IMAGE = "localhost/hearth:test"
BASE_UID_1000 = "localhost/debian-uid1000:bookworm-slim"
"""The base with a uid 1000 user of its own (what the Dockerfile's user step must handle)."""
MIRROR = "http://deb.debian.org/debian"
SLIM = (
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/locale/*",
    "path-exclude=/usr/share/info/*",
)
"""What debian:bookworm-slim leaves out of a minimal base (dpkg path filters)."""
CA_BUNDLES = ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")
DEBIAN_CA = "/etc/ssl/certs/ca-certificates.crt"


def environment() -> dict[str, str]:
    """This process's environment with podman pointed at the project's settings."""
    return {**os.environ, "CONTAINERS_CONF": str(CONF)}


def podman(
    *args: str, check: bool = True, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``podman ARGS`` with the project's settings; its output as text."""
    return subprocess.run(
        ["podman", *args],
        env=environment(),
        capture_output=True,
        text=True,
        check=check,
        timeout=timeout,
    )


def unusable() -> str | None:
    """Why containers cannot run here (None: they can)."""
    if os.geteuid() != 0:
        return "the container tests run as root (podman, mmdebstrap)"
    for tool in ("podman", "mmdebstrap", "runc"):
        if shutil.which(tool) is None:
            return f"{tool} is missing (make test installs it as root)"
    try:
        probe = podman("info", "--format", "{{.Host.OCIRuntime.Name}}", check=False, timeout=60)
    except subprocess.TimeoutExpired:
        return "podman info did not answer"
    if probe.returncode != 0:
        return f"podman cannot run here: {probe.stderr.strip()[-300:]}"
    return None


def ca_bundle() -> str | None:
    """The host's CA bundle, where its network needs one (passed as a build secret)."""
    for name in CA_BUNDLES:
        path = os.environ.get(name, "")
        if path and Path(path).is_file():
            return path
    return DEBIAN_CA if Path(DEBIAN_CA).is_file() else None


def ensure_base() -> float:
    """Make the Debian bookworm base image unless it exists; seconds it took."""
    if podman("image", "exists", BASE, check=False).returncode == 0:
        return 0.0
    began = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        rootfs = Path(tmp) / "rootfs.tar"
        options = [f"--dpkgopt={rule}" for rule in SLIM]
        subprocess.run(
            ["mmdebstrap", "--variant=minbase", "--include=ca-certificates", *options,
             "bookworm", str(rootfs), MIRROR],
            check=True, capture_output=True, timeout=900,
        )  # fmt: skip
        podman("import", str(rootfs), BASE, timeout=300)
    return time.monotonic() - began


BUILD_TIMEOUT_S = 2400
"""The image's build from scratch (the baseline llama.cpp compiles in it), at most."""

ELF_MACHINES = {"x86_64": 62, "aarch64": 183}
"""ELF ``e_machine`` of each architecture ``uname -m`` names."""


def fits_this_machine(wheel: Path) -> bool:
    """Whether the wheel's libllama is built for this machine's architecture (pip's cache
    may also hold one cross-compiled for another, tagged as this one's)."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            names = [n for n in archive.namelist() if n.endswith("/libllama.so")]
            if not names:
                return False
            with archive.open(names[0]) as lib:
                header = lib.read(20)
    except (OSError, zipfile.BadZipFile):
        return False
    machine = ELF_MACHINES.get(os.uname().machine)
    return header[:4] == b"\x7fELF" and int.from_bytes(header[18:20], "little") == machine


def reuse_llama_wheel() -> Path | None:
    """Put the llama-cpp-python wheel ``make install`` built for this machine into the
    build context's .wheels/ (the venv records which: ``.venv/.llama-wheel``); the
    wheel, or None when there is none (the image then compiles its own)."""
    record = ROOT / ".venv" / ".llama-wheel"
    named = record.read_text().split() if record.is_file() else []
    wheels = [Path(p) for p in named if p.endswith(".whl") and Path(p).is_file()]
    wheels = [wheel for wheel in wheels if fits_this_machine(wheel)]
    if not wheels:
        return None
    newest = max(wheels, key=lambda p: p.stat().st_mtime)
    target = ROOT / ".wheels" / newest.name
    for old in (ROOT / ".wheels").glob("llama_cpp_python-*.whl"):
        if old.name != newest.name or old.read_bytes() != newest.read_bytes():
            old.unlink()
    if not target.exists():
        shutil.copy2(newest, target)
    return target


@dataclass(frozen=True)
class Built:
    """The test image and what making it took."""

    image: str
    base_s: float
    build_s: float
    wheel: Path | None


def base_with_uid_1000() -> str:
    """The Debian base with a user of its own at uid 1000, as ubuntu:24.04 (and the CUDA
    images on it) has "ubuntu": made from the local base unless it exists."""
    if podman("image", "exists", BASE_UID_1000, check=False).returncode != 0:
        ensure_base()
        with tempfile.TemporaryDirectory() as tmp:
            recipe = Path(tmp) / "Containerfile"
            recipe.write_text(
                f"FROM {BASE}\nRUN useradd --uid 1000 --user-group --create-home ubuntu\n"
            )
            podman("build", "--pull=never", "-t", BASE_UID_1000, "-f", str(recipe), tmp)
    return BASE_UID_1000


def build_image(tag: str = IMAGE, *extra: str, base: str = BASE) -> Built:
    """Build the repository's Dockerfile from a local base (no pull); how long it took."""
    base_s = ensure_base()
    wheel = reuse_llama_wheel()
    args = [
        "build",
        "--pull=never",
        "--format=docker",
        "--build-arg",
        f"BUILD_FROM={base}",
        "-t",
        tag,
        *extra,
    ]
    if (bundle := ca_bundle()) is not None:
        args += ["--secret", f"id=ca,src={bundle}"]
    began = time.monotonic()
    result = podman(*args, str(ROOT), check=False, timeout=BUILD_TIMEOUT_S)
    if result.returncode != 0:
        raise AssertionError(f"podman build failed:\n{(result.stdout + result.stderr)[-6000:]}")
    return Built(tag, base_s, time.monotonic() - began, wheel)
