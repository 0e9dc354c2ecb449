"""Monte Carlo rate of the grouped estimators on one dataset, against NumPy's raw Laplace rate.

The engine (:mod:`hybridpriv.engine.evaluate`) asks every candidate for ``mech.release(data, rng, trials)``
on each dataset; this times exactly that call, on one dataset of 1,700 records in three groups
(200 public records, 1,000 at epsilon 1, 500 at epsilon 0.1; records Normal(0, 5) clamped to
[-20, 20]), for the mean estimators of ``ferrando-means`` and of a grouped SPEC (``weighted``,
``pdp-min/avg/max/opt``, ``pdp-opt-expected``, ``uniform-mean``, ``public-mean``) and the median
ones (``weighted-median``, ``uniform-median``, ``pe-median``, ``public-median``).

How the rate is counted (as issue 13 counts it): the baseline is ``rng.laplace(size=N)``, NumPy's
raw Laplace draws per second, measured first in the same run.  An estimator's Laplace-draw rate is
``releases/s x Laplace draws per release`` (``weighted``: one draw per group, public ones included
since it draws them; ``pdp-*`` and ``uniform-mean``: one); the ratio printed is that rate over
NumPy's.  Mechanisms that draw no Laplace noise (the medians: exponential mechanisms; the
public-only baselines: no noise) are given ``releases/s`` over NumPy's draws/s, i.e. counted as
one draw per release, and marked so.  ``pdp-*`` also draws keep/drop coins for its subsampled
records; those are part of its cost, not of the count.

The medians are timed at ``--median-trials`` per call (they are slower).  Every timing is the
best of ``--repeat`` runs of ``release`` with a fresh generator each, after a warm-up call; one
process, numerical libraries held to one thread.

    python benchmarks/grouped_release_rate.py                   # trials = 10,000 per call (~1 min)
    python benchmarks/grouped_release_rate.py --trials 20       # the grouped SPEC's default trials
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from hybridpriv.core.privacy import Bounds, Group  # noqa: E402
from hybridpriv.estimators import make_estimator  # noqa: E402
from hybridpriv.families.grouped import GroupedDataset  # noqa: E402

BOUNDS = Bounds(-20.0, 20.0)
GROUPS = [Group("public", 200, math.inf), Group("opt-in", 1000, 1.0), Group("strict", 500, 0.1)]
SIGMA2 = 25.0
MEANS = ("weighted", "pdp-min", "pdp-avg", "pdp-max", "pdp-opt", "pdp-opt-expected", "uniform-mean", "public-mean")
MEDIANS = ("weighted-median", "uniform-median", "pe-median", "public-median")


def laplace_draws(name: str) -> int:
    """Laplace draws one release of the named estimator makes (0: none)."""
    if name == "weighted":
        return len(GROUPS)
    if name.startswith("pdp-") or name == "uniform-mean":
        return 1
    return 0


def dataset(seed: int = 0) -> GroupedDataset:
    rng = np.random.default_rng(seed)
    return GroupedDataset(tuple(np.clip(rng.normal(0.0, 5.0, g.size), BOUNDS.lower, BOUNDS.upper) for g in GROUPS))


def best_time(fn, repeat: int) -> float:
    fn()  # warm-up (caches, first-call set-up)
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10_000, help="trials per release call (default 10,000)")
    ap.add_argument("--repeat", type=int, default=7, help="timed calls per estimator; the best counts")
    ap.add_argument("--draws", type=int, default=2_000_000, help="NumPy Laplace draws per baseline call")
    ap.add_argument("--medians", action=argparse.BooleanOptionalAction, default=True, help="time the medians too")
    ap.add_argument("--median-trials", type=int, default=1_000, help="trials per call of the medians (default 1,000)")
    args = ap.parse_args()

    data = dataset()
    n = sum(g.size for g in GROUPS)
    print(f"dataset: {n:,} records in {len(GROUPS)} groups "
          f"({', '.join(f'{g.name} n={g.size} eps={g.epsilon:g}' for g in GROUPS)}); trials per call: {args.trials:,}")
    seeds = iter(range(10**6))
    sec = best_time(lambda: np.random.default_rng(next(seeds)).laplace(size=args.draws), args.repeat)
    base = args.draws / sec
    print(f"NumPy rng.laplace: {base / 1e6:,.1f} M draws/s (baseline)\n")
    print(f"{'estimator':<18} {'releases/s':>14} {'Laplace/release':>15} {'Laplace draws/s':>16} {'ratio':>8}")
    names = MEANS + (MEDIANS if args.medians else ())
    for name in names:
        est = make_estimator(name, GROUPS, BOUNDS, sigma2=SIGMA2, mean_square=0.0)
        trials = args.median_trials if name in MEDIANS else args.trials
        sec = best_time(lambda: est.release(data, np.random.default_rng(next(seeds)), trials), args.repeat)
        rate = trials / sec
        k = laplace_draws(name)
        draws = rate * max(k, 1)
        mark = "" if k else " *"
        print(f"{name:<18} {rate:>14,.0f} {k:>15} {draws:>16,.0f} {draws / base:>7.1%}{mark}")
    print("\n* no Laplace draws: releases/s over NumPy's Laplace draws/s (one draw per release)")


if __name__ == "__main__":
    main()
