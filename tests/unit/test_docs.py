"""The documentation: links that resolve, a short README, and rooms that match the code.

Relative links in README.md, docs/ and addon/DOCS.md must reach a file, and an ``#anchor``
a heading of the target, named as GitHub names it. The room tables of docs/architecture.md
must list the rooms tests/import_graph.py enforces, in its order.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from tests.import_graph import FOUNDATION, PROTOCOL_ROOMS, ROOMS

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
ARCHITECTURE = DOCS / "architecture.md"
RESULTS = ROOT / "bench" / "RESULTS.md"
MAX_README_LINES = 200
"""The README keeps the pitch, the ways in, the two commands and the links; the rest
lives in docs/."""

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)"
)
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
EXTERNAL = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)")
ROOM_ROW = re.compile(r"^\|\s*`([a-z_]+)`\s*\|([^|]*)\|")


def pages() -> list[Path]:
    """Every Markdown page whose links are checked."""
    return [README, ROOT / "addon" / "DOCS.md", RESULTS, *sorted(DOCS.rglob("*.md"))]


def prose(path: Path) -> list[tuple[int, str]]:
    """The lines of a page outside fenced code blocks, numbered from 1."""
    lines: list[tuple[int, str]] = []
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append((number, line))
    return lines


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text in lower case, punctuation dropped,
    spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a page; a repeated heading gets -1, -2... as on GitHub."""
    seen: Counter[str] = Counter()
    found: set[str] = set()
    for _, line in prose(path):
        if match := HEADING.match(line):
            base = slug(match.group(1))
            found.add(f"{base}-{seen[base]}" if seen[base] else base)
            seen[base] += 1
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """Every link target of a page with its line (code spans and blocks are not links)."""
    found: list[tuple[int, str]] = []
    for number, line in prose(path):
        # A code span may hold brackets; it still counts as a link's text.
        plain = CODE_SPAN.sub(lambda m: "c" * len(m.group(2)), line)
        found.extend((number, m.group(1)) for m in INLINE_LINK.finditer(plain))
        if ref := REFERENCE.match(plain):
            found.append((number, ref.group(1)))
    return found


def broken_links(path: Path) -> list[str]:
    """What is wrong with the relative links of one page."""
    problems: list[str] = []
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    for number, target in links(path):
        if not target or EXTERNAL.match(target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            problems.append(f"{where}:{number}: {target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{where}:{number}: {target}: no heading #{anchor}")
    return problems


def room_table(heading: str) -> list[tuple[str, str]]:
    """The rows (room, where) of the table under ``heading`` in docs/architecture.md."""
    rows: list[tuple[str, str]] = []
    inside = False
    for _, line in prose(ARCHITECTURE):
        if match := HEADING.match(line):
            inside = match.group(1) == heading
        elif inside and (row := ROOM_ROW.match(line)):
            rows.append((row.group(1), row.group(2)))
    return rows


@pytest.mark.parametrize("path", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path):
    assert broken_links(path) == []


def test_the_link_check_finds_what_is_broken(tmp_path):
    (tmp_path / "b.md").write_text("# Tool calls on `/v1/chat` (`x_y.py`)\n\n## Same\n## Same\n")
    page = tmp_path / "a.md"
    page.write_text(
        "# A: the page\n"
        "[ok](b.md#tool-calls-on-v1chat-x_ypy) [ok](b.md#same-1) [ok](#a-the-page)\n"
        "[`code [x]`](missing.md) ![img](gone.png) [web](https://example.org/x)\n"
        "[bad](b.md#nothing) `[not a link](nowhere.md)`\n"
        "```\n[in a block](nowhere.md)\n```\n"
        "[ref]: also-missing.md\n"
    )
    assert broken_links(page) == [
        f"{page}:3: missing.md: no such file",
        f"{page}:3: gone.png: no such file",
        f"{page}:4: b.md#nothing: no heading #nothing",
        f"{page}:8: also-missing.md: no such file",
    ]


def test_github_anchor_names():
    assert slug("Home Assistant 2026: Hearth ends the turn") == (
        "home-assistant-2026-hearth-ends-the-turn"
    )
    assert slug("An LLM on llama.cpp's server or Ollama") == "an-llm-on-llamacpps-server-or-ollama"
    assert slug("End of speech -> transcript, 12 home commands (Piper 0.667/0.8)") == (
        "end-of-speech---transcript-12-home-commands-piper-066708"
    )


def test_readme_stays_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; move the rest to docs/"


def test_every_docs_page_is_in_the_index():
    index = DOCS / "README.md"
    linked = {(index.parent / t.partition("#")[0]).resolve() for _, t in links(index)}
    missing = [p.relative_to(ROOT) for p in DOCS.rglob("*.md") if p != index and p not in linked]
    assert missing == []


def test_architecture_lists_the_rooms_the_import_check_enforces():
    rooms = room_table("Rooms")
    assert tuple(name for name, _ in rooms) == ROOMS
    protocol_rooms = room_table("The rooms of protocols/")
    assert tuple(name for name, _ in protocol_rooms) == PROTOCOL_ROOMS


def test_architecture_names_where_each_room_lives():
    rows = room_table("Rooms") + room_table("The rooms of protocols/")
    for room, where in rows:
        paths = re.findall(r"`([^`]+)`", where)
        assert paths, f"room {room} names no path"
        for path in paths:
            assert (ROOT / path).exists(), f"room {room}: {path} does not exist"
    foundation = dict(room_table("Rooms"))["foundation"]
    for module in sorted(FOUNDATION - {"daemon"}):
        package = ROOT / Path(*module.split("."))
        shown = (
            f"{package.relative_to(ROOT)}/"
            if package.is_dir()
            else f"{module.replace('.', '/')}.py"
        )
        assert f"`{shown}`" in foundation, f"the foundation row does not name {shown}"
