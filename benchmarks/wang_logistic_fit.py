"""Weighted logistic fits of Wang et al.'s Algorithm 1: the earlier trust-exact fit against Newton's method.

The ``wang-subset`` study's p = 100 repeats spent most of their time in
``LogisticContrast.minimize`` (issue 13).  This script times, in one run on the same problems, the
earlier fit (SciPy ``trust-exact`` from 0 with the analytic gradient and Hessian, kept in the package
as the fallback, ``contrasts._trust_exact``) and the current one (:meth:`LogisticContrast.minimize_rows`: Newton's method on
the positive-weight rows, each row started from the previous row's solution; and
:meth:`LogisticContrast.minimize`, one fit from 0 as :func:`m_estimate` does).  The setting is the
study's: Section 5.1 data with ``n_E = 10,000`` public points and p = 100 covariates (no
intercept), Algorithm 1 on the first ``n`` of them, weights ``max(counts + Laplace(2 / eps), 0) /
n_D`` with ``counts`` a multinomial spread of ``n_D = 10,000`` private points.  It prints seconds
per fit, the ratio, and how far the answers are apart (objective: relative; theta: max absolute
difference over ``max(1, ||theta||)``).

    python benchmarks/wang_logistic_fit.py                 # n = 1,500 and 9,900, eps = 0.6 and 1.2, 3 rows each
    python benchmarks/wang_logistic_fit.py --rows 2 --sizes 1500
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from hybridpriv.families.public_private.wang import LogisticContrast
from hybridpriv.families.public_private.wang.contrasts import _trust_exact
from hybridpriv.families.public_private.wang.sources import simulate_section51


def reference(c: LogisticContrast, points: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The earlier ``LogisticContrast.minimize``: trust-exact from 0 on every row (the package's fallback)."""
    X, y = c.split(points)
    return _trust_exact(X, y, weights, c.l2)


def objective(c: LogisticContrast, points: np.ndarray, weights: np.ndarray, theta: np.ndarray) -> float:
    X, y = c.split(points)
    eta = X @ theta
    return float(weights @ (np.logaddexp(0.0, eta) - y * eta) + 0.5 * c.l2 * theta @ theta)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_500, 9_900])
    ap.add_argument("--epsilons", type=float, nargs="+", default=[0.6, 1.2])
    ap.add_argument("--rows", type=int, default=3, help="noisy weight vectors per (size, epsilon): one minimize_rows call")
    ap.add_argument("--p", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    n_d = n_e = 10_000
    data = simulate_section51(args.p, n_d, n_e, rng)
    public = np.column_stack([data["Xe"], data["ye"]])
    c = LogisticContrast()
    print(f"p = {args.p}, n_D = n_E = {n_e:,}, {args.rows} rows per call; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}, {os.cpu_count()} CPUs")
    print(f"{'n':>6} {'eps':>4} {'zeros':>6} {'old s/fit':>10} {'rows s/fit':>11} {'ratio':>6} "
          f"{'cold s/fit':>11} {'ratio':>6} {'obj rel diff':>13} {'theta diff':>11}")
    totals = np.zeros(3)
    for n in args.sizes:
        points = public[:n]
        counts = rng.multinomial(n_d, rng.dirichlet(np.ones(n)))
        for eps in args.epsilons:
            W = np.maximum(counts + rng.laplace(0.0, 2.0 / eps, (args.rows, n)), 0.0) / n_d
            W /= W.sum(axis=1, keepdims=True)  # as fit_rows passes them
            t0 = time.perf_counter()
            old = np.stack([reference(c, points, w) for w in W])
            t1 = time.perf_counter()
            rows = c.minimize_rows(points, W)
            t2 = time.perf_counter()
            cold = np.stack([c.minimize(points, w) for w in W])
            t3 = time.perf_counter()
            sec = np.array([t1 - t0, t2 - t1, t3 - t2]) / args.rows
            totals += sec
            f_rel = max(abs(objective(c, points, w, new) - objective(c, points, w, o)) / abs(objective(c, points, w, o))
                        for w, o, news in zip(W, old, zip(rows, cold)) for new in news)
            th = max(np.abs(new - o).max() / max(1.0, np.linalg.norm(o))
                     for o, news in zip(old, zip(rows, cold)) for new in news)
            print(f"{n:>6} {eps:>4g} {np.mean(W == 0):>6.1%} {sec[0]:>10.3f} {sec[1]:>11.4f} {sec[0] / sec[1]:>6.1f} "
                  f"{sec[2]:>11.4f} {sec[0] / sec[2]:>6.1f} {f_rel:>13.1e} {th:>11.1e}")
    k = len(args.sizes) * len(args.epsilons)
    print(f"mean over settings: old {totals[0] / k:.3f} s/fit, rows {totals[1] / k:.4f} s/fit "
          f"(ratio {totals[0] / totals[1]:.1f}), cold {totals[2] / k:.4f} s/fit (ratio {totals[0] / totals[2]:.1f})")


if __name__ == "__main__":
    main()
