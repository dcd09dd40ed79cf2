"""The shell and the service see one state: which installation a command works on, and
files it writes handed to the daemon's user.

A command typed in a shell (``hearth voices add``, ``hearth speakers enroll``,
``hearth check``) works on the installation that runs: with no ``--config`` and no
``$HEARTH_CONFIG``, a system install's ``/etc/hearth/config.yaml`` and its state in
``/var/lib/hearth`` (the unit's ``StateDirectory``); in the container image and the
add-on the image's own variables already say so. Run as root (``sudo``, ``docker exec``),
what it writes into the state belongs to the daemon's user afterwards, as if the daemon
had written it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

SYSTEM_CONFIG = Path("/etc/hearth/config.yaml")
"""The config file ``hearth install-service`` writes and the unit runs with."""
SYSTEM_STATE = Path("/var/lib/hearth")
"""The unit's ``StateDirectory=hearth``."""


def installed_config(environ: Mapping[str, str]) -> Path | None:
    """The running installation's config file for a command given none: None where
    ``$HEARTH_CONFIG`` names one or no system install is here."""
    if environ.get("HEARTH_CONFIG"):
        return None
    return SYSTEM_CONFIG if SYSTEM_CONFIG.is_file() else None


def installed_state(environ: Mapping[str, str], config: Path | None) -> str | None:
    """``$STATE_DIRECTORY`` for a shell command on a system install's config (the unit
    sets it for the daemon); None where it is set already or this is not one."""
    if environ.get("STATE_DIRECTORY") or config is None or not SYSTEM_STATE.is_dir():
        return None
    return str(SYSTEM_STATE)


def hand_to_owner(state: Path, folders: Iterable[Path]) -> int:
    """As root: give what root owns under ``folders`` to the owner of ``state`` (the
    daemon's user), where that is not root; the number of entries handed over."""
    if os.geteuid() != 0:
        return 0
    try:
        owner = state.stat()
    except OSError:
        return 0
    if owner.st_uid == 0:
        return 0
    handed = 0
    for folder in {Path(os.path.realpath(f)) for f in folders}:
        if not folder.exists():
            continue
        for root, dirs, files in os.walk(folder):
            for name in (root, *(os.path.join(root, n) for n in dirs + files)):
                if os.lstat(name).st_uid == 0:
                    os.lchown(name, owner.st_uid, owner.st_gid)
                    handed += 1
    return handed
