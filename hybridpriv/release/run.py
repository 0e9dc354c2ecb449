"""The release job: the chosen candidate, applied to the private data, charged to the ledger.

Order of steps (each refusal is a ``ValueError`` naming what is wrong, before anything is spent):

1. read the SPEC (the modules it imports are logged: a SPEC is trusted input); with ``selection``,
   check that the select run's recorded SPEC config is this SPEC's (a differing key is named) and
   take its recommendation (or the ``candidate`` named);
2. rebuild the candidates exactly as the select run built them (a grouped run's posterior is read back
   from ``selection.nc``; the rebuilt candidate's parameters must equal the evaluated ones);
3. check the instance being released (:func:`check_instance`): every unit's requirement is met, the
   Mechanism protocol holds on it *now* (a declaration that became epsilon 0 with the fitted model is
   refused), its noise is one the OpenDP backend draws (:func:`~hybridpriv.release.noise.probe_noise`,
   on stand-in data), OpenDP's privacy maps of its privacy events do not exceed its declaration
   (:func:`~hybridpriv.release.maps.check_declaration`), and a mechanism that does not ship with hybridpriv passes the privacy audit
   ``hybridpriv audit`` runs (or an audit record bound to it says it passed);
4. find the data's ledger (:func:`~hybridpriv.release.ledger.ledger_for_data`: by default in the data
   folder; a ledger elsewhere is noted in the folder), take its lock, check its budgets against the
   SPEC's and refuse a release that would overspend any unit, its charge converted to the unit's
   relation and trust, **before reading the data**;
5. read and validate the private data (:mod:`hybridpriv.release.data`; refusals name the group, row
   and rule, never a value), check their salted fingerprint against the ledger's earlier releases,
   release once with OpenDP noise (:class:`~hybridpriv.release.noise.OpenDPGenerator`);
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

from ..core.privacy import NOT_READ, Guarantee
from .composition import DEFAULT_TARGET_DELTA
from .ledger import Ledger, LedgerError, ledger_for_data
from .ledger_file import guarantee_json, guarantee_of, now, pause_hook, write_json_atomic
from .maps import check_declaration
from .noise import OpenDPGenerator, probe_noise, provenance_of
from .rounds import ROUND_FILE, ROUNDS_FILE, advance, begin_doc, check_resume, read_doc, state_digest

__all__ = ["RELEASE_AUDIT_SAMPLES", "ReleaseResult", "check_config", "check_instance", "run_release", "spec_budgets"]

#: Releases per dataset of the audit a plugin must pass before its release (that of ``hybridpriv audit``).
RELEASE_AUDIT_SAMPLES = 20_000


@dataclass
class ReleaseResult:
    """What :func:`run_release` returns: the output written and the ledger entry."""

    output: Path
    record: dict[str, Any]
    entry: dict[str, Any]
    #: A release made in rounds that waits for the devices' answers to this round (``None``: released; ``0``: a
    #: two-stage plan's second candidate, chosen after its probe, waits for the data it needs before round 1).
    waiting: int | None = None


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


#: ``[evaluation]`` keys that change how ``select`` words its warnings, not a number it computes: a selection is released
#: whatever they were (one made before a key existed lacks it).
PRESENTATION_KEYS = ("chance_warning",)


def _without_presentation(config: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(config)
    if isinstance(out.get("evaluation"), Mapping):
        out["evaluation"] = {k: v for k, v in out["evaluation"].items() if k not in PRESENTATION_KEYS}
    return out


def check_config(recorded: Mapping[str, Any], spec_config: Mapping[str, Any]) -> None:
    """Refuse a selection whose recorded SPEC config differs from ``spec_config`` (``source`` — where the
    file lay —, the select run's command-line ``overrides`` and the :data:`PRESENTATION_KEYS` aside), naming the
    first differing key."""
    a = _without_presentation({k: v for k, v in recorded.items() if k not in ("source", "overrides")})
    b = _without_presentation(json.loads(json.dumps({k: v for k, v in spec_config.items() if k != "source"},
                                                    default=str)))
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


def spec_budgets(spec: Any, problem: Any = None) -> dict[str, Guarantee]:
    """The budget a SPEC gives each unit, with its relation and trust (its family's :meth:`budgets`: the
    units' requirements)."""
    return spec.family.budgets(spec, spec.problem() if problem is None else problem)


def _pick(candidates: Mapping[Any, Any], name: str) -> tuple[Any, Any]:
    for coord, mech in candidates.items():
        if str(coord) == name or getattr(mech, "label", None) == name:
            return coord, mech
    raise ValueError(f"unknown candidate {name!r}; known: {', '.join(str(c) for c in candidates)}")


def check_instance(mech: Any, requirements: Mapping[str, Guarantee], stand_in: Any, audit_record: str | Path | None = None,
                   audit_samples: int = RELEASE_AUDIT_SAMPLES, log: Callable[[str], None] = lambda _line: None,
                   family: Any = None) -> dict[str, Any]:
    """Step 3 of the module docstring on the instance about to be released; returns what was checked
    (for ``release.json``: the audit's source and result, or ``None`` for a built-in)."""
    from ..auditing import audit_mechanism, find_record, is_shipped
    from ..core.family import Family
    from ..testing.conformance import mechanism_problems

    label = str(getattr(mech, "label", type(mech).__name__))
    shipped = is_shipped(mech)
    # the protocol on this instance: a non-empty declaration, and for a plugin epsilons > 0 (a built-in may
    # promise 0 to a unit it never reads, e.g. a public-only estimator: the audit matrix tests that claim)
    problems = [p for p in mechanism_problems(mech) if not (shipped and p.endswith("must be > 0, got 0.0"))]
    if problems:
        raise ValueError(f"candidate {label!r} cannot be released: {'; '.join(problems)}")
    for unit, required in requirements.items():
        promised = mech.privacy.get(unit)
        if promised is None and shipped:
            promised = NOT_READ  # a built-in never reads a unit it leaves out (as the selection counts it)
        if promised is None or not promised.satisfies(required):
            raise ValueError(f"candidate {label!r} does not give unit {unit!r} its required protection "
                             f"({required}); it promises {promised if promised is not None else 'nothing'}")
    probe_noise(mech, stand_in)
    maps = check_declaration(mech)
    if shipped:
        return {"audit": None, "plugin": False, "privacy_map": maps}
    cls = f"{type(mech).__module__}:{type(mech).__qualname__}"
    if audit_record is not None:
        entry = find_record(audit_record, mech)
        if entry is None:
            log(f"the audit record {audit_record} has no audit of {label!r} as it is now (class, code, parameters "
                "and declaration): auditing it now")
        elif (entry.get("samples") or 0) < audit_samples:
            log(f"the audit record of {label!r} used {entry.get('samples')} releases per dataset (< {audit_samples:,}): "
                "auditing it now")
        else:
            bad = [u for u, r in entry["units"].items() if r.get("verdict") != "pass"]
            missing = [u for u, g in mech.privacy.items() if math.isfinite(g.epsilon) and u not in entry["units"]]
            if bad or missing:
                unit = (bad or missing)[0]
                raise ValueError(f"candidate {label!r} (plugin {cls}) "
                                 + (f"failed its privacy audit on unit {unit!r} (record {audit_record})" if bad else
                                    f"has no audit of unit {unit!r} in the record {audit_record}") + "; not released")
            return {"plugin": True, "privacy_map": maps, "audit": {"source": f"audit record {entry['file']}", "samples": entry["samples"],
                                              "confidence": entry["confidence"], "units": entry["units"]}}
    data, base = (family or Family()).audit_data(mech, stand_in=stand_in)
    log(f"auditing the plugin {label!r} ({cls}) before its release: {audit_samples:,} releases per dataset, {base} ...")
    reports = audit_mechanism(mech, data, samples=audit_samples, confidence=0.99, seed=0)
    for unit, report in reports.items():
        if report.verdict != "pass":
            raise ValueError(f"candidate {label!r} (plugin {cls}) failed its privacy audit: unit {unit!r} has epsilon "
                             f">= {report.epsilon_lower_bound:.3g} against a claim of {report.epsilon:g} (99% "
                             f"confidence, {base}); not released")
    return {"plugin": True, "privacy_map": maps, "audit": {
        "source": "audited before this release", "samples": audit_samples, "confidence": 0.99, "base_data": base,
        "units": {u: {"epsilon": r.epsilon, "epsilon_lower_bound": r.epsilon_lower_bound, "verdict": r.verdict}
                  for u, r in reports.items()}}}


def _creation_budgets(spec_units: Mapping[str, Guarantee], given: Mapping[str, tuple[float, float]] | None,
                      allow_above: bool) -> tuple[dict[str, Guarantee], list[dict[str, Any]]]:
    """The budgets a new ledger is created with: the SPEC's, or ``--budget`` values in the SPEC units' terms."""
    budgets = dict(spec_units)
    log = []
    for unit, (eps, delta) in (given or {}).items():
        if unit not in spec_units:
            raise ValueError(f"--budget names unit {unit!r}, which this SPEC does not have (units: {list(spec_units)})")
        want = spec_units[unit]
        g = Guarantee(eps, delta, want.relation, want.trust)
        if g.epsilon > want.epsilon * (1 + 1e-9) or g.delta > want.delta * (1 + 1e-9):
            if not allow_above:
                raise ValueError(f"--budget {unit}={eps:g}:{delta:g} is above the SPEC's budget for unit {unit!r} "
                                 f"({want}); pass --allow-budget-above-spec to create the ledger with it (logged)")
            log.append({"unit": unit, "budget": guarantee_json(g), "spec": guarantee_json(want),
                        "allowed_by": "--allow-budget-above-spec", "at": now()})
        budgets[unit] = g
    return budgets, log


def _release_once(mech: Any, data: Any, label: str) -> tuple[Any, dict[str, Any]]:
    rng = OpenDPGenerator()
    try:
        values = np.asarray(mech.release(data, rng, trials=1))[0]
    except Exception as exc:  # the message may quote private values: withheld
        raise ValueError(f"candidate {label!r} failed on the private data ({type(exc).__name__}); its message is "
                         "withheld, as it may quote private values; nothing was spent") from None
    if not np.all(np.isfinite(values)):
        raise ValueError(f"candidate {label!r} released a non-finite value on the private data; nothing was spent")
    return values, rng.provenance()


def _write_pointer(pointer: Path | None, ledger: Ledger, log: Callable[[str], None]) -> str | None:
    if pointer is None:
        return None
    try:
        write_json_atomic(pointer, {"ledger": str(ledger.path), "note": "the ledger these data are charged to "
                                    "(hybridpriv release); do not delete it"})
        return str(pointer)
    except OSError as exc:
        log(f"warning: could not note the ledger in the data folder ({pointer}: {exc.strerror}); a release with "
            "another --ledger would not be refused")
        return None


def _spec_imports(spec: Any, log: Callable[[str], None]) -> list[str]:
    imports = spec.imports() if hasattr(spec, "imports") else []
    if imports:
        log("this SPEC imports code (a SPEC is trusted input): " + ", ".join(imports))
    return imports


def run_release(spec_path: str | Path, data_dir: str | Path, ledger_path: str | Path | None, out_dir: str | Path,
                selection: str | Path | None = None, candidate: str | None = None, plan: bool = False,
                budgets: Mapping[str, tuple[float, float]] | None = None, allow_budget_above_spec: bool = False,
                data_changed: bool = False, audit_record: str | Path | None = None,
                target_delta: float = DEFAULT_TARGET_DELTA,
                log: Callable[[str], None] = lambda _line: None) -> ReleaseResult:
    """Release the recommended (or named) candidate on the private data in ``data_dir`` (module docstring).

    Parameters
    ----------
    spec_path
        The SPEC (of a family that can be released: one with ``load_private``).
    data_dir
        The private data (:mod:`hybridpriv.release.data`).
    ledger_path
        The ledger file, or ``None``: the data folder's (``DATA/hybridpriv-ledger.json``, or the one the
        folder notes); created with the SPEC's budgets if missing.
    out_dir
        Where ``release.json`` is written (refused if it already holds one).
    selection, candidate
        A select run's ``selection.nc`` (its recommendation, unless ``candidate`` names another of
        its candidates), or just ``candidate`` (a candidate that needs no fitted model).
    plan
        Carry out the selection's two-stage plan even where select found it does not pay (``--plan``; the
        release records that it was asked for).
    budgets, allow_budget_above_spec
        ``{unit: (epsilon, delta)}`` for a new ledger instead of the SPEC's; above the SPEC's only with
        ``allow_budget_above_spec`` (which also lets an existing ledger's higher budgets be used), logged.
    data_changed
        Release although the data's fingerprint differs from the ledger's earlier releases (recorded).
    audit_record
        An audit record (``hybridpriv audit --record``) that may already vouch for a plugin.
    """
    from ..core.params import fingerprint
    from ..spec import load_spec

    spec = load_spec(spec_path)
    imports = _spec_imports(spec, log)
    fam = spec.family
    stand_in = fam.stand_in(spec)  # a family that cannot be released says so here, naming itself
    if selection is None and candidate is None:
        raise ValueError("give --selection FILE.nc (a select run's recommendation) or --candidate NAME")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out must be a folder, got the existing file {str(out)!r}")
    if (out / "release.json").exists():
        raise ValueError(f"--out {str(out)!r} already holds a release (release.json); choose another folder")
    if not Path(data_dir).is_dir():
        raise ValueError(f"--data must be a folder, got {str(data_dir)!r}")
    problem = spec.problem()
    decision_info: dict[str, Any] = {"chosen_by": "named on the command line (--candidate)"}
    if plan and (selection is None or candidate is not None):
        raise ValueError("--plan carries out a selection's two-stage plan: give --selection FILE.nc and no --candidate")
    force_plan, plan = bool(plan), None
    posterior = None
    evaluated_params = stored_params = None
    if selection is not None:
        from ..workflow import read_selection

        posterior, decision, attrs = read_selection(selection, spec, problem)
        pays = int(attrs.get("plan_pays", 0)) == 1
        if candidate is None and (pays or force_plan):  # the selection recommends its plan, or --plan asks for it
            from .plan import read_plan

            plan = read_plan(selection, asked=not pays)
            if not pays:
                log("the selection found that its two-stage plan does not pay; carrying it out as --plan asks")
        dim = decision.attrs["candidate_dim"]
        name = candidate if candidate is not None else str(attrs["recommended"])
        coords = [str(c) for c in decision[dim].values]
        if name not in coords:
            labels = [str(x) for x in decision["label"].values]
            if name not in labels:
                raise ValueError(f"candidate {name!r} is not in the selection; its {dim} values: {', '.join(coords)}")
            name = coords[labels.index(name)]
        row = decision.isel({dim: coords.index(name)})
        if "params_fingerprint" not in row.coords:
            raise ValueError(f"the selection {selection} was written by an older hybridpriv (its decision has no "
                             "params_fingerprint): rerun select")
        evaluated_params = str(row["params_fingerprint"].values)
        stored_params = attrs.get("candidate_params", {}).get(str(name))
        decision_info = {
            "chosen_by": "recommended by the selection" if candidate is None else "named (--candidate) among the selection's",
            "selection": str(selection), "selection_created": str(attrs.get("created", "")),
            "recommended": str(attrs["recommended"]), "candidate_dim": dim,
            "expected_loss": float(row["expected_loss"]), "mcse": float(row["mcse"]), "p_best": float(row["p_best"]),
            "meets_requirements": bool(row["meets_requirements"]), "loss": str(decision.attrs.get("loss", "")),
            "recommendation_rule": str(decision.attrs.get("recommendation_rule", "")),
        }
        if plan is not None:
            decision_info["plan_carried_out"] = ("recommended by the selection (it pays)" if pays else
                                                 "asked for (--plan); the selection found it does not pay")
    else:
        name = candidate
    try:
        candidates = problem.candidates(posterior)
    except (TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"the candidates need the fitted model of public knowledge: give --selection "
                         f"(a select run's selection.nc) ({exc})") from None
    coord, mech = _pick(candidates, str(name))
    if evaluated_params is not None and fingerprint(mech.get_params()) != evaluated_params:
        from ..core.params import attr_differences
        from ..workflow import candidate_attrs

        changed = attr_differences(stored_params, candidate_attrs({name: mech})[str(name)]) if stored_params else []
        raise ValueError(f"candidate {name!r} rebuilt from the SPEC and selection differs from the one evaluated"
                         + (f" ({'; '.join(changed[:4])})" if changed else "")
                         + " (another hybridpriv version?); rerun select")
    if plan is not None:
        from .plan import release_plan

        import json

        # the select run's --draws/--trials/--seed (its config records them), for a probe that selects again
        overrides = json.loads(attrs["config"]).get("overrides", {}) if "config" in attrs else {}
        return release_plan(plan, posterior, decision_info, _Job(spec, fam, problem, imports, stand_in, data_dir,
                                                                   ledger_path, out, budgets, allow_budget_above_spec,
                                                                   data_changed, audit_record, target_delta, log),
                            {k: overrides[k] for k in ("draws", "trials", "seed") if k in overrides})
    return _release_mech(_Job(spec, fam, problem, imports, stand_in, data_dir, ledger_path, out, budgets,
                              allow_budget_above_spec, data_changed, audit_record, target_delta, log),
                         mech, coord, name, decision_info)


@dataclass
class _Job:
    """What every release of one ``run_release`` call shares (a two-stage plan makes two releases)."""

    spec: Any
    fam: Any
    problem: Any
    imports: list[str]
    stand_in: Any
    data_dir: Any
    ledger_path: Any
    out: Path
    budgets: Any
    allow_budget_above_spec: bool
    data_changed: bool
    audit_record: Any
    target_delta: float
    log: Callable[[str], None]


def _release_mech(job: _Job, mech: Any, coord: Any, name: Any, decision_info: dict[str, Any],
                  precheck: Callable[[Any], None] | None = None) -> ReleaseResult:
    """Steps 3-6 of the module docstring for ``mech`` (its checks, the ledger, the data, the release, the record).
    ``precheck(state)``: a further check on the locked ledger before its own (a two-stage plan's whole charge)."""
    spec, fam, problem, imports, stand_in = job.spec, job.fam, job.problem, job.imports, job.stand_in
    data_dir, ledger_path, out, budgets = job.data_dir, job.ledger_path, job.out, job.budgets
    allow_budget_above_spec, data_changed, audit_record = job.allow_budget_above_spec, job.data_changed, job.audit_record
    target_delta, log = job.target_delta, job.log
    from ..core.params import describe

    units = spec_budgets(spec, problem)
    label = str(getattr(mech, "label", name))
    params = json.dumps(describe(mech.get_params()), sort_keys=True)
    proto = fam.release_rounds(mech, spec)
    resuming = proto is not None and (out / ROUNDS_FILE).exists()
    path, pointer = ledger_for_data(data_dir, ledger_path)
    ledger = Ledger(path)
    new_budgets, budget_log = _creation_budgets(units, budgets, allow_budget_above_spec)
    if ledger.path.exists() and not resuming:  # refuse an overspending release before a plugin's audit
        with ledger.locked(new_budgets, log=log) as state:
            state.check_budgets(units, allow_budget_above_spec)
            if precheck is not None:
                precheck(state)
            state.check(mech.privacy, label)
    if resuming:
        log(f"going on with the release of {label} in rounds ({out / ROUNDS_FILE})")
    else:
        checked = check_instance(mech, units, stand_in, audit_record=audit_record, log=log, family=fam)
    out.mkdir(parents=True, exist_ok=True)
    rng = OpenDPGenerator()
    with ledger.locked(new_budgets, log=log, budget_log=budget_log) as state:
        raised: list[dict[str, Any]] = []
        noted = None
        if resuming:
            doc = read_doc(out)
            check_resume(doc, state, label, params)
            entry = next(r for r in state.data["releases"] if r.get("id") == doc["release_id"])
            data = proto.load(data_dir)
            if state.fingerprints(proto.data_bytes(data)) != entry.get("data"):
                raise LedgerError(f"the private data differ from those release {entry['id']} began on (salted "
                                  "fingerprints): a release made in rounds goes on with the data it began with")
            checked, decision_info = doc["checked"], doc["decision"]
        else:
            if budgets and state.data["releases"]:
                log(f"--budget is ignored: the ledger {ledger.path} exists (budgets are fixed when it is created)")
            raised = state.check_budgets(units, allow_budget_above_spec)
            for r in raised:
                log(f"warning: unit {r['unit']!r}: releasing against a ledger budget above the SPEC's "
                    "(--allow-budget-above-spec; recorded in the entry)")
            if precheck is not None:
                precheck(state)
            state.check(mech.privacy, label)  # before the data are read
            noted = _write_pointer(pointer, ledger, log)
            data = fam.load_private(data_dir, spec) if proto is None else proto.load(data_dir)
            fingerprints = state.fingerprints(fam.data_bytes(data, spec) if proto is None else proto.data_bytes(data))
            changed = state.check_data(fingerprints, data_changed)
            info: dict[str, Any] = {"kind": spec.kind, "spec": str(spec.source), "output": str(out / "release.json"),
                                    "candidate_class": f"{type(mech).__module__}:{type(mech).__qualname__}"}
            if proto is None:
                values, randomness = _release_once(mech, data, label)
                pause_hook("computed")
            else:
                state0 = proto.begin(rng)  # the public start: no private data
                info["rounds"] = {"total": proto.total, "start": state_digest(state0), "state": str(out / ROUNDS_FILE)}
                info["plan"] = _plan(mech)
            if raised:
                info["budget_above_spec"] = raised
            if changed:
                info["data_changed"] = {"units": changed, "allowed_by": "--data-changed"}
            if checked["plugin"]:
                info["audit"] = checked["audit"]["source"]
            entry = state.record(mech.privacy, label, data=fingerprints, events=mech.privacy_events, **info)
            if proto is not None:
                doc = begin_doc(entry, state.id, label, params, state0, proto.total)
                doc.update(checked=checked, decision=decision_info)
                write_json_atomic(out / ROUNDS_FILE, doc)
                rounds = f"{proto.total} round{'' if proto.total == 1 else 's'}"
                log(f"charged every round of {label} in {ledger.path} (release {entry['id']}, {rounds})")
        if proto is not None:
            doc = advance(proto, doc, data, data_dir, out, state, rng, log)
            if doc["round"] < doc["total"]:
                return ReleaseResult(out / ROUND_FILE, {"waiting_for_round": doc["round"] + 1, "rounds": doc["total"],
                                                        "candidate": {"label": label}}, entry, waiting=doc["round"] + 1)
            values, randomness = np.asarray(proto.result(doc["state"])), provenance_of(doc["randomness"])
            if not np.all(np.isfinite(values)):
                raise ValueError(f"candidate {label!r} released a non-finite value on the private data")
        released = float(values) if values.ndim == 0 else [float(v) for v in np.ravel(values)]
        charges = {u: (guarantee_of(entry["declared"][u], u), guarantee_of(entry["spent"][u], u)) for u in entry["spent"]}
        totals = state.totals(target_delta)
        record = {
            "format": "hybridpriv-release", "version": 2, "created": now(), "release_id": entry["id"],
            "kind": spec.kind, "spec": str(spec.source), "spec_imports": imports, "description": spec.description,
            "candidate": {"coordinate": str(coord), "label": label, "class": type(mech).__name__,
                          "module": type(mech).__module__, "plugin": checked["plugin"],
                          "params": json.loads(json.dumps(describe(mech.get_params()), default=str))},
            "released": released,
            "released_shape": list(np.shape(values)),
            "released_meaning": fam.released_meaning(spec),
            "guarantee": {u: guarantee_json(g) for u, g in mech.privacy.items()},
            "charged": {u: guarantee_json(c) for u, (_, c) in charges.items()},
            "audit": checked["audit"],
            "privacy_map": checked.get("privacy_map"),
            "decision": decision_info,
            "randomness": randomness,
            "ledger": {"path": str(ledger.path), "id": state.id, "entry": entry["id"], "charged": sorted(charges),
                       "noted_in_data_folder": noted, "totals_after": {u: totals[u].as_dict() for u in charges}},
        }
        if proto is not None:
            record["rounds"] = {"total": doc["total"], "history": doc["state"].get("history")}
        write_json_atomic(out / "release.json", record)
    log(f"released {label} ({spec.kind}); charged {', '.join(sorted(charges))} in {ledger.path}")
    return ReleaseResult(out / "release.json", record, entry)


def _plan(mech: Any) -> list[dict[str, Any]] | None:
    """A multi-part mechanism's parts in the order it spends them (``ledger_plan``), for its ledger entry."""
    plan = getattr(mech, "ledger_plan", None)
    if not callable(plan):
        return None
    return [{"part": lab, "epsilon": parts} for lab, parts in plan()]


__all__ += ["LedgerError"]
