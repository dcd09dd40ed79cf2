"""bench/RESULTS.md is shared by several benchmarks: each owns one marked section."""

from __future__ import annotations

import os
import platform
import re
import statistics
import tempfile
from collections import Counter
from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")
ORDER = ("headline", "core", "wyoming", "willow", "webrtc")
"""Sections appear in this order; unknown ones go last. ``headline`` holds the few
numbers a reader looks for first, each with a link to its section."""
TITLE = "# Benchmark results"
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


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
    body = f"{TITLE}\n\n{contents([sections[n] for n in names])}\n\n" + "\n\n".join(
        f"<!-- {n}:start -->\n{sections[n]}\n<!-- {n}:end -->" for n in names
    )
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as tmp:
        tmp.write(body + "\n")
    os.replace(tmp.name, path)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as
    hyphens (a repeated one gets -1, -2...: see :func:`contents`)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def contents(sections: list[str]) -> str:
    """The table of contents: a link to the first ``##`` heading of each section, with
    the anchors GitHub gives (every heading of the page counted, the title's too)."""
    seen: Counter[str] = Counter()

    def anchor(text: str) -> str:
        base = slug(text)
        seen[base] += 1
        return f"{base}-{seen[base] - 1}" if seen[base] > 1 else base

    anchor(TITLE.lstrip("# "))
    anchor("Contents")
    entries = []
    for section in sections:
        first = None
        fenced = False
        for line in section.splitlines():
            if _FENCE.match(line):
                fenced = not fenced
                continue
            if fenced or not (match := _HEADING.match(line)):
                continue
            target = anchor(match.group(2))
            if first is None and match.group(1) == "##":
                first = f"- [{match.group(2)}](#{target})"
        if first is not None:
            entries.append(first)
    return "## Contents\n\n" + "\n".join(entries)


def median(values: list[float]) -> float:
    """The median, or NaN for no values."""
    return statistics.median(values) if values else float("nan")


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..1), or NaN for no values."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]
