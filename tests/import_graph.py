"""Print Hearth's import graph by room, and fail on any import that goes upward, any
core module a protocol adapter may not import, and any circle between modules.

Usage: ``python tests/import_graph.py`` (exit 1 on a violation). Every import
counts, including those inside functions and under ``TYPE_CHECKING``: a lazy
import is still a dependency.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROOMS = (
    "foundation",
    "ops",
    "house",
    "audio",
    "engines",
    "speakers",
    "speech",
    "voices",
    "runtime",
    "protocols",
    "service",
    "cli",
)
"""Bottom to top: a room may import only rooms before it (and itself)."""
FOUNDATION = {"daemon", "daemon.errors", "daemon.config"}
"""The modules every room may import; ``daemon.config.*`` (the typed configuration's
package) belongs here too. Being the bottom room, they import nothing else of Hearth's."""
FOUNDATION_PACKAGES = ("daemon.config.",)
TOP_LEVEL_ALLOWED = {"__init__.py", "service.py", "errors.py"}
"""Files allowed directly in daemon/: the package, the composition root, and the
typed errors every room imports (the typed configuration is the package config/)."""
SIBLINGS = {frozenset({"speech", "voices"})}
"""Rooms on one level that must not import each other at all."""
PROTOCOL_ROOMS = ("base", "patches", "webrtc", "realtime", "http", "wyoming")
"""The rooms of protocols/, bottom to top: ``base`` is ``protocols/`` itself (the
listener contract); ``patches`` changes libraries; ``webrtc`` holds the peer
sessions and their media; ``realtime`` the OpenAI Realtime sessions; ``http`` serves
the HTTP API, WebRTC signaling and the Realtime route included; ``wyoming`` stands
alone. A room imports only rooms before it."""
PROTOCOL_SIBLINGS = {
    frozenset({"wyoming", "http"}),
    frozenset({"wyoming", "webrtc"}),
    frozenset({"wyoming", "realtime"}),
}
"""Protocol rooms that must not import each other at all."""
ADAPTERS_MAY_IMPORT: dict[str, str] = {
    # The core's API: its services, their request types, and the value types of what
    # they open and return (the event vocabulary, options, results).
    "daemon.runtime.api": "the core's services and every value type they take and give",
    # Foundation and host plumbing.
    "daemon": "the package version",
    "daemon.errors": "typed errors with stable codes",
    "daemon.config": "the typed configuration (a listener's own keys)",
    "daemon.ops.inflight": "in-flight request tracking",
    "daemon.ops.logs": "request ids in the logs",
    "daemon.ops.metrics": "the metrics endpoint",
    "daemon.ops.stream": "a bounded outbox",
    "daemon.ops.tasks": "tasks an owner spawns",
    "daemon.ops.tls": "the TLS certificate",
    # Conversion at the edge: one internal format, converted where it enters and leaves.
    "daemon.audio.pcm": "the internal format, and converting PCM into it",
    "daemon.audio.decode": "decoding an upload's body as it arrives",
    "daemon.audio.stream": "encoding outgoing audio",
    # The slow workflows that make voices, driven by the voices API.
    "daemon.voices.enroll": "recording a person's takes",
    "daemon.voices.importer": "importing Piper voices",
    "daemon.voices.training": "training jobs",
}
"""Every core module a protocol adapter may import, and why: the core's API (its
services, their request types and the vocabulary's value types, published from one
module), the foundation, host plumbing, conversion at the edge and the voice workflows
(``daemon.config.*`` counts as ``daemon.config``). Anything else (a speech session, the
speaker service, the engines container, the pipeline, a service's own module) is the
core's own: adapters reach it through the services, so no adapter opens a speech
session, waits for a speaker or arms a deadline of its own. ``protocols/__init__.py``
says the same."""


def room_of(module: str) -> str | None:
    """The room a dotted module name belongs to (None: not Hearth's)."""
    if module in FOUNDATION or module.startswith(FOUNDATION_PACKAGES):
        return "foundation"
    parts = module.split(".")
    if parts[0] == "protocols":
        return "protocols"
    if parts[0] != "daemon" or len(parts) < 2:
        return None
    if parts[1] == "service":
        return "service"
    return parts[1] if parts[1] in ROOMS else None


def protocol_room_of(module: str) -> str:
    """The room of a module of protocols/ (see PROTOCOL_ROOMS)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[1] in PROTOCOL_ROOMS else "base"


def door_problem(module: str, target: str) -> str | None:
    """Why a protocol module may not import ``target`` from the core (None: it may)."""
    room = room_of(target)
    if room in ("service", "cli"):
        return "protocols never import the composition root or the CLI"
    if target.startswith(FOUNDATION_PACKAGES) or target in ADAPTERS_MAY_IMPORT:
        return None
    return "not a module adapters may import (ADAPTERS_MAY_IMPORT): go through daemon.runtime.api"


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles among ``graph``'s modules (each a sorted list), found as the
    strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in graph:
                    continue
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def module_name(path: Path) -> str:
    """Dotted name of a source file."""
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Every module a file imports (absolute names, relative ones resolved)."""
    tree = ast.parse(path.read_text(), str(path))
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            found.add(prefix)
            # `from daemon import errors` imports the module daemon.errors.
            found.update(f"{prefix}.{alias.name}" for alias in node.names)
    return {name for name in found if room_of(name) is not None and _exists(name)}


def _exists(name: str) -> bool:
    path = ROOT / Path(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def sources() -> list[Path]:
    """Every Python file of the core and the protocols."""
    return sorted(p for d in ("daemon", "protocols") for p in (ROOT / d).rglob("*.py"))


def check() -> tuple[Counter[tuple[str, str]], list[str]]:
    """The edges between rooms with their counts, and every violation found: an upward
    import, a door an adapter may not use, and any circle between modules."""
    edges: Counter[tuple[str, str]] = Counter()
    problems: list[str] = []
    graph: dict[str, set[str]] = {}
    for path in sources():
        me = module_name(path)
        graph[me] = imports_of(path) - {me}
        mine = room_of(me)
        if path.parent == ROOT / "daemon" and path.name not in TOP_LEVEL_ALLOWED:
            problems.append(f"{me}: a module directly in daemon/, outside any room")
        if mine is None:
            problems.append(f"{me}: in no room")
            continue
        for target in sorted(imports_of(path)):
            theirs = room_of(target)
            assert theirs is not None
            if mine == "protocols" and theirs == "protocols":
                problems.extend(_protocol_problem(me, target))
                continue
            if mine == "protocols" and (why := door_problem(me, target)) is not None:
                problems.append(f"{me} -> {target}: {why}")
            if theirs == mine:
                continue
            edges[(mine, theirs)] += 1
            if frozenset({mine, theirs}) in SIBLINGS:
                problems.append(f"{me} -> {target}: {mine} and {theirs} are siblings")
            elif ROOMS.index(theirs) > ROOMS.index(mine):
                problems.append(f"{me} -> {target}: upward ({mine} -> {theirs})")
    problems.extend(f"circle: {' <-> '.join(circle)}" for circle in cycles(graph))
    return edges, problems


def _protocol_problem(me: str, target: str) -> list[str]:
    """An import between two rooms of protocols/ that breaks their order."""
    mine, theirs = protocol_room_of(me), protocol_room_of(target)
    if mine == theirs:
        return []
    if frozenset({mine, theirs}) in PROTOCOL_SIBLINGS:
        return [f"{me} -> {target}: protocols.{mine} and protocols.{theirs} are siblings"]
    if PROTOCOL_ROOMS.index(theirs) > PROTOCOL_ROOMS.index(mine):
        return [f"{me} -> {target}: upward (protocols.{mine} -> protocols.{theirs})"]
    return []


def main() -> int:
    """Print the graph and the violations; exit 1 if there are any."""
    edges, problems = check()
    print("Import graph by room (bottom to top):", " < ".join(ROOMS))
    for room in ROOMS:
        targets = sorted(
            ((t, n) for (s, t), n in edges.items() if s == room), key=lambda e: ROOMS.index(e[0])
        )
        line = ", ".join(f"{t} ({n})" for t, n in targets) or "-"
        print(f"  {room:<10} -> {line}")
    for problem in problems:
        print("VIOLATION", problem)
    print(f"{len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
