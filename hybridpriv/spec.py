"""SPEC files: what is public, which candidates to compare, how to evaluate them (TOML).

A SPEC describes one selection problem (see ``docs/tutorial.md`` for the full format)::

    statistic = "mean"          # or "median"
    bounds = [0, 80]

    [[groups]]
    name = "panel"
    size = 150
    epsilon = inf               # public records
    data = "panel.csv"          # their values, relative to the SPEC file

    [[groups]]
    name = "opt-in"
    size = 2000
    epsilon = 1.0

    [model]
    family = "normal"

    [evaluation]
    draws = 200
    trials = 20

Every error names the key and the bad value.
"""

from __future__ import annotations

import csv
import math
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from .privacy import NEIGHBOUR_RELATIONS, Bounds, Group, check_groups

__all__ = [
    "EXAMPLES",
    "SelectionSpec",
    "UserItemSpec",
    "builtin_example_path",
    "load_spec",
    "parse_spec",
    "parse_user_item_spec",
]

_TOP = {"kind", "statistic", "bounds", "clamp", "relation", "groups", "model", "evaluation", "description"}
_UI_TOP = {"kind", "description", "column_sums", "n", "epsilon", "k", "loss", "trades_per_row", "evaluation"}
_UI_EVAL = {"draws", "seed", "chains", "trials"}
_GROUP = {"name", "size", "epsilon", "delta", "data"}
_MODEL = {"family", "family_options", "known_variance", "released_means", "chains", "tune"}
_RELEASE = {"group", "value", "noise_scale"}
_EVAL = {"estimators", "draws", "trials", "seed", "target", "loss"}


@dataclass
class SelectionSpec:
    """A parsed SPEC (see the module docstring)."""

    groups: tuple[Group, ...]
    bounds: Bounds
    statistic: str = "mean"
    clamp: bool = False
    relation: str = "add-remove"
    public_data: dict[str, np.ndarray] = field(default_factory=dict)
    family: str = "normal"
    family_options: dict[str, Any] = field(default_factory=dict)
    known_variance: float | None = None
    released_means: list[dict[str, Any]] = field(default_factory=list)
    chains: int = 2
    tune: int = 500
    estimators: list[str] | None = None
    draws: int = 200
    trials: int = 20
    seed: int = 0
    target: str = "population"
    loss: str = "squared"
    description: str = ""
    source: str = "<inline>"

    def config(self) -> dict[str, Any]:
        """A JSON-friendly record of the spec, for provenance."""
        return {
            "source": self.source,
            "statistic": self.statistic,
            "bounds": [self.bounds.lower, self.bounds.upper],
            "clamp": self.clamp,
            "relation": self.relation,
            "groups": [{"name": g.name, "size": g.size, "epsilon": g.epsilon, "delta": g.delta} for g in self.groups],
            "public_data": {k: int(v.size) for k, v in self.public_data.items()},
            "family": self.family,
            "family_options": self.family_options,
            "known_variance": self.known_variance,
            "released_means": self.released_means,
            "chains": self.chains,
            "tune": self.tune,
            "estimators": self.estimators,
            "draws": self.draws,
            "trials": self.trials,
            "seed": self.seed,
            "target": self.target,
            "loss": self.loss,
        }


def _unknown(table: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(table) - allowed)
    if extra:
        raise ValueError(f"spec: unknown key(s) {extra} in {where}; allowed: {sorted(allowed)}")


def _int(value: Any, key: str, minimum: int = 1) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"spec: {key} must be an integer >= {minimum}, got {value!r}")
    return value


def _number(value: Any, key: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ValueError(f"spec: {key} must be a number, got {value!r}")
    if math.isnan(float(value)):
        raise ValueError(f"spec: {key} must be a number, got nan")
    return float(value)


def _read_values(path: Path, key: str) -> np.ndarray:
    if not path.is_file():
        raise FileNotFoundError(f"spec: {key} file not found: {path}")
    with path.open(newline="") as fh:
        rows = [r for r in csv.reader(fh) if r and any(c.strip() for c in r)]
    if not rows:
        raise ValueError(f"spec: {key} file {path} holds no values")
    header = rows[0]
    try:
        float(header[0])
    except ValueError:
        rows = rows[1:]  # a header line
    try:
        values = np.array([float(r[0]) for r in rows])
    except ValueError as exc:
        raise ValueError(f"spec: {key} file {path} has a non-numeric value: {exc}") from None
    return values


def parse_spec(raw: dict[str, Any], base_dir: Path | None = None, source: str = "<inline>") -> SelectionSpec:
    """Validate a SPEC given as a dict (e.g. from ``tomllib``) and return a :class:`SelectionSpec`."""
    base_dir = base_dir or Path.cwd()
    if not isinstance(raw, dict):
        raise ValueError("spec: the top level must be a table")
    _unknown(raw, _TOP, "the top level")
    statistic = raw.get("statistic", "mean")
    if statistic not in ("mean", "median"):
        raise ValueError(f"spec: statistic must be 'mean' or 'median', got {statistic!r}")
    if "bounds" not in raw:
        raise ValueError("spec: bounds = [lower, upper] is required")
    try:
        bounds = Bounds.from_pair(raw["bounds"])
    except (TypeError, ValueError) as exc:
        raise ValueError(f"spec: {exc}") from None
    clamp = raw.get("clamp", False)
    if not isinstance(clamp, bool):
        raise ValueError(f"spec: clamp must be true or false, got {clamp!r}")
    relation = raw.get("relation", "add-remove")
    if relation not in NEIGHBOUR_RELATIONS:
        raise ValueError(f"spec: relation must be one of {list(NEIGHBOUR_RELATIONS)}, got {relation!r}")

    raw_groups = raw.get("groups")
    if not isinstance(raw_groups, list) or not raw_groups:
        raise ValueError("spec: at least one [[groups]] table is required")
    groups, public_data = [], {}
    for k, g in enumerate(raw_groups):
        where = f"groups[{k}]"
        if not isinstance(g, dict):
            raise ValueError(f"spec: {where} must be a table")
        _unknown(g, _GROUP, where)
        for req in ("name", "size", "epsilon"):
            if req not in g:
                raise ValueError(f"spec: {where}.{req} is required")
        if not isinstance(g["size"], int) or isinstance(g["size"], bool):
            raise ValueError(f"spec: {where}.size must be an integer, got {g['size']!r}")
        eps = g["epsilon"]
        if isinstance(eps, str) and eps.strip().lower() in ("inf", "public"):
            eps = math.inf
        try:
            group = Group(str(g["name"]), g["size"], eps, g.get("delta", 0.0))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"spec: {where}: {exc}") from None
        groups.append(group)
        if "data" in g:
            if not group.is_public:
                raise ValueError(
                    f"spec: {where}.data given for group {group.name!r} with epsilon={group.epsilon:g}: "
                    "only public groups' records may be used"
                )
            d = g["data"]
            if isinstance(d, list):
                values = np.array([_number(v, f"{where}.data") for v in d])
            elif isinstance(d, str):
                values = _read_values((base_dir / d), f"{where}.data")
            else:
                raise ValueError(f"spec: {where}.data must be a CSV path or a list of numbers, got {d!r}")
            if values.size != group.size:
                raise ValueError(f"spec: {where}.data holds {values.size} values but size = {group.size}")
            if np.isnan(values).any():
                raise ValueError(f"spec: {where}.data contains NaN")
            public_data[group.name] = values
    try:
        groups_t = check_groups(groups)
    except ValueError as exc:
        raise ValueError(f"spec: {exc}") from None

    model = raw.get("model", {})
    if not isinstance(model, dict):
        raise ValueError("spec: [model] must be a table")
    _unknown(model, _MODEL, "[model]")
    family = model.get("family", "normal")
    if family not in ("normal", "beta"):
        raise ValueError(f"spec: model.family must be 'normal' or 'beta', got {family!r}")
    family_options = model.get("family_options", {})
    if not isinstance(family_options, dict):
        raise ValueError(f"spec: model.family_options must be a table, got {family_options!r}")
    known_variance = model.get("known_variance")
    if known_variance is not None:
        known_variance = _number(known_variance, "model.known_variance")
    releases = []
    for k, r in enumerate(model.get("released_means", [])):
        where = f"model.released_means[{k}]"
        if not isinstance(r, dict):
            raise ValueError(f"spec: {where} must be a table")
        _unknown(r, _RELEASE, where)
        for req in ("value", "noise_scale"):
            if req not in r:
                raise ValueError(f"spec: {where}.{req} is required")
        rel = {"value": _number(r["value"], f"{where}.value"), "noise_scale": _number(r["noise_scale"], f"{where}.noise_scale")}
        if "group" in r:
            if r["group"] not in {g.name for g in groups_t}:
                raise ValueError(f"spec: {where}.group names unknown group {r['group']!r}")
            rel["group"] = r["group"]
        releases.append(rel)
    chains = _int(model.get("chains", 2), "model.chains")
    tune = _int(model.get("tune", 500), "model.tune", minimum=0)

    ev = raw.get("evaluation", {})
    if not isinstance(ev, dict):
        raise ValueError("spec: [evaluation] must be a table")
    _unknown(ev, _EVAL, "[evaluation]")
    estimators = ev.get("estimators")
    if estimators is not None:
        from .estimators import ESTIMATOR_NAMES, ESTIMATOR_STATISTIC

        if not isinstance(estimators, list) or not estimators:
            raise ValueError(f"spec: evaluation.estimators must be a non-empty list of names, got {estimators!r}")
        for name in estimators:
            if name not in ESTIMATOR_NAMES:
                raise ValueError(f"spec: unknown estimator {name!r}; known: {list(ESTIMATOR_NAMES)}")
            if ESTIMATOR_STATISTIC[name] != statistic:
                raise ValueError(
                    f"spec: estimator {name!r} estimates the {ESTIMATOR_STATISTIC[name]}, but statistic = {statistic!r}"
                )
    target = ev.get("target", "population")
    if target not in ("population", "sample"):
        raise ValueError(f"spec: evaluation.target must be 'population' or 'sample', got {target!r}")
    loss = ev.get("loss", "squared")
    if loss not in ("squared", "absolute"):
        raise ValueError(f"spec: evaluation.loss must be 'squared' or 'absolute', got {loss!r}")
    return SelectionSpec(
        groups=groups_t,
        bounds=bounds,
        statistic=statistic,
        clamp=clamp,
        relation=relation,
        public_data=public_data,
        family=family,
        family_options=family_options,
        known_variance=known_variance,
        released_means=releases,
        chains=chains,
        tune=tune,
        estimators=estimators,
        draws=_int(ev.get("draws", 200), "evaluation.draws", minimum=2),
        trials=_int(ev.get("trials", 20), "evaluation.trials"),
        seed=_int(ev.get("seed", 0), "evaluation.seed", minimum=0),
        target=target,
        loss=loss,
        description=str(raw.get("description", "")),
        source=source,
    )


@dataclass
class UserItemSpec:
    """A parsed user-item SPEC (``kind = "user-item"``): choose k for contribution-bounded counts."""

    column_sums: np.ndarray
    n: int | tuple[int, int] | None
    epsilon: float
    ks: list[int]
    loss: str = "squared"
    trades_per_row: int = 5
    draws: int = 400
    seed: int = 0
    chains: int = 2
    trials: int = 200
    description: str = ""
    source: str = "<inline>"

    def config(self) -> dict[str, Any]:
        """A JSON-friendly record of the spec, for provenance."""
        return {
            "source": self.source, "kind": "user-item", "column_sums": [int(x) for x in self.column_sums],
            "n": self.n, "epsilon": self.epsilon, "k": self.ks, "loss": self.loss,
            "trades_per_row": self.trades_per_row, "draws": self.draws, "seed": self.seed,
            "chains": self.chains, "trials": self.trials,
        }


def parse_user_item_spec(raw: dict[str, Any], base_dir: Path | None = None, source: str = "<inline>") -> UserItemSpec:
    """Validate a user-item SPEC given as a dict."""
    base_dir = base_dir or Path.cwd()
    _unknown(raw, _UI_TOP, "the top level of a user-item spec")
    if "column_sums" not in raw:
        raise ValueError("spec: column_sums is required (a list of integers, or a CSV path)")
    cs = raw["column_sums"]
    if isinstance(cs, str):
        cs = _read_values(base_dir / cs, "column_sums")
    if not isinstance(cs, (list, np.ndarray)) or len(cs) == 0:
        raise ValueError(f"spec: column_sums must be a non-empty list of integers or a CSV path, got {cs!r}")
    values = []
    for j, v in enumerate(cs):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(float(v)) \
                or float(v) != int(float(v)) or float(v) < 0:
            raise ValueError(f"spec: column_sums[{j}] must be a whole number >= 0, got {v!r}")
        values.append(int(float(v)))
    n = raw.get("n")
    if isinstance(n, list):
        if len(n) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) for x in n):
            raise ValueError(f"spec: n must be an integer or a [low, high] pair of integers, got {n!r}")
        n = (n[0], n[1])
    elif n is not None and (not isinstance(n, int) or isinstance(n, bool)):
        raise ValueError(f"spec: n must be an integer or a [low, high] pair of integers, got {n!r}")
    if "epsilon" not in raw:
        raise ValueError("spec: epsilon is required")
    eps = raw["epsilon"]
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not (float(eps) > 0) or math.isinf(float(eps)):
        raise ValueError(f"spec: epsilon must be a finite number > 0, got {eps!r}")
    k = raw.get("k", [1, 10])
    if isinstance(k, int) and not isinstance(k, bool):
        if k < 1:
            raise ValueError(f"spec: k must be an integer >= 1, got {k!r}")
        ks = [k]
    elif isinstance(k, list) and len(k) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in k):
        if not 1 <= k[0] <= k[1]:
            raise ValueError(f"spec: k must be a range [low, high] with 1 <= low <= high, got {k!r}")
        ks = list(range(k[0], k[1] + 1))
    else:
        raise ValueError(f"spec: k must be an integer or a range [low, high], got {k!r}")
    m = len(values)
    if ks[-1] > m:
        raise ValueError(f"spec: k must be <= m = {m} (the number of items), got {ks[-1]}")
    loss = raw.get("loss", "squared")
    if loss not in ("squared", "max", "top10"):
        raise ValueError(f"spec: loss must be 'squared', 'max' or 'top10', got {loss!r}")
    ev = raw.get("evaluation", {})
    if not isinstance(ev, dict):
        raise ValueError("spec: [evaluation] must be a table")
    _unknown(ev, _UI_EVAL, "[evaluation]")
    return UserItemSpec(
        column_sums=np.array(values, dtype=np.int64),
        n=n,
        epsilon=float(eps),
        ks=ks,
        loss=loss,
        trades_per_row=_int(raw.get("trades_per_row", 5), "trades_per_row"),
        draws=_int(ev.get("draws", 400), "evaluation.draws", minimum=2),
        seed=_int(ev.get("seed", 0), "evaluation.seed", minimum=0),
        chains=_int(ev.get("chains", 2), "evaluation.chains"),
        trials=_int(ev.get("trials", 200), "evaluation.trials"),
        description=str(raw.get("description", "")),
        source=source,
    )


def load_spec(path: str | Path) -> SelectionSpec | UserItemSpec:
    """Read and validate a SPEC file (TOML); ``kind = "user-item"`` selects the user-item form."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"spec file not found: {path}")
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"spec: {path} is not valid TOML: {exc}") from None
    kind = raw.get("kind", "grouped")
    if kind == "user-item":
        return parse_user_item_spec(raw, base_dir=path.parent, source=str(path))
    if kind != "grouped":
        raise ValueError(f"spec: kind must be 'grouped' or 'user-item', got {kind!r}")
    return parse_spec(raw, base_dir=path.parent, source=str(path))


#: Built-in examples by name.
EXAMPLES = {"grouped": "grouped.toml", "favorite-sites": "favorite-sites.toml"}


def builtin_example_path(name: str = "grouped") -> Path:
    """The SPEC of a built-in example: ``"grouped"`` (a public panel beside private groups,
    the default) or ``"favorite-sites"`` (Zeber & Lopatka's user-item case)."""
    if name not in EXAMPLES:
        raise ValueError(f"example must be one of {list(EXAMPLES)}, got {name!r}")
    return Path(str(resources.files("hybridpriv") / "examples" / EXAMPLES[name]))
