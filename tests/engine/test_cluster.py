"""Same seed, same numbers on dask.distributed: one process vs a LocalCluster of 2 workers vs a
scheduler and workers started separately (as their own processes, on 127.0.0.1)."""

import json
import os
import signal
import subprocess
import sys
import time

import distributed  # noqa: E402  (in the test extra: a missing dask fails, never skips)
import numpy as np
import pytest
import xarray as xr
from hybridpriv.studies import read_study

from hybridpriv.core.privacy import Bounds, Group
from hybridpriv.engine import Engine
from hybridpriv.engine.evaluate import evaluate, evaluate_many
from hybridpriv.estimators import UniformMean, WeightedMean
from hybridpriv.families.grouped import normal_source

pytestmark = pytest.mark.slow  # end-to-end runs (minutes on 2 cores)

GROUPS = (Group("a", 30, 1.0), Group("b", 50, 0.2))
BOUNDS = Bounds(0.0, 10.0)


@pytest.fixture(scope="module")
def client():
    from hybridpriv.engine.cluster import local_client

    c = local_client(2)  # what --workers 2 starts
    yield c
    cluster = c.cluster
    c.close()
    cluster.close()


def _worker_settings():
    import dask

    keys = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_")
    return {k: os.environ.get(k) for k in keys}, dask.config.get("distributed.worker.profile.enabled")


def test_local_workers_are_single_threaded_processes_without_the_profiler_or_malloc_trimming(client):
    from hybridpriv.engine.cluster import worker_pids

    info = client.scheduler_info()["workers"]
    assert len(info) == 2 and all(w["nthreads"] == 1 for w in info.values())
    pids = worker_pids(client)
    assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()
    for env, profile in client.run(_worker_settings).values():
        # no MALLOC_TRIM_THRESHOLD_ (dask's default 65536 costs +20% CPU per user-item matrix in page faults)
        assert env == {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
                       "MALLOC_TRIM_THRESHOLD_": None}
        assert profile is False


def test_chunk_sizes_give_every_task_the_same_work_between_100_ms_and_a_second():
    from hybridpriv.engine.chunks import chunk_size_for, chunk_sizes_for

    # 2.5 ms per item (a user-item matrix): 1 s = 400 items, 100 ms = 40 items
    assert chunk_size_for(0.0025, 100_000) == 400          # full scale: 250 tasks of ~1 s
    assert chunk_size_for(0.0025, 3_200) == 100            # 8 s of work: 32 tasks of 0.25 s
    assert chunk_size_for(0.0025, 100) == 40               # never under 100 ms of work
    assert chunk_size_for(0.0025, 30) == 30                # one chunk holds a small section
    assert chunk_size_for(5.0, 10) == 1                    # slow items: one per task
    assert chunk_size_for(0.0, 7) == 7                     # unmeasurably fast: one chunk
    # a grid of 1 + 4 + 1 = 6 s of work: 6/32 = 0.1875 s per task in every section, whatever its items cost
    assert chunk_sizes_for([2**-10, 2**-8, 2**-12], [1024, 1024, 4096]) == [192, 48, 768]


def _ests():
    return [WeightedMean(GROUPS, BOUNDS, 4.0), UniformMean(GROUPS, BOUNDS)]


def test_evaluate_on_a_cluster_equals_one_process(client):
    src = normal_source(GROUPS, BOUNDS, 5.0, 2.0, 40)
    here = evaluate(_ests(), src, trials=5, seed=7, engine=Engine(chunk_size=4))
    there = evaluate(_ests(), src, trials=5, seed=7, engine=Engine(client, chunk_size=9))
    xr.testing.assert_identical(here, there)
    other_seed = evaluate(_ests(), src, trials=5, seed=8, engine=Engine(client, chunk_size=9))
    assert not np.array_equal(here.estimate.values, other_seed.estimate.values)


def test_evaluate_many_on_a_cluster_equals_one_process(client):
    def runs():
        for n in (10, 40):
            groups = (Group("a", n, 1.0), Group("b", 50, 0.2))
            yield {"n": n}, [WeightedMean(groups, BOUNDS, 4.0), UniformMean(groups, BOUNDS)], normal_source(
                groups, BOUNDS, 5.0, 2.0, 30)

    here = evaluate_many(runs(), {"n": [10, 40]}, trials=3, seed=2)
    there = evaluate_many(runs(), {"n": [10, 40]}, trials=3, seed=2, engine=Engine(client, chunk_size=7))
    xr.testing.assert_identical(here, there)


def test_a_client_that_is_not_a_dask_client_is_refused():
    src = normal_source(GROUPS, BOUNDS, 5.0, 2.0, 4)
    with pytest.raises(TypeError, match="client must be a dask.distributed.Client or None, got str"):
        evaluate(_ests(), src, engine=Engine(client="tcp://127.0.0.1:8786"))


def test_importing_never_imports_dask_and_running_without_a_client_never_imports_distributed():
    # (xarray itself imports dask.array while building datasets when dask is installed)
    code = (
        "import sys, hybridpriv, hybridpriv.cli, hybridpriv.engine.evaluate, hybridpriv.models, hybridpriv.studies\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))\n"
        "from hybridpriv.families.grouped import normal_source\nfrom hybridpriv.estimators import UniformMean\n"
        "from hybridpriv.core.privacy import Bounds, Group\n"
        "g = (Group('a', 5, 1.0),); b = Bounds(0.0, 1.0)\n"
        "hybridpriv.engine.evaluate.evaluate([UniformMean(g, b)], normal_source(g, b, 0.5, 0.2, 3), seed=1)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'distributed'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["[]", "[]"]


def test_workers_without_dask_installed_is_one_error_line(monkeypatch, capsys, tmp_path):
    from hybridpriv.cli import main

    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    code = main(["study", "run", "ferrando-means", "--quick", "--workers", "2", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("error: dask.distributed is not installed: pip install 'hybridpriv[distributed]'")


def test_workers_and_scheduler_exclude_each_other(capsys, tmp_path):
    from hybridpriv.cli import main

    code = main(["study", "run", "ferrando-means", "--quick", "--workers", "2", "--scheduler", "tcp://127.0.0.1:1",
                 "--out", str(tmp_path)])
    assert code == 2 and capsys.readouterr().err == "error: --workers and --scheduler exclude each other\n"


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "hybridpriv.cli", "study", "run", "ferrando-means", "--quick",
                           "--seed", "3", *args], capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.fixture
def scheduler(tmp_path):
    """`dask scheduler` and `dask worker --nworkers 2` as separate processes on 127.0.0.1."""
    sched_file = tmp_path / "scheduler.json"
    common = {"cwd": tmp_path, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "start_new_session": True}
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", "0", "--no-dashboard", "--scheduler-file", str(sched_file)], **common)]
    try:
        deadline, address = time.monotonic() + 60, ""
        while not address and time.monotonic() < deadline:  # the scheduler writes its file in steps: read it whole
            time.sleep(0.1)
            try:
                address = json.loads(sched_file.read_text())["address"]
            except (FileNotFoundError, ValueError, KeyError):
                pass
        assert address.startswith("tcp://127.0.0.1:")
        procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--host",
                                       "127.0.0.1", "--nworkers", "2", "--nthreads", "1", "--no-dashboard"], **common))
        with distributed.Client(address, timeout=30) as c:
            c.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for p in reversed(procs):
            os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def test_study_gives_identical_data_in_one_process_on_two_local_workers_and_on_a_separate_scheduler(
        scheduler, tmp_path):
    runs = {"one": _cli("--out", "one", cwd=tmp_path),
            "local": _cli("--out", "local", "--workers", "2", cwd=tmp_path),
            "sched": _cli("--out", "sched", "--scheduler", scheduler, cwd=tmp_path)}
    for name, proc in runs.items():
        assert proc.returncode == 0, (name, proc.stderr[-2000:])
    ds = {name: read_study(tmp_path / name / "ferrando-means.nc") for name in runs}
    for name in ("local", "sched"):
        xr.testing.assert_identical(ds["one"].drop_attrs(), ds[name].drop_attrs())
    assert ds["one"].attrs["dask"] == "none"
    assert ds["local"].attrs["dask"] == "local 2 workers"
    assert ds["sched"].attrs["dask"] == f"scheduler {scheduler} (2 workers)"
    for d in ds.values():
        assert d.attrs["seed"] == 3 and json.loads(d.attrs["config"])["seed"] == 3
        assert d.attrs["wall_time_seconds"] > 0 and d.attrs["hybridpriv_version"] and d.attrs["git_hash"]


def test_a_kept_stage_is_written_and_read_back_while_a_client_is_open(client, tmp_path):
    # xarray takes netCDF locks from dask's current scheduler; with a client open that was a
    # distributed lock named after an in-memory file, which failed (`study run --workers 2 --resume`)
    from hybridpriv.engine.checkpoint import Checkpoint

    ds = xr.Dataset({"h": (("chain", "draw", "items"), np.arange(24).reshape(2, 3, 4))},
                    coords={"chain": [0, 1], "draw": [0, 1, 2]})
    with Checkpoint(tmp_path, {"seed": 0}) as ck:
        xr.testing.assert_identical(ck.dataset("row-sums", {"seed": 0}, lambda: ds), ds)
    with Checkpoint(tmp_path, {"seed": 0}) as ck:
        again = ck.dataset("row-sums", {"seed": 0}, lambda: (_ for _ in ()).throw(AssertionError("made again")))
    xr.testing.assert_identical(again, ds)
