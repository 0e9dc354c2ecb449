"""Full-scale user-item selection (Zeber & Lopatka): n = 2,000, m = 100, 100,000 matrices, k = 1..10.

The one pipeline: ``UserItemModel.fit`` (the row-sum chain), then ``evaluate`` of
``ContributionBoundedCounts(k, 1)`` for every k on the fitted posterior with ``ItemCounts()`` (the
exact risk given each matrix), then ``decide(..., dim="k")``.  It imports the package only.

Prints wall time, peak memory (this process, PyMC's sampler processes, and every dask worker
process, read in the workers with ``client.run``), Curveball trades per second, matrices per
second, and the ratio of the exact-risk path against a naive baseline measured in the same
run: dense NumPy Monte Carlo of the mechanism with R replicates on the same matrices,
extrapolated from a subset, at equal Monte Carlo error of the expected loss.

    python benchmarks/user_item_full_scale.py              # the full run (~4-5 min on a quiet 2-core machine)
    python benchmarks/user_item_full_scale.py --draws 2000 # a smaller one (~30 s)
"""

from __future__ import annotations

import os

# before numpy is imported: one thread per process, like the dask workers
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import math  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


def peak_rss_mib() -> float:
    """Peak resident memory of the calling process (run in each worker with ``client.run``)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def naive_dense_losses(mat, ks, epsilon, replicates, rng) -> np.ndarray:
    """Dense Monte Carlo: per k and replicate, keep k random items per user, count, add noise."""
    dense = mat.toarray().astype(bool)
    true = dense.sum(axis=0)
    n, m = dense.shape
    out = np.empty((len(ks), replicates))
    for j, k in enumerate(ks):
        for rep in range(replicates):
            keys = np.where(dense, rng.random((n, m)), np.inf)
            ranks = np.argsort(np.argsort(keys, axis=1), axis=1)
            kept = dense & (ranks < k)
            released = kept.sum(axis=0) + rng.laplace(0.0, k / epsilon, size=m)
            out[j, rep] = np.sum((released - true) ** 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=100_000, help="matrices (default 100,000 as in the seed)")
    ap.add_argument("--subset", type=int, default=40, help="matrices for the naive baseline's timing")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2, help="local dask workers scoring the matrices (0: this process)")
    args = ap.parse_args()

    import logging

    import pymc  # noqa: F401

    logging.getLogger("pymc").setLevel(logging.CRITICAL)
    import pickle

    from hybridpriv.models import UserItemModel
    from hybridpriv.families.user_item.model_chains import curveball

    from hybridpriv.core.random import rng as stream_rng
    from hybridpriv.engine import Engine
    from hybridpriv.engine.decision import decide
    from hybridpriv.engine.evaluate import evaluate
    from hybridpriv.estimators import ContributionBoundedCounts, ItemCounts
    from hybridpriv.spec import builtin_example_path, load_spec
    from hybridpriv.theory import user_item_risk

    ks, eps, chains = list(range(1, 11)), 1.0, 2
    spec = load_spec(builtin_example_path("favorite-sites"))
    model = UserItemModel(spec.column_sums, 2000)
    per_chain = math.ceil(args.draws / chains)

    # 1. Curveball speed alone, on a matrix of one posterior draw
    rng = np.random.default_rng(args.seed)
    one = model.fit(draws=1, tune=50, chains=1, seed=args.seed, on_unconverged="ignore").generate(0, 0, rng)
    indptr, indices = one.indptr.astype(np.int64), one.indices.astype(np.int64)
    curveball(indptr, indices, 1000, rng)  # compile
    t = time.perf_counter()
    trades = 2_000_000
    curveball(indptr, indices, trades, rng)
    trades_per_s = trades / (time.perf_counter() - t)

    # 2. the full run: row sums by UserItemModel.fit (pm.sample, 2 chains on 2 cores), matrices + exact
    #    risk through evaluate on --workers local dask workers (0: in this process)
    t0 = time.perf_counter()
    posterior = model.fit(draws=per_chain, tune=200, chains=chains, seed=args.seed, cores=chains, moves=model.total,
                          on_unconverged="warn")
    t_rows = time.perf_counter() - t0
    # the sampler's processes have ended: the largest of them (RUSAGE_CHILDREN counts only
    # ended, waited-for children, so not the dask workers, which are read below)
    peak_sampler = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    # what the engine sends every worker once: the posterior (its row-sum histograms in small integers)
    job_mib = len(pickle.dumps(posterior)) / 2**20
    idata_mib = len(pickle.dumps(posterior.idata)) / 2**20
    client = None
    peak_workers: list[float] = []
    if args.workers:
        from hybridpriv.engine.cluster import local_client

        client = local_client(args.workers)
    t1 = time.perf_counter()
    ev = evaluate({k: ContributionBoundedCounts(k, eps) for k in ks}, posterior, ItemCounts(), dim="k",
                  seed=args.seed, engine=Engine(client))
    t_mats = time.perf_counter() - t1
    if client is not None:
        peak_workers = sorted(client.run(peak_rss_mib).values())
        cluster = client.cluster
        client.close()
        cluster.close()
    wall = time.perf_counter() - t0
    risk = ev["risk"]
    dec = decide(ev, dim="k")
    peak_self = peak_rss_mib()

    # 3. the naive baseline on a subset of the same matrices, and the exact path on the same subset
    sub = [(c, d) for d in range(args.subset // chains) for c in range(chains)]
    t = time.perf_counter()
    exact_sub = []
    for c, d in sub:
        mat = posterior.generate(c, d, stream_rng(args.seed, "dataset", c, d))  # the evaluation's matrix
        exact_sub.append(user_item_risk(mat, np.array(ks), eps))
    t_exact_per = (time.perf_counter() - t) / len(sub)
    reps = 10
    t = time.perf_counter()
    naive = []
    for c, d in sub:
        mat = posterior.generate(c, d, stream_rng(args.seed, "dataset", c, d))
        naive.append(naive_dense_losses(mat, ks, eps, reps, np.random.default_rng([args.seed, c, d])))
    t_naive_per = (time.perf_counter() - t) / len(sub)  # per matrix, `reps` replicates of every k
    naive = np.array(naive)  # (matrices, k, reps)
    exact_sub = np.array(exact_sub)
    # equal MC error: exact needs M matrices with variance s_b^2 / M; naive with R replicates has
    # per-matrix variance s_b^2 + s_w^2 / R, so it needs M (1 + s_w^2 / (R s_b^2)) matrices
    s_b2 = exact_sub.var(axis=0, ddof=1)  # between matrices, per k
    s_w2 = naive.var(axis=2, ddof=1).mean(axis=0)  # within a matrix (mechanism noise), per k
    best_ratio = None
    for R in (1, 2, 5, 10, 20, 50):
        inflate = float(np.max(1 + s_w2 / (R * s_b2)))
        # per matrix: generating it (~ the exact path's whole cost) plus R dense replicates
        per_replicate = max(t_naive_per - t_exact_per, 0.0) / reps
        cost_naive = inflate * (t_exact_per + R * per_replicate)
        ratio = cost_naive / t_exact_per
        print(f"naive with R = {R:>2} replicates: {inflate:8.1f}x the matrices, cost ratio {ratio:8.1f}")
        best_ratio = ratio if best_ratio is None else min(best_ratio, ratio)

    print()
    print(f"matrices: {risk.sizes['chain'] * risk.sizes['draw']:,} (n = 2000, m = 100, k = 1..10, epsilon = {eps:g})")
    print(f"wall time: {wall:.1f} s  (row sums {t_rows:.1f} s, matrices + exact risk {t_mats:.1f} s)")
    print(f"peak memory: main process {peak_self:.0f} MiB; PyMC sampler process (largest) {peak_sampler:.0f} MiB"
          + (f"; dask workers {' + '.join(f'{w:.0f}' for w in peak_workers)} MiB; main + workers "
             f"{peak_self + sum(peak_workers):.0f} MiB (an upper bound of the memory in use at once while scoring)"
             if peak_workers else "; no dask workers (--workers 0)"))
    print(f"job sent once to every worker: the pickled posterior, {job_mib:.1f} MiB (its DataTree pickled: "
          f"{idata_mib:.1f} MiB); a task carries only its item range")
    print(f"Curveball: {trades_per_s / 1e6:.2f} M trades/s; {model.trades_per_row * 2000:,} trades per matrix")
    print(f"matrices per second (both cores, generation + exact risk): {risk.size / len(ks) / t_mats:.0f}")
    print(f"exact path vs naive dense Monte Carlo at equal MC error: {best_ratio:.0f}x faster (best R)")
    print(f"recommended k = {int(dec.attrs['recommended'])}; expected loss by k: "
          + ", ".join(f"{int(k)}: {v:.4g}" for k, v in zip(dec.k.values, dec.expected_loss.values)))


if __name__ == "__main__":
    main()
