"""Voice training jobs: start, follow, cancel, and resume after a restart.

Each job is a folder under ``voices.train_dir`` with ``job.json`` (what to train
and the job's state), ``progress.json`` and ``train.log``. The training itself runs
in its own process (:mod:`daemon.voices.train_job`, in a session of its own so that a
daemon restart does not stop it). A job found ``running`` whose process is gone
(the machine rebooted, the service was stopped) is started again and resumes
from its last checkpoint.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from daemon.config import Config
from daemon.engines.tts.voices import VoiceStore, check_name
from daemon.errors import Busy, InvalidRequest, TrainingUnavailable, VoiceExists
from daemon.ops.jsonfile import read_json, write_json
from daemon.ops.locks import exclusive
from daemon.ops.storage import writing
from daemon.voices.enroll import DATASET_RATE, Enrollment
from daemon.voices.train_job import CANCEL, JOB, PROGRESS

_LOGGER = logging.getLogger(__name__)
ACTIVE = ("queued", "running", "exporting")
LOG = "train.log"


def training_available() -> str | None:
    """None when Piper's trainer can be imported, else what to install."""
    for module in ("torch", "lightning", "piper.train"):
        if importlib.util.find_spec(module.split(".")[0]) is None or (
            "." in module and importlib.util.find_spec(module) is None
        ):
            return (
                f"voice training needs the training extra ({module} is missing): "
                "run `make train-deps`"
            )
    return None


def _accelerator(device: str) -> tuple[str, str]:
    if device == "auto":
        return "auto", "1"
    if device.startswith("cuda"):
        return "gpu", f"[{device[5:]}]" if ":" in device else "1"
    return "cpu", "1"


class Training:
    """The training jobs of one configuration."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.root = config.training_path
        self._children: dict[str, subprocess.Popen[bytes]] = {}

    def reconfigure(self, config: Config) -> None:
        """Follow a reloaded configuration; jobs already started go on."""
        self.config = config
        self.root = config.training_path

    def job_dir(self, name: str) -> Path:
        """Folder of ``name``'s job."""
        check_name(name)
        return self.root / name

    def start(self, name: str, display_name: str | None = None, replace: bool = False) -> dict:
        """Start training ``name`` from its enrollment; the job's status."""
        missing = training_available()
        if missing:
            raise TrainingUnavailable(missing)
        voices = self.config.voices
        enrollment = Enrollment(self.config, name)
        status = enrollment.status()
        if status["takes"] == 0:
            raise InvalidRequest(f"'{name}' has no accepted takes: enroll first")
        if status["seconds"] < status["min_seconds"]:
            raise InvalidRequest(
                f"'{name}' has {status['seconds'] / 60:.1f} minutes of accepted takes; "
                f"training needs at least {voices.min_minutes:g} (voices.min_minutes)"
            )
        store = VoiceStore(self.config.voices_path)
        if not replace and any(v.name == name for v in store.list()):
            raise VoiceExists(f"a voice called '{name}' already exists (replace it, or rename)")
        base = voices.base_checkpoint
        if base and not Path(base).expanduser().is_file():
            raise TrainingUnavailable(f"voices.base_checkpoint {base} is not a file")
        with self._exclusive():  # check-then-spawn, one process and thread at a time
            return self._start_locked(name, display_name, replace, enrollment, status, base)

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """An exclusive lock over every job (threads of this process and other
        processes such as the CLI)."""
        with writing("the training jobs", self.root), exclusive(self.root / ".lock"):
            yield

    def _start_locked(
        self,
        name: str,
        display_name: str | None,
        replace: bool,
        enrollment: Enrollment,
        status: dict[str, Any],
        base: str,
    ) -> dict[str, Any]:
        voices = self.config.voices
        current = self.status(name)
        if current.get("status") in ACTIVE and current.get("alive"):
            return current
        for other in self.jobs():
            if other["status"] in ACTIVE and other.get("alive") and other["name"] != name:
                raise Busy(f"voice '{other['name']}' is training; one job runs at a time")
        folder = self.job_dir(name)
        if folder.exists():
            # A new run: keep nothing from an earlier one (its checkpoints would resume).
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        accelerator, devices = _accelerator(voices.train_device)
        job = {
            "name": name,
            "display_name": display_name or name,
            "dataset": str(enrollment.folder),
            "voices_dir": str(self.config.voices_path),
            "espeak_voice": voices.espeak_voice,
            "sample_rate": DATASET_RATE,
            "batch_size": voices.train_batch_size,
            # Few takes: every one trains; validation needs a set of its own.
            "validation_split": 0.1 if status["takes"] >= 20 else 0.0,
            "max_epochs": voices.train_epochs,
            "max_steps": voices.train_max_steps,
            "accelerator": accelerator,
            "devices": devices,
            "threads": voices.train_threads,
            "base_checkpoint": str(Path(base).expanduser()) if base else "",
            "replace": replace,
            "status": "queued",
            "created": time.time(),
            "takes": status["takes"],
            "seconds": status["seconds"],
        }
        write_json(folder / JOB, job)
        self._spawn(name)
        return self.status(name)

    def _spawn(self, name: str) -> None:
        folder = self.job_dir(name)
        with open(folder / LOG, "ab") as log:
            child = subprocess.Popen(
                [sys.executable, "-m", "daemon.voices.train_job", str(folder)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=folder,
                start_new_session=True,
                env=os.environ | {"PYTHONUNBUFFERED": "1"},
            )
        self._children[name] = child
        job = read_json(folder / JOB)
        if job.get("status") == "queued":  # the child has not written its own state yet
            job.update(pid=child.pid)
            write_json(folder / JOB, job)
        _LOGGER.info("Training voice %s (pid %d, log %s)", name, child.pid, folder / LOG)

    def _alive(self, name: str, pid: int | None) -> bool:
        child = self._children.get(name)
        if child is not None:
            if child.poll() is None:
                return True
            del self._children[name]
            return False
        if not pid:
            return False
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False
        return b"daemon.voices.train_job" in cmdline

    def status(self, name: str) -> dict[str, Any]:
        """The job's state, progress and, after a failure, the end of its log."""
        folder = self.job_dir(name)
        job = read_json(folder / JOB)
        if not job:
            return {"name": name, "status": "none"}
        alive = self._alive(name, job.get("pid"))
        state = job.get("status", "none")
        if state in ACTIVE and not alive:
            state = "interrupted"
        out = {
            "name": name,
            "status": state,
            "alive": alive,
            "error": job.get("error"),
            "takes": job.get("takes"),
            "seconds": job.get("seconds"),
            "device": job.get("accelerator"),
            "base_checkpoint": job.get("base_checkpoint") or None,
            "progress": read_json(folder / PROGRESS) or None,
        }
        if state == "failed":
            out["log_tail"] = self.log_tail(name)
        return out

    def log_tail(self, name: str, lines: int = 20) -> list[str]:
        """The last lines of the job's log."""
        try:
            text = (self.job_dir(name) / LOG).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        return text.splitlines()[-lines:]

    def jobs(self) -> list[dict[str, Any]]:
        """Every job's status."""
        if not self.root.is_dir():
            return []
        return [
            self.status(folder.name)
            for folder in sorted(self.root.iterdir())
            if (folder / JOB).is_file()
        ]

    def cancel(self, name: str) -> dict[str, Any]:
        """Stop a running job; its checkpoints stay (``start`` begins afresh).

        A finished or failed job is left as it is. The job is told first (a marker
        file), so that the trainer's own shutdown reports it as cancelled.
        """
        folder = self.job_dir(name)
        job = read_json(folder / JOB)
        if job.get("status") not in ACTIVE:
            return self.status(name)
        (folder / CANCEL).touch()
        pid = job.get("pid")
        if pid and self._alive(name, pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int(pid), signal.SIGTERM)
            child = self._children.pop(name, None)
            if child is not None:
                try:
                    child.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(int(pid), signal.SIGKILL)
                    child.wait(timeout=10)
        job = read_json(folder / JOB)
        job.update(status="cancelled", pid=None)
        write_json(folder / JOB, job)
        return self.status(name)

    def resume_interrupted(self) -> list[str]:
        """Start again every job a restart interrupted (from its last checkpoint)."""
        resumed = []
        for job in self.jobs():
            if job["status"] == "interrupted" and training_available() is None:
                _LOGGER.info("Resuming the interrupted training of voice %s", job["name"])
                self._spawn(job["name"])
                resumed.append(job["name"])
        return resumed
