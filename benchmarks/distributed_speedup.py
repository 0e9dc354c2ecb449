"""Speed-up of the evaluation engine on a local dask cluster of 2 single-threaded worker
processes over one process, and the per-task overhead.

Measured: the chunk-scoring stage of the user-item study (``posterior_risks``: matrices made
and scored inside the tasks) at ``--draws`` matrices (the full study is 100,000; its PyMC
row-sum chain is sampled once beforehand and timed apart), and the grid study ferrando-means
at full settings (7 n x 1,000 trials, 6 estimators): its engine stage (``evaluate_many`` with
the estimators built beforehand) and the whole study (whose building of the PDP thresholds is
serial).  The workers are warmed up first (imports, kernel compilation), timed apart.  Both runs of each
must give identical numbers, which is checked.  The cluster's start-up is reported apart.
The per-task overhead is the wall time per task of tasks doing no work, submitted the way the
engine submits its chunks.

    python benchmarks/distributed_speedup.py                   # 20,000 matrices
    python benchmarks/distributed_speedup.py --draws 100000    # the full-scale user-item study
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import xarray as xr


def _noop(job, task):
    return {"x": np.zeros(1)}


def _ferrando_runs(ns):
    """The full ferrando-means settings, as the study builds them."""
    from hybridpriv.data import normal_source
    from hybridpriv.estimators import PDPSample, WeightedMean
    from hybridpriv.studies import ferrando_means as fm

    for n in ns:
        groups, sigma2 = fm.setting(n)
        ests = {"weighted": WeightedMean(groups, fm.BOUNDS, sigma2)}
        for rule in ("min", "opt", "avg", "max"):
            ests[f"pdp-{rule}"] = PDPSample(groups, fm.BOUNDS, rule, sigma2=sigma2)
        ests["pdp-opt-expected"] = PDPSample(groups, fm.BOUNDS, "opt", sigma2=sigma2, denominator="expected",
                                             mean_square=0.0)
        yield {"n": n}, ests, normal_source(groups, fm.BOUNDS, fm.MU, fm.SIGMA, draws=1000)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=20_000, help="user-item matrices (the full study: 100,000)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import logging

    import pymc  # noqa: F401

    for name in ("pymc", "distributed", "distributed.worker", "distributed.scheduler", "distributed.nanny"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    from hybridpriv.chunks import Section, run_sections
    from hybridpriv.cluster import local_client
    from hybridpriv.evaluate import evaluate_many
    from hybridpriv.models import UserItemModel
    from hybridpriv.spec import builtin_example_path, load_spec
    from hybridpriv.studies import ferrando_means, zeber_user_item
    from hybridpriv.useritem import posterior_risks

    t0 = time.perf_counter()
    client = local_client(args.workers)
    startup = time.perf_counter() - t0
    print(f"local cluster: {args.workers} worker processes x 1 thread, started in {startup:.1f}s")

    # per-task overhead: tasks doing nothing, submitted as the engine submits chunks
    n_tasks = 400
    sec = Section("noop", _noop, None, n_tasks)
    run_sections([sec], chunk_size=1, client=client)  # warm
    t0 = time.perf_counter()
    run_sections([sec], chunk_size=1, client=client)
    overhead = (time.perf_counter() - t0) / n_tasks
    print(f"per-task overhead: {overhead * 1e3:.2f} ms wall per task ({n_tasks} empty tasks on {args.workers} workers)")

    rows = []
    # user-item: the row-sum chain is sampled once (PyMC, 2 chains), then the engine's stage is timed
    spec = load_spec(builtin_example_path("favorite-sites"))
    model = UserItemModel(spec.column_sums, 2000)
    per_chain = math.ceil(args.draws / zeber_user_item.CHAINS)
    t0 = time.perf_counter()
    idata = model.sample(draws=per_chain, tune=200, chains=zeber_user_item.CHAINS, seed=args.seed,
                         cores=zeber_user_item.CHAINS, moves=model.total)
    sampling = time.perf_counter() - t0
    ks = zeber_user_item.KS
    # warm-up: the workers' first task imports hybridpriv.models (PyMC) and compiles the kernels
    t0 = time.perf_counter()
    small = model.sample(draws=4, tune=20, chains=2, seed=args.seed, moves=model.total)
    posterior_risks(model, small, ks, 1.0, seed=args.seed, client=client, chunk_size=2)
    print(f"worker warm-up (imports, kernel compilation; once per cluster): {time.perf_counter() - t0:.1f}s")
    t0 = time.perf_counter()
    one = posterior_risks(model, idata, ks, 1.0, seed=args.seed)
    t_one = time.perf_counter() - t0
    t0 = time.perf_counter()
    two = posterior_risks(model, idata, ks, 1.0, seed=args.seed, client=client)
    t_two = time.perf_counter() - t0
    xr.testing.assert_identical(one, two)
    rows.append((f"user-item risks, {2 * per_chain:,} matrices", t_one, t_two))
    print(f"  (row-sum chain for {2 * per_chain:,} matrices sampled once beforehand in {sampling:.1f}s; "
          "it is PyMC's 2-chain sampler, not part of the engine)")

    # the grid study: its engine stage (estimators built beforehand) and the whole study
    ns = [100, 200, 500, 1000, 2000, 5000, 10000]
    runs = list(_ferrando_runs(ns))
    t0 = time.perf_counter()
    a = evaluate_many(runs, {"n": ns}, trials=1, seed=args.seed)
    e_one = time.perf_counter() - t0
    t0 = time.perf_counter()
    b = evaluate_many(runs, {"n": ns}, trials=1, seed=args.seed, client=client)
    e_two = time.perf_counter() - t0
    xr.testing.assert_identical(a, b)
    rows.append(("ferrando-means engine stage (7 n x 1,000)", e_one, e_two))
    t0 = time.perf_counter()
    a = ferrando_means.run(quick=False, seed=args.seed)
    f_one = time.perf_counter() - t0
    t0 = time.perf_counter()
    b = ferrando_means.run(quick=False, seed=args.seed, client=client)
    f_two = time.perf_counter() - t0
    xr.testing.assert_identical(a, b)
    rows.append(("ferrando-means whole study (serial set-up)", f_one, f_two))

    client.close()
    print(f"{'stage':<45} {'1 process':>10} {f'{args.workers} workers':>10} {'speed-up':>9}")
    for name, t1, t2 in rows:
        print(f"{name:<45} {t1:>9.1f}s {t2:>9.1f}s {t1 / t2:>8.2f}x")
    print("identical numbers in both runs: yes (xarray.testing.assert_identical)")


if __name__ == "__main__":
    main()
