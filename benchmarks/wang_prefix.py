"""Nearest public points for every candidate size of one public order: one pass against a search per size.

Wang et al.'s Algorithm 1 on the first ``n`` points of an order, Algorithm 2's nested candidates
and the budget-free size choice need each private point's nearest point in many prefixes of one
order.  The baseline searches every prefix afresh (the blocked exact search above 12 columns,
:func:`~hybridpriv.families.public_private.wang.weights.nearest_search`; the KD-tree at p = 2); the one-pass
path (:func:`~hybridpriv.families.public_private.wang.prefix.prefix_nearest`) makes one pass over the order by
matrix products and answers every size; at p = 2 also the direct scan the design uses up to 12
columns (:class:`~hybridpriv.families.public_private.wang.prefix.ScanPrefix`: exact distances, only as far as
the largest size).  All run in this process on the same points (the paper's Section 5.1 sizes:
``n_D = n_E = 10,000``, uniform in the unit cube), interleaved, best of ``--repeat`` runs each; the
script checks that they give the same indices (the scan: the KD-tree's distances too, bit for bit)
and prints seconds and the ratio to the per-size search.

    python benchmarks/wang_prefix.py            # p = 100 and p = 2, the study's and the paper's size grids
    python benchmarks/wang_prefix.py --quick    # n = 2,000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hybridpriv.core.random import rng
from hybridpriv.families.public_private.wang.prefix import ScanPrefix, prefix_nearest
from hybridpriv.families.public_private.wang.weights import nearest_search

GRIDS = {
    "study p=100 (9 sizes)": lambda n: [k * n // 10_000 for k in (100, 300, 700, 1500, 2500, 4000, 6000, 8000, 9900)],
    "paper (50 sizes)": lambda n: [max(1, n * k // 50) for k in range(1, 51)],
    "study p=2 (60 sizes)": lambda n: [max(1, k * n // 10_000) for k in range(10, 3000, 50)],
}


def _best(f, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    n = 2_000 if args.quick else 10_000
    prefix_nearest(np.zeros((2, 3)), np.ones((3, 3)), np.arange(3))  # compile the kernels outside the timing
    ScanPrefix(np.zeros((2, 3)), np.ones((3, 3)), np.arange(3)).query(2)
    print(f"n_D = n_E = {n:,}, best of {args.repeat}; seconds per order (all its sizes)")
    print(f"{'p':>4} {'grid':<24} {'per-size search':>16} {'one pass':>16} {'scan':>16}")
    for p in (100, 2):
        g = rng(0, "benchmark", "wang-prefix", p)
        P, E, order = g.random((n, p)), g.random((n, p)), g.permutation(n)
        for name, grid in GRIDS.items():
            if "p=" in name and f"p={p} " not in name:
                continue
            sizes = grid(n)
            method = "chunked" if p > 12 else "kdtree"
            per_size = lambda: [nearest_search(P, E[order[:k]], method) for k in sizes]  # noqa: E731
            one_pass = lambda: [r.query(k) for r in [prefix_nearest(P, E, order)] for k in sizes]  # noqa: E731
            scan = lambda: [r.query(k) for r in [ScanPrefix(P, E, order)] for k in sizes]  # noqa: E731
            a, b = per_size(), one_pass()
            assert all(np.array_equal(x[0], y[0]) for x, y in zip(a, b)), "the two paths disagree"
            t_old, t_new = _best(per_size, args.repeat), _best(one_pass, args.repeat)
            cells = [f"{t_old:>15.2f}s", f"{t_new:>8.2f}s ({t_old / t_new:4.1f}x)"]
            if p <= 12:
                c = scan()
                assert all(np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1]) for x, y in zip(a, c)), \
                    "the scan disagrees with the KD-tree"
                t_scan = _best(scan, args.repeat)
                cells.append(f"{t_scan:>8.2f}s ({t_old / t_scan:4.1f}x)")
            print(f"{p:>4} {name:<24} " + " ".join(cells))

if __name__ == "__main__":
    main()
