"""Connecting to dask.distributed for the CLI and describing the connection for provenance.

``local_client(workers)`` starts a ``LocalCluster`` of ``workers`` processes with one thread
each (the engine's tasks are single-threaded NumPy/numba), with BLAS, OpenMP and numba held to one
thread per worker (:data:`SINGLE_THREAD_ENV`), the workers' sampling profiler off (it takes
CPU from the tasks on a machine with one core per worker) and glibc's malloc left at its
defaults: dask's nannies start workers with ``MALLOC_TRIM_THRESHOLD_=65536`` (to hand freed
memory back to the OS), and setting it fixes glibc's mmap threshold at 128 KiB, so every array
above that (a user-item matrix's ``n x 2K`` risk terms: 640 KiB) is mapped and unmapped again:
~470 page faults and +20% CPU per matrix (2.8 -> 3.4 ms, measured); a task holds only one
chunk's small arrays, so trimming gains nothing.  ``scheduler_client(address)`` joins a running
scheduler.  dask is an optional extra: ``pip install hybridpriv[distributed]``.
"""

from __future__ import annotations

__all__ = ["SINGLE_THREAD_ENV", "WORKER_CONFIG", "describe_client", "local_client", "scheduler_client",
           "worker_pids"]

#: Environment of the local workers: one thread for every numerical library, so N workers use N cores.
SINGLE_THREAD_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                     "NUMBA_NUM_THREADS": "1"}
#: dask settings of the local cluster: no statistical profiler in the workers (it samples the
#: task thread every 10 ms) and a slower system monitor (idle CPU of a worker 2.5% -> 1.4%).
WORKER_CONFIG = {"distributed.worker.profile.enabled": False, "distributed.admin.system-monitor.interval": "2s"}

INSTALL_HINT = "dask.distributed is not installed: pip install 'hybridpriv[distributed]'"


def _distributed():
    try:
        import distributed
    except ImportError:
        raise ValueError(INSTALL_HINT) from None
    return distributed


def local_client(workers: int):
    """A client of a new local cluster of ``workers`` single-threaded processes (close it when done)."""
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    distributed = _distributed()
    import os

    import dask

    # the nannies hand this configuration to their workers; the environment of dask's
    # pre-spawn-environ (OMP/MKL/OpenBLAS threads = 1) is kept, less MALLOC_TRIM_THRESHOLD_ (see
    # the module docstring); env= is set in each worker before it imports numba
    pre_spawn = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}), MALLOC_TRIM_THRESHOLD_=None)
    inherited = os.environ.pop("MALLOC_TRIM_THRESHOLD_", None)  # a worker process inherits this process's
    try:
        with dask.config.set({**WORKER_CONFIG, "distributed.nanny.pre-spawn-environ": pre_spawn}):
            cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                               host="127.0.0.1", dashboard_address=None, env=dict(SINGLE_THREAD_ENV))
            return distributed.Client(cluster)
    finally:
        if inherited is not None:
            os.environ["MALLOC_TRIM_THRESHOLD_"] = inherited


def scheduler_client(address: str, timeout: float = 30):
    """A client of the running scheduler at ``address`` (e.g. ``tcp://10.0.0.5:8786``)."""
    if not isinstance(address, str) or not address.strip():
        raise ValueError(f"scheduler address must be a non-empty string such as tcp://HOST:8786, got {address!r}")
    distributed = _distributed()
    try:
        return distributed.Client(address, timeout=timeout)
    except OSError as exc:
        raise ValueError(f"cannot connect to the scheduler at {address!r}: {exc}") from None


def worker_pids(client) -> dict[str, int]:
    """Process id of every worker of ``client``'s cluster (for CPU and memory accounting)."""
    import os

    return dict(client.run(os.getpid))


def describe_client(client) -> str:
    """The dask setting for provenance: ``"none"``, ``"local N workers"`` or ``"scheduler ADDRESS (N workers)"``."""
    if client is None:
        return "none"
    n = len(client.scheduler_info().get("workers", {}))
    cluster = getattr(client, "cluster", None)
    if cluster is not None and type(cluster).__name__ == "LocalCluster":
        return f"local {n} workers"
    return f"scheduler {client.scheduler.address} ({n} workers)"
