"""Small weighted logistic fits (the calibration's public-private truths): per-iteration overhead of Newton's method.

The public-private truths of the calibration study fit tens of thousands of logistic regressions of 4 columns
and 19-2,000 rows (``minimize_rows`` inside Algorithm 2's releases): 45% of a truth's time in one profile
(twenty-ninth -> thirtieth session), most of it numpy call overhead, not arithmetic.  This script times, in one
run on the same problems, the package's Newton loop against its previous helpers (kept here as the reference: the Hessian's diagonal ridge
through ``np.diag_indices_from``, the symmetric Hessian's 1-norm through ``np.triu``, the cached ``eta`` checked
with ``np.array_equal``; the loop itself is the package's in both), and checks that both give the same bits.

    python benchmarks/wang_logistic_small.py               # 2,000 problems of each size, l2 = 0.01
    python benchmarks/wang_logistic_small.py --problems 200
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hybridpriv.families.public_private.wang import contrasts


class _Reference(contrasts._Weighted):
    """The inner loop's helpers as they were before (same arithmetic, more numpy calls per iteration)."""

    def eta(self, theta: np.ndarray) -> np.ndarray:
        if self._theta is None or not np.array_equal(theta, self._theta):
            self._theta, self._eta = theta.copy(), self.X @ theta
            self._s = contrasts.special.expit(self._eta)
        return self._eta

    def hess_upper(self, theta: np.ndarray) -> np.ndarray:
        self.eta(theta)
        s = self._s
        z = self.X * np.sqrt(self.w * s * (1.0 - s))[:, None]
        h = contrasts.linalg.blas.dsyrk(1.0, z.T, trans=0, lower=0)
        h[np.diag_indices_from(h)] += self.l2
        return h


def _reference_one_norm(h: np.ndarray) -> float:
    """``contrasts._one_norm`` before: the symmetric Hessian through ``np.triu``."""
    sym = h + np.triu(h, 1).T
    return float(np.abs(sym).sum(axis=0).max())


def _reference_newton(prob: contrasts._Weighted, theta: np.ndarray) -> np.ndarray | None:
    """``contrasts._newton`` with the earlier 1-norm (the loop itself is shared: only its helpers differ)."""
    one_norm, contrasts._one_norm = contrasts._one_norm, _reference_one_norm
    try:
        return contrasts._newton(prob, theta)
    finally:
        contrasts._one_norm = one_norm


def problems(rows: int, count: int, rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``count`` problems of ``rows`` rows: an intercept and three normal covariates, labels from a logistic law,
    weights a noisy histogram clipped at 0 (as Algorithm 2's releases give them; about half the rows weigh 0)."""
    out = []
    for _ in range(count):
        X = np.column_stack([np.ones(rows), rng.normal(size=(rows, 3))])
        y = (rng.random(rows) < 1 / (1 + np.exp(-(X @ np.array([0.3, 1.0, -0.5, 0.2]))))).astype(float)
        w = np.maximum(rng.poisson(2.0, rows) + rng.laplace(0.0, 2.0, rows), 0.0)
        out.append((X, y, w / w.sum()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=2_000, help="problems per size")
    ap.add_argument("--sizes", type=int, nargs="+", default=[19, 97, 388, 2_000])
    ap.add_argument("--l2", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{'rows':>6} {'problems':>9} {'reference s':>12} {'package s':>10} {'ratio':>6} {'same bits':>10}")
    total = np.zeros(2)
    for rows in args.sizes:
        probs = problems(rows, args.problems, rng)
        for X, y, w in probs[:50]:  # warm both up (first calls pay for imports and caches)
            _reference_newton(_Reference(X, y, w, args.l2), np.zeros(4))
            contrasts._newton(contrasts._Weighted(X, y, w, args.l2), np.zeros(4))
        t0 = time.perf_counter()
        ref = [_reference_newton(_Reference(X, y, w, args.l2), np.zeros(4)) for X, y, w in probs]
        t1 = time.perf_counter()
        new = [contrasts._newton(contrasts._Weighted(X, y, w, args.l2), np.zeros(4)) for X, y, w in probs]
        t2 = time.perf_counter()
        same = all((a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))
                   for a, b in zip(ref, new))
        total += (t1 - t0, t2 - t1)
        print(f"{rows:>6} {args.problems:>9} {t1 - t0:>12.2f} {t2 - t1:>10.2f} {(t1 - t0) / (t2 - t1):>6.2f} {str(same):>10}")
    print(f"{'all':>6} {'':>9} {total[0]:>12.2f} {total[1]:>10.2f} {total[0] / total[1]:>6.2f}")


if __name__ == "__main__":
    main()
