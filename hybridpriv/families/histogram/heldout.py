"""The histogram family's held-out truths (the calibration study).

Synthetic truths: 4-12 categories (3-6 at ``quick``) whose shares come from a Dirichlet, a Zipf law or
two popular categories; a public panel beside three private groups of different epsilons.  On odd
truths the groups' shares differ (each group's shares drawn around the common ones: privacy
preferences that correlate with the answers): the model's ``differ`` alternative.  Real truths:

* ``acs12-hours-bands``: the built-in grouped example's ACS 2012 respondents, their weekly hours in five
  bands (under 30, 30-39, 40, 41-49, 50 and more), with the example's panel and groups (by row order);
* ``swisslabor-children``: the 872 women of AER's ``SwissLabor``, their number of children (0, 1, 2,
  3 or more); the public panel is the 216 foreign women, the private groups the Swiss women by age
  (youngest third at epsilon 1, middle 0.3, oldest 0.05): groups that differ by a real attribute;
* ``mroz-children``: the 753 women of carData's ``Mroz``, their children aged 6-18 (0, 1, 2, 3 or more);
  the panel is the 212 who attended college, the private groups the others by age (as above).

The budget-spending selector (:func:`pythia_histogram`) spends a share of each private group's epsilon on a
Laplace histogram of its counts, which enters the model as an earlier release (``model.released_counts``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...heldout import Truth, read_example

__all__ = ["BANDS", "CHILDREN", "REAL_HISTOGRAM", "SHARE_LAWS", "histogram_truth", "noisy_group_counts", "pythia_histogram",
           "real_histogram_truth"]

SHARE_LAWS = ("dirichlet", "zipf", "two-popular")
#: Real histogram datasets.
REAL_HISTOGRAM = ("acs12-hours-bands", "swisslabor-children", "mroz-children")
#: The categories of the ``*-children`` truths.
CHILDREN = ("0", "1", "2", "3+")
#: The bands of weekly hours of ``acs12-hours-bands``.
BANDS = ("<30", "30-39", "40", "41-49", "50+")
#: Epsilons the private groups are drawn from (three distinct ones per truth).
EPSILONS = (2.0, 1.0, 0.5, 0.3, 0.1, 0.05)


def _spec(categories, panel: np.ndarray, sizes, epsilons) -> dict[str, Any]:
    groups = [{"name": "panel", "size": int(panel.size), "epsilon": float("inf"),
               "data": [categories[j] for j in panel]}]
    groups += [{"name": f"private-{j}", "size": int(n), "epsilon": float(e)} for j, (n, e) in enumerate(zip(sizes, epsilons))]
    return {"kind": "histogram", "categories": list(categories), "groups": groups}


def _counts(records: np.ndarray, c: int) -> np.ndarray:
    return np.bincount(records, minlength=c)


def histogram_truth(i: int, rng: np.random.Generator, quick: bool = False) -> Truth:
    """Synthetic histogram truth number ``i`` (its share law: ``SHARE_LAWS[i % 3]``; groups differ on odd ``i``)."""
    law = SHARE_LAWS[i % len(SHARE_LAWS)]
    c = int(rng.integers(3, 7) if quick else rng.integers(4, 13))
    if law == "dirichlet":
        p = rng.dirichlet(np.full(c, rng.uniform(0.3, 3.0)))
    elif law == "zipf":
        p = np.arange(1, c + 1, dtype=float) ** -rng.uniform(0.5, 2.0)
    else:
        p = np.ones(c)
        p[rng.permutation(c)[:2]] = rng.uniform(3, 10)
    p = p / p.sum()
    differ = i % 2 == 1
    panel_n = int(rng.integers(20, 81) if quick else rng.integers(30, 301))
    sizes = rng.integers(50, 301, 3) if quick else rng.integers(100, 1001, 3)
    epsilons = sorted(rng.choice(EPSILONS, 3, replace=False), reverse=True)
    categories = [f"c{j}" for j in range(c)]

    def shares() -> np.ndarray:
        return rng.dirichlet(20.0 * p) if differ else p

    panel = rng.choice(c, panel_n, p=shares())
    data = {"panel": _counts(panel, c)}
    for j, n in enumerate(sizes):
        data[f"private-{j}"] = _counts(rng.choice(c, int(n), p=shares()), c)
    return Truth("histogram", "synthetic", f"{law}{'+groups-differ' if differ else ''}",
                 _spec(categories, panel, sizes, epsilons), data)


def _band(hours: float) -> int:
    return 0 if hours < 30 else 1 if hours < 40 else 2 if hours == 40 else 3 if hours < 50 else 4


def _by_age(rows: list[dict[str, str]], public: Any, children: Any) -> tuple[np.ndarray, list[np.ndarray]]:
    """The panel's categories and the private women's by age thirds (youngest first; ties by source row)."""
    def code(r: dict[str, str]) -> int:
        return min(int(children(r)), len(CHILDREN) - 1)

    panel = np.array([code(r) for r in rows if public(r)])
    private = sorted((r for r in rows if not public(r)), key=lambda r: (float(r["age"]), int(r["source_row"])))
    thirds = np.array_split(np.arange(len(private)), 3)
    return panel, [np.array([code(private[i]) for i in part]) for part in thirds]


def real_histogram_truth(name: str, rng: np.random.Generator | None = None) -> Truth:
    """Real histogram truth ``name`` (:data:`REAL_HISTOGRAM`) at epsilons 1, 0.3, 0.05 (see the module)."""
    if name not in REAL_HISTOGRAM:
        raise ValueError(f"name must be one of {list(REAL_HISTOGRAM)}, got {name!r}")
    if name == "acs12-hours-bands":
        rows = read_example("acs12-hours.csv")
        parts = {g: np.array([_band(float(r["hours"])) for r in rows if r["group"] == g])
                 for g in ("panel", "opt-in", "default", "strict")}
        panel, private, categories = parts["panel"], [parts[g] for g in ("opt-in", "default", "strict")], BANDS
    elif name == "swisslabor-children":
        panel, private = _by_age(read_example("swisslabor.csv"), lambda r: r["foreign"] == "yes",
                                 lambda r: int(r["youngkids"]) + int(r["oldkids"]))
        categories = CHILDREN
    else:
        panel, private = _by_age(read_example("mroz.csv"), lambda r: r["wc"] == "yes", lambda r: int(r["k618"]))
        categories = CHILDREN
    c = len(categories)
    data = {"panel": _counts(panel, c), **{f"private-{j}": _counts(x, c) for j, x in enumerate(private)}}
    return Truth("histogram", "real", name, _spec(categories, panel, [x.size for x in private], (1.0, 0.3, 0.05)),
                 data)


def noisy_group_counts(counts: np.ndarray, relation: str, epsilon: float, rng: np.random.Generator,
                       trials: int | None = None) -> tuple[np.ndarray, float]:
    """An epsilon-DP release of a group's counts per category (the budget-spending selector's feature): each count
    plus Laplace noise of scale ``sensitivity(relation) / epsilon`` (a record added or removed moves one count by
    1, a record replaced two counts by 1 each: L1 sensitivity 1 or 2).  ``trials``: that many independent releases
    (rows).  Returns the release(s) and the scale.  Simulation noise (NumPy), not for a release of real data."""
    from ...noise import laplace
    from .mechanisms import sensitivity

    if not (np.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    scale = sensitivity(relation) / float(epsilon)
    counts = np.asarray(counts, dtype=float)
    return laplace(counts if trials is None else np.tile(counts, (trials, 1)), scale, rng), scale


def pythia_histogram(raw: dict[str, Any], data: dict[str, np.ndarray], share: float,
                     rng: np.random.Generator) -> dict[str, Any]:
    """A budget-spending selector's SPEC: each private group spends ``share`` of its epsilon on a Laplace histogram
    of its counts (:func:`noisy_group_counts`, under the SPEC's ``relation``), which enters the model as an earlier
    release (``model.released_counts``); the candidates get the rest, ``(1 - share) epsilon``, so each group is
    charged the same total as the model-only selector's.  ``data``: ``{group name: counts per category}``."""
    if not 0.0 < share < 1.0:
        raise ValueError(f"share must be in (0, 1), got {share!r}")
    relation = raw.get("relation", "add-remove")
    groups, released = [], list(raw.get("model", {}).get("released_counts", []))
    for g in raw["groups"]:
        g = dict(g)
        eps = float(g["epsilon"])
        if np.isfinite(eps):
            value, scale = noisy_group_counts(data[g["name"]], relation, share * eps, rng)
            released.append({"group": g["name"], "counts": [float(v) for v in value], "noise_scale": scale})
            g["epsilon"] = eps * (1.0 - share)
        groups.append(g)
    return {**raw, "groups": groups, "model": {**raw.get("model", {}), "released_counts": released}}
