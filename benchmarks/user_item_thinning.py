"""How many Curveball trades does a user-item matrix need?  The measured criterion behind the default.

Every matrix :meth:`UserItemModel.matrix_for` returns starts from the greedy realization of its
margins (one fixed, highly structured matrix per row-sum histogram) and then runs
``trades_per_row * n`` Curveball trades.  Too few trades leave the matrix near its start and bias
every risk computed from it.  The criterion (issue 12): the expected exact risk of
``ContributionBoundedCounts(k, epsilon)``, for every k, lies within 0.5% of the risk after a
50x longer chain, at study scale (the built-in ``favorite-sites`` example: n = 2,000 users,
m = 100 items, epsilon = 1, k = 1..10).

Method: a few posterior draws of the row sums (``UserItemModel.fit``); for each, ``--chains``
independent Curveball chains from the greedy realization, the exact risk
(:func:`hybridpriv.theory.user_item_risk`) read at checkpoints ``t n`` trades along the same chain.
For each candidate ``T`` the paired difference ``risk(T n) - risk(50 T n)`` over chains, relative to
the mean ``risk(50 T n)``, is reported with its standard error; the verdict needs the upper end
of a 95% interval of the worst k's relative difference below 0.5%.

    python benchmarks/user_item_thinning.py                # about 3-4 minutes on one core
    python benchmarks/user_item_thinning.py --chains 16    # a quick look (~1 minute)
    python benchmarks/user_item_thinning.py --example flights   # the real NYC flights margins (n = 620, m = 47)
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

CANDIDATES = (1, 2, 5, 10, 20)
LONGER = 50


def trajectories(model, hists, chains, checkpoints, ks, eps, seed, start):
    """Exact risks ``(histogram, chain, checkpoint, k)`` along chains from ``start``: "greedy" (the
    one greedy realization of the margins) or "random" (``random_start``, a fresh random matrix)."""
    import scipy.sparse as sp
    from hybridpriv.families.user_item.model_chains import curveball, random_start

    from hybridpriv.core.random import rng as stream
    from hybridpriv.theory import user_item_risk

    out = np.empty((len(hists), chains, len(checkpoints), len(ks)))
    for a, h in enumerate(hists):
        for b in range(chains):
            gen = stream(seed, "thinning", a, b)
            if start == "greedy":
                indptr, indices = model._realize(h)
            else:
                r = np.repeat(np.arange(model.m, 0, -1), np.asarray(h)[::-1])
                indptr, indices = random_start(r, model._c_sorted, gen)
            n = indptr.size - 1
            done = 0
            for t, per_row in enumerate(checkpoints):
                curveball(indptr, indices, per_row * n - done, gen)
                done = per_row * n
                mat = sp.csr_matrix((np.ones(indices.size, dtype=np.int8), indices, indptr), shape=(n, model.m))
                out[a, b, t] = user_item_risk(mat, np.asarray(ks), eps)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--histograms", type=int, default=4, help="posterior draws of the row sums")
    ap.add_argument("--chains", type=int, default=40, help="independent chains per histogram")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--example", default="favorite-sites",
                    help="built-in user-item example whose margins are used (flights: real NYC flights)")
    args = ap.parse_args()

    import logging

    logging.getLogger("pymc").setLevel(logging.CRITICAL)
    from hybridpriv.models import UserItemModel

    from hybridpriv.spec import builtin_example_path, load_spec

    spec = load_spec(builtin_example_path(args.example))
    n_users, m_items = spec.values.n, len(spec.column_sums)
    model = UserItemModel(spec.column_sums, n_users)
    where = f"{args.example}: n = {n_users:,}, m = {m_items}"
    ks, eps = list(range(1, 11)), 1.0
    t0 = time.perf_counter()
    post = model.fit(draws=args.histograms, tune=300, chains=1, seed=args.seed, on_unconverged="ignore",
                     progressbar=False)
    hists = [post.histogram(0, d) for d in range(args.histograms)]
    t_fit = time.perf_counter() - t0
    checkpoints = sorted({*CANDIDATES, *(LONGER * t for t in CANDIDATES)})
    for start in ("greedy", "random"):
        t1 = time.perf_counter()
        risks = trajectories(model, hists, args.chains, checkpoints, ks, eps, args.seed, start)
        print(f"\nstart: {start}; {where}, epsilon = {eps:g}, k = 1..10: "
              f"{args.histograms} row-sum draws x {args.chains} chains, {time.perf_counter() - t1:.0f} s")
        print(f"{'trades per row T':>17} | worst k | risk(T n) / risk({LONGER} T n) - 1 | s.e. | 95% upper | verdict")
        chosen = None
        for T in CANDIDATES:
            a, b = checkpoints.index(T), checkpoints.index(LONGER * T)
            diff = (risks[:, :, a] - risks[:, :, b]).reshape(-1, len(ks))  # (histogram x chain, k)
            ref = risks[:, :, b].reshape(-1, len(ks)).mean(axis=0)
            rel = diff.mean(axis=0) / ref
            se = diff.std(axis=0, ddof=1) / np.sqrt(diff.shape[0]) / ref
            worst = int(np.argmax(np.abs(rel) + 1.96 * se))
            upper = abs(rel[worst]) + 1.96 * se[worst]
            ok = upper < 0.005
            if ok and chosen is None:
                chosen = T
            print(f"{T:>17} | {ks[worst]:>7} | {rel[worst]:+32.3%} | {se[worst]:.3%} | {upper:8.3%} | "
                  f"{'within 0.5%' if ok else 'NOT within 0.5%'}")
        print(f"start {start}: smallest T meeting the criterion: {chosen}")
    # cost per matrix of the old and the new default, on the same margins in this run
    from hybridpriv.models import TRADES_PER_ROW

    from hybridpriv.core.random import rng as stream_rng

    cost = {}
    for label, kw in (("greedy start, 5 n trades (before)", {"trades_per_row": 5, "start": "greedy"}),
                      (f"random start, {TRADES_PER_ROW} n trades (default)", {})):
        mdl = UserItemModel(spec.column_sums, n_users, **kw)
        gen = stream_rng(args.seed, "thinning-cost")
        mdl.matrix_for(hists[0], gen)  # compile
        t1 = time.perf_counter()
        for _ in range(200):
            mdl.matrix_for(hists[0], gen)
        cost[label] = (time.perf_counter() - t1) / 200
    base = next(iter(cost.values()))
    print(f"\ncost per matrix ({where}), measured side by side:")
    for label, c in cost.items():
        print(f"  {label:<38} {c * 1e3:6.2f} ms  ({c / base:.2f}x the old default)")
    print(f"\nrow-sum draws: {t_fit:.0f} s; total {time.perf_counter() - t0:.0f} s")

if __name__ == "__main__":
    main()
