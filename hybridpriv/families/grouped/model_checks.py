"""Posterior predictive checks of a fitted grouped model (see ``GroupedPosterior.predictive_checks``)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["grouped_predictive_checks", "record_statistics"]


def record_statistics(values: np.ndarray, lower: float, upper: float) -> dict[str, float]:
    """The statistics of a set of bounded records that the checks compare."""
    x = np.asarray(values, dtype=float)
    q10, q50, q90 = np.quantile(x, [0.1, 0.5, 0.9])
    return {"mean": float(x.mean()), "sd": float(x.std(ddof=1)) if x.size > 1 else 0.0, "q10": float(q10),
            "median": float(q50), "q90": float(q90), "share_at_lower": float(np.mean(x <= lower)),
            "share_at_upper": float(np.mean(x >= upper))}


def grouped_predictive_checks(posterior: Any, rng: np.random.Generator, draws: int = 400):
    """The check table, or ``None`` when nothing public can be replicated."""
    from ...criticism import predictive_check

    if not isinstance(draws, int) or draws < 2:
        raise ValueError(f"draws must be an integer >= 2, got {draws!r}")
    spec, family = posterior.spec, posterior.family
    lo, hi = float(posterior.bounds.lower), float(posterior.bounds.upper)
    chains, n_draws = posterior.shape
    flat = np.linspace(0, chains * n_draws - 1, min(draws, chains * n_draws)).round().astype(int)
    observed: dict[str, float] = {}
    replicated: dict[str, list[float]] = {}
    for name, values in spec.public_data.items():
        for stat, v in record_statistics(values, lo, hi).items():
            observed[f"{name}.{stat}"] = v
            replicated[f"{name}.{stat}"] = []
    for i, r in enumerate(spec.released_means):
        observed[f"release_{i}({r.group or 'all'})"] = r.value
        replicated[f"release_{i}({r.group or 'all'})"] = []
    for k in flat:
        c, d = divmod(int(k), n_draws)
        p = posterior.params(c, d)
        for name, values in spec.public_data.items():
            rep = family.simulate(p, values.size, rng)
            for stat, v in record_statistics(rep, lo, hi).items():
                replicated[f"{name}.{stat}"].append(v)
        for i, r in enumerate(spec.released_means):
            members = [g for g in spec.groups if r.group is None or g.name == r.group]
            shifts = posterior.shifts(c, d)
            total = sum(float(posterior.group_records(p, shifts.get(g.name, 0.0), g.size, rng)[1].sum())
                        for g in members)
            mean = total / sum(g.size for g in members)
            replicated[f"release_{i}({r.group or 'all'})"].append(mean + rng.laplace(0.0, r.noise_scale))
    # a statistic that cannot vary (e.g. a share at a bound no record can reach) is not a check
    keep = [s for s in observed if np.ptp(replicated[s]) > 0 or replicated[s][0] != observed[s]]
    if not keep:
        return None  # nothing public to check (no public records, no earlier release)
    return predictive_check({s: observed[s] for s in keep}, {s: np.array(replicated[s]) for s in keep})
