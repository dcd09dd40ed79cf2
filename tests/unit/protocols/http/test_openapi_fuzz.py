"""The OpenAPI fuzz (``openapi_fuzz.py``) in an interpreter of its own.

Importing schemathesis patches Hypothesis for the whole process, and in a long test
session its caches answered for the apps of earlier tests; a fresh interpreter keeps
both the fuzz and the other property tests honest.
"""

import subprocess
import sys
from pathlib import Path

FUZZ = Path(__file__).with_name("openapi_fuzz.py")
ROOT = Path(__file__).resolve().parents[4]


def test_every_operation_answers_as_documented():
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(FUZZ)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout[-20000:] + result.stderr[-5000:]
    assert " passed" in result.stdout and "4 passed" in result.stdout, result.stdout[-2000:]
