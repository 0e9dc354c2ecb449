"""Running the engine's chunks: in this process, or as tasks on a ``dask.distributed`` cluster.

A *section* of work is a picklable ``job`` (estimators and source, or the user-item model),
a function ``fn(job, task) -> dict of arrays`` and a list of tasks (item ranges, plus small
per-chunk parameters).  Data are generated inside ``fn``, so tasks carry no datasets and only
reduced arrays come back.  On a cluster the job is scattered once to every worker and the
tasks are submitted together; results are written to a
:class:`~hybridpriv.engine.checkpoint.Checkpoint` as each chunk finishes, when one is given.

Chunks are sized from the CPU time of a few items of every section, measured in this process
(``time.thread_time``, so a busy machine does not shrink them): every task gets the same work,
the run's total cut into :data:`MIN_CHUNKS` tasks but at least :data:`MIN_SECONDS` (per-task
overhead) and at most :data:`TARGET_SECONDS` (checkpoint granularity, memory) of CPU, unless the
caller sets ``chunk_size``.  In this process without a checkpoint, chunks only pace the progress
and nothing is measured (the measured items would be computed twice, up to 17 of them per run): a section
is cut into :data:`MIN_CHUNKS` chunks.  Seeds are keyed per item, never per chunk or worker, so the numbers
do not depend on any of this.

``run_sections(..., stats={})`` fills the dict with counts for profiling: tasks, items, bytes
shipped with the tasks and returned, and the CPU and wall seconds spent inside the tasks.

dask is imported only when a ``client`` is given.
"""

from __future__ import annotations

import math
import pickle
import time
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["MIN_CHUNKS", "MIN_SECONDS", "Section", "TARGET_SECONDS", "check_chunk_size", "check_client",
           "chunk_size_for", "chunk_sizes_for", "run_sections", "split"]

#: Most CPU seconds of work per task (a task costs the client and scheduler ~2-5 ms of CPU and
#: a worker ~2-3 ms, so 1 s tasks lose < 1%; the full-scale user-item study is 250 such tasks).
TARGET_SECONDS = 1.0
#: Tasks a run is cut into when that keeps them between MIN_SECONDS and TARGET_SECONDS
#: (load balance on small runs: the last task leaves the other workers idle).
MIN_CHUNKS = 32
#: Least CPU seconds of work per task (unless a section is smaller).
MIN_SECONDS = 0.1


def chunk_sizes_for(per_item: Sequence[float], n_items: Sequence[int]) -> list[int]:
    """Items per chunk of sections whose items take ``per_item`` CPU seconds: every task does
    ``total / MIN_CHUNKS`` seconds of work, clipped to ``[MIN_SECONDS, TARGET_SECONDS]``
    (a section of less work is one chunk; a chunk has at least 1 item)."""
    per = [max(float(p), 1e-9) for p in per_item]
    total = sum(p * n for p, n in zip(per, n_items))
    work = min(TARGET_SECONDS, max(MIN_SECONDS, total / MIN_CHUNKS))
    return [int(max(1, min(n, math.ceil(work / p)))) for p, n in zip(per, n_items)]


def chunk_size_for(per_item: float, n_items: int) -> int:
    """:func:`chunk_sizes_for` of one section."""
    return chunk_sizes_for([per_item], [n_items])[0]


def check_chunk_size(chunk_size: object) -> int | None:
    if chunk_size is None:
        return None
    if not isinstance(chunk_size, (int, np.integer)) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r} (or None: measured)")
    return int(chunk_size)


def check_client(client: object) -> None:
    if client is None:
        return
    if type(client).__name__ != "Client" or not type(client).__module__.startswith("distributed"):
        raise TypeError(f"client must be a dask.distributed.Client or None, got {type(client).__name__}")


def split(n_items: int, chunk_size: int) -> list[tuple[int, int]]:
    """Item ranges ``[start, stop)`` of at most ``chunk_size`` items."""
    return [(s, min(s + chunk_size, n_items)) for s in range(0, n_items, chunk_size)]


@dataclass
class Section:
    """One section of work: ``fn(job, (start, stop, *extra(start, stop)))`` over ``n_items`` items.

    ``engine``: the settings recorded in (and checked against) a checkpoint's manifest.
    ``extra``: small per-chunk parameters sent with the task (e.g. posterior row sums).
    """

    name: str
    fn: Callable[[object, tuple], dict[str, np.ndarray]]
    job: object
    n_items: int
    engine: Mapping[str, object] = field(default_factory=dict)
    extra: Callable[[int, int], tuple] | None = None

    def task(self, start: int, stop: int) -> tuple:
        return (start, stop, *(self.extra(start, stop) if self.extra else ()))

    def measure_per_item(self) -> float:
        """CPU seconds per item of this thread on up to 16 items (>= 50 ms of them), after one
        untimed warm-up item (imports, compilation)."""
        if self.n_items <= 1:
            return 0.0  # one item is one chunk whatever it costs (not worth running it twice)
        self.fn(self.job, self.task(0, 1))
        used, count = 0.0, 0
        while count < min(16, self.n_items - 1) and used < 0.05:
            t0 = time.thread_time()
            self.fn(self.job, self.task(1 + count, 2 + count))
            used += time.thread_time() - t0
            count += 1
        return used / count


def _timed_call(fn, job, task):
    """``fn(job, task)`` and the CPU (this thread) and wall seconds it took (for ``stats``)."""
    c0, w0 = time.thread_time(), time.perf_counter()
    res = fn(job, task)
    return res, time.thread_time() - c0, time.perf_counter() - w0


def _pickled_size(obj: object) -> int:
    """Bytes of ``obj`` pickled as dask sends it (cloudpickle when installed); -1 if it cannot be."""
    try:
        import cloudpickle as pickler
    except ImportError:  # pragma: no cover - cloudpickle comes with dask
        pickler = pickle
    try:
        return len(pickler.dumps(obj))
    except Exception:
        return -1


def _nbytes(res: Mapping[str, np.ndarray]) -> int:
    return int(sum(np.asarray(v).nbytes for v in res.values()))


def run_sections(
    sections: Sequence[Section],
    chunk_size: int | None = None,
    client=None,
    checkpoint=None,
    progress: Callable[[int], None] | None = None,
    stats: dict | None = None,
) -> list[list[dict[str, np.ndarray]]]:
    """Run every section's chunks; return, per section, the chunk results in item order.

    ``stats``: a dict to fill with ``chunks`` (in the layout), ``tasks`` (computed now, not read
    back from the checkpoint), ``items`` (computed now), ``task_bytes`` (pickled size of the
    tasks' arguments, the job excepted: it is sent once per worker), ``job_bytes``,
    ``result_bytes``, ``task_cpu_seconds`` and ``task_wall_seconds`` (inside the tasks), and
    ``chunk_sizes`` (per section, the first chunk's).
    """
    sizes: list[int] = []

    def measured(index: int) -> int:  # all sections measured together, once, if any needs it
        if not sizes:
            sizes.extend(chunk_sizes_for([sec.measure_per_item() for sec in sections],
                                         [sec.n_items for sec in sections]))
        return sizes[index]

    layouts = []
    for index, sec in enumerate(sections):
        chunks = split(sec.n_items, chunk_size) if chunk_size is not None else None
        if checkpoint is not None:
            layouts.append(checkpoint.layout(sec.name, sec.engine, chunks,
                                             make=lambda s=sec, i=index: split(s.n_items, measured(i))))
        elif chunks is None and client is None:  # in this process chunks only pace progress: not worth measuring
            layouts.append(split(sec.n_items, max(1, math.ceil(sec.n_items / MIN_CHUNKS))))
        else:
            layouts.append(chunks if chunks is not None else split(sec.n_items, measured(index)))
    results: list[list[dict | None]] = [[None] * len(lay) for lay in layouts]
    done = 0
    todo = []
    for s, (sec, lay) in enumerate(zip(sections, layouts)):
        for i, (a, b) in enumerate(lay):
            got = checkpoint.load(sec.name, i) if checkpoint is not None else None
            if got is not None:
                results[s][i] = got
                done += b - a
            else:
                todo.append((s, i))
    if progress and done:
        progress(done)
    if stats is not None:
        stats.update(chunks=sum(len(lay) for lay in layouts), tasks=len(todo), items=0, task_bytes=0,
                     job_bytes=sum(_pickled_size(sec.job) for sec in sections), result_bytes=0,
                     task_cpu_seconds=0.0, task_wall_seconds=0.0,
                     chunk_sizes=[lay[0][1] - lay[0][0] if lay else 0 for lay in layouts])
        for s, i in todo:
            stats["task_bytes"] += _pickled_size(sections[s].task(*layouts[s][i]))

    def finish(s: int, i: int, res) -> None:
        nonlocal done
        if stats is not None:
            res, cpu, wall = res
            a, b = layouts[s][i]
            stats["items"] += b - a
            stats["result_bytes"] += _nbytes(res)
            stats["task_cpu_seconds"] += cpu
            stats["task_wall_seconds"] += wall
        results[s][i] = res
        if checkpoint is not None:
            checkpoint.save(sections[s].name, i, res)
        a, b = layouts[s][i]
        done += b - a
        if progress:
            progress(done)

    def call(s: int, i: int):
        sec = sections[s]
        if stats is not None:
            return _timed_call(sec.fn, sec.job, sec.task(*layouts[s][i]))
        return sec.fn(sec.job, sec.task(*layouts[s][i]))

    if client is None:
        for s, i in todo:
            finish(s, i, call(s, i))
    elif todo:
        from distributed import as_completed

        jobs = client.scatter([sec.job for sec in sections], broadcast=True, hash=False)
        futures = {}
        by_fn: dict[int, list[tuple[int, int]]] = {}
        for s, i in todo:
            by_fn.setdefault(id(sections[s].fn), []).append((s, i))
        run = uuid.uuid4().hex[:12]
        for group in by_fn.values():  # one graph update per function, not one per task
            fn = sections[group[0][0]].fn
            keys = [f"hybridpriv-{sections[s].name}-{i}-{run}" for s, i in group]
            job_args = [jobs[s] for s, _ in group]
            task_args = [sections[s].task(*layouts[s][i]) for s, i in group]
            # The task arguments are the work itself (e.g. 100,000 row-sum histograms, ~20 MiB in
            # uint16): dask warns about any graph over 10 MiB; sent in one map they cost ~5 s of main-process
            # CPU at 100,000 matrices, and 2 workers still run 2.06x faster (benchmarks/distributed_speedup.py).
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
                if stats is not None:
                    futs = client.map(_timed_call, [fn] * len(group), job_args, task_args, key=keys, pure=False)
                else:
                    futs = client.map(fn, job_args, task_args, key=keys, pure=False)
            futures.update(zip(futs, group))
        for fut in as_completed(futures):
            finish(*futures.pop(fut), fut.result())
    return results  # type: ignore[return-value]
