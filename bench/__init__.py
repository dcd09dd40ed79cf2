"""Hearth's benchmarks, one tool: each runs from the repository root as
``python -m bench.<name>`` and writes its own section of bench/RESULTS.md; what they
share (arguments, the machine, repeated runs, a revision's worktree, ``hearth serve``
from a tree) is bench/harness.py."""
