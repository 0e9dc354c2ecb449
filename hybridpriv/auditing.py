"""Audit a SPEC's candidates: ``hybridpriv audit SPEC [--candidate NAME ...] [--record FILE]``.

Every candidate a SPEC compares -- built-in or named by ``[[mechanisms]]`` -- is audited the same
way (:func:`audit_mechanism`): the statistical audit of its privacy declaration, unit by unit
(:func:`hybridpriv.testing.audit_estimator`: neighbouring datasets, an event search, exact
Clopper-Pearson bounds on held-out releases).  The candidates are built as ``select`` builds them
(after a fit of the model of public knowledge, since some use it).  The base dataset is the family's
(:meth:`hybridpriv.core.family.Family.audit_data`): for grouped mechanisms the records that make a mean
or median leak most (:func:`hybridpriv.testing.matrix.base_data`); for the other kinds one dataset the
fitted model generates, or the release's stand-in data (a typical dataset, not a worst case: say so
when you quote the result).

``hybridpriv release`` runs the same audit on a mechanism that does not ship with hybridpriv
(:func:`is_shipped`) before releasing it, unless an audit record (``--record`` of an earlier
``audit``) bound to the same class, code, parameters and declaration says it passed
(:func:`find_record`).

A ``violation`` means the mechanism's output distributions on some neighbouring pair differ by more
than its declared epsilon, with the stated confidence; ``pass`` means the audit found no evidence
of it (an audit can prove a bug, never the absence of one).
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable, Sequence
from hashlib import sha256
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["MAX_AUDIT_SAMPLES", "audit_mechanism", "audit_problem", "binding", "find_record",
           "format_audit", "is_shipped", "write_record"]

#: Most releases per dataset an audit draws (each pair of each unit draws twice that many outputs).
MAX_AUDIT_SAMPLES = 10_000_000
#: Most output numbers one audit batch may hold at once (samples x release size), 8 bytes each.
MAX_AUDIT_CELLS = 2**28


def check_samples(samples: object) -> int:
    """``samples`` as an int after checking it is an integer in [200, :data:`MAX_AUDIT_SAMPLES`]."""
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or not 200 <= samples <= MAX_AUDIT_SAMPLES:
        raise ValueError(f"samples must be an integer in [200, {MAX_AUDIT_SAMPLES:,}], got {samples!r}")
    return int(samples)


def is_shipped(mechanism: Any) -> bool:
    """Whether ``mechanism``'s class ships with hybridpriv (its module is one of the installed package's);
    any other class -- a SPEC's ``[[mechanisms]]``, an entry point -- is a plugin and is audited before
    a release."""
    import hybridpriv

    module = sys.modules.get(type(mechanism).__module__)
    if module is None or not type(mechanism).__module__.startswith("hybridpriv."):
        return False
    roots = [Path(p).resolve() for name in ("hybridpriv", "hybridpriv.models", "hybridpriv.studies")
             for p in getattr(sys.modules.get(name), "__path__", [])] or [Path(hybridpriv.__file__).parent.resolve()]
    try:
        where = Path(inspect.getsourcefile(type(mechanism)) or "").resolve()
    except TypeError:
        return False
    return any(where.is_relative_to(root) for root in roots)


def audit_mechanism(mech: Any, data: Any, samples: int = 20_000, confidence: float = 0.99, seed: int = 0) -> dict:
    """The audit ``hybridpriv audit`` runs on one candidate: ``{unit: AuditReport}``."""
    from .testing import audit_estimator

    return audit_estimator(mech, data, samples=check_samples(samples), confidence=confidence, seed=seed)


def audit_problem(problem: Any, names: Sequence[str] | None = None, samples: int = 20_000, seed: int = 0,
                  confidence: float = 0.99, log: Callable[[str], None] | None = None,
                  posterior: Any = None) -> xr.Dataset:
    """Audit ``problem``'s candidates (all, or those ``names`` gives by label or coordinate), built with
    ``posterior`` (a selection's, :func:`hybridpriv.workflow.read_selection`: the instances that selection
    evaluated), or with a fit of the model made here.

    Returns a Dataset over ``(candidate, unit)``: ``epsilon`` (claimed), ``delta``,
    ``epsilon_lower_bound`` and ``violation`` (bool; NaN / False where a unit is public), with
    ``attrs`` naming the base data of each candidate and, in ``attrs["bindings"]`` (JSON), what each
    candidate's result is bound to (:func:`binding`).
    """
    from .engine.progress import phase
    from .families import family

    fam = family(problem.kind)
    samples = check_samples(samples)
    say = log or (lambda _line: None)
    if posterior is None:
        per_chain = problem.min_posterior_draws
        say(f"fitting the model of public knowledge ({problem.chains} chains x {per_chain} draws) to build the "
            "candidates ...")
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
    bases, bindings = {}, {}
    with phase("auditing", total=len(candidates), unit="candidates") as update:
        for i, (key, mech) in enumerate(candidates.items()):
            data, bases[key] = fam.audit_data(mech, posterior, seed)
            say(f"auditing {key} ({samples:,} releases per dataset, {bases[key]}) ...")
            for unit, report in audit_mechanism(mech, data, samples, confidence, seed).items():
                j = units.index(unit)
                eps[i, j], dlt[i, j], low[i, j] = report.epsilon, report.delta, report.epsilon_lower_bound
            bindings[key] = binding(mech)
            update(i + 1)
    violation = np.where(np.isnan(low), False, low > eps)
    return xr.Dataset(
        {"epsilon": (("candidate", "unit"), eps), "delta": (("candidate", "unit"), dlt),
         "epsilon_lower_bound": (("candidate", "unit"), low), "violation": (("candidate", "unit"), violation)},
        coords={"candidate": list(candidates), "unit": units},
        attrs={"samples": samples, "confidence": confidence, "seed": seed,
               "base_data": "; ".join(f"{k}: {v}" for k, v in bases.items()), "bindings": json.dumps(bindings)},
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


# -- audit records: an earlier audit's result, bound to what it audited --------------------------------
RECORD_FORMAT = "hybridpriv-audit"


def binding(mech: Any) -> dict[str, Any]:
    """What an audit result is bound to: the class, the SHA-256 of its module's source, its parameters
    and its declaration (a change to any of them voids the record)."""
    from .core.params import describe

    cls = type(mech)
    try:
        source = inspect.getsourcefile(cls)
        code = sha256(Path(source).read_bytes()).hexdigest() if source else None
    except (TypeError, OSError):
        code = None
    from . import __version__

    privacy = {u: {"epsilon": "inf" if np.isinf(g.epsilon) else g.epsilon, "delta": g.delta, "relation": g.relation,
                   "trust": g.trust} for u, g in mech.privacy.items()}
    return json.loads(json.dumps({
        "class": f"{cls.__module__}:{cls.__qualname__}", "code_sha256": code, "label": str(getattr(mech, "label", "")),
        "params": describe(mech.get_params()), "privacy": privacy, "hybridpriv_version": __version__}, default=str))


def write_record(path: str | Path, result: xr.Dataset) -> Path:
    """Write ``hybridpriv audit``'s ``result`` as an audit record (JSON) a release can rely on."""
    from .release.ledger_file import now, write_json_atomic

    bindings = json.loads(result.attrs["bindings"])
    entries = []
    for c in result.candidate.values:
        units = {}
        for u in result.unit.values:
            row = result.sel(candidate=c, unit=u)
            if not np.isnan(float(row.epsilon_lower_bound)):
                units[str(u)] = {"epsilon": float(row.epsilon), "epsilon_lower_bound": float(row.epsilon_lower_bound),
                                 "verdict": "violation" if bool(row.violation) else "pass"}
        entries.append({"candidate": str(c), "binding": bindings[str(c)], "units": units})
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, {"format": RECORD_FORMAT, "version": 1, "created": now(),
                             "samples": int(result.attrs["samples"]), "confidence": float(result.attrs["confidence"]),
                             "seed": int(result.attrs["seed"]), "base_data": result.attrs["base_data"],
                             "audits": entries})
    return path


def find_record(path: str | Path, mech: Any) -> dict[str, Any] | None:
    """The entry of the audit record at ``path`` bound to exactly ``mech`` (class, code, parameters,
    declaration), with the record's ``samples`` and ``confidence``; ``None`` if it has none."""
    p = Path(path)
    try:
        record = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"--audit-record {str(p)!r} is not a readable audit record: {exc}") from None
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT or not isinstance(record.get("audits"), list):
        raise ValueError(f"--audit-record {str(p)!r} is not a hybridpriv audit record (format {RECORD_FORMAT!r})")
    want = binding(mech)
    want.pop("label", None)
    for entry in record["audits"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("binding"), dict):
            continue
        got = {k: v for k, v in entry["binding"].items() if k != "label"}
        if got == want and isinstance(entry.get("units"), dict):
            return {**entry, "samples": record.get("samples"), "confidence": record.get("confidence"), "file": str(p)}
    return None
