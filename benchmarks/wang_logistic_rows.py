"""Many weighted logistic fits at once: Newton's method vectorised over fits against one fit at a time.

Algorithm 2's releases in the calibration study's public-private truths fit about 14 small logistic regressions
per call (4 columns, 19-2,000 rows, each on its own noisy subset), tens of thousands per truth.  Until
2026-12-02 ``LogisticContrast.minimize_rows`` and Algorithm 2 fitted them one by one (``fit_logistic``, each row
started from the previous row's solution); since then
:func:`~hybridpriv.families.public_private.wang.newton_rows.fit_logistic_rows` runs them together.  This script
times both on the same problems in one run and prints the ratio and how far apart the answers are (theta: the
largest absolute difference over ``max(1, ||theta||)``; the tests bound it by 1e-6, the stopping rule's accuracy).

Two layouts: ``own`` (every fit on its own points, as Algorithm 2's runs) and ``shared`` (every fit on the same
points, as Algorithm 1's trials); ``--cols 100`` is the wang-subset study's p = 100 setting.

    python benchmarks/wang_logistic_rows.py                        # 4 columns; 19, 97, 388, 2,000 rows; 14 fits a call
    python benchmarks/wang_logistic_rows.py --cols 101 --sizes 1500 --fits 3 --calls 5
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hybridpriv.families.public_private.wang.contrasts import fit_logistic
from hybridpriv.families.public_private.wang.newton_rows import fit_logistic_rows


def one_by_one(X: np.ndarray, y: np.ndarray, W: np.ndarray, l2: float) -> np.ndarray:
    """The earlier path: ``fit_logistic`` per row, each started from the previous row's solution (shared points)
    or from 0 (own points, as Algorithm 2 fitted each subset apart)."""
    out, start = np.empty((len(W), X.shape[-1])), None
    for i, w in enumerate(W):
        own = X.ndim == 3
        out[i], newton = fit_logistic(X[i] if own else X, y[i] if own else y, w, l2, None if own else start)
        start = out[i] if newton else None
    return out


def problem(rows: int, cols: int, fits: int, own: bool, rng: np.random.Generator):
    """``fits`` weight vectors (a noisy histogram clipped at 0, about half of them 0, as Algorithm 2's releases
    give) on one set of points or on ``fits`` sets; an intercept and ``cols - 1`` normal covariates."""
    shape = (fits, rows) if own else (rows,)
    X = np.concatenate([np.ones(shape + (1,)), rng.normal(size=shape + (cols - 1,))], axis=-1)
    beta = np.r_[0.3, rng.uniform(-1.0, 1.0, cols - 1) / np.sqrt(cols)]
    y = (rng.random(shape) < 1 / (1 + np.exp(-(X @ beta)))).astype(float)
    W = np.maximum(rng.poisson(2.0, (fits, rows)) + rng.laplace(0.0, 2.0, (fits, rows)), 0.0)
    return X, y, W / W.sum(axis=1, keepdims=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[19, 97, 388, 2_000])
    ap.add_argument("--cols", type=int, default=4, help="columns of the design (with its intercept)")
    ap.add_argument("--fits", type=int, default=14, help="fits per call")
    ap.add_argument("--calls", type=int, default=200, help="calls per size and layout")
    ap.add_argument("--l2", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{'layout':>7} {'rows':>6} {'fits':>6} {'one by one s':>13} {'together s':>11} {'ratio':>6} {'max diff':>9}")
    total = np.zeros(2)
    for own in (True, False):
        for rows in args.sizes:
            probs = [problem(rows, args.cols, args.fits, own, rng) for _ in range(args.calls)]
            for X, y, W in probs[:3]:  # warm both up
                one_by_one(X, y, W, args.l2), fit_logistic_rows(X, y, W, args.l2)
            t0 = time.perf_counter()
            ref = [one_by_one(X, y, W, args.l2) for X, y, W in probs]
            t1 = time.perf_counter()
            new = [fit_logistic_rows(X, y, W, args.l2)[0] for X, y, W in probs]
            t2 = time.perf_counter()
            diff = max(float((np.abs(a - b).max(axis=1) / np.maximum(1.0, np.linalg.norm(a, axis=1))).max())
                       for a, b in zip(ref, new))
            total += (t1 - t0, t2 - t1)
            print(f"{'own' if own else 'shared':>7} {rows:>6} {args.fits * args.calls:>6} {t1 - t0:>13.2f} "
                  f"{t2 - t1:>11.2f} {(t1 - t0) / (t2 - t1):>6.2f} {diff:>9.1e}")
    print(f"{'all':>7} {'':>6} {'':>6} {total[0]:>13.2f} {total[1]:>11.2f} {total[0] / total[1]:>6.2f}")


if __name__ == "__main__":
    main()
