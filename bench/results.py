"""bench/RESULTS.md is shared by several benchmarks: each owns one marked section."""

from __future__ import annotations

import os
import platform
import statistics
import tempfile
from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")
ORDER = ("core", "wyoming", "willow", "webrtc")
"""Sections appear in this order; unknown ones go last."""


def machine() -> str:
    """CPU model, cores, GPU and Python version, for the record."""
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from daemon.engines.hardware import probe

    gpu = ", ".join(g.name for g in probe().gpus) or "no GPU"
    return f"{cpu}, {os.cpu_count()} cores, {gpu}, Python {platform.python_version()}"


def _sections(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    rest = text
    while (start := rest.find("<!-- ")) != -1:
        head_end = rest.find(" -->", start)
        tag = rest[start + 5 : head_end]
        if not tag.endswith(":start"):
            rest = rest[head_end + 4 :]
            continue
        name = tag[: -len(":start")]
        end_marker = f"<!-- {name}:end -->"
        stop = rest.find(end_marker, head_end)
        if stop == -1:
            break
        out[name] = rest[head_end + 4 : stop].strip("\n")
        rest = rest[stop + len(end_marker) :]
    return out


def write_section(name: str, markdown: str, path: Path = RESULTS) -> None:
    """Replace (or add) section ``name`` of the results file, keeping the others."""
    sections = _sections(path.read_text(encoding="utf-8")) if path.exists() else {}
    sections[name] = markdown.strip("\n")
    names = [n for n in ORDER if n in sections] + sorted(n for n in sections if n not in ORDER)
    body = "# Benchmark results\n\n" + "\n\n".join(
        f"<!-- {n}:start -->\n{sections[n]}\n<!-- {n}:end -->" for n in names
    )
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as tmp:
        tmp.write(body + "\n")
    os.replace(tmp.name, path)


def median(values: list[float]) -> float:
    """The median, or NaN for no values."""
    return statistics.median(values) if values else float("nan")


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..1), or NaN for no values."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]
