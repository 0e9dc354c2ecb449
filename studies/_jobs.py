"""Run several studies at once, each in its own ``python -m hybridpriv study run NAME`` process.

``hybridpriv study run all --jobs N`` uses this: the studies are independent, so N of them run at
the same time, longest first (by :data:`CPU_SECONDS`), each exactly as ``study run NAME`` would
run it alone (same seed, same numbers; its numerical libraries held to one thread so that N
processes share N cores without contention).  A study's output and errors go to
``OUT/logs/NAME.log``.  Each finished study reports its wall time, its CPU time and the peak
resident memory of its process (and of the processes it waited for), from ``os.wait4``.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import Popen

__all__ = ["CPU_SECONDS", "Job", "run_jobs"]

#: CPU seconds per study and scale measured on the 2-core machine (2026-11-26); used only to start
#: the longest studies first (a wrong figure costs wall time, never a different number)
CPU_SECONDS = {
    "full": {"wang-subset": 1200, "avent-kmeans": 603, "zeber-user-item": 300},
    "default": {"wang-subset": 450, "zeber-user-item": 150, "avent-kmeans": 110, "avent-kvh": 55, "avent-skew": 52,
                "avent-salaries": 46, "avent-pwh": 42, "avent-bayes": 27, "ferrando-means": 20, "calibration": 20},
}

_ONE_THREAD = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


@dataclass
class Job:
    """One study's process: its command line, log, and (once finished) its measurements."""

    name: str
    argv: list[str]
    log: Path
    process: Popen | None = None
    started: float = 0.0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    peak_rss_mib: float = 0.0
    returncode: int | None = None
    window: tuple[float, float] = field(default=(0.0, 0.0))


def order(names: list[str], scale: str) -> list[str]:
    """``names`` longest first by :data:`CPU_SECONDS` (unknown studies count as short), ties in registry order."""
    cost = CPU_SECONDS.get(scale, CPU_SECONDS["default"])
    return sorted(names, key=lambda n: -cost.get(n, CPU_SECONDS["default"].get(n, 0)))


def one_thread_env(environ) -> dict[str, str]:
    """``environ`` with the numerical libraries' thread counts at 1 where unset or empty (an empty
    ``OMP_NUM_THREADS`` is not "unset" to every library: SciPy's FFT refuses it)."""
    env = dict(environ)
    for var in _ONE_THREAD:
        if not env.get(var, "").strip():
            env[var] = "1"
    return env


def run_jobs(jobs: list[Job], n: int, log=print, poll: float = 0.2) -> list[Job]:
    """Run ``jobs`` (already in start order) at most ``n`` at a time; return them finished.

    A failed study starts no further ones; those running are waited for, then :class:`RuntimeError`
    names every failure and its log.
    """
    if n < 1:
        raise ValueError(f"jobs must be >= 1, got {n}")
    env = one_thread_env(os.environ)
    waiting, running, done = list(jobs), [], []
    failed = False
    while waiting or running:
        while waiting and len(running) < n and not failed:
            job = waiting.pop(0)
            job.log.parent.mkdir(parents=True, exist_ok=True)
            with open(job.log, "w") as fh:
                job.process = Popen([sys.executable, "-m", "hybridpriv", *job.argv], stdout=fh, stderr=fh, env=env)
            job.started = time.perf_counter()
            log(f"{job.name:<20} started (log: {job.log})")
            running.append(job)
        if failed and not running:
            break
        time.sleep(poll)
        for job in list(running):
            pid, status, usage = os.wait4(job.process.pid, os.WNOHANG)
            if pid == 0:
                continue
            job.returncode = job.process.returncode = os.waitstatus_to_exitcode(status)
            end = time.perf_counter()
            job.seconds, job.window = end - job.started, (job.started, end)
            job.cpu_seconds = usage.ru_utime + usage.ru_stime
            job.peak_rss_mib = usage.ru_maxrss / 1024
            running.remove(job)
            done.append(job)
            log(f"{job.name:<20} {'finished' if job.returncode == 0 else f'FAILED (exit {job.returncode})'} "
                f"{job.seconds:>8.1f} s  cpu {job.cpu_seconds:>8.1f} s  peak {round(job.peak_rss_mib)} MiB")
            failed = failed or job.returncode != 0
    bad = [j for j in done if j.returncode != 0]
    if bad:
        raise RuntimeError("; ".join(f"study {j.name} failed (exit {j.returncode}); its log: {j.log}" for j in bad)
                           + (f"; not started: {', '.join(j.name for j in waiting)}" if waiting else ""))
    return done


def concurrent_peak_mib(jobs: list[Job]) -> float:
    """An upper bound of the resident memory of all studies at once: the largest sum of the peaks of
    the studies running at one moment (each study's own peak, whenever it happened)."""
    starts = [j.window[0] for j in jobs]
    return max((sum(j.peak_rss_mib for j in jobs if j.window[0] <= t < j.window[1]) for t in starts), default=0.0)
