"""The NumPy monotonic alignment search used for Piper training finds the best path."""

import itertools

import numpy as np

from daemon.voices.train_job import maximum_path


def best_by_brute_force(values: np.ndarray) -> float:
    t_y, t_x = values.shape
    best = -np.inf
    # Each frame y gets a phoneme x: start at 0, end at t_x - 1, steps of 0 or 1.
    for steps in itertools.product((0, 1), repeat=t_y - 1):
        xs = np.concatenate([[0], np.cumsum(steps)])
        if xs[-1] != t_x - 1:
            continue
        best = max(best, float(values[np.arange(t_y), xs].sum()))
    return best


def test_the_path_is_monotonic_complete_and_optimal():
    rng = np.random.default_rng(7)
    for t_y, t_x in [(6, 3), (7, 7), (8, 2), (5, 1)]:
        values = rng.normal(size=(1, t_y, t_x)).astype(np.float32)
        path = np.zeros((1, t_y, t_x), dtype=np.int32)
        maximum_path(path, values.copy(), np.array([t_y], np.int32), np.array([t_x], np.int32))
        xs = path[0].argmax(axis=1)
        assert (path[0].sum(axis=1) == 1).all()  # one phoneme per frame
        assert xs[0] == 0 and xs[-1] == t_x - 1
        assert set(np.diff(xs)) <= {0, 1}
        score = float(values[0][np.arange(t_y), xs].sum())
        assert np.isclose(score, best_by_brute_force(values[0]), atol=1e-4)
