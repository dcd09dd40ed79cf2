"""Starting training is check-then-spawn under one lock: never two jobs at once."""

import threading
from unittest import mock

from daemon.config import parse_config
from daemon.voices import training


class FakeChild:
    pid = 4242

    def poll(self) -> None:
        return None  # still running


def test_concurrent_starts_spawn_exactly_one_job(tmp_path):
    config = parse_config(f"state_dir: {tmp_path}\n")
    jobs = training.Training(config)
    spawned: list[str] = []
    outcomes: list[str] = []

    def popen(args, **_):  # noqa: ANN001, ANN202
        spawned.append(args[-1])
        return FakeChild()

    def start(name: str) -> None:
        try:
            jobs.start(name)
            outcomes.append("started")
        except Exception as exc:  # noqa: BLE001 - the outcome is what is checked
            outcomes.append(type(exc).__name__)

    enough = {"takes": 5, "seconds": 999.0, "min_seconds": 1.0}
    with (
        mock.patch.object(training, "training_available", lambda: None),
        mock.patch.object(training.Enrollment, "status", lambda self: enough),
        mock.patch.object(training.subprocess, "Popen", popen),
    ):
        threads = [threading.Thread(target=start, args=(n,)) for n in ("alice", "bob", "alice")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(spawned) == 1, spawned
    assert outcomes.count("Busy") + outcomes.count("started") == 3


def test_reconfigure_follows_the_new_training_dir(tmp_path):
    jobs = training.Training(parse_config(f"state_dir: {tmp_path}\n"))
    jobs.reconfigure(parse_config(f"state_dir: {tmp_path}\nvoices:\n  train_dir: {tmp_path}/t\n"))
    assert jobs.job_dir("alice") == tmp_path / "t" / "alice"
