"""Speed of the K-means mechanisms, compiled iteration against the NumPy path, ratios from one run.

**Releases** (``--points``, ``--trials``, ``--tau``): ``T`` independent runs of a mechanism on one
dataset, three ways:

* ``per-trial``: ``release(data, rng_i, trials=1)`` called ``T`` times, each from its own generator
  (:func:`_per_trial`, the path a loop over trials takes);
* ``batch``: ``release(data, rng, trials=T)``, every Lloyd iteration vectorised over the trial
  axis, compiled (:mod:`hybridpriv.families.kmeans.algorithms._kernels`): the nearest-centre search of each
  trial on the transposed points (SIMD lanes), randomized response and the cluster sums, and line 4's
  reports from the generator's uniforms;
* ``numpy batch``: the same batch on the NumPy path (``algorithm._compiled`` patched to refuse: one
  SciPy ``cdist`` search per trial, :func:`~hybridpriv.noise.randomized_response`, one
  ``bincount`` per coordinate, ``Generator.laplace`` for line 4), which the compiled path replaced.
  Both batches draw the same numbers (checked here).

**Study datasets** (``--study-draws``): what the engine does for ``avent-kmeans`` at full scale
(4 x 40,000 points, ``c`` in {0.1%, 1%}, every ``tau``): ``evaluate`` of the study's candidates
at each ``(c, tau)`` on ``--study-draws`` datasets, CPU seconds per dataset on the compiled and on
the NumPy path (same risks, checked), and the projection to the full study (3 layouts x 364
datasets per setting): now (compiled, split-free algorithms at the first ``c`` only) against the
NumPy path with every algorithm at both ``c`` (the previous design; the split as now).

Times are CPU seconds of this process (``time.process_time``; one thread): run it with
``OMP_NUM_THREADS=1`` on a quiet machine (the load average is printed first).

    python benchmarks/kmeans_trials.py                     # both tables (~1-2 min)
    python benchmarks/kmeans_trials.py --points 1000 --trials 200 --study-draws 0
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from hybridpriv.studies.avent_kmeans import (
    BOUNDS,
    CENTRES,
    CS,
    EPSILON,
    LAYOUTS,
    SCALES,
    SIGMA,
    SPLIT_FREE,
    K,
    candidates,
)

from hybridpriv.core.random import rng
from hybridpriv.engine import Engine
from hybridpriv.engine.evaluate import evaluate
from hybridpriv.families.kmeans.algorithms import (
    WCSS,
    HybridKMeans,
    LMKMeans,
    TCMKMeans,
    TrustSplitSource,
    algorithm,
    gaussian_clusters,
)


def _per_trial(mech, data, seed: int, trials: int) -> np.ndarray:
    """``trials`` releases of one trial each, every one from its own named stream."""
    return np.stack([mech.release(data, rng(seed, "bench", "per-trial", i))[0] for i in range(trials)])


def _best_of(fn, repeats: int, numpy_path: bool = False) -> tuple[float, object]:
    """Least CPU seconds of ``repeats`` calls of ``fn`` (on the NumPy path if asked) and its result."""
    best, out = float("inf"), None
    compiled = algorithm._compiled
    if numpy_path:
        algorithm._compiled = lambda x: False
    try:
        for _ in range(repeats):
            start = time.process_time()
            out = fn()
            best = min(best, time.process_time() - start)
    finally:
        algorithm._compiled = compiled
    return best, out


def releases(args) -> None:
    print(f"releases: tau = {args.tau}, epsilon = {EPSILON:g}, c = 1%, {args.trials} trials, best of {args.repeats}")
    print(f"{'points':>8} {'mechanism':<8} {'per-trial/s':>12} {'batch/s':>9} {'numpy batch/s':>14} "
          f"{'batch / per-trial':>18} {'batch / numpy batch':>20}")
    kw = {"k": K, "epsilon": EPSILON, "tau": args.tau, "bounds": BOUNDS}
    for n_per in args.points:
        x = gaussian_clusters(CENTRES, SIGMA, n_per, BOUNDS, rng(0, "bench", "points"))
        data = TrustSplitSource(x, BOUNDS, 0.01, K, 1).generate(0, 0, rng(0, "bench", "dataset"))
        for mech in (HybridKMeans(**kw), TCMKMeans(**kw), LMKMeans(**kw)):
            mech.release(data, rng(0, "bench", "warm-up"), trials=2)  # compilation (or the disk cache) first
            t_loop, _ = _best_of(lambda: _per_trial(mech, data, 0, args.trials), args.repeats)
            t_batch, batch = _best_of(lambda: mech.release(data, rng(0, "bench", "batch"), trials=args.trials), args.repeats)
            t_old, old = _best_of(lambda: mech.release(data, rng(0, "bench", "batch"), trials=args.trials), args.repeats,
                                  numpy_path=True)
            if not np.array_equal(batch, old):
                raise AssertionError("the compiled and the NumPy path drew different releases")
            rate = [args.trials / t for t in (t_loop, t_batch, t_old)]
            print(f"{4 * n_per:>8,} {mech.label:<8} {rate[0]:>12.1f} {rate[1]:>9.1f} {rate[2]:>14.1f} "
                  f"{t_loop / t_batch:>18.2f} {t_old / t_batch:>20.2f}")


def study(args) -> None:
    n_per, taus, draws = SCALES["full"]
    d = args.study_draws
    print(f"\nstudy datasets: avent-kmeans full scale ({4 * n_per:,} points, grid layout), {d} datasets per (c, tau), "
          f"best of {args.repeats}; CPU ms per dataset (generation, truth, every candidate's release and WCSS)")
    print(f"{'c':>6} {'tau':>4} {'run now':>8} {'compiled':>9} {'numpy, all 7':>13} {'ratio':>6}")
    x = gaussian_clusters(CENTRES, SIGMA, n_per, BOUNDS, rng(0, "bench", "points"))
    now_total = old_total = 0.0
    warm = TrustSplitSource(x, BOUNDS, CS[0], K, draws, CENTRES)  # compilation, caches: one untimed dataset per path
    for numpy_path in (False, True):
        _best_of(lambda: evaluate(candidates(1), warm, WCSS(), seed=0, dim="algorithm", draws=1, engine=Engine(chunk_size=1)), 1, numpy_path)
    for c in CS:
        source = TrustSplitSource(x, BOUNDS, c, K, draws, CENTRES)
        for tau in taus:
            every = candidates(tau)
            runs = [m for m in every if c == CS[0] or m.label not in SPLIT_FREE]
            run = lambda cands: evaluate(cands, source, WCSS(), seed=0, dim="algorithm", draws=d, engine=Engine(chunk_size=d))  # noqa: E731
            t_now, ev_now = _best_of(lambda: run(runs), args.repeats)
            t_old, ev_old = _best_of(lambda: run(every), args.repeats, numpy_path=True)
            if not np.array_equal(ev_now.risk.values, ev_old.risk.sel(algorithm=ev_now.algorithm).values):
                raise AssertionError(f"c = {c}, tau = {tau}: the compiled and the NumPy path gave different risks")
            now_total += t_now / d
            old_total += t_old / d
            print(f"{100 * c:>5g}% {tau:>4} {len(runs):>8} {1e3 * t_now / d:>9.1f} {1e3 * t_old / d:>13.1f} "
                  f"{t_old / t_now:>6.2f}")
    scale = len(LAYOUTS) * draws
    print(f"full study ({len(LAYOUTS)} layouts x {draws} datasets per setting), CPU seconds projected: now {scale * now_total:,.0f}, "
          f"NumPy path with every algorithm at both c {scale * old_total:,.0f}; ratio {old_total / now_total:.2f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, nargs="*", default=[5_000, 40_000], help="points per cluster (4 clusters)")
    parser.add_argument("--trials", type=int, default=24)
    parser.add_argument("--tau", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2, help="best of this many timings per row")
    parser.add_argument("--study-draws", type=int, default=3, help="datasets per (c, tau) of the study table (0: skip it)")
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    if args.points:
        releases(args)
    if args.study_draws > 0:
        study(args)


if __name__ == "__main__":
    main()
