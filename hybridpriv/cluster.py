"""Connecting to dask.distributed for the CLI and describing the connection for provenance.

``local_client(workers)`` starts a ``LocalCluster`` of ``workers`` processes with one thread
each (the engine's tasks are single-threaded NumPy); ``scheduler_client(address)`` joins a
running scheduler.  dask is an optional extra: ``pip install hybridpriv[distributed]``.
"""

from __future__ import annotations

__all__ = ["describe_client", "local_client", "scheduler_client"]

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
    cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None)
    return distributed.Client(cluster)


def scheduler_client(address: str, timeout: float = 30):
    """A client of the running scheduler at ``address`` (e.g. ``tcp://10.0.0.5:8786``)."""
    if not isinstance(address, str) or not address.strip():
        raise ValueError(f"scheduler address must be a non-empty string such as tcp://HOST:8786, got {address!r}")
    distributed = _distributed()
    try:
        return distributed.Client(address, timeout=timeout)
    except OSError as exc:
        raise ValueError(f"cannot connect to the scheduler at {address!r}: {exc}") from None


def describe_client(client) -> str:
    """The dask setting for provenance: ``"none"``, ``"local N workers"`` or ``"scheduler ADDRESS (N workers)"``."""
    if client is None:
        return "none"
    n = len(client.scheduler_info().get("workers", {}))
    cluster = getattr(client, "cluster", None)
    if cluster is not None and type(cluster).__name__ == "LocalCluster":
        return f"local {n} workers"
    return f"scheduler {client.scheduler.address} ({n} workers)"
