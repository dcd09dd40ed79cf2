"""Changes Hearth makes to third-party libraries: one module per library, and nowhere else.

Hearth patches a library only where a behaviour it needs has no public hook; each
module's docstring says why. Every patch is described by a :class:`Patch`: the
attribute it replaces or overrides, the parameters that attribute had when the patch
was written, and the versions it was checked against. :func:`verify_all` runs at
start-up: a version outside the range logs a warning naming library, version and
patch (the patch still applies); a missing attribute or changed parameters log an
error and that patch is not applied (Hearth serves on without the behaviour).
Importing this package patches nothing and imports no patched library.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import re
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

_LOGGER = logging.getLogger(__name__)

MODULES = ("protocols.patches.aiortc", "protocols.patches.aioice", "protocols.patches.uvicorn")
"""Every patch module; each lists its patches in ``PATCHES``."""


class PatchError(Exception):
    """A patched attribute is missing or no longer looks as the patch expects."""


@dataclass(frozen=True)
class Patch:
    """One replaced or overridden attribute of a library, and what it was written against."""

    library: str
    """Distribution name, as ``pip show`` knows it."""
    target: str
    """``module:Qualified.name`` of the attribute replaced or overridden."""
    params: tuple[str, ...]
    """Its parameter names when the patch was written."""
    is_async: bool
    """Whether it is a coroutine function."""
    versions: tuple[str, str]
    """Versions checked: from the first (included) to the second (excluded)."""
    why: str
    """What Hearth loses when the patch cannot apply (for the log)."""

    def original(self) -> Any:
        """The library's attribute (raises PatchError when it is gone)."""
        module_name, _, path = self.target.partition(":")
        try:
            found: Any = importlib.import_module(module_name)
            for part in path.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError) as exc:
            raise PatchError(f"{self.target} is missing ({exc})") from None
        return found

    def check(self) -> None:
        """Raise PatchError unless the attribute exists with the expected parameters."""
        original = self.original()
        try:
            params = tuple(inspect.signature(original).parameters)
        except (TypeError, ValueError) as exc:
            raise PatchError(f"{self.target} has no readable signature ({exc})") from None
        if params != self.params:
            raise PatchError(
                f"{self.target} now takes ({', '.join(params)}), "
                f"the patch was written for ({', '.join(self.params)})"
            )
        if inspect.iscoroutinefunction(original) != self.is_async:
            kind = "a coroutine function" if self.is_async else "a plain function"
            raise PatchError(f"{self.target} is no longer {kind}")

    def installed(self) -> str:
        """The library's installed version ("unknown" when its metadata is missing)."""
        try:
            return version(self.library)
        except PackageNotFoundError:
            return "unknown"

    def version_supported(self) -> bool:
        """Whether the installed version is in the range the patch was checked against."""
        installed = _numeric(self.installed())
        low, high = (_numeric(v) for v in self.versions)
        return bool(installed) and low <= installed < high


_verdicts: dict[Patch, bool] = {}


def usable(patch: Patch) -> bool:
    """Check ``patch`` once (logging what is wrong); whether it may be applied."""
    verdict = _verdicts.get(patch)
    if verdict is not None:
        return verdict
    installed = patch.installed()
    try:
        patch.check()
        verdict = True
    except PatchError as exc:
        _LOGGER.error(
            "Not patching %s %s (%s): %s; %s",
            patch.library,
            installed,
            patch.target,
            exc,
            patch.why,
        )
        verdict = False
    if verdict and not patch.version_supported():
        low, high = patch.versions
        _LOGGER.warning(
            "%s %s is not a version the patch of %s was checked against (%s to below %s); "
            "it applies, but check that %s still works",
            patch.library,
            installed,
            patch.target,
            low,
            high,
            patch.library,
        )
    _verdicts[patch] = verdict
    return verdict


def all_patches() -> list[Patch]:
    """Every patch Hearth makes (imports the patched libraries)."""
    found: list[Patch] = []
    for name in MODULES:
        found.extend(importlib.import_module(name).PATCHES)
    return found


def verify_all() -> dict[str, bool]:
    """Start-up check of every patch; ``target`` -> whether it applies."""
    return {patch.target: usable(patch) for patch in all_patches()}


def _numeric(text: str) -> tuple[int, ...]:
    """(1, 16, 0) for "1.16.0", "1.16.0rc1" or "1.16.0.post2"; () when not a version."""
    match = re.match(r"\d+(?:\.\d+)*", text)
    return tuple(int(part) for part in match.group().split(".")) if match else ()
