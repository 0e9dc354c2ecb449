"""Audit a SPEC's candidates: ``hybridpriv audit SPEC [--candidate NAME ...]``.

Every candidate a SPEC compares -- built-in or named by ``[[mechanisms]]`` -- is audited the same
way: the statistical audit of its privacy declaration, unit by unit
(:func:`hybridpriv.testing.audit_estimator`: neighbouring datasets, an event search, exact
Clopper-Pearson bounds on held-out releases).  The candidates are built as ``select`` builds them
(after a fit of the model of public knowledge, since some use it).  The base dataset: for grouped
mechanisms the records that make a mean or median leak most
(:func:`hybridpriv.testing.matrix.base_data`); for the other kinds one dataset the fitted model
generates (a typical dataset, not a worst case: say so when you quote the result).

A ``violation`` means the mechanism's output distributions on some neighbouring pair differ by more
than its declared epsilon, with the stated confidence; ``pass`` means the audit found no evidence
of it (an audit can prove a bug, never the absence of one).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["audit_problem", "format_audit"]


def _base_data(mech: Any, posterior: Any, seed: int) -> tuple[Any, str]:
    if mech.data_kind == "grouped" and hasattr(mech, "groups") and hasattr(mech, "bounds"):
        from .testing.matrix import base_data

        return base_data(mech), "worst-case records (every record at the quiet value)"
    from .random import stream

    rng = np.random.default_rng(stream(seed, "audit-data"))
    return posterior.generate(0, posterior.shape[1] - 1, rng), "one dataset from the fitted model"


def audit_problem(problem: Any, names: Sequence[str] | None = None, samples: int = 20_000, seed: int = 0,
                  confidence: float = 0.99, log: Callable[[str], None] | None = None) -> xr.Dataset:
    """Audit ``problem``'s candidates (all, or those ``names`` gives by label or coordinate).

    Returns a Dataset over ``(candidate, unit)``: ``epsilon`` (claimed), ``delta``,
    ``epsilon_lower_bound`` and ``violation`` (bool; NaN / False where a unit is public), with
    ``attrs`` naming the base data of each candidate.
    """
    from .progress import phase
    from .testing import audit_estimator

    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 200:
        raise ValueError(f"samples must be an integer >= 200, got {samples!r}")
    say = log or (lambda _line: None)
    per_chain = problem.min_posterior_draws
    say(f"fitting the model of public knowledge ({problem.chains} chains x {per_chain} draws) to build the candidates ...")
    posterior = problem.model.fit(draws=per_chain, tune=problem.tune, chains=problem.chains, seed=problem.seed,
                                  progressbar=False, on_unconverged="warn")
    candidates = {str(k): m for k, m in problem.candidates(posterior).items()}
    if names:
        labels = {str(getattr(m, "label", k)): k for k, m in candidates.items()}
        chosen = []
        for name in names:
            key = name if name in candidates else labels.get(name)
            if key is None:
                raise ValueError(f"--candidate {name!r} is not a candidate of this SPEC; candidates: "
                                 f"{', '.join(candidates)}")
            chosen.append(key)
        candidates = {k: candidates[k] for k in chosen}
    units = sorted({u for m in candidates.values() for u in m.privacy})
    shape = (len(candidates), len(units))
    eps, dlt, low = np.full(shape, np.nan), np.full(shape, np.nan), np.full(shape, np.nan)
    bases = {}
    with phase("auditing", total=len(candidates), unit="candidates") as update:
        for i, (key, mech) in enumerate(candidates.items()):
            data, bases[key] = _base_data(mech, posterior, seed)
            say(f"auditing {key} ({samples:,} releases per dataset, {bases[key]}) ...")
            for unit, report in audit_estimator(mech, data, samples=samples, confidence=confidence, seed=seed).items():
                j = units.index(unit)
                eps[i, j], dlt[i, j], low[i, j] = report.epsilon, report.delta, report.epsilon_lower_bound
            update(i + 1)
    violation = np.where(np.isnan(low), False, low > eps)
    return xr.Dataset(
        {"epsilon": (("candidate", "unit"), eps), "delta": (("candidate", "unit"), dlt),
         "epsilon_lower_bound": (("candidate", "unit"), low), "violation": (("candidate", "unit"), violation)},
        coords={"candidate": list(candidates), "unit": units},
        attrs={"samples": samples, "confidence": confidence, "seed": seed,
               "base_data": "; ".join(f"{k}: {v}" for k, v in bases.items())},
    )


def format_audit(result: xr.Dataset) -> list[str]:
    """One line per audited (candidate, unit), then the verdict."""
    lines = [f"{'candidate':<24} {'unit':<12} {'claimed epsilon':>16} {'audit lower bound':>18}  verdict"]
    for c in result.candidate.values:
        for u in result.unit.values:
            row = result.sel(candidate=c, unit=u)
            if np.isnan(float(row.epsilon_lower_bound)):
                continue
            verdict = "VIOLATION" if bool(row.violation) else "pass"
            lines.append(f"{str(c):<24} {str(u):<12} {float(row.epsilon):>16.4g} "
                         f"{float(row.epsilon_lower_bound):>18.4g}  {verdict}")
    bad = int(result.violation.sum())
    lines.append(f"{bad} violation(s) at confidence {result.attrs['confidence']:g}" if bad else
                 f"no violation found at confidence {result.attrs['confidence']:g} "
                 f"({result.attrs['samples']:,} releases per dataset)")
    return lines
