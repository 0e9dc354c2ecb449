"""Speed-up of the evaluation engine on a local dask cluster of single-threaded worker processes
over one process, with the counts that explain it.

Run it on a QUIET machine (nothing else using the cores): the speed-up is a ratio of wall
times.  The script prints the load average first and warns when other processes are busy; the
counts it prints (tasks, bytes, CPU seconds per process) stay meaningful under load.

Stages (each run in one process, then on the cluster; both must give identical numbers, which
is checked):

* ``user-item``: the chunk-scoring stage of the zeber-user-item study (``evaluate`` of
  ``ContributionBoundedCounts`` over k on the fitted ``UserItemPosterior`` with ``ItemCounts``:
  matrices made and scored inside the tasks) at ``--draws`` matrices (default 100,000, the
  study's ``--full``; its PyMC row-sum chain is sampled once beforehand and timed apart);
* ``grid engine``: ferrando-means at full settings (7 n x 1,000 draws, 6 estimators), its engine
  stage (``evaluate_many``, estimators built beforehand);
* ``grid study``: the whole ferrando-means study (its PDP threshold set-up is serial).
* ``avent-pwh``: the whole avent-pwh study at default scale (exact curves plus Monte Carlo points
  through the engine), a grid study with more work per run.
* ``studies``: any registered studies (``--studies NAME,...``; default: every study that runs
  Monte Carlo through the engine, the pure-formula ones refuse ``--workers``), each whole at
  ``--study-scale`` (default or quick), in one process and on the cluster; the study's dataset
  must be identical.

Per stage and run it reports: wall time; CPU seconds of the main process (in the cluster run:
the client, the scheduler and the nannies, which LocalCluster runs in this process) and of the workers
(psutil); the number of tasks and items per task; bytes shipped with the tasks and returned;
CPU and wall seconds spent inside the tasks.  From these, ``cpu/wall`` of the one-process run
(1.00 = truly single-threaded) and the speed-up the CPU counts allow on a quiet machine:
one-process CPU / (serial + rest / workers), ``serial`` the one-process CPU outside the chunks
(set-up, assembly), ``rest`` the cluster run's other CPU (workers, nannies, main process).  Before the stages: the cluster's
start-up, the workers' warm-up (imports, numba compilation) and the per-task overhead of empty
tasks submitted as the engine submits chunks.

The numerical libraries are held to one thread in this process too (OMP/OpenBLAS/MKL/numba
variables set before numpy is imported), so the one-process baseline cannot use both cores.

    python benchmarks/distributed_speedup.py                    # all stages, 100,000 matrices (~10 min quiet)
    python benchmarks/distributed_speedup.py --draws 20000      # a shorter user-item stage (~4 min)
    python benchmarks/distributed_speedup.py --stages grid      # the grid study only (~1 min)
    python benchmarks/distributed_speedup.py --stages studies --studies avent-kvh,avent-skew
"""

from __future__ import annotations

import os

# before numpy is imported: the one-process baseline must be single-threaded like each worker
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import contextlib  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402


def _noop(job, task):
    return {"x": np.zeros(1)}


def _cpu(proc) -> float:
    t = proc.cpu_times()
    return t.user + t.system


@contextlib.contextmanager
def _engine_stats(stats: dict):
    """Collect the engine's counts: every ``hybridpriv.engine.chunks.run_sections`` call adds to ``stats``."""
    from hybridpriv.engine import chunks

    original = chunks.run_sections

    def counting(*args, **kwargs):
        got: dict = {}
        out = original(*args, **kwargs, stats=got)
        for k, v in got.items():
            stats[k] = stats.get(k, [] if isinstance(v, list) else 0) + v
        return out

    chunks.run_sections = counting
    try:
        yield stats
    finally:
        chunks.run_sections = original


class Measured:
    """Wall time and CPU seconds of this process and of the workers over a block, plus engine counts."""

    def __init__(self, workers, nannies=()):
        import psutil

        self.me = psutil.Process()
        self.workers = workers
        self.nannies = list(nannies)
        self.stats: dict = {}

    def __enter__(self):
        self._ctx = _engine_stats(self.stats)
        self._ctx.__enter__()
        self.c0 = _cpu(self.me)
        self.w0 = [_cpu(p) for p in self.workers]
        self.n0 = [_cpu(p) for p in self.nannies]
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.t0
        self.main_cpu = _cpu(self.me) - self.c0
        self.worker_cpu = [_cpu(p) - c for p, c in zip(self.workers, self.w0)]
        self.nanny_cpu = sum(_cpu(p) - c for p, c in zip(self.nannies, self.n0))
        self._ctx.__exit__(*exc)


def _report(name, one: Measured, two: Measured, n_workers: int) -> tuple:
    s1, s2 = one.stats, two.stats
    tasks = max(s2.get("tasks", 0), 1)
    print(f"\n== {name}")
    print(f"  one process : wall {one.wall:7.1f}s  CPU {one.main_cpu:7.1f}s  cpu/wall {one.main_cpu / one.wall:.2f} "
          f"(1.00 = single-threaded and alone on its core); inside chunks {s1.get('task_cpu_seconds', 0):.1f} CPU-s")
    print(f"  {n_workers} workers   : wall {two.wall:7.1f}s  main process (client + scheduler) CPU {two.main_cpu:.1f}s; "
          f"workers CPU {' + '.join(f'{c:.1f}' for c in two.worker_cpu)} s"
          + (f"; nanny processes CPU {two.nanny_cpu:.1f}s" if two.nannies else ""))
    print(f"    tasks {s2.get('tasks', 0)} (chunk sizes {sorted(set(s2.get('chunk_sizes', [])))[:8]}); "
          f"per task: {s2.get('task_cpu_seconds', 0) / tasks:.3f} CPU-s and {s2.get('task_wall_seconds', 0) / tasks:.3f} s "
          f"inside it, {s2.get('task_bytes', 0) / tasks / 1024:.1f} KiB sent, {s2.get('result_bytes', 0) / tasks / 1024:.1f} KiB back; "
          f"job {s2.get('job_bytes', 0) / 1024:.1f} KiB once per worker")
    inside = s2.get("task_cpu_seconds", 0.0)
    workers_cpu = sum(two.worker_cpu)
    print(f"    CPU outside the tasks: workers {workers_cpu - inside:.1f}s ({(workers_cpu - inside) / tasks * 1e3:.1f} ms/task), "
          f"main {two.main_cpu:.1f}s ({two.main_cpu / tasks * 1e3:.1f} ms/task); inside the tasks {inside:.1f}s vs "
          f"{s1.get('task_cpu_seconds', 0):.1f}s in one process")
    busy = s2.get("task_wall_seconds", 0.0) / (n_workers * two.wall)
    # Amdahl: the one-process work outside the chunks (set-up, assembly) stays serial in the main
    # process; the rest of the cluster run's CPU (workers, and the main process beyond that serial
    # part) spreads over the workers' cores
    serial = max(one.main_cpu - s1.get("task_cpu_seconds", 0.0), 0.0)
    spread = max(workers_cpu + two.main_cpu + two.nanny_cpu - serial, 0.0)
    bound = one.main_cpu / (serial + spread / n_workers)
    print(f"    workers busy in tasks {100 * busy:.0f}% of the wall time; speed-up the CPU counts allow on a quiet "
          f"machine {bound:.2f}x; measured {one.wall / two.wall:.2f}x")
    return name, one.wall, two.wall, bound


def _compare(name, run, client, workers, nannies, n_workers: int) -> tuple:
    """``run(client)`` in one process (``client=None``), then on the cluster: the numbers must be
    identical; the two runs' measurements reported by :func:`_report`."""
    with Measured([]) as one:
        a = run(None)
    with Measured(workers, nannies) as two:
        b = run(client)
    # everything identical except the runs' own timings (e.g. avent-bayes's ``fit_seconds``)
    xr.testing.assert_identical(_without_timings(a), _without_timings(b))
    return _report(name, one, two, n_workers)


def _without_timings(ds: xr.Dataset) -> xr.Dataset:
    return ds.assign_attrs({}).drop_attrs(deep=False).assign_attrs(
        {k: v for k, v in ds.attrs.items() if not k.endswith("_seconds")})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=100_000, help="user-item matrices (default 100,000: the full study)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stages", default="user-item,grid",
                    help="comma-separated: user-item, grid, studies (default: user-item,grid)")
    ap.add_argument("--studies", default=None, help="comma-separated study names for the studies stage "
                    "(default: every study whose run goes through the engine)")
    ap.add_argument("--study-scale", choices=("default", "quick"), default="default")
    args = ap.parse_args()
    stages = set(args.stages.split(","))
    if not stages <= {"user-item", "grid", "studies"}:
        ap.error(f"--stages must be among user-item, grid, studies; got {args.stages!r}")

    import logging

    import psutil
    import pymc  # noqa: F401

    for name in ("pymc", "distributed", "distributed.worker", "distributed.scheduler", "distributed.nanny"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    from hybridpriv.models import UserItemModel
    from hybridpriv.studies import ferrando_means, zeber_user_item

    from hybridpriv.engine import Engine
    from hybridpriv.engine.chunks import Section, run_sections
    from hybridpriv.engine.cluster import local_client, worker_pids
    from hybridpriv.engine.evaluate import evaluate, evaluate_many
    from hybridpriv.estimators import ContributionBoundedCounts, ItemCounts
    from hybridpriv.spec import builtin_example_path, load_spec

    cores = os.cpu_count() or 1
    load = os.getloadavg()[0]
    print(f"machine: {cores} cores, load average (1 min) {load:.2f} before the run")
    if load > 0.5:
        print("WARNING: other processes are using the CPUs; wall-time speed-ups below are distorted "
              "(the CPU counts are not). Rerun on a quiet machine for the figures.")

    t0 = time.perf_counter()
    client = local_client(args.workers)
    startup = time.perf_counter() - t0
    workers = [psutil.Process(pid) for pid in worker_pids(client).values()]
    # LocalCluster runs the nannies in this process; a deployment may run them apart
    nannies = list({p.parent().pid: p.parent() for p in workers if p.parent().pid != os.getpid()}.values())
    print(f"local cluster: {args.workers} worker processes x 1 thread, started in {startup:.1f}s")

    # per-task overhead: tasks doing nothing, submitted as the engine submits chunks
    n_tasks = 400
    sec = Section("noop", _noop, None, n_tasks)
    run_sections([sec], chunk_size=1, client=client)  # warm
    with Measured(workers, nannies) as m:
        run_sections([sec], chunk_size=1, client=client)
    print(f"per-task overhead ({n_tasks} empty tasks): {m.wall / n_tasks * 1e3:.2f} ms wall, "
          f"{m.main_cpu / n_tasks * 1e3:.2f} ms CPU in the main process (client + scheduler), "
          f"{sum(m.worker_cpu) / n_tasks * 1e3:.2f} ms CPU in the workers, per task")

    rows = []
    if "user-item" in stages:
        spec = load_spec(builtin_example_path("favorite-sites"))
        model = UserItemModel(spec.column_sums, 2000)
        per_chain = math.ceil(args.draws / zeber_user_item.CHAINS)
        t0 = time.perf_counter()
        posterior = model.fit(draws=per_chain, tune=200, chains=zeber_user_item.CHAINS, seed=args.seed,
                              cores=zeber_user_item.CHAINS, moves=model.total, on_unconverged="warn")
        sampling = time.perf_counter() - t0
        print(f"row-sum chain for {2 * per_chain:,} matrices sampled once beforehand in {sampling:.1f}s "
              "(PyMC, 2 chains on 2 cores; not part of the engine)")
        cands = {k: ContributionBoundedCounts(k, 1.0) for k in zeber_user_item.KS}

        def risks(source, cl, **kw):
            return evaluate(cands, source, ItemCounts(), dim="k", seed=args.seed, engine=Engine(cl, **kw))

        t0 = time.perf_counter()
        small = model.fit(draws=4, tune=20, chains=2, seed=args.seed, moves=model.total, on_unconverged="ignore")
        risks(small, client, chunk_size=2)
        risks(small, None)
        print(f"warm-up (imports, kernel compilation; once per process): {time.perf_counter() - t0:.1f}s")
        rows.append(_compare(f"user-item risks, {2 * per_chain:,} matrices", lambda cl: risks(posterior, cl),
                             client, workers, nannies, args.workers))

    if "grid" in stages:
        ns = [100, 200, 500, 1000, 2000, 5000, 10000]
        runs = list(ferrando_means.grid(ns, 1000))  # the full settings, estimators built beforehand
        evaluate_many(runs[:1], {"n": ns[:1]}, trials=1, seed=args.seed, draws=20, engine=Engine(client))  # warm
        rows.append(_compare("ferrando-means engine stage (7 n x 1,000)",
                             lambda cl: evaluate_many(runs, {"n": ns}, trials=1, seed=args.seed, engine=Engine(cl)),
                             client, workers, nannies, args.workers))
        rows.append(_compare("ferrando-means whole study (serial set-up)",
                             lambda cl: ferrando_means.run(quick=False, seed=args.seed, engine=Engine(cl)),
                             client, workers, nannies, args.workers))
        # a grid study with more Monte Carlo work: Avent et al. Fig. 3 (exact curves + engine MC points)
        from hybridpriv.studies import avent_pwh

        rows.append(_compare("avent-pwh whole study (default scale)",
                             lambda cl: avent_pwh.run(quick=False, seed=args.seed, engine=Engine(cl)),
                             client, workers, nannies, args.workers))

    if "studies" in stages:
        from hybridpriv.studies import STUDIES

        names = args.studies.split(",") if args.studies else list(STUDIES)
        unknown = [n for n in names if n not in STUDIES]
        if unknown:
            ap.error(f"--studies: unknown {unknown}; known: {', '.join(STUDIES)}")
        quick = args.study_scale == "quick"
        for name in names:
            module = STUDIES[name].module
            try:
                module.run(quick=True, seed=args.seed, engine=Engine(client))  # warm-up; formula studies refuse
            except ValueError as exc:
                if "does not apply" in str(exc) or "do not apply" in str(exc):
                    print(f"\n== {name}: no Monte Carlo through the engine ({exc}); skipped")
                    continue
                raise
            rows.append(_compare(f"{name} whole study ({args.study_scale} scale)",
                                 lambda cl, m=module: m.run(quick=quick, seed=args.seed, engine=Engine(cl)),
                                 client, workers, nannies, args.workers))

    cluster = client.cluster
    client.close()
    cluster.close()
    load_after = os.getloadavg()[0]
    print(f"\n{'stage':<45} {'1 process':>10} {f'{args.workers} workers':>10} {'speed-up':>9} {'CPU bound':>10}")
    for name, t1, t2, bound in rows:
        print(f"{name:<45} {t1:>9.1f}s {t2:>9.1f}s {t1 / t2:>8.2f}x {bound:>9.2f}x")
    print("identical numbers in both runs: yes (xarray.testing.assert_identical)")
    print(f"load average (1 min) after the run: {load_after:.2f} (includes this benchmark's own processes)")


if __name__ == "__main__":
    main()
