"""The release job: the chosen candidate, applied to the private data, charged to the ledger.

Order of steps (each refusal is a ``ValueError`` naming what is wrong, before anything is spent):

1. read the SPEC; with ``selection``, check that the select run's recorded SPEC config is this SPEC's
   (a differing key is named) and take its recommendation (or the ``candidate`` named);
2. rebuild the candidates exactly as the select run built them (a grouped run's posterior is read back
   from ``selection.nc``; the rebuilt candidate's parameters must equal the evaluated ones);
3. refuse a candidate that does not meet every unit's requirement, or whose noise the OpenDP backend
   does not cover (:func:`~hybridpriv.release.noise.probe_noise`, on stand-in data);
4. take the ledger's lock; refuse a release that would overspend any unit **before reading the data**;
5. read and validate the private data (:mod:`hybridpriv.release.data`); release once with OpenDP noise
   (:class:`~hybridpriv.release.noise.OpenDPGenerator`);
6. append the ledger entry (atomic), then write ``OUT/release.json`` (atomic), then drop the lock.

The budget is charged *before* the values are published: a job killed between 6's two writes has
spent budget on values nobody saw (safe); a job killed earlier has spent nothing and published nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..privacy import Guarantee
from .composition import DEFAULT_TARGET_DELTA
from .ledger import Ledger, _now, _pause_hook, write_json_atomic
from .noise import OpenDPGenerator, probe_noise

__all__ = ["RELEASE_KINDS", "ReleaseResult", "check_config", "run_release", "spec_budgets"]

#: SPEC kinds that can be released from files.
RELEASE_KINDS = ("grouped", "user-item")


@dataclass
class ReleaseResult:
    """What :func:`run_release` returns: the output written and the ledger entry."""

    output: Path
    record: dict[str, Any]
    entry: dict[str, Any]


def _first_difference(a: Any, b: Any, path: str = "") -> str | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}".lstrip(".")
            d = _first_difference(a[k], b[k], f"{path}.{k}")
            if d is not None:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path} (length {len(a)} vs {len(b)})".lstrip(".")
        for i, (x, y) in enumerate(zip(a, b)):
            d = _first_difference(x, y, f"{path}[{i}]")
            if d is not None:
                return d
        return None
    return None if a == b else path.lstrip(".")


def check_config(recorded: Mapping[str, Any], spec_config: Mapping[str, Any]) -> None:
    """Refuse a selection whose recorded SPEC config differs from ``spec_config`` (``source`` — where the
    file lay — and the select run's command-line ``overrides`` aside), naming the first differing key."""
    a = {k: v for k, v in recorded.items() if k not in ("source", "overrides")}
    b = json.loads(json.dumps({k: v for k, v in spec_config.items() if k != "source"}, default=str))
    key = _first_difference(a, b)
    if key is not None:
        raise ValueError(f"the selection was made for another SPEC: key {key!r} differs "
                         f"(selection: {_get(a, key)!r}, this SPEC: {_get(b, key)!r})")


def _get(d: Any, key: str) -> Any:
    import re

    try:
        for part in re.findall(r"[^.\[\]]+|\[\d+\]", key.split(" (")[0]):
            d = d[int(part[1:-1])] if part.startswith("[") else d[part]
        s = json.dumps(d, default=str)
        return s if len(s) < 80 else s[:77] + "..."
    except (KeyError, IndexError, TypeError):
        return "(absent)"


def spec_budgets(spec: Any) -> dict[str, tuple[float, float]]:
    """The ledger budgets a SPEC implies: every group's (epsilon, delta), or the users' epsilon."""
    if spec.kind == "grouped":
        return {g.name: (g.epsilon, g.delta) for g in spec.groups}
    return {"users": (float(spec.epsilon), 0.0)}


def _requirements(problem: Any, spec: Any) -> dict[str, Guarantee]:
    req = problem.requirements
    if isinstance(req, Mapping):
        return dict(req)
    return {g.name: g.requirement(req or "add-remove") for g in spec.groups}


def _posterior(tree: Any, problem: Any, seed: int) -> Any:
    import xarray as xr

    skip = {"evaluation", "decision", "predictive_checks"}
    idata = xr.DataTree.from_dict({f"/{name}": tree[name].to_dataset() for name in tree.children if name not in skip})
    model = problem.model
    if hasattr(model, "build"):
        model.build()  # sets what the posterior reads of the model (its parameter names); no sampling
    return model.posterior_class(model, idata, seed)


def _stand_in(spec: Any) -> Any:
    if spec.kind == "grouped":
        return [np.full(g.size, spec.bounds.midpoint) for g in spec.groups]
    m = len(spec.column_sums)
    return np.eye(m, dtype=np.int8)


def _pick(candidates: Mapping[Any, Any], name: str) -> tuple[Any, Any]:
    for coord, mech in candidates.items():
        if str(coord) == name or getattr(mech, "label", None) == name:
            return coord, mech
    raise ValueError(f"unknown candidate {name!r}; known: {', '.join(str(c) for c in candidates)}")


def run_release(spec_path: str | Path, data_dir: str | Path, ledger_path: str | Path, out_dir: str | Path,
                selection: str | Path | None = None, candidate: str | None = None,
                budgets: Mapping[str, tuple[float, float]] | None = None,
                target_delta: float = DEFAULT_TARGET_DELTA,
                log: Callable[[str], None] = lambda _line: None) -> ReleaseResult:
    """Release the recommended (or named) candidate on the private data in ``data_dir`` (module docstring).

    Parameters
    ----------
    spec_path
        The SPEC (kinds :data:`RELEASE_KINDS`).
    data_dir
        The private data (:mod:`hybridpriv.release.data`).
    ledger_path
        The ledger file; created with ``budgets`` (default :func:`spec_budgets`) if missing.
    out_dir
        Where ``release.json`` is written (refused if it already holds one).
    selection, candidate
        A select run's ``selection.nc`` (its recommendation, unless ``candidate`` names another of
        its candidates), or just ``candidate`` (a candidate that needs no fitted model).
    """
    from ..params import describe
    from ..spec import load_spec
    from .data import load_grouped, load_user_item

    spec = load_spec(spec_path)
    if spec.kind not in RELEASE_KINDS:
        raise ValueError(f"release supports SPEC kinds {list(RELEASE_KINDS)}, got {spec.kind!r}")
    if selection is None and candidate is None:
        raise ValueError("give --selection FILE.nc (a select run's recommendation) or --candidate NAME")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out must be a folder, got the existing file {str(out)!r}")
    if (out / "release.json").exists():
        raise ValueError(f"--out {str(out)!r} already holds a release (release.json); choose another folder")
    problem = spec.problem()
    decision_info: dict[str, Any] = {"chosen_by": "named on the command line (--candidate)"}
    posterior = None
    evaluated_params = None
    if selection is not None:
        import xarray as xr

        tree = xr.open_datatree(selection)
        attrs = tree.attrs
        if attrs.get("kind") != spec.kind:
            raise ValueError(f"the selection {selection} is of kind {attrs.get('kind')!r}, the SPEC of kind {spec.kind!r}")
        check_config(json.loads(attrs["config"]), spec.config())
        decision = tree["decision"].to_dataset()
        dim = decision.attrs["candidate_dim"]
        name = candidate if candidate is not None else str(attrs["recommended"])
        if spec.kind == "grouped":
            if "model_family" in attrs:  # the family the selection fitted (family = auto may have fallen back)
                problem.model.use_family(str(attrs["model_family"]))
            posterior = _posterior(tree, problem, int(attrs["seed"]))
        coords = [str(c) for c in decision[dim].values]
        if name not in coords:
            labels = [str(x) for x in decision["label"].values]
            if name not in labels:
                raise ValueError(f"candidate {name!r} is not in the selection; its {dim} values: {', '.join(coords)}")
            name = coords[labels.index(name)]
        row = decision.isel({dim: coords.index(name)})
        evaluated_params = str(row["params"].values)
        decision_info = {
            "chosen_by": "recommended by the selection" if candidate is None else "named (--candidate) among the selection's",
            "selection": str(selection), "selection_created": str(attrs.get("created", "")),
            "recommended": str(attrs["recommended"]), "candidate_dim": dim,
            "expected_loss": float(row["expected_loss"]), "mcse": float(row["mcse"]), "p_best": float(row["p_best"]),
            "meets_requirements": bool(row["meets_requirements"]), "loss": str(decision.attrs.get("loss", "")),
            "recommendation_rule": str(decision.attrs.get("recommendation_rule", "")),
        }
        tree.close()
    else:
        name = candidate
    try:
        candidates = problem.candidates(posterior)
    except (TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"the candidates need the fitted model of public knowledge: give --selection "
                         f"(a select run's selection.nc) ({exc})") from None
    coord, mech = _pick(candidates, str(name))
    if evaluated_params is not None and json.dumps(describe(mech.get_params()), sort_keys=True) != evaluated_params:
        raise ValueError(f"candidate {name!r} rebuilt from the SPEC and selection differs from the one evaluated "
                         "(another hybridpriv version?); rerun select")
    for unit, required in _requirements(problem, spec).items():
        promised = mech.privacy.get(unit)
        if promised is None or not promised.satisfies(required):
            raise ValueError(f"candidate {name!r} does not give unit {unit!r} its required protection "
                             f"({required}); it promises {promised if promised is not None else 'nothing'}")
    probe_noise(mech, _stand_in(spec))
    ledger = Ledger(ledger_path)
    out.mkdir(parents=True, exist_ok=True)
    label = str(getattr(mech, "label", name))
    with ledger.locked(budgets if budgets is not None else spec_budgets(spec), log=log) as state:
        state.check(mech.privacy, label)  # before the data are read
        data = load_grouped(data_dir, spec) if spec.kind == "grouped" else load_user_item(data_dir, spec)
        values = np.asarray(mech.release(data, OpenDPGenerator(), trials=1))[0]
        _pause_hook("computed")
        released = float(values) if values.ndim == 0 else [float(v) for v in values]
        charged = state.charged_units(mech.privacy)
        entry = state.record(mech.privacy, label, kind=spec.kind, spec=str(spec.source),
                             output=str(out / "release.json"))
        totals = state.totals(target_delta)
        record = {
            "format": "hybridpriv-release", "version": 1, "created": _now(), "release_id": entry["id"],
            "kind": spec.kind, "spec": str(spec.source), "description": spec.description,
            "candidate": {"coordinate": str(coord), "label": label, "class": type(mech).__name__,
                          "params": json.loads(json.dumps(describe(mech.get_params()), default=str))},
            "released": released,
            "released_meaning": (f"the {spec.statistic} of all records" if spec.kind == "grouped"
                                 else "the count of every item, in the order of column_sums"),
            "guarantee": {u: {"epsilon": "inf" if math.isinf(g.epsilon) else g.epsilon, "delta": g.delta,
                              "relation": g.relation, "trust": g.trust} for u, g in mech.privacy.items()},
            "decision": decision_info,
            "noise": "OpenDP (opendp.measurements make_laplace / make_gaussian)",
            "ledger": {"path": str(ledger.path), "entry": entry["id"], "charged": sorted(charged),
                       "totals_after": {u: totals[u].as_dict() for u in charged}},
        }
        write_json_atomic(out / "release.json", record)
    log(f"released {label} ({spec.kind}); charged {', '.join(sorted(charged))} in {ledger.path}")
    return ReleaseResult(out / "release.json", record, entry)
