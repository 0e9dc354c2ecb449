"""A selection's two-stage plan carried out (:mod:`hybridpriv.engine.plan`): the probe's features released and
charged first, then the candidate they choose, released at the rest of the budget and charged to the same ledger.

Before the first release the ledger must hold the whole plan: the probe's charge plus that of the costliest
second-stage candidate the plan may choose, for every unit.  The probe's release is written to ``OUT/probe/``
(its own ``release.json`` and ledger entry); the chosen candidate's to ``OUT/release.json``, which records the
plan (``decision.plan``: the probe's release id, its released features and the choice they made).  A probe that
refits (:attr:`hybridpriv.engine.plan.Probe.refit`) chooses by ``select`` again on the SPEC given its release
(written to ``OUT/probe/spec-given-release.json``, the choice kept in ``OUT/probe/choice.json``); otherwise the
choice is the plan's importance-weighted one.

Either stage may be a release made in rounds (:mod:`hybridpriv.release.rounds`: a family whose users' devices
answer the probe and then every iteration): the command then stops while it waits for the devices, and the same
command run again goes on where it stopped (the probe's rounds, then, once ``OUT/probe/release.json`` exists, the
second stage's), refusing a probe release or a kept choice that is not the one the SPEC and selection now give.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from .rounds import ROUNDS_FILE

__all__ = ["read_plan", "release_plan"]


def read_plan(selection: Any, asked: bool = False) -> xr.Dataset:
    """The ``plan`` group of a select run's ``selection.nc`` (``asked``: ``release --plan`` asked for it, the
    selection need not recommend it)."""
    with xr.open_datatree(selection) as tree:
        if "plan" not in tree.children:
            if asked:
                raise ValueError(f"--plan: the selection {selection} judged no two-stage plan (its SPEC makes no probe, "
                                 "or evaluation.plan_share was 0)")
            raise ValueError(f"the selection {selection} recommends a two-stage plan but holds none (its 'plan' group "
                             "is missing): rerun select")
        return tree["plan"].to_dataset().load()


def release_plan(plan: xr.Dataset, posterior: Any, decision_info: dict[str, Any], job: Any,
                 evaluation: dict[str, Any] | None = None) -> Any:
    """Carry out ``plan`` (the selection's) with the release job ``job`` (:func:`hybridpriv.release.run.run_release`'s
    settings): release the probe, choose from its features (:func:`hybridpriv.engine.plan.choose_later`, or a probe's
    refit: ``select`` again, with the selection's ``evaluation`` draws, trials and seed), release the choice.  Returns
    the second release's :class:`~hybridpriv.release.run.ReleaseResult`."""
    from ..engine.plan import choose_later
    from .run import _pick, _release_mech

    probe = job.problem.probe
    if probe is None:
        raise ValueError("the selection recommends a two-stage plan, but this SPEC makes no probe (is "
                         "evaluation.plan_share 0?): rerun select")
    if probe.by_hand:
        raise ValueError(f"the selection's two-stage plan: {probe.by_hand}.  Or release what it would choose now: "
                         f"--candidate {plan.attrs['recommended_now']}")
    if not (np.isclose(probe.share, float(plan.attrs["share"]))
            and probe.scales.shape == plan["scale"].shape and np.allclose(probe.scales, plan["scale"].values)):
        raise ValueError(f"the SPEC's probe (share {probe.share:g}) differs from the selection's plan "
                         f"(share {float(plan.attrs['share']):g}): rerun select")
    later = dict(probe.later(job.problem.candidates(posterior), posterior))
    dim = plan.attrs["candidate_dim"]
    names = [str(c) for c in plan[f"later_{dim}"].values]
    missing = [n for n in names if n not in {str(c) for c in later}]
    if missing:
        raise ValueError(f"the plan's second-stage candidates {missing} cannot be rebuilt from this SPEC: rerun select")
    eligible = [n for n, ok in zip(names, plan["later_eligible"].values) if ok] or names
    second = [_pick(later, n)[1] for n in eligible]

    def whole_plan(state) -> None:  # the probe plus the costliest second stage, before anything is spent
        for mech in second:
            state.check_all([(probe.mechanism.privacy, probe.mechanism.label), (mech.privacy, mech.label)])

    share = float(plan.attrs["share"])
    first_out = Path(job.out) / "probe"
    record = _probe_released(first_out, probe.mechanism, job)
    if record is None:
        if not (first_out / ROUNDS_FILE).exists():
            job.log(f"carrying out the selection's two-stage plan: {share:.0%} of each unit's budget on "
                    f"{plan.attrs['what']} first")
        info = {**decision_info, "chosen_by": "the first stage of the selection's two-stage plan"}
        first = _release_mech(_replace(job, out=first_out), probe.mechanism, "probe", probe.mechanism.label, info,
                              precheck=whole_plan)
        if first.waiting is not None:  # a probe made in rounds waits for the devices: the same command goes on
            return first
        record = first.record
    else:
        job.log(f"the plan's probe was released already ({first_out / 'release.json'}); going on with its second "
                "stage")
    observed = np.asarray(record["released"], dtype=float).ravel()
    refit: dict[str, Any] = {}
    if probe.refit is not None:
        coord, mech, name, refit = _refit(job, probe, observed, first_out, record["release_id"], evaluation or {})
        how = "the model fitted again given the probe's release and the choice made again"
    else:
        name = choose_later(plan, observed)
        coord, mech = _pick(later, name)
        how = "chosen from the probe's release by the plan's importance weights"
    if not (Path(job.out) / ROUNDS_FILE).exists():
        job.log(f"the probe's release chose {dim} = {name}, released at the other {1 - share:.0%}")
    info = {**decision_info, "chosen_by": f"the second stage of the selection's two-stage plan: {how}",
            "plan": {"share": share, "probe": plan.attrs["what"], "probe_release_id": record["release_id"],
                     "probe_output": str(first_out / "release.json"), "probe_released": [float(x) for x in observed],
                     "chosen": name, "recommended_now": str(plan.attrs["recommended_now"]),
                     "pays_by": str(plan.attrs.get("pays_by", "")), **refit}}
    proto = job.fam.release_rounds(mech, job.spec)
    need = "" if proto is None or (Path(job.out) / ROUNDS_FILE).exists() else getattr(
        proto, "waiting_for", lambda _d: "")(job.data_dir)
    if need:  # the devices answer the second candidate's parameters, known only now
        from .run import ReleaseResult

        job.log(f"the second stage, {name}, needs {need}; then run the same command again")
        return ReleaseResult(Path(job.data_dir), {"candidate": {"label": str(name)}, "rounds": proto.total,
                                                  "waiting_for_round": 0, "needs": need}, {}, waiting=0)
    return _release_mech(job, mech, coord, name, info)


def _probe_released(out: Path, mech: Any, job: Any) -> dict[str, Any] | None:
    """``OUT/probe/release.json`` if the probe was released already (a plan carried out over several commands, its
    probe or second stage made in rounds), checked to be this probe's (label and parameters) and charged to the
    ledger this release uses (its id, and a release of that id in it); ``None`` if not."""
    import json

    from ..core.params import describe
    from .ledger import Ledger, ledger_for_data

    path = out / "release.json"
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        label, params, rid = record["candidate"]["label"], record["candidate"]["params"], record["release_id"]
        ledger_id = record["ledger"]["id"]
        released = np.asarray(record["released"], dtype=float)
        if released.ndim != 1 or not np.isfinite(released).all():
            raise ValueError
    except (OSError, ValueError, KeyError, TypeError):
        raise ValueError(f"{path} (the plan's probe, released and charged) is damaged; the plan cannot go on") from None
    mine = json.loads(json.dumps(describe(mech.get_params()), default=str))
    if label != mech.label or params != mine:
        raise ValueError(f"{path} is the release of another probe ({label}, other parameters) than the one the SPEC "
                         "and selection now give: finish the plan with the same SPEC and selection, or choose "
                         "another --out")
    ledger = Ledger(ledger_for_data(job.data_dir, job.ledger_path)[0])
    state = ledger.read() if ledger.path.exists() else None
    if state is None or state.id != ledger_id or not any(r.get("id") == rid for r in state.data["releases"]):
        raise ValueError(f"{path} was charged to another ledger (id {ledger_id}) than {ledger.path}: the plan goes on "
                         "only on the ledger its probe was charged to")
    return record


def _refit(job: Any, probe: Any, observed: np.ndarray, probe_out: Path, probe_id: str, evaluation: dict[str, Any]
           ) -> tuple[Any, Any, str, dict[str, Any]]:
    """The second stage of a probe that refits (:attr:`hybridpriv.engine.plan.Probe.refit`): ``select`` again on the
    SPEC given the probe's release (post-processing of a DP release: no charge; the selection's ``evaluation`` draws,
    trials and seed), written beside the probe's release as ``OUT/probe/spec-given-release.json``; returns its
    recommendation and what the record keeps of it.  The choice is kept in ``OUT/probe/choice.json`` so that a
    second stage made in rounds goes on with it (the command run again); a kept choice whose probe release, SPEC
    given the release or evaluation differ is refused, never reused."""
    import json
    from hashlib import sha256

    from ..spec import parse_spec
    from ..workflow import run_selection
    from .run import _pick

    if job.spec.raw is None:
        raise ValueError("this two-stage plan fits the model again given its probe's release, which needs the SPEC as "
                         "read from TOML; this SPEC was built in code: release its probe and select again by hand")
    raw = probe.refit(job.spec.raw, observed)
    raw["evaluation"] = {**raw.get("evaluation", {}), **evaluation}  # the selection's --draws/--trials/--seed
    text = json.dumps(raw, indent=2, default=str) + "\n"
    key = {"probe_release_id": probe_id, "spec_sha256": sha256(text.encode()).hexdigest(), "evaluation": evaluation}
    path, kept = Path(probe_out) / "spec-given-release.json", Path(probe_out) / "choice.json"
    if kept.exists():
        try:
            choice = json.loads(kept.read_text(encoding="utf-8"))
            name, loss, same = str(choice["chosen"]), float(choice["expected_loss"]), {k: choice.get(k) for k in key}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            raise ValueError(f"{kept} (the plan's kept choice) is damaged; the probe is released and charged: "
                             "restore it, or delete it to choose again given the same release") from None
        if same != key:
            raise ValueError(f"{kept} holds the choice made given another probe release, SPEC or evaluation than "
                             "now (was the SPEC or the selection changed?); finish the plan with the same SPEC and "
                             "selection, or choose another --out")
        problem = parse_spec(raw, job.spec.base_dir, f"{job.spec.source} given the probe's release").problem()
        try:  # candidates that need no fitted model are rebuilt as they are; the others by selecting again
            candidates = problem.candidates(None)
        except (TypeError, ValueError, AttributeError):
            job.log("rebuilding the second stage's candidates: selecting again given the probe's release ...")
            selection = _quietly(run_selection, problem, job.log)
            if str(selection.decision.attrs["recommended"]) != name:
                raise ValueError(f"selecting again given the probe's release now recommends "
                                 f"{selection.decision.attrs['recommended']!r}, not {name!r} as before ({kept}): "
                                 "another hybridpriv version?  Finish the plan with the same version, or choose "
                                 "another --out") from None
            candidates = problem.candidates(selection.posterior)
        coord, mech = _pick(candidates, name)
        job.log(f"the second stage was chosen before ({kept}): {name}")
        return coord, mech, name, {"refit_spec": str(path), "refit_expected_loss": loss}
    path.write_text(text)
    spec = parse_spec(raw, job.spec.base_dir, f"{job.spec.source} given the probe's release")
    job.log("fitting the model again given the probe's release and choosing again (select on "
            f"{path.name}) ...")
    try:
        problem = spec.problem()
        selection = _quietly(run_selection, problem, job.log)
    except Exception as exc:  # the probe is charged: say how to finish the plan by hand
        raise RuntimeError(f"the plan's probe was released and charged ({Path(probe_out)}), but selecting again "
                           f"given it failed: {exc}.  Finish the plan by hand: {path} holds the SPEC given the "
                           "release (JSON; copy what it adds to your SPEC: the released features under private, "
                           "the rest of the budget, evaluation.plan_share = 0), select on it (with more draws if it "
                           "asks), then release its recommendation (--candidate) on the same ledger") from exc
    name = str(selection.decision.attrs["recommended"])
    coord, mech = _pick(problem.candidates(selection.posterior), name)
    loss = float(selection.decision["expected_loss"].sel({problem.dim: coord}))
    from .ledger_file import write_json_atomic

    write_json_atomic(kept, {**key, "chosen": name, "expected_loss": loss})
    return coord, mech, name, {"refit_spec": str(path), "refit_expected_loss": loss}


def _quietly(run: Any, problem: Any, log: Any) -> Any:
    """``run(problem)`` with the warnings it raises (``select``'s own: premises, sensitivity) passed to ``log`` as
    ``select given the probe's release: warning ...`` lines, not printed by Python with a file and line."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = run(problem)
    for w in caught:
        text = str(w.message)
        log(f"select given the probe's release: {text if text.startswith('warning') else 'warning: ' + text}")
    return out


def _replace(job: Any, **changes: Any) -> Any:
    import dataclasses

    return dataclasses.replace(job, **changes)
