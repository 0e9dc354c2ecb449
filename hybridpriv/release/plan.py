"""A selection's two-stage plan carried out (:mod:`hybridpriv.engine.plan`): the probe's features released and
charged first, then the candidate they choose, released at the rest of the budget and charged to the same ledger.

Before the first release the ledger must hold the whole plan: the probe's charge plus that of the costliest
second-stage candidate the plan may choose, for every unit.  The probe's release is written to ``OUT/probe/``
(its own ``release.json`` and ledger entry); the chosen candidate's to ``OUT/release.json``, which records the
plan (``decision.plan``: the probe's release id, its released features and the choice they made).  A probe that
refits (:attr:`hybridpriv.engine.plan.Probe.refit`) chooses by ``select`` again on the SPEC given its release
(written to ``OUT/probe/spec-given-release.json``); otherwise the choice is the plan's importance-weighted one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

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
    job.log(f"carrying out the selection's two-stage plan: {share:.0%} of each unit's budget on {plan.attrs['what']} "
            "first")
    first_out = Path(job.out) / "probe"
    info = {**decision_info, "chosen_by": "the first stage of the selection's two-stage plan"}
    first = _release_mech(_replace(job, out=first_out), probe.mechanism, "probe", probe.mechanism.label, info,
                          precheck=whole_plan)
    observed = np.asarray(first.record["released"], dtype=float).ravel()
    refit: dict[str, Any] = {}
    if probe.refit is not None:
        coord, mech, name, refit = _refit(job, probe, observed, first.output, evaluation or {})
        how = "the model fitted again given the probe's release and the choice made again"
    else:
        name = choose_later(plan, observed)
        coord, mech = _pick(later, name)
        how = "chosen from the probe's release by the plan's importance weights"
    job.log(f"the probe's release chose {dim} = {name}; releasing it at the other {1 - share:.0%}")
    info = {**decision_info, "chosen_by": f"the second stage of the selection's two-stage plan: {how}",
            "plan": {"share": share, "probe": plan.attrs["what"], "probe_release_id": first.record["release_id"],
                     "probe_output": str(first.output), "probe_released": [float(x) for x in observed],
                     "chosen": name, "recommended_now": str(plan.attrs["recommended_now"]),
                     "pays_by": str(plan.attrs.get("pays_by", "")), **refit}}
    return _release_mech(job, mech, coord, name, info)


def _refit(job: Any, probe: Any, observed: np.ndarray, probe_out: Path, evaluation: dict[str, Any]
           ) -> tuple[Any, Any, str, dict[str, Any]]:
    """The second stage of a probe that refits (:attr:`hybridpriv.engine.plan.Probe.refit`): ``select`` again on the
    SPEC given the probe's release (post-processing of a DP release: no charge; the selection's ``evaluation`` draws,
    trials and seed), written beside the probe's release
    as ``OUT/probe/spec-given-release.json``; returns its recommendation and what the record keeps of it."""
    import json

    from ..spec import parse_spec
    from ..workflow import run_selection
    from .run import _pick

    if job.spec.raw is None:
        raise ValueError("this two-stage plan fits the model again given its probe's release, which needs the SPEC as "
                         "read from TOML; this SPEC was built in code: release its probe and select again by hand")
    raw = probe.refit(job.spec.raw, observed)
    raw["evaluation"] = {**raw.get("evaluation", {}), **evaluation}  # the selection's --draws/--trials/--seed
    path = Path(probe_out).parent / "spec-given-release.json"
    path.write_text(json.dumps(raw, indent=2, default=str) + "\n")
    spec = parse_spec(raw, job.spec.base_dir, f"{job.spec.source} given the probe's release")
    job.log("fitting the model again given the probe's release and choosing again (select on "
            f"{path.name}) ...")
    try:
        problem = spec.problem()
        selection = run_selection(problem)
    except Exception as exc:  # the probe is charged: say how to finish the plan by hand
        raise RuntimeError(f"the plan's probe was released and charged ({Path(probe_out).parent}), but selecting again "
                           f"given it failed: {exc}.  Finish the plan by hand: {path} holds the SPEC given the "
                           "release (JSON; copy what it adds to your SPEC: the released features under private, "
                           "the rest of the budget, evaluation.plan_share = 0), select on it (with more draws if it "
                           "asks), then release its recommendation (--candidate) on the same ledger") from exc
    name = str(selection.decision.attrs["recommended"])
    coord, mech = _pick(problem.candidates(selection.posterior), name)
    return coord, mech, name, {"refit_spec": str(path), "refit_expected_loss": float(
        selection.decision["expected_loss"].sel({problem.dim: coord}))}


def _replace(job: Any, **changes: Any) -> Any:
    import dataclasses

    return dataclasses.replace(job, **changes)
