"""Running the engine's chunks: in this process, or as tasks on a ``dask.distributed`` cluster.

A *section* of work is a picklable ``job`` (estimators and source, or the user-item model),
a function ``fn(job, task) -> dict of arrays`` and a list of tasks (item ranges, plus small
per-chunk parameters).  Data are generated inside ``fn``, so tasks carry no datasets and only
reduced arrays come back.  On a cluster the job is scattered once to every worker and the
tasks are submitted together; results are written to a
:class:`~hybridpriv.checkpoint.Checkpoint` as each chunk finishes, when one is given.

Chunks are sized so a task does about :data:`TARGET_SECONDS` of work (measured on two items
in this process) unless the caller sets ``chunk_size``.  Seeds are keyed per item, never per
chunk or worker, so the numbers do not depend on any of this.

dask is imported only when a ``client`` is given.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Section", "TARGET_SECONDS", "check_chunk_size", "check_client", "run_sections", "split"]

#: Work per task aimed at when the chunk size is measured.
TARGET_SECONDS = 0.2


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

    def measured_chunk_size(self) -> int:
        """Items per task for about TARGET_SECONDS of work (the faster of two single items, so a
        first-call warm-up does not count)."""
        times = []
        for i in range(min(2, self.n_items)):
            t0 = time.perf_counter()
            self.fn(self.job, self.task(i, i + 1))
            times.append(time.perf_counter() - t0)
        per_item = max(min(times), 1e-6)
        return int(min(self.n_items, max(1, math.ceil(TARGET_SECONDS / per_item))))


def run_sections(
    sections: Sequence[Section],
    chunk_size: int | None = None,
    client=None,
    checkpoint=None,
    progress: Callable[[int], None] | None = None,
) -> list[list[dict[str, np.ndarray]]]:
    """Run every section's chunks; return, per section, the chunk results in item order."""
    layouts = []
    for sec in sections:
        chunks = split(sec.n_items, chunk_size) if chunk_size is not None else None
        if checkpoint is not None:
            layouts.append(checkpoint.layout(sec.name, sec.engine, chunks,
                                             make=lambda s=sec: split(s.n_items, s.measured_chunk_size())))
        else:
            layouts.append(chunks if chunks is not None else split(sec.n_items, sec.measured_chunk_size()))
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

    def finish(s: int, i: int, res: dict[str, np.ndarray]) -> None:
        nonlocal done
        results[s][i] = res
        if checkpoint is not None:
            checkpoint.save(sections[s].name, i, res)
        a, b = layouts[s][i]
        done += b - a
        if progress:
            progress(done)

    if client is None:
        for s, i in todo:
            finish(s, i, sections[s].fn(sections[s].job, sections[s].task(*layouts[s][i])))
    elif todo:
        from distributed import as_completed

        jobs = client.scatter([sec.job for sec in sections], broadcast=True, hash=False)
        futures = {}
        for s, i in todo:
            fut = client.submit(sections[s].fn, jobs[s], sections[s].task(*layouts[s][i]), pure=False,
                                key=f"hybridpriv-{sections[s].name}-{i}-{uuid.uuid4().hex[:12]}")
            futures[fut] = (s, i)
        for fut in as_completed(futures):
            finish(*futures.pop(fut), fut.result())
    return results  # type: ignore[return-value]
