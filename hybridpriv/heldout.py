"""Held-out truths for the calibration study: private datasets the models of public knowledge do not contain.

A :class:`Truth` is one private dataset and the PUBLIC knowledge a curator would have about it,
written as a SPEC dict (:mod:`hybridpriv.spec`); the private records never enter the SPEC.
:mod:`hybridpriv.calibration` runs the select path on the SPEC and then scores every candidate on the
private records.  Each family makes its own truths (:meth:`hybridpriv.core.family.Family.synthetic_truth`,
:meth:`~hybridpriv.core.family.Family.real_truth`: e.g. ``hybridpriv.families.grouped.heldout``); this
module holds what they share: the laws scalar records are drawn from (:data:`RECORD_LAWS`, none of them
a clamped normal or a beta: ``skewed`` (gamma), ``bimodal`` (two normals), ``heavy-tailed`` (Student t,
mass at both bounds), ``clamped`` (log-normal, 5-40% piled at the upper bound), ``shifted-groups``
(each group its own mean), ``heaped`` (answers heaped on round values, like hours worked)) and the
reader of the real datasets shipped in ``hybridpriv/examples`` (source, licence and preprocessing in
its README).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

__all__ = ["RECORD_LAWS", "Truth", "draw_records", "law_params", "read_example", "shuffled_values"]

#: The laws scalar records (in ``[0, 100]``) are drawn from.
RECORD_LAWS = ("skewed", "bimodal", "heavy-tailed", "clamped", "shifted-groups", "heaped")


@dataclass
class Truth:
    """One held-out truth.

    Parameters
    ----------
    family
        The name of the family that made it (the SPEC kind).
    source
        ``"synthetic"`` or ``"real"``.
    generator
        The generator's name (``"skewed"``, ``"mixture+zipf"``, ...) or the real dataset's name.
    spec
        The public knowledge and settings as a raw SPEC dict (:func:`hybridpriv.spec.parse_spec`).
    data
        The private truth, as the family keeps it (e.g. a dict ``{group name: records}``, a users x
        items matrix); :meth:`dataset` gives it as the family's mechanisms read it.
    """

    family: str
    source: str
    generator: str
    spec: dict[str, Any]
    data: Any

    def dataset(self, groups=None):
        """The truth as the family's mechanisms read it (:meth:`hybridpriv.core.family.Family.truth_dataset`;
        ``groups``: the fitted model's, where the family's data are grouped)."""
        from .families import family

        return family(self.family).truth_dataset(self.data, groups)


def draw_records(kind: str, size: int, rng: np.random.Generator, p: dict[str, float], shift: float = 0.0) -> np.ndarray:
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
        raise ValueError(f"kind must be one of {RECORD_LAWS}, got {kind!r}")
    return np.round(np.clip(x, 0.0, 100.0), 1)


def law_params(kind: str, rng: np.random.Generator) -> dict[str, float]:
    u = rng.uniform
    return {"skewed": lambda: {"shape": u(0.7, 3.0), "mean": u(10, 40)},
            "bimodal": lambda: {"weight": u(0.2, 0.8), "m1": u(10, 40), "s1": u(3, 12), "m2": u(55, 90),
                                "s2": u(3, 12)},
            "heavy-tailed": lambda: {"centre": u(30, 70), "scale": u(3, 12), "df": u(1.2, 3.0)},
            "clamped": lambda: {"median": u(45, 85), "sigma": u(0.3, 0.7)},
            "shifted-groups": lambda: {"mean": u(30, 70), "sd": u(5, 20), "spread": u(5, 25)},
            "heaped": lambda: {"heaped": u(0.3, 0.6), "a": u(1.0, 4.0), "b": u(1.0, 4.0)}}[kind]()


def read_example(name: str) -> list[dict[str, str]]:
    text = (resources.files("hybridpriv") / "examples" / name).read_text()
    return list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))


def shuffled_values(name: str, rng: np.random.Generator) -> np.ndarray:
    """The records of real dataset ``name`` in ``calibration-grouped.csv``, shuffled by ``rng``."""
    return rng.permutation(np.array([float(r["value"]) for r in read_example("calibration-grouped.csv")
                                     if r["dataset"] == name]))
