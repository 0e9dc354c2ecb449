"""Held-out truths for the calibration study: private datasets the models of public knowledge do not contain.

A :class:`Truth` is one private dataset and the PUBLIC knowledge a curator would have about it,
written as a SPEC dict (:mod:`hybridpriv.spec`): for ``grouped`` the bounds, the group sizes and
epsilons and the public panel's records; for ``user-item`` the column sums, the number of users and
epsilon.  The private records never enter the SPEC; :mod:`hybridpriv.calibration` runs the select
path on the SPEC and then scores every candidate on the private records.

Synthetic generators (none of them is a clamped normal, a beta or a Curveball-uniform matrix):

* grouped (records in ``[0, 100]``): ``skewed`` (gamma), ``bimodal`` (two normals), ``heavy-tailed``
  (Student t, mass at both bounds), ``clamped`` (log-normal, 5-40% piled at the upper bound),
  ``shifted-groups`` (each group its own mean: the panel misleads), ``heaped`` (answers heaped on
  round values, like hours worked).
* hybrid-trust (records in ``[0, 100]``): the grouped generators again, the TCM and the LM group
  sharing one law's parameters (half the truths) or each drawing its own (a mean gap, a different
  spread); pilot records of both groups are public.
* user-item: row sums from a two-component ``mixture`` (light and heavy users), a ``heavy-tailed``
  discrete Pareto or a ``geometric`` law, crossed with item popularity ``zipf``, ``tiers`` (a
  popular block) or ``communities`` (users prefer their community's items: items are correlated).

Real datasets (``hybridpriv/examples``; source, licence and preprocessing in its README): grouped
``acs12-hours``, ``acs12-income``, ``boston-medv``, ``faithful-waiting``; hybrid-trust ``salaries``
(the built-in example's pilots and groups), ``acs12-income``, ``boston-medv``, ``faithful-waiting``
(records shuffled into pilots and groups); user-item ``insteval``, ``flights-ua``, ``verbagg``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import scipy.sparse as sp

from .data import GroupedDataset

__all__ = ["GROUPED_GENERATORS", "REAL_GROUPED", "REAL_HYBRID_TRUST", "REAL_USER_ITEM", "ROW_LAWS", "POPULARITY",
           "Truth", "grouped_truth", "hybrid_trust_truth", "real_grouped_truth", "real_hybrid_trust_truth",
           "real_user_item_truth", "user_item_truth"]

GROUPED_GENERATORS = ("skewed", "bimodal", "heavy-tailed", "clamped", "shifted-groups", "heaped")
ROW_LAWS = ("mixture", "heavy-tailed", "geometric")
POPULARITY = ("zipf", "tiers", "communities")
#: Real grouped datasets: name -> bounds (records are clamped to them; income in $1,000).
REAL_GROUPED = {"acs12-hours": (0.0, 99.0), "acs12-income": (0.0, 200.0), "boston-medv": (0.0, 50.0),
                "faithful-waiting": (40.0, 100.0)}
#: Real hybrid-trust datasets: name -> m (records lie in [0, m]).
REAL_HYBRID_TRUST = {"salaries": 250.0, "acs12-income": 200.0, "boston-medv": 50.0, "faithful-waiting": 100.0}
#: Epsilons of a hybrid-trust truth's groups (each group its own).
TRUST_EPSILONS = (0.5, 1.0, 2.0, 4.0)
#: Real user-item datasets (users with at least one item).
REAL_USER_ITEM = ("insteval", "flights-ua", "verbagg")
#: Epsilons the private groups of a grouped truth are drawn from (three distinct ones per truth).
GROUP_EPSILONS = (2.0, 1.0, 0.5, 0.3, 0.1, 0.05)


@dataclass
class Truth:
    """One held-out truth.

    Parameters
    ----------
    family
        ``"grouped"``, ``"hybrid-trust"`` or ``"user-item"`` (the SPEC kind).
    source
        ``"synthetic"`` or ``"real"``.
    generator
        The generator's name (``"skewed"``, ``"mixture+zipf"``, ...) or the real dataset's name.
    spec
        The public knowledge and settings as a raw SPEC dict (:func:`hybridpriv.spec.parse_spec`).
    data
        The private truth: a dict ``{group name: records}`` (grouped: every group, the public panel
        too; hybrid-trust: ``"tcm"`` and ``"lm"``, the private records only) or a users x items CSR
        matrix.
    """

    family: str
    source: str
    generator: str
    spec: dict[str, Any]
    data: Any

    def dataset(self, groups=None):
        """The truth as a mechanism reads it (grouped: records in the order of ``groups``;
        hybrid-trust: the TCM then the LM records)."""
        if self.family == "hybrid-trust":
            return GroupedDataset((np.asarray(self.data["tcm"], dtype=float), np.asarray(self.data["lm"], dtype=float)))
        if self.family == "grouped":
            return GroupedDataset(tuple(np.asarray(self.data[g.name], dtype=float) for g in groups))
        return self.data


def _grouped_spec(bounds, panel: np.ndarray, sizes, epsilons) -> dict[str, Any]:
    groups = [{"name": "panel", "size": int(panel.size), "epsilon": float("inf"), "data": panel.tolist()}]
    groups += [{"name": f"private-{j}", "size": int(n), "epsilon": float(e)}
               for j, (n, e) in enumerate(zip(sizes, epsilons))]
    return {"kind": "grouped", "statistic": "mean", "bounds": [float(bounds[0]), float(bounds[1])], "groups": groups,
            "evaluation": {"target": "sample"}}


def _draw(kind: str, size: int, rng: np.random.Generator, p: dict[str, float], shift: float = 0.0) -> np.ndarray:
    if kind == "skewed":
        x = rng.gamma(p["shape"], p["mean"] / p["shape"], size)
    elif kind == "bimodal":
        low = rng.random(size) < p["weight"]
        x = np.where(low, rng.normal(p["m1"], p["s1"], size), rng.normal(p["m2"], p["s2"], size))
    elif kind == "heavy-tailed":
        x = p["centre"] + p["scale"] * rng.standard_t(p["df"], size)
    elif kind == "clamped":
        x = rng.lognormal(np.log(p["median"]), p["sigma"], size)
    elif kind == "shifted-groups":
        x = rng.normal(p["mean"] + shift, p["sd"], size)
    elif kind == "heaped":
        heap = rng.random(size) < p["heaped"]
        x = np.where(heap, rng.choice([20.0, 40.0, 50.0], size, p=[0.2, 0.6, 0.2]),
                     rng.beta(p["a"], p["b"], size) * 100.0)
    else:
        raise ValueError(f"kind must be one of {GROUPED_GENERATORS}, got {kind!r}")
    return np.round(np.clip(x, 0.0, 100.0), 1)


def _grouped_params(kind: str, rng: np.random.Generator) -> dict[str, float]:
    u = rng.uniform
    return {"skewed": lambda: {"shape": u(0.7, 3.0), "mean": u(10, 40)},
            "bimodal": lambda: {"weight": u(0.2, 0.8), "m1": u(10, 40), "s1": u(3, 12), "m2": u(55, 90),
                                "s2": u(3, 12)},
            "heavy-tailed": lambda: {"centre": u(30, 70), "scale": u(3, 12), "df": u(1.2, 3.0)},
            "clamped": lambda: {"median": u(45, 85), "sigma": u(0.3, 0.7)},
            "shifted-groups": lambda: {"mean": u(30, 70), "sd": u(5, 20), "spread": u(5, 25)},
            "heaped": lambda: {"heaped": u(0.3, 0.6), "a": u(1.0, 4.0), "b": u(1.0, 4.0)}}[kind]()


def grouped_truth(i: int, rng: np.random.Generator, quick: bool = False) -> Truth:
    """Synthetic grouped truth number ``i`` (its generator: ``GROUPED_GENERATORS[i % 6]``).

    A public panel (50-300 records; 30-100 at ``quick``) beside three private groups (100-1,000
    records; 50-300 at ``quick``) with three distinct epsilons of :data:`GROUP_EPSILONS`; records in
    ``[0, 100]``.
    """
    kind = GROUPED_GENERATORS[i % len(GROUPED_GENERATORS)]
    p = _grouped_params(kind, rng)
    panel_n = int(rng.integers(30, 101) if quick else rng.integers(50, 301))
    sizes = rng.integers(50, 301, 3) if quick else rng.integers(100, 1001, 3)
    epsilons = sorted(rng.choice(GROUP_EPSILONS, 3, replace=False), reverse=True)
    shifts = rng.uniform(-1, 1, 4) * p.get("spread", 0.0)
    data = {"panel": _draw(kind, panel_n, rng, p, shifts[0])}
    for j, n in enumerate(sizes):
        data[f"private-{j}"] = _draw(kind, int(n), rng, p, shifts[j + 1])
    return Truth("grouped", "synthetic", kind, _grouped_spec((0, 100), data["panel"], sizes, epsilons), data)


def _read(name: str) -> list[dict[str, str]]:
    text = (resources.files("hybridpriv") / "examples" / name).read_text()
    return list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))


def _shuffled_values(name: str, rng: np.random.Generator) -> np.ndarray:
    """The records of real dataset ``name`` in ``calibration-grouped.csv``, shuffled by ``rng``."""
    return rng.permutation(np.array([float(r["value"]) for r in _read("calibration-grouped.csv")
                                     if r["dataset"] == name]))


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
        rows = _read("acs12-hours.csv")
        order = ["panel", "opt-in", "default", "strict"]
        parts = [np.array([float(r["hours"]) for r in rows if r["group"] == g]) for g in order]
    else:
        x = _shuffled_values(name, rng)
        cut = np.round(np.cumsum([0.2, 0.4, 0.3]) * x.size).astype(int)
        parts = np.split(x, cut)
    parts = [np.clip(v, lo, hi) for v in parts]
    data = {"panel": parts[0], **{f"private-{j}": v for j, v in enumerate(parts[1:])}}
    return Truth("grouped", "real", name, _grouped_spec((lo, hi), parts[0], [v.size for v in parts[1:]],
                                                         (1.0, 0.3, 0.05)), data)


def _hybrid_trust_spec(m: float, pilots: tuple[np.ndarray, np.ndarray], sizes, epsilons) -> dict[str, Any]:
    return {"kind": "hybrid-trust", "m": float(m),
            "tcm": {"name": "tcm", "size": int(sizes[0]), "epsilon": float(epsilons[0])},
            "lm": {"name": "lm", "size": int(sizes[1]), "epsilon": float(epsilons[1])},
            "knowledge": {"pilot_tcm": pilots[0].tolist(), "pilot_lm": pilots[1].tolist()}}


def hybrid_trust_truth(i: int, rng: np.random.Generator, quick: bool = False) -> Truth:
    """Synthetic hybrid-trust truth number ``i`` (its law: ``GROUPED_GENERATORS[i % 6]``), ``m = 100``.

    ``n`` users in 300-3,000 (100-500 at ``quick``), a TCM share ``c`` in 2-50% (at least one user
    in each group), each group's epsilon from :data:`TRUST_EPSILONS`; the LM group shares the TCM
    group's law parameters on even-numbered rounds of the six laws and draws its own otherwise
    (``shifted-groups`` always shifts it).  Public: 10-40 pilot records per group (10-20 at
    ``quick``), drawn from the group's law beside its private records.
    """
    kind = GROUPED_GENERATORS[i % len(GROUPED_GENERATORS)]
    p_tcm = _grouped_params(kind, rng)
    p_lm = p_tcm if (i // len(GROUPED_GENERATORS)) % 2 == 0 else _grouped_params(kind, rng)
    n = int(rng.integers(100, 501) if quick else rng.integers(300, 3001))
    n_tcm = int(np.clip(round(rng.uniform(0.02, 0.5) * n), 1, n - 1))
    epsilons = rng.choice(TRUST_EPSILONS, 2)
    shifts = rng.uniform(-1, 1, 2) * p_tcm.get("spread", 0.0)
    pilot_n = rng.integers(10, 21, 2) if quick else rng.integers(10, 41, 2)
    tcm = _draw(kind, n_tcm + int(pilot_n[0]), rng, p_tcm, shifts[0])
    lm = _draw(kind, n - n_tcm + int(pilot_n[1]), rng, p_lm, shifts[1])
    pilots = (tcm[:pilot_n[0]], lm[:pilot_n[1]])
    data = {"tcm": tcm[pilot_n[0]:], "lm": lm[pilot_n[1]:]}
    return Truth("hybrid-trust", "synthetic", kind,
                 _hybrid_trust_spec(100.0, pilots, (n_tcm, n - n_tcm), epsilons), data)


def real_hybrid_trust_truth(name: str, rng: np.random.Generator) -> Truth:
    """Real hybrid-trust truth ``name`` (:data:`REAL_HYBRID_TRUST`) at epsilon 1 in both groups.

    ``salaries`` is the built-in example without its earlier release (junior faculty TCM,
    professors LM; the published pilots, 20 each).  The others are shuffled by ``rng``: 20 + 20
    pilot records, then 30% of the rest TCM and 70% LM (records clamped to ``[0, m]``).
    """
    if name not in REAL_HYBRID_TRUST:
        raise ValueError(f"name must be one of {list(REAL_HYBRID_TRUST)}, got {name!r}")
    m = REAL_HYBRID_TRUST[name]
    if name == "salaries":
        rows = _read("salaries.csv")

        def part(group, role):
            return np.array([float(r["salary_k"]) for r in rows if r["group"] == group and r["role"] == role])
        pilots = (part("junior", "pilot"), part("professors", "pilot"))
        data = {"tcm": part("junior", "private"), "lm": part("professors", "private")}
    else:
        x = np.clip(_shuffled_values(name, rng), 0.0, m)
        rest = x[40:]
        n_tcm = int(round(0.3 * rest.size))
        pilots, data = (x[:20], x[20:40]), {"tcm": rest[:n_tcm], "lm": rest[n_tcm:]}
    return Truth("hybrid-trust", "real", name,
                 _hybrid_trust_spec(m, pilots, (data["tcm"].size, data["lm"].size), (1.0, 1.0)), data)


def _matrix(items: list[np.ndarray], m: int) -> sp.csr_matrix:
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in items])])
    indices = np.concatenate(items).astype(np.int64)
    return sp.csr_matrix((np.ones(indices.size, dtype=np.int64), indices, indptr), shape=(len(items), m))


def _user_item_spec(matrix: sp.csr_matrix, epsilon: float, k_max: int) -> dict[str, Any]:
    c = np.asarray(matrix.sum(axis=0)).ravel().astype(int)
    return {"kind": "user-item", "column_sums": c.tolist(), "n": int(matrix.shape[0]), "epsilon": float(epsilon),
            "k": [1, int(min(k_max, c.size))], "loss": "squared"}


def user_item_truth(i: int, rng: np.random.Generator, quick: bool = False, k_max: int = 20) -> Truth:
    """Synthetic user-item truth number ``i``: row law ``ROW_LAWS[i % 3]``, popularity ``POPULARITY[(i // 3) % 3]``.

    ``n`` users in 300-2,000 (100-300 at ``quick``), ``m`` items in 20-100 (10-30 at ``quick``),
    every user with at least one item; epsilon 1.
    """
    law, pop = ROW_LAWS[i % len(ROW_LAWS)], POPULARITY[(i // len(ROW_LAWS)) % len(POPULARITY)]
    n = int(rng.integers(100, 301) if quick else rng.integers(300, 2001))
    m = int(rng.integers(10, 31) if quick else rng.integers(20, 101))
    if law == "mixture":
        heavy = rng.random(n) < rng.uniform(0.05, 0.3)
        r = 1 + np.where(heavy, rng.poisson(rng.uniform(6, 20), n), rng.poisson(rng.uniform(0.3, 1.5), n))
    elif law == "heavy-tailed":
        r = np.ceil(rng.pareto(rng.uniform(1.1, 2.5), n) + 1e-9).astype(int)
    else:
        r = rng.geometric(1.0 / rng.uniform(1.5, 6.0), n)
    r = np.clip(r, 1, m)
    base = np.arange(1, m + 1, dtype=float) ** -rng.uniform(0.5, 1.5)
    if pop == "tiers":
        base = np.where(rng.permutation(m) < max(1, m // 10), rng.uniform(5, 30), 1.0)
    community = rng.integers(0, int(rng.integers(2, 6)), n)
    blocks = rng.permutation(m) % (community.max() + 1)
    boost = rng.uniform(5, 20)
    items = []
    for u in range(n):
        w = base * (np.where(blocks == community[u], boost, 1.0) if pop == "communities" else 1.0)
        items.append(np.sort(rng.choice(m, r[u], replace=False, p=w / w.sum())))
    return Truth("user-item", "synthetic", f"{law}+{pop}", _user_item_spec(_matrix(items, m), 1.0, k_max),
                 _matrix(items, m))


def real_user_item_truth(name: str, k_max: int = 20) -> Truth:
    """Real user-item truth ``name`` (:data:`REAL_USER_ITEM`) at epsilon 1."""
    if name not in REAL_USER_ITEM:
        raise ValueError(f"name must be one of {list(REAL_USER_ITEM)}, got {name!r}")
    rows = [r for r in _read("calibration-user-item.csv") if r["dataset"] == name]
    items = [np.array(sorted(int(x) for x in r["items"].split()), dtype=np.int64) for r in rows]
    matrix = _matrix(items, int(max(int(r.max()) for r in items)) + 1)
    return Truth("user-item", "real", name, _user_item_spec(matrix, 1.0, k_max), matrix)
