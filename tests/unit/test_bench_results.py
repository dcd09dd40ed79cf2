"""bench/RESULTS.md: each bench writes its own section, and the page opens with a
table of contents whose links reach the headings (pure, on a temporary file)."""

from __future__ import annotations

from pathlib import Path

from bench.harness import write_section
from tests.unit.test_docs import anchors


def test_each_section_is_kept_and_listed_with_an_anchor_that_reaches_it(tmp_path: Path) -> None:
    page = tmp_path / "RESULTS.md"
    write_section("zeta", "## Soak (`bench/soak.py`)\n\nslow.\n\n### Detail\n", page)
    write_section("core", "## Core engines\n\nfast.", page)
    write_section("alpha", "## Soak (`bench/soak.py`)\n\n```\n## not a heading\n```\n", page)
    write_section("core", "## Core engines\n\nfaster.", page)
    text = page.read_text()
    assert text.count("## Core engines") == 1  # replaced, not added
    assert "faster." in text and "fast.\n" not in text
    contents = text.split("<!--", 1)[0]
    entries = [line for line in contents.splitlines() if line.startswith("- [")]
    assert entries == [
        "- [Core engines](#core-engines)",
        "- [Soak (`bench/soak.py`)](#soak-benchsoakpy)",
        "- [Soak (`bench/soak.py`)](#soak-benchsoakpy-1)",  # a repeated heading, as GitHub
    ]
    targets = {entry.split("](#", 1)[1].rstrip(")") for entry in entries}
    assert targets <= anchors(page)
