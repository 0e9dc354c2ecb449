"""The grouped family's held-out truths and budget-spending features (the calibration study).

Synthetic truths: a public panel beside three private groups, records in ``[0, 100]`` drawn from one
of :data:`hybridpriv.heldout.RECORD_LAWS` (``shifted-groups``: each group its own mean, so the panel
misleads).  Real truths (:data:`REAL_GROUPED`): ``acs12-hours`` (the built-in example's groups),
``acs12-income``, ``boston-medv``, ``faithful-waiting`` (records shuffled into a panel and groups).
The budget-spending selector spends a share of each private group's epsilon on a Laplace mean
(:func:`pythia_spec`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...heldout import RECORD_LAWS, Truth, draw_records, law_params, read_example, shuffled_values

__all__ = ["GROUP_EPSILONS", "REAL_GROUPED", "grouped_truth", "noisy_group_mean", "pythia_spec", "real_grouped_truth"]

#: Real grouped datasets: name -> bounds (records are clamped to them; income in $1,000).
REAL_GROUPED = {"acs12-hours": (0.0, 99.0), "acs12-income": (0.0, 200.0), "boston-medv": (0.0, 50.0),
                "faithful-waiting": (40.0, 100.0)}
#: Epsilons the private groups of a grouped truth are drawn from (three distinct ones per truth).
GROUP_EPSILONS = (2.0, 1.0, 0.5, 0.3, 0.1, 0.05)


def _grouped_spec(bounds, panel: np.ndarray, sizes, epsilons) -> dict[str, Any]:
    groups = [{"name": "panel", "size": int(panel.size), "epsilon": float("inf"), "data": panel.tolist()}]
    groups += [{"name": f"private-{j}", "size": int(n), "epsilon": float(e)}
               for j, (n, e) in enumerate(zip(sizes, epsilons))]
    return {"kind": "grouped", "statistic": "mean", "bounds": [float(bounds[0]), float(bounds[1])], "groups": groups,
            "evaluation": {"target": "sample"}}


def grouped_truth(i: int, rng: np.random.Generator, quick: bool = False) -> Truth:
    """Synthetic grouped truth number ``i`` (its generator: ``RECORD_LAWS[i % 6]``).

    A public panel (50-300 records; 30-100 at ``quick``) beside three private groups (100-1,000
    records; 50-300 at ``quick``) with three distinct epsilons of :data:`GROUP_EPSILONS`; records in
    ``[0, 100]``.
    """
    kind = RECORD_LAWS[i % len(RECORD_LAWS)]
    p = law_params(kind, rng)
    panel_n = int(rng.integers(30, 101) if quick else rng.integers(50, 301))
    sizes = rng.integers(50, 301, 3) if quick else rng.integers(100, 1001, 3)
    epsilons = sorted(rng.choice(GROUP_EPSILONS, 3, replace=False), reverse=True)
    shifts = rng.uniform(-1, 1, 4) * p.get("spread", 0.0)
    data = {"panel": draw_records(kind, panel_n, rng, p, shifts[0])}
    for j, n in enumerate(sizes):
        data[f"private-{j}"] = draw_records(kind, int(n), rng, p, shifts[j + 1])
    return Truth("grouped", "synthetic", kind, _grouped_spec((0, 100), data["panel"], sizes, epsilons), data)


def real_grouped_truth(name: str, rng: np.random.Generator) -> Truth:
    """Real grouped truth ``name`` (:data:`REAL_GROUPED`), clamped to its bounds.

    ``acs12-hours`` keeps the built-in example's groups (panel 150; 300, 400, 109 records at
    epsilon 1, 0.3, 0.05); the others are shuffled by ``rng`` into a panel (20% of the records)
    and three private groups (40%, 30%, 10%) at epsilon 1, 0.3, 0.05.
    """
    if name not in REAL_GROUPED:
        raise ValueError(f"name must be one of {list(REAL_GROUPED)}, got {name!r}")
    lo, hi = REAL_GROUPED[name]
    if name == "acs12-hours":
        rows = read_example("acs12-hours.csv")
        order = ["panel", "opt-in", "default", "strict"]
        parts = [np.array([float(r["hours"]) for r in rows if r["group"] == g]) for g in order]
    else:
        x = shuffled_values(name, rng)
        cut = np.round(np.cumsum([0.2, 0.4, 0.3]) * x.size).astype(int)
        parts = np.split(x, cut)
    parts = [np.clip(v, lo, hi) for v in parts]
    data = {"panel": parts[0], **{f"private-{j}": v for j, v in enumerate(parts[1:])}}
    return Truth("grouped", "real", name, _grouped_spec((lo, hi), parts[0], [v.size for v in parts[1:]],
                                                         (1.0, 0.3, 0.05)), data)


def noisy_group_mean(records: Any, size: int, bounds: Any, relation: str, epsilon: float, rng: np.random.Generator,
                     trials: int | None = None) -> tuple[np.ndarray, float]:
    """An epsilon-DP mean of a group's ``records`` (the budget-spending selector's feature): their sum
    over the group's public ``size`` plus Laplace noise of scale ``sum_sensitivity / (size epsilon)``
    (:meth:`hybridpriv.core.privacy.Bounds.sum_sensitivity` under ``relation``).  ``trials``: that many
    independent releases (default one).  Returns the release(s) and the noise scale.  Simulation
    noise (NumPy), not for a release of real data."""
    from ...core.privacy import Bounds
    from ...noise import laplace

    scale = Bounds.from_pair(bounds).sum_sensitivity(relation) / (size * epsilon)
    value = np.sum(records) / size
    return laplace(value if trials is None else np.full(trials, value), scale, rng), scale


def pythia_spec(raw: dict[str, Any], data: dict[str, np.ndarray], share: float,
                rng: np.random.Generator) -> dict[str, Any]:
    """A budget-spending selector's SPEC (Pythia-style): each private group spends ``share`` of its
    epsilon on a Laplace release of its mean from the private records, which enters the model as an
    earlier release (``model.released_means``); the candidates get the rest, ``(1 - share) epsilon``,
    so the total charged per group is the same as the model-only selector's.  The release is a noisy
    sum divided by the public size, under the SPEC's neighbouring ``relation`` (the candidates'):
    sensitivity ``max(|lower|, |upper|)`` for ``"add-remove"`` (the default), ``upper - lower`` for
    ``"replace"``.  Local-trust groups are not probed (their records never reach the curator)."""
    if not 0.0 < share < 1.0:
        raise ValueError(f"share must be in (0, 1), got {share!r}")
    relation = raw.get("relation", "add-remove")
    groups, released = [], list(raw.get("model", {}).get("released_means", []))
    for g in raw["groups"]:
        g = dict(g)
        eps = float(g["epsilon"])
        if np.isfinite(eps) and g.get("trust", "central") == "central":
            value, scale = noisy_group_mean(data[g["name"]], g["size"], raw["bounds"], relation, share * eps, rng)
            value = float(value)
            released.append({"group": g["name"], "value": value, "noise_scale": scale})
            g["epsilon"] = eps * (1.0 - share)
        groups.append(g)
    return {**raw, "groups": groups, "model": {**raw.get("model", {}), "released_means": released}}
