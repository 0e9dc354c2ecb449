"""Measure the privacy audit's false-alarm rate on correct mechanisms and its power on broken ones.

Runs every case of the registry :mod:`hybridpriv.testing.cases` (``CORRECT`` and ``BROKEN``, the
cases ``tests/test_audits.py`` runs, so the settings are exactly those of the test suite) many
times with fresh seeds:

* false-alarm rate of each correct built-in: the share of audits that report a violation in
  any group (the audit's design bound is 1 - confidence = 1%);
* detection rate of each broken variant: the share of audits that report a violation for the
  group whose promise is broken.

Each rate comes with a one-sided 95% Clopper-Pearson bound (an upper bound for false alarms,
a lower bound for detection).  The table replaces the part of ``docs/audit.md`` between the
``audit-rates`` markers; the hand-written introduction around it is kept.

    python benchmarks/audit_rates.py                 # the full run (about 8 minutes on 2 free cores)
    python benchmarks/audit_rates.py --quick         # 20 runs per case, prints only
"""

from __future__ import annotations

import argparse
import importlib
import math
import multiprocessing as mp
import os
import platform
import re
import statistics
import time
from pathlib import Path

import numpy as np
import scipy
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "audit.md"
BEGIN, END = "<!-- audit-rates:begin -->", "<!-- audit-rates:end -->"
#: Seeds of the benchmark runs start here (the test suite uses seeds 0-3).
SEED0 = 10_000
#: Correct cases whose audits take about a second; they get ``--runs-slow`` runs.
SLOW = ("PEMedian", "UniformMedian", "WeightedMedian")

_cases = None


def _load_cases():
    return importlib.import_module("hybridpriv.testing.cases")


def _init() -> None:
    global _cases
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    _cases = _load_cases()


def _task(args: tuple[str, str, int]) -> tuple[str, str, int, bool, float, float]:
    """Run one audit case; return (kind, name, seed, flagged, largest bound / claim, seconds)."""
    kind, name, seed = args
    t0 = time.perf_counter()
    if kind == "correct":
        reports = _cases.CORRECT[name](seed)
        flagged = any(not r.passed for r in reports.values())
    else:
        run, target = _cases.BROKEN[name]
        reports = run(seed)
        flagged = not reports[target].passed
        reports = {target: reports[target]}
    ratios = [r.epsilon_lower_bound / r.epsilon for r in reports.values() if r.epsilon > 0]
    ratio = max(ratios) if ratios else math.nan
    return kind, name, seed, flagged, ratio, time.perf_counter() - t0


def clopper_pearson_one_sided(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """One-sided Clopper-Pearson bounds at ``level``: (lower bound, upper bound) of a binomial rate."""
    a = 1.0 - level
    lo = 0.0 if k == 0 else float(stats.beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%" if x >= 0.001 or x == 0 else f"{100 * x:.2f}%"


def build_table(results, runs_label: str) -> str:
    by_case: dict[tuple[str, str], list] = {}
    for kind, name, seed, flagged, ratio, secs in results:
        by_case.setdefault((kind, name), []).append((flagged, ratio, secs))
    lines = []
    lines.append("### Broken variants: detection rate (must be at least 99%)\n")
    lines.append("| broken variant | runs | caught | detection rate | 95% lower bound | median bound / claim | s per audit |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|")
    worst_detection = 1.0
    for (kind, name), rows in by_case.items():
        if kind != "broken":
            continue
        n, k = len(rows), sum(r[0] for r in rows)
        lo, _ = clopper_pearson_one_sided(k, n)
        worst_detection = min(worst_detection, lo)
        med = statistics.median(r[1] for r in rows)
        secs = statistics.mean(r[2] for r in rows)
        lines.append(f"| {name} | {n} | {k} | {_pct(k / n)} | {_pct(lo)} | {med:.2f} | {secs:.2f} |")
    lines.append("")
    lines.append("### Correct built-ins: false-alarm rate (must be under 1%)\n")
    lines.append(
        "| mechanism / estimator (groups audited) | runs | false alarms | rate | 95% upper bound | median bound / claim | s per audit |"
    )
    lines.append("|---|---:|---:|---:|---:|---:|---:|")
    total_n = total_k = 0
    for (kind, name), rows in by_case.items():
        if kind != "correct":
            continue
        n, k = len(rows), sum(r[0] for r in rows)
        total_n += n
        total_k += k
        _, hi = clopper_pearson_one_sided(k, n)
        finite = [r[1] for r in rows if not math.isnan(r[1])]
        med = f"{statistics.median(finite):.2f}" if finite else "claim 0"
        secs = statistics.mean(r[2] for r in rows)
        lines.append(f"| {name} | {n} | {k} | {_pct(k / n)} | {_pct(hi)} | {med} | {secs:.2f} |")
    _, hi = clopper_pearson_one_sided(total_k, total_n)
    lines.append(f"| **all correct cases pooled** | {total_n} | {total_k} | {_pct(total_k / total_n)} | {_pct(hi)} | | |")
    lines.append("")
    summary = (
        f"Lowest 95% lower bound of a detection rate: **{_pct(worst_detection)}**; pooled false-alarm rate "
        f"{total_k}/{total_n} (95% upper bound **{_pct(hi)}**). {runs_label}"
    )
    return "\n".join(lines), summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs-broken", type=int, default=300, help="audits per broken variant (default 300)")
    ap.add_argument("--runs-correct", type=int, default=300, help="audits per cheap correct case (default 300)")
    ap.add_argument("--runs-slow", type=int, default=60, help=f"audits per slow correct case {SLOW} (default 60)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="20 runs per case; print, do not write docs/audit.md")
    args = ap.parse_args()
    if args.quick:
        args.runs_broken = args.runs_correct = args.runs_slow = 20

    cases = _load_cases()
    tasks = []
    for name in cases.BROKEN:
        tasks += [("broken", name, SEED0 + i) for i in range(args.runs_broken)]
    for name in cases.CORRECT:
        runs = args.runs_slow if name.startswith(SLOW) else args.runs_correct
        tasks += [("correct", name, SEED0 + i) for i in range(runs)]
    # expensive tasks first, so the pool's tail is short
    tasks.sort(key=lambda t: t[1].startswith(SLOW), reverse=True)

    t0 = time.perf_counter()
    ctx = mp.get_context("spawn")
    with ctx.Pool(args.workers, initializer=_init) as pool:
        results = list(pool.imap_unordered(_task, tasks, chunksize=4))
    wall = time.perf_counter() - t0
    order = {(k, n): i for i, (k, n) in enumerate([("broken", n) for n in cases.BROKEN] + [("correct", n) for n in cases.CORRECT])}
    results.sort(key=lambda r: (order[(r[0], r[1])], r[2]))

    runs_label = (
        f"{len(tasks)} audits in {wall / 60:.1f} min on {args.workers} worker processes "
        f"({platform.processor() or platform.machine()}, Python {platform.python_version()}, NumPy {np.__version__}, "
        f"SciPy {scipy.__version__}); seeds {SEED0} + run index."
    )
    table, summary = build_table(results, runs_label)
    settings = (
        f"Settings (those of the registry `hybridpriv.testing.cases`, run by `tests/test_audits.py`): {cases.SAMPLES:,} outputs per dataset "
        f"(half select the event, half bound it), confidence {cases.CONFIDENCE}, "
        f"{args.runs_broken} runs per broken variant, {args.runs_correct} per correct case "
        f"({args.runs_slow} for the slower {', '.join(SLOW)} cases).\n"
        "*Bound / claim*: the audit's lower bound divided by the claimed epsilon (below 1: pass; "
        "for broken variants the largest group's ratio; for correct cases how close the audit comes to the "
        "claim, i.e. how tight the test is -- exponential-mechanism medians stay well below 1 because the "
        "factor 2 is slack for them).\n"
    )
    block = f"{BEGIN}\n\n{settings}\n{summary}\n\n{table}\n{END}"
    print(block)
    if args.quick:
        return
    text = DOC.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{DOC} has no {BEGIN} ... {END} block to replace")
    DOC.write_text(re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), lambda m: block, text, flags=re.S))
    print(f"wrote {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
