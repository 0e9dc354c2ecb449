"""Trials per second of the K-means mechanisms' release: one trial at a time against one batch.

Three ways to get ``T`` independent runs of a mechanism on one dataset, measured in the same run:

* ``per-trial``: ``release(data, rng_i, trials=1)`` called ``T`` times, each from its own generator
  (:func:`_per_trial`, the path a loop over trials takes);
* ``batch``: ``release(data, rng, trials=T)``, every Lloyd iteration vectorised over the trial
  axis (noise, randomized response, cluster sums: one NumPy call per iteration for all trials;
  the nearest-centre search: one SciPy pass per trial);
* ``batch, broadcast search``: the same batch with the previous nearest-centre search, a NumPy
  broadcast of ``(T, n, d)`` differences (:func:`_nearest_batch_broadcast`, patched in), which the
  per-trial SciPy search replaced.  Both batches draw the same numbers (checked here).

The study ``avent-kmeans`` releases one trial per dataset (every dataset is a fresh split and start),
so it runs the ``per-trial`` path; a batch serves evaluations with ``trials > 1``.  Ratios are of
wall times in this process: run it on a quiet machine (the load average is printed first).

    python benchmarks/kmeans_trials.py                     # 4 x 5,000 and 4 x 40,000 points, 24 trials (~1-2 min)
    python benchmarks/kmeans_trials.py --points 1000 --trials 200
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from hybridpriv.estimators.kmeans import HybridKMeans, LMKMeans, TCMKMeans, TrustSplitSource, gaussian_clusters
from hybridpriv.estimators.kmeans import algorithm
from hybridpriv.random import rng
from hybridpriv.studies.avent_kmeans import BOUNDS, CENTRES, EPSILON, K, SIGMA


def _nearest_batch_broadcast(x: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The previous batched nearest-centre search: NumPy broadcast over the trial axis."""
    t, k = c.shape[:2]
    n = x.shape[-2]
    if n == 0:
        return np.zeros((t, 0), dtype=np.intp)
    xb = x[None] if x.ndim == 2 else x
    best = ((xb - c[:, :1, :]) ** 2).sum(-1)
    idx = np.zeros((t, n), dtype=np.intp)
    for j in range(1, k):
        d2 = ((xb - c[:, j : j + 1, :]) ** 2).sum(-1)
        closer = d2 < best
        idx[closer] = j
        np.minimum(best, d2, out=best)
    return idx


def _per_trial(mech, data, seed: int, trials: int) -> np.ndarray:
    """``trials`` releases of one trial each, every one from its own named stream."""
    return np.stack([mech.release(data, rng(seed, "bench", "per-trial", i))[0] for i in range(trials)])


def _best_of(fn, repeats: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, nargs="+", default=[5_000, 40_000], help="points per cluster (4 clusters)")
    parser.add_argument("--trials", type=int, default=24)
    parser.add_argument("--tau", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2, help="best of this many timings per row")
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; tau = {args.tau}, epsilon = {EPSILON:g}, "
          f"c = 1%, {args.trials} trials, best of {args.repeats}")
    print(f"{'points':>8} {'mechanism':<8} {'per-trial/s':>12} {'batch/s':>9} {'broadcast/s':>12} "
          f"{'batch / per-trial':>18} {'batch / broadcast':>18}")
    kw = {"k": K, "epsilon": EPSILON, "tau": args.tau, "bounds": BOUNDS}
    for n_per in args.points:
        x = gaussian_clusters(CENTRES, SIGMA, n_per, BOUNDS, rng(0, "bench", "points"))
        data = TrustSplitSource(x, BOUNDS, 0.01, K, 1).generate(0, 0, rng(0, "bench", "dataset"))
        for mech in (HybridKMeans(**kw), TCMKMeans(**kw), LMKMeans(**kw)):
            t_loop, _ = _best_of(lambda: _per_trial(mech, data, 0, args.trials), args.repeats)
            t_batch, batch = _best_of(lambda: mech.release(data, rng(0, "bench", "batch"), trials=args.trials), args.repeats)
            current = algorithm._nearest_batch
            algorithm._nearest_batch = _nearest_batch_broadcast
            try:
                t_old, old = _best_of(lambda: mech.release(data, rng(0, "bench", "batch"), trials=args.trials), args.repeats)
            finally:
                algorithm._nearest_batch = current
            if not np.array_equal(batch, old):
                raise AssertionError("the two batched searches drew different releases")
            rate = [args.trials / t for t in (t_loop, t_batch, t_old)]
            print(f"{4 * n_per:>8,} {mech.label:<8} {rate[0]:>12.1f} {rate[1]:>9.1f} {rate[2]:>12.1f} "
                  f"{t_loop / t_batch:>18.2f} {t_old / t_batch:>18.2f}")


if __name__ == "__main__":
    main()
