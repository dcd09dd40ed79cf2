"""The container image's entrypoint (``hearth-entrypoint``): Docker, Compose and the add-on.

Started as root (a Home Assistant add-on's ``/data`` is root's, and so is a fresh bind
mount), it gives the state folder to the ``hearth`` user, drops root for good and runs
``hearth`` with its arguments (``serve`` by default). A container started with
``--user`` skips the first step.

Run by the Home Assistant Supervisor (``SUPERVISOR_TOKEN`` set, ``/data/options.json``
present) the image is the add-on: ``hearth`` reads its settings from the add-on options
(:mod:`daemon.config.addon`), and once Wyoming answers ``describe`` this process announces
it to the Supervisor (:mod:`daemon.ops.supervisor`), so Home Assistant offers the Wyoming
integration by itself. It then waits for the daemon, passing signals on.
"""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from daemon.config.addon import ADDON_SETTINGS, LEGACY_VOICES
from daemon.ops import probe
from daemon.ops.supervisor import AddonContext, DiscoveryFailed, addon_context, announce

_LOGGER = logging.getLogger("hearth.entrypoint")
USER = "hearth"
DATA = Path("/data")
READY_TIMEOUT_S = 1800.0
"""Longest wait for Wyoming to answer before the add-on gives up announcing it (the
first start joins the embedded LLM; a configured model may download)."""


def give_data_to(user: pwd.struct_passwd, data: Path) -> None:
    """Make ``data`` and what it holds ``user``'s, where it is not yet (as root)."""
    data.mkdir(parents=True, exist_ok=True)
    for folder, dirs, files in os.walk(data):
        for name in (folder, *(os.path.join(folder, n) for n in dirs + files)):
            stat = os.lstat(name)
            if stat.st_uid != user.pw_uid or stat.st_gid != user.pw_gid:
                os.lchown(name, user.pw_uid, user.pw_gid)


def drop_root(name: str = USER, folders: Sequence[Path] = (DATA,)) -> None:
    """As root: give ``folders`` to ``name`` and become it; otherwise nothing."""
    if os.geteuid() != 0:
        return
    user = pwd.getpwnam(name)
    for folder in folders:
        give_data_to(user, folder)
    os.setgroups([])
    os.setgid(user.pw_gid)
    os.setuid(user.pw_uid)
    os.environ["USER"] = name


def adopt_voices(legacy: Path, voices: Path) -> int:
    """Copy the voices an earlier version kept in ``legacy`` into ``voices`` once (where
    it holds none yet); the number of voices copied. The old folder is left as it was."""
    voices.mkdir(parents=True, exist_ok=True)
    if not legacy.is_dir() or any(voices.iterdir()):
        return 0
    copied = 0
    for folder in sorted(p for p in legacy.iterdir() if p.is_dir()):
        shutil.copytree(folder, voices / folder.name, symlinks=False)
        copied += 1
    if copied:
        _LOGGER.info(
            "Copied %d custom voices from %s into %s (the add-on's backup keeps them now; "
            "the old folder can be deleted)",
            copied,
            legacy,
            voices,
        )
    return copied


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``hearth-entrypoint``."""
    args = list(sys.argv[1:] if argv is None else argv) or ["serve"]
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    context = addon_context()
    # The add-on keeps custom voices in its own config folder (in its backup, where the
    # Samba add-on reaches them): that folder is hearth's too.
    voices = [Path(str(ADDON_SETTINGS[("voices", "dir")]))] if context else []
    if voices and os.geteuid() == 0:
        adopt_voices(LEGACY_VOICES, voices[0])
    drop_root(USER, [DATA, *voices])
    if context is None or args[0] != "serve":
        os.execv(sys.executable, [sys.executable, "-m", "daemon.cli", *args])
    return run_addon(context, args)


def run_addon(context: AddonContext, args: list[str]) -> int:
    """Run ``hearth serve`` as the add-on: announce Wyoming once it answers."""
    from daemon.cli.main import load_settings
    from daemon.errors import EXIT_CONFIG, ConfigError

    try:
        config = load_settings(None)
    except ConfigError as exc:
        print(f"hearth: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    child = subprocess.Popen([sys.executable, "-m", "daemon.cli", *args])  # noqa: S603

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    endpoint = probe.wyoming_endpoint(config.wyoming.uri)
    if endpoint is None:
        _LOGGER.warning("Wyoming on %s: not announced to the Supervisor", config.wyoming.uri)
    else:
        threading.Thread(
            target=_announce_when_ready, args=(context, *endpoint), daemon=True
        ).start()
    return child.wait()


def _announce_when_ready(context: AddonContext, host: str, port: int) -> None:
    answer = probe.wait_for_describe(host, port, READY_TIMEOUT_S)
    if not answer.ok:
        _LOGGER.error("Wyoming did not answer (%s): not announced to Home Assistant", answer.detail)
        return
    uri = f"tcp://{socket.gethostname()}:{port}"
    try:
        uuid = announce(context, "wyoming", {"uri": uri})
    except DiscoveryFailed as exc:
        _LOGGER.error("%s; add the Wyoming integration by hand with %s", exc, uri)
        return
    _LOGGER.info("Announced Wyoming at %s to Home Assistant (discovery %s)", uri, uuid)
