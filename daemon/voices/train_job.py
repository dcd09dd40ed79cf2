"""One voice training run, in a process of its own: ``python -m daemon.voices.train_job JOB_DIR``.

The job folder holds ``job.json`` (written by :mod:`daemon.voices.training`), and this
process writes ``progress.json`` there as it goes. Piper's trainer
(``piper-tts[train]``) fine-tunes from the base checkpoint named in the job, or
resumes from the job's own last checkpoint when an earlier run was stopped, then
exports the generator to ONNX and adds the voice to the store.

Only this module imports torch, and only when it runs as a job.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import types
from pathlib import Path
from typing import Any

import numpy as np

from daemon.ops.jsonfile import read_json, write_json

_LOGGER = logging.getLogger("hearth.train")
JOB = "job.json"
CANCEL = "cancel"
"""Marker file: the job was cancelled on purpose."""
PROGRESS = "progress.json"
ONNX_CONFIG = "config.json"


def maximum_path(paths: np.ndarray, values: np.ndarray, t_ys: np.ndarray, t_xs: np.ndarray) -> None:
    """Monotonic alignment search (VITS), in place over a batch.

    Args:
        paths: int32 [batch, t_y, t_x], zeros; the best path is written as ones.
        values: float32 [batch, t_y, t_x] log-likelihoods (overwritten).
        t_ys: int32 [batch] spectrogram lengths.
        t_xs: int32 [batch] phoneme lengths.
    """
    for i in range(paths.shape[0]):
        _maximum_path_each(paths[i], values[i], int(t_ys[i]), int(t_xs[i]))


def _maximum_path_each(path: np.ndarray, value: np.ndarray, t_y: int, t_x: int) -> None:
    neg = np.float32(-1e9)
    for y in range(t_y):
        lo, hi = max(0, t_x + y - t_y), min(t_x, y + 1)
        if lo >= hi:
            continue
        xs = np.arange(lo, hi)
        if y == 0:
            prev_row = np.full(t_x, neg, dtype=np.float32)
            prev_diag = np.where(xs == 0, np.float32(0.0), neg)
        else:
            prev_row = value[y - 1]
            prev_diag = np.where(xs == 0, neg, value[y - 1, np.maximum(xs - 1, 0)])
        cur = np.where(xs == y, neg, prev_row[xs])
        value[y, lo:hi] += np.maximum(prev_diag, cur)
    index = t_x - 1
    for y in range(t_y - 1, -1, -1):
        path[y, index] = 1
        if index != 0 and (index == y or value[y - 1, index] < value[y - 1, index - 1]):
            index -= 1


def provide_monotonic_align() -> None:
    """Give Piper's trainer its alignment search.

    piper-tts 1.8.0's wheel ships ``vits/monotonic_align`` without the compiled
    Cython ``core`` it imports, so training fails at the first step. This
    registers a NumPy version of the same function under that module name; it is
    the one place Hearth reaches into the trainer, and it does nothing when a
    compiled core is present.
    """
    name = "piper.train.vits.monotonic_align.monotonic_align.core"
    try:
        __import__(name)
        return
    except ImportError:
        pass
    parent = types.ModuleType(name.rsplit(".", 1)[0])
    core = types.ModuleType(name)
    core.maximum_path_c = maximum_path  # type: ignore[attr-defined]
    parent.core = core  # type: ignore[attr-defined]
    sys.modules[parent.__name__] = parent
    sys.modules[name] = core


def last_checkpoint(job_dir: Path) -> Path | None:
    """The newest ``last.ckpt`` an earlier run of this job left, if any."""
    found = sorted(
        job_dir.glob("lightning_logs/version_*/checkpoints/last*.ckpt"),
        key=lambda p: p.stat().st_mtime,
    )
    return found[-1] if found else None


def trainer_args(job: dict[str, Any], job_dir: Path, resume: Path | None) -> list[str]:
    """Arguments for Piper's Lightning CLI (``fit``) for this job."""
    dataset = Path(job["dataset"])
    args = [
        "fit",
        f"--data.csv_path={dataset / 'metadata.csv'}",
        f"--data.audio_dir={dataset / 'wavs'}",
        f"--data.cache_dir={job_dir / 'cache'}",
        f"--data.config_path={job_dir / ONNX_CONFIG}",
        f"--data.espeak_voice={job['espeak_voice']}",
        f"--data.voice_name={job['name']}",
        f"--data.batch_size={job['batch_size']}",
        f"--data.validation_split={job['validation_split']}",
        "--data.num_test_examples=0",
        "--data.num_workers=0",
        f"--model.sample_rate={job['sample_rate']}",
        # UTMOS is fetched from the network at validation time: not here.
        "--model.mos_metric=none",
        f"--trainer.default_root_dir={job_dir}",
        f"--trainer.max_epochs={job['max_epochs']}",
        f"--trainer.accelerator={job['accelerator']}",
        f"--trainer.devices={job.get('devices', '1')}",
        "--trainer.log_every_n_steps=1",
        "--trainer.enable_progress_bar=false",
    ]
    if job.get("max_steps"):
        args.append(f"--trainer.max_steps={job['max_steps']}")
    if job["validation_split"] <= 0:
        args.append("--trainer.limit_val_batches=0")
    if resume is not None:
        args.append(f"--ckpt_path={resume}")
    elif job.get("base_checkpoint"):
        # Fine-tune: copy the base's weights, fresh optimizer, epochs count from 0.
        args.append(f"--model.warmstart_ckpt={job['base_checkpoint']}")
    return args


def _progress_callback(job_dir: Path, job: dict[str, Any]) -> Any:
    from lightning.pytorch.callbacks import Callback

    started = time.monotonic()

    class Progress(Callback):
        """Writes epoch, step, loss and an estimate of the time left."""

        def __init__(self) -> None:
            self.first_step: int | None = None
            self.written = 0.0

        def on_train_batch_end(self, trainer: Any, *args: Any) -> None:
            step = int(trainer.global_step)
            if self.first_step is None:
                self.first_step = step
            now = time.monotonic()
            metrics = trainer.callback_metrics
            loss = metrics.get("loss_gen_all", metrics.get("loss_g"))
            done = step - self.first_step
            rate = done / (now - started) if done > 0 else 0.0
            batches = max(1, int(trainer.num_training_batches or 1))
            total = int(trainer.max_epochs) * batches if trainer.max_epochs > 0 else 0
            if job.get("max_steps"):
                total = min(total, int(job["max_steps"])) if total else int(job["max_steps"])
            eta = (total - step) / rate if rate and total else None
            if now - self.written < 2.0 and (not total or step < total):
                return
            self.written = now
            write_json(
                job_dir / PROGRESS,
                {
                    "epoch": int(trainer.current_epoch),
                    "max_epochs": int(trainer.max_epochs),
                    "step": step,
                    "total_steps": total or None,
                    "loss": float(loss) if loss is not None else None,
                    "eta_s": round(eta, 1) if eta is not None else None,
                    "updated": time.time(),
                },
            )

    return Progress()


def fit(job_dir: Path, job: dict[str, Any]) -> Path:
    """Run Piper's trainer for the job; return the checkpoint to export."""
    provide_monotonic_align()
    from piper.train.__main__ import _DEFAULT_CALLBACKS, VitsLightningCLI
    from piper.train.vits.dataset import VitsDataModule
    from piper.train.vits.lightning import VitsModel

    resume = last_checkpoint(job_dir)
    if resume is not None:
        _LOGGER.info("Resuming from %s", resume)
    callbacks = [*_DEFAULT_CALLBACKS, _progress_callback(job_dir, job)]
    VitsLightningCLI(
        VitsModel,
        VitsDataModule,
        trainer_defaults={"max_epochs": -1, "callbacks": callbacks},
        args=trainer_args(job, job_dir, resume),
    )
    final = last_checkpoint(job_dir)
    if final is None:
        raise RuntimeError("training saved no checkpoint")
    return final


def export(job_dir: Path, checkpoint: Path) -> Path:
    """Export the generator of ``checkpoint`` to ONNX with Piper's own exporter.

    Piper's ``export_onnx`` leaves torch to pick its exporter, and torch 2.9+
    picks the dynamo one, which cannot trace the VITS generator. The exporter
    runs here with the TorchScript one (``dynamo=False``) as torch's default;
    everything else is Piper's. This runs in the job's own process.
    """
    import torch
    from piper.train import export_onnx

    output = job_dir / "export" / "model.onnx"
    original = torch.onnx.export

    def torchscript_export(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("dynamo", False)
        return original(*args, **kwargs)

    argv = sys.argv
    sys.argv = ["export_onnx", "--checkpoint", str(checkpoint), "--output-file", str(output)]
    torch.onnx.export = torchscript_export
    try:
        export_onnx.main()
    finally:
        torch.onnx.export = original
        sys.argv = argv
    if not output.is_file():
        raise RuntimeError(f"Piper's exporter wrote no model at {output}")
    return output


def register(job_dir: Path, job: dict[str, Any], onnx: Path) -> str:
    """Add the exported voice to the store (validated like an import); its name.

    The voice is imported under a temporary name first, so a voice it replaces is
    only removed once the new one has passed validation. A voice of the same name
    made during training (without ``replace``) is kept: the new one gets a suffix.
    """
    from daemon.engines.tts.voices import VoiceStore
    from daemon.voices.importer import import_files

    store = VoiceStore(Path(job["voices_dir"]))
    name = job["name"]
    staged = f"{name[:50]}-{os.getpid()}-new"
    import_files(
        store,
        staged,
        onnx,
        job_dir / ONNX_CONFIG,
        {"display_name": job.get("display_name") or name, "source": "trained"},
    )
    existing = {v.name for v in store.list()}
    if name in existing:
        if job.get("replace"):
            store.remove(name)
        else:
            number = 2
            while f"{name[:56]}-{number}" in existing:
                number += 1
            _LOGGER.warning("A voice '%s' appeared during training; keeping both", name)
            name = f"{name[:56]}-{number}"
    store.rename(staged, name)
    return name


def run(job_dir: Path) -> int:
    """Train, export and register; the outcome goes to ``job.json``."""
    job = read_json(job_dir / JOB)
    job.update(status="running", pid=os.getpid(), error=None)
    write_json(job_dir / JOB, job)
    try:
        torch_threads = job.get("threads") or 0
        if torch_threads:
            import torch

            torch.set_num_threads(int(torch_threads))
        checkpoint = fit(job_dir, job)
        job.update(status="exporting")
        write_json(job_dir / JOB, job)
        onnx = export(job_dir, checkpoint)
        job["voice"] = register(job_dir, job, onnx)
    except BaseException as exc:
        if (job_dir / CANCEL).exists():  # stopped on purpose (SIGTERM from cancel)
            job.update(status="cancelled", pid=None)
            write_json(job_dir / JOB, job)
            return 1
        job.update(status="failed", error=f"{type(exc).__name__}: {exc}", pid=None)
        write_json(job_dir / JOB, job)
        _LOGGER.exception("Training %s failed", job.get("name"))
        return 1
    job.update(status="done", pid=None, finished=time.time())
    write_json(job_dir / JOB, job)
    _LOGGER.info("Voice %s trained and added to the store", job["name"])
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    raise SystemExit(run(Path(sys.argv[1])))
