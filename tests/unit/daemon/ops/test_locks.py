"""File locks: exclusive against other processes and threads, reentrant in a thread."""

import subprocess
import sys
import threading
import time

from daemon.ops.locks import exclusive

PROBE = """
import fcntl, sys
with open(sys.argv[1], "a+b") as handle:
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit(3)
"""


def other_process_can_lock(path) -> bool:
    return subprocess.run([sys.executable, "-c", PROBE, str(path)]).returncode == 0


def test_held_against_other_processes_and_reentrant(tmp_path):
    lock = tmp_path / "sub" / ".lock"
    with exclusive(lock):
        with exclusive(lock):  # the same thread again: no deadlock
            assert not other_process_can_lock(lock)
        assert not other_process_can_lock(lock)  # still held by the outer block
    assert other_process_can_lock(lock)


def test_threads_take_turns(tmp_path):
    lock = tmp_path / ".lock"
    inside = []

    def work(n: int) -> None:
        with exclusive(lock):
            inside.append(("in", n))
            time.sleep(0.02)
            inside.append(("out", n))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Never two inside at once: every "in" is followed by its own "out".
    assert all(
        inside[i][0] == "in" and inside[i + 1] == ("out", inside[i][1]) for i in (0, 2, 4, 6)
    )
