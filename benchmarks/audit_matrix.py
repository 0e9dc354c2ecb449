"""Run the full audit matrix (hybridpriv.testing.matrix) over repeated seeds: power and false-alarm rate.

Every case of ``MATRIX`` (each DP-claiming mechanism under each relation it offers, over bounds
[-1, 1], [10, 20], [-20, -10] and [-1, 5], each unit in turn; broken variants included) is
audited ``--seeds`` times with fresh seeds.  Printed:

* per case: the median over seeds of the lower bound / claim ratio of each audited unit
  (below 1: pass), and how often the case was flagged;
* **power**: the share of broken-variant audits that flag the unit whose promise is broken;
* **false-alarm rate**: the share of correct-mechanism audits that flag any unit (the design
  bound is 1 - confidence = 1%).

Cases marked ``NOT BROKEN HERE`` (PDP Sample before commit dc0982c, at bounds where its promise
happens to hold) count in neither rate.  Each rate has a one-sided 95% Clopper-Pearson bound.

    python benchmarks/audit_matrix.py --seeds 10          # the full matrix (about 20 min on 2 free cores)
    python benchmarks/audit_matrix.py --quick              # CI's subset, 3 seeds
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import statistics
import time

from scipy import stats

#: Seeds of the benchmark runs start here (the tests use seeds 0-3).
SEED0 = 20_000


def _init() -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def _task(args: tuple[str, int, int]) -> tuple[str, int, dict[str, tuple[float, bool]], float]:
    """Run one case at one seed: (name, seed, {unit: (bound / claim, flagged)}, seconds)."""
    from hybridpriv.testing.matrix import MATRIX

    name, seed, samples = args
    t0 = time.perf_counter()
    reports = MATRIX[name].run(seed, samples=samples)
    units = {u: (r.epsilon_lower_bound / r.epsilon if r.epsilon > 0 else (math.inf if r.epsilon_lower_bound > 0 else 0.0),
                 not r.passed) for u, r in reports.items()}
    return name, seed, units, time.perf_counter() - t0


def clopper_pearson_one_sided(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """One-sided Clopper-Pearson bounds at ``level``: (lower bound, upper bound) of a binomial rate."""
    a = 1.0 - level
    lo = 0.0 if k == 0 else float(stats.beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10, help="audits per case (default 10)")
    ap.add_argument("--samples", type=int, default=50_000, help="outputs per dataset (default 50,000)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="only the CI subset (matrix.QUICK), 3 seeds")
    args = ap.parse_args()

    from hybridpriv.testing.matrix import MATRIX, QUICK

    names = list(QUICK) if args.quick else list(MATRIX)
    seeds = 3 if args.quick else args.seeds
    tasks = [(n, SEED0 + i, args.samples) for n in names for i in range(seeds)]
    t0 = time.perf_counter()
    with mp.get_context("spawn").Pool(args.workers, initializer=_init) as pool:
        results = list(pool.imap_unordered(_task, tasks, chunksize=2))
    wall = time.perf_counter() - t0

    by_case: dict[str, list] = {}
    for name, seed, units, secs in results:
        by_case.setdefault(name, []).append((units, secs))
    power_k = power_n = fa_k = fa_n = 0
    print(f"{'case':<92} {'flagged':>8}  median bound / claim per unit")
    for name in names:
        case, rows = MATRIX[name], by_case[name]
        unit_names = list(rows[0][0])
        medians = {u: statistics.median(r[0][u][0] for r in rows) for u in unit_names}
        if case.broken:
            flagged = sum(r[0][case.target][1] for r in rows)
            power_k += flagged
            power_n += len(rows)
        else:
            flagged = sum(any(f for _, f in r[0].values()) for r in rows)
            if not name.startswith("NOT BROKEN"):
                fa_k += flagged
                fa_n += len(rows)
        ratios = ", ".join(f"{u} {v:.2f}" for u, v in medians.items())
        print(f"{name:<92} {flagged:>3}/{len(rows):<4}  {ratios}")
    plo, _ = clopper_pearson_one_sided(power_k, power_n)
    _, fhi = clopper_pearson_one_sided(fa_k, fa_n)
    print()
    print(f"power: {power_k}/{power_n} broken-variant audits caught ({100 * power_k / max(power_n, 1):.1f}%, "
          f"95% lower bound {100 * plo:.1f}%)")
    print(f"false-alarm rate: {fa_k}/{fa_n} correct-mechanism audits flagged ({100 * fa_k / max(fa_n, 1):.2f}%, "
          f"95% upper bound {100 * fhi:.2f}%)")
    print(f"{len(names)} cases x {seeds} seeds = {len(tasks)} audits, {args.samples:,} outputs per dataset, "
          f"confidence 0.99, in {wall / 60:.1f} min on {args.workers} workers; seeds {SEED0} + run index")


if __name__ == "__main__":
    main()
