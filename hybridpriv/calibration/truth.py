"""One held-out truth: the select path on its public knowledge, then every candidate's realised risk on the
private truth, the two-stage plan carried out and the budget-spending selector (:func:`calibrate_truth`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import xarray as xr

from ..core.random import rng, stream
from ..engine.decision import CHANCE_WARNING
from ..engine.options import Engine, as_engine
from .scoring import score

__all__ = ["RETRIES", "calibrate_truth"]

#: Draws (and the model's tuning steps, ``fit.tune``, where the family's sampler tunes) of the select run's retries,
#: as multiples of the SPEC's, when the model's convergence check refuses the fit (the refusal's advice).
RETRIES = (1, 2, 4)


def _seed(seed: int, family: str, i: int, what: str) -> int:
    return int(stream(seed, "calibration", family, i, what).generate_state(1, np.uint32)[0])


def calibrate_truth(truth, seed: int, i: int, settings: dict[str, Any] | None = None, realised_draws: int = 8,
                    realised_trials: int = 5000, stage: Callable[[str], Any] = lambda name: None,
                    engine: Engine | None = None, pythia_share: float = 0.0) -> dict[str, Any]:
    """Run the select path on ``truth``'s public knowledge and score it on the private truth.

    ``settings``: SPEC values merged into the truth's SPEC, a section's keys into the truth's section
    (e.g. ``{"evaluation": {"draws": 100}}``, ``{"model": {"homogeneous": True}}``);
    the select seed and the realised-risk seed come from ``stream(seed, "calibration", family, i, ...)``.
    Monte Carlo realised risks use ``realised_draws x realised_trials`` releases per candidate.
    ``stage(name)``: a resume folder per evaluation (or ``None``).  ``engine``: how the evaluations run
    (its checkpoint and progress are not used: ``stage`` gives the folders).  ``pythia_share`` > 0: also run the
    budget-spending selector of the truth's family (:meth:`hybridpriv.core.family.Family.pythia`; none
    where the family has none) with that share of the budget, and score its choice against the same
    oracle (``pythia_*`` keys).
    """
    from ..families import family

    cap = family(truth.family).calibration_trials
    realised_trials = realised_trials if cap is None else min(realised_trials, cap)
    raw = dict(truth.spec)
    for key, value in (settings or {}).items():  # a section's keys are merged into the truth's section
        raw[key] = {**raw[key], **value} if isinstance(value, dict) and isinstance(raw.get(key), dict) else value
    raw["evaluation"] = {**raw.get("evaluation", {}), "seed": _seed(seed, truth.family, i, "select")}
    engine = as_engine(engine).replace(checkpoint=None, progress=False)
    started = time.perf_counter()
    run = _select_and_realise(raw, truth, seed, i, realised_draws, realised_trials, stage, engine)
    seconds = time.perf_counter() - started
    if run["refused"]:
        return {"candidates": [], "refused": True, "attempts": run["attempts"], "failures": run["failures"],
                "seconds": seconds}
    dec, dim, realised, se = run["decision"], run["dim"], run["realised"], run["realised_mcse"]
    coords = [str(c) for c in dec[dim].values]
    recommended = coords.index(str(dec.attrs["recommended"]))
    s = score(dec.expected_loss.values, dec.risk_low.values, dec.risk_high.values, dec.p_best.values,
              dec.meets_requirements.values, realised, recommended)
    out = {"candidates": coords, "dim": dim, "expected_loss": dec.expected_loss.values, "risk_low": dec.risk_low.values,
           "risk_high": dec.risk_high.values, "p_best": dec.p_best.values,
           "p_costly": dec.p_costly.values, "p_costly_raw": dec.p_costly_raw.values, "eligible": dec.meets_requirements.values, "realised": realised, "realised_mcse": se,
           **s, "recommended": coords[recommended], "oracle": coords[s["oracle"]],
           "oracle_at_edge": s["oracle"] == len(coords) - 1 and dim == "k",
           "recommended_at_edge": recommended == len(coords) - 1 and dim == "k", "refused": False,
           "attempts": run["attempts"], "failures": run["failures"], "max_rhat": run["max_rhat"],
           "warned": run["warned"], "checks_flagged": run["checks_flagged"], "flip_share": run["flip_share"],
           "chance_warning": float(dec.attrs.get("chance_warning", CHANCE_WARNING)),
           "flip_worst": run["flip_worst"],
           "seconds": seconds}
    if "plan_pays" in run:  # the two-stage plan carried out; the recommendation is the plan when it pays
        oracle_risk = realised[s["oracle"]]
        plan = run["plan_realised"]
        plan_regret = 0.0 if plan == oracle_risk else (np.inf if oracle_risk == 0 else plan / oracle_risk - 1.0)
        out.update({k: run[k] for k in ("plan_pays", "plan_pays_by", "plan_choice", "plan_realised", "plan_realised_mcse",
                                        "plan_difference", "plan_gain", "plan_significant", "plan_gain_floor")},
                   plan_regret=plan_regret)
    out["final_regret"] = out["plan_regret"] if out.get("plan_pays") else out["regret"]
    if pythia_share and run.get("plan_refit") and np.isclose(pythia_share, run["plan_share"]):
        # the plan's second stage refits the model on its release: the budget-spending selector's procedure at the
        # same share, run once (the selector's numbers are the plan's)
        out.update(pythia_recommended=out["plan_choice"], pythia_realised=out["plan_realised"],
                   pythia_regret=out["plan_regret"], pythia_seconds=run["plan_seconds"])
    elif pythia_share and _has_pythia(truth.family):
        started = time.perf_counter()
        out.update(_pythia(raw, truth, seed, i, pythia_share, realised[s["oracle"]], realised_draws,
                           realised_trials, stage, engine))
        out["pythia_seconds"] = time.perf_counter() - started
    return out


def _select_and_realise(raw, truth, seed, i, realised_draws, realised_trials, stage, engine,
                        tag: str = "", adjust: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """The select path on SPEC ``raw`` (retried with more draws when the convergence check refuses),
    then every candidate's realised risk on the truth (the same seed for every selector of a truth:
    common random numbers); ``tag`` prefixes the resume folders."""
    from ..core.data import FixedSource
    from ..engine.evaluate import evaluate
    from ..core.model import ConvergenceError
    from ..spec import parse_spec
    from ..workflow import run_selection

    raw = {**raw, "evaluation": dict(raw["evaluation"])}
    first = parse_spec(raw).values
    failures = []
    for attempt, factor in enumerate(RETRIES):  # as the refusal advises: more draws (and tuning)
        raw["evaluation"]["draws"] = first.evaluation.draws * factor
        tune = getattr(getattr(first, "fit", None), "tune", None)
        if tune is not None:  # the family's sampler tunes
            raw["fit"] = {**raw.get("fit", {}), "tune": tune * factor}
        problem = parse_spec(raw).problem()
        if adjust is not None:
            problem = adjust(problem)
        try:
            selection = run_selection(problem, engine.replace(checkpoint=stage(f"{tag}select{attempt or ''}")))
            break
        except ConvergenceError as exc:
            failures.append(str(exc))
    else:
        return {"refused": True, "attempts": len(RETRIES), "failures": failures}
    dec = selection.decision
    dim = problem.dim
    groups = getattr(problem.model, "groups", None)
    data = truth.dataset(groups)
    exact = problem.task.exact_risk(list(problem.candidates(selection.posterior).values()), data,
                                    problem.task.truth(data))
    mc = exact is None or bool(np.isnan(exact).any())  # some candidate is run (Monte Carlo)
    draws, trials = (realised_draws, realised_trials) if mc else (1, 1)
    on_truth = evaluate(problem.candidates(selection.posterior), FixedSource(data, draws, groups=groups), problem.task,
                        trials=trials, seed=_seed(seed, truth.family, i, "realised"), dim=dim,
                        requirements=problem.requirements, engine=engine.replace(checkpoint=stage(f"{tag}realised")))
    realised, se = _realised(on_truth)
    return {"refused": False, "decision": dec, "dim": dim, "attempts": attempt + 1, "failures": failures,
            "realised": realised.sel({dim: dec[dim]}).values, "realised_mcse": se.sel({dim: dec[dim]}).values,
            "max_rhat": float(selection.attrs.get("posterior_max_rhat", np.nan)),
            "checks_flagged": _checks_flagged(selection), **_warned(selection),
            **_carry_out_plan(selection, problem, data, groups, seed, truth, i, draws, trials, stage, tag, engine,
                              raw, (realised_draws, realised_trials))}


def _realised(on_truth: xr.Dataset) -> tuple[xr.DataArray, xr.DataArray]:
    """Each candidate's realised risk on a truth (an evaluation on its :class:`~hybridpriv.core.data.FixedSource`)
    and its Monte Carlo error: the mean loss over every release where a candidate is run, its exact risk (error 0)
    where the task scores it exactly."""
    from ..engine.stats import mean_with_se

    if "loss" in on_truth and not bool(on_truth["exact"].all()):
        realised, se = mean_with_se(on_truth["loss"], ("chain", "draw", "trial"))
        if bool(on_truth["exact"].any()):  # candidates scored exactly beside run ones: their exact risk
            exact_risk = on_truth["risk"].mean(("chain", "draw"))
            realised = realised.where(~on_truth["exact"], exact_risk)
            se = se.where(~on_truth["exact"], 0.0)
        return realised, se
    return on_truth["risk"].mean(("chain", "draw")), xr.zeros_like(on_truth["risk"].isel(chain=0, draw=0))


def _carry_out_plan(selection, problem, data, groups, seed, truth, i, draws, trials, stage, tag, engine, raw,
                    realised) -> dict[str, Any]:
    """The selection's two-stage plan carried out on the truth (:mod:`hybridpriv.engine.plan`): its probe's
    features of the truth released (:meth:`~hybridpriv.engine.plan.Probe.simulate`, stream ``"plan"`` of the truth), the second stage's choice
    from them, and that choice's realised risk at the rest of the budget (the same realised-risk seed).  A probe
    that refits (:attr:`hybridpriv.engine.plan.Probe.refit`) is carried out as ``release`` does: ``select`` again on
    the SPEC given the release (``realised``: its realised draws and trials), its recommendation's realised risk."""
    if selection.plan is None:
        return {}
    from ..core.data import FixedSource
    from ..engine.evaluate import evaluate
    from ..engine.plan import choose_later

    plan, probe = selection.plan, problem.probe
    observed = probe.simulate(probe.exact(data), rng(seed, "calibration", truth.family, i, "plan"))[0]
    refit = {}
    if probe.refit is not None:
        import dataclasses

        started = time.perf_counter()
        again = _select_and_realise(probe.refit(raw, observed), truth, seed, i, *realised, stage, engine,
                                    tag=f"{tag}plan-", adjust=lambda p: dataclasses.replace(p, assumptions=(), probe=None))
        if again["refused"]:
            choice, value, se = "", np.nan, np.nan
        else:
            dec = again["decision"]
            choice = str(dec.attrs["recommended"])
            k = [str(c) for c in dec[again["dim"]].values].index(choice)
            value, se = float(again["realised"][k]), float(again["realised_mcse"][k])
        refit = {"plan_refit": True, "plan_share": probe.share, "plan_seconds": time.perf_counter() - started}
    else:
        choice = choose_later(plan, observed)
        key = next(c for c in selection.later if str(c) == choice)
        ev = evaluate({key: selection.later[key]}, FixedSource(data, draws, groups=groups), problem.task,
                      trials=trials, seed=_seed(seed, truth.family, i, "realised"), dim=problem.dim,
                      requirements=problem.requirements, engine=engine.replace(checkpoint=stage(f"{tag}plan")))
        value, se = (float(x.squeeze()) for x in _realised(ev))
    return {**refit, "plan_pays": bool(plan.attrs["pays"]), "plan_choice": choice, "plan_realised": value,
            "plan_realised_mcse": se, "plan_pays_by": str(plan.attrs.get("pays_by", "")),
            "plan_difference": float(plan["regret_difference" if plan.attrs["criterion"] == "regret" else "difference"]),
            # what the floor and the Monte Carlo test saw (a floor can be scored again on stored runs)
            "plan_gain": float(plan.attrs["gain"]), "plan_significant": bool(plan.attrs["significant"]),
            "plan_gain_floor": float(plan.attrs["gain_floor"])}


def _warned(selection) -> dict[str, Any]:
    """What the selection's checks found: ``warned``, the assumptions and the model's alternatives (branches,
    :mod:`hybridpriv.engine.branches`; ``free`` for :func:`~hybridpriv.engine.decision.free_line`; ``premise:NAME`` for
    :func:`~hybridpriv.engine.decision.premise_lines`) whose warning it printed (comma-separated; "" for none: what the calibration
    counts against the truths with a large regret), and over its assumptions the smallest share of a scale at which
    the recommendation flips (``flip_share``) and the largest expected-loss excess within the warning share
    (``flip_worst``), from which another threshold's warnings can be recounted (NaN without assumptions)."""
    from ..engine.branches import branch_warnings
    from ..engine.decision import free_warning, premise_warnings
    from ..engine.sensitivity import warnings_of

    # a branch is named once, though both of its alternatives may warn; a free candidate's warning is named "free"
    alternatives = ([] if selection.branches is None
                    else list(dict.fromkeys(b for b, _ in branch_warnings(selection.branches))))
    alternatives += ["free"] if free_warning(selection.decision) is not None else []
    premises = getattr(getattr(selection, "problem", None), "premises", ())
    alternatives += [f"premise:{p.name}" for p, _, _ in premise_warnings(selection.decision, premises)]
    if selection.sensitivity is None:
        return {"warned": ", ".join(alternatives), "flip_share": np.nan, "flip_worst": np.nan}
    rule = warnings_of(selection.sensitivity, str(selection.decision.attrs["recommended"]))
    return {"warned": ", ".join([*(a for a, r in rule.items() if r["warns"]), *alternatives]),
            "flip_share": min(r["flip"] for r in rule.values()), "flip_worst": max(r["worst"] for r in rule.values())}


def _checks_flagged(selection) -> str:
    """The public statistics the model could not reproduce (``select``'s predictive-check warning, which names the
    model's assumption at fault in the family's advice), comma-separated, as the selection recorded them
    (``attrs["predictive_checks_flagged"]``); "" when none was flagged or the family has no checks.  Recorded beside
    the other warnings, not counted among them in ``regret_over_25pct_warned``."""
    return str(selection.attrs.get("predictive_checks_flagged", ""))


def _has_pythia(name: str) -> bool:
    from ..core.family import Family
    from ..families import family

    return type(family(name)).pythia is not Family.pythia


def _pythia(raw, truth, seed, i, share, oracle_risk, realised_draws, realised_trials, stage, engine
            ) -> dict[str, Any]:
    from ..families import family

    import dataclasses

    spec, adjust = family(truth.family).pythia(raw, truth.data, share, rng(seed, "calibration", truth.family, i,
                                                                           "pythia"))

    def no_sensitivity(problem):  # only the recommendation's warnings are scored: the second selector's would be waste
        problem = adjust(problem) if adjust is not None else problem
        return dataclasses.replace(problem, assumptions=(), probe=None)

    run = _select_and_realise(spec, truth, seed, i, realised_draws, realised_trials, stage, engine,
                              tag="pythia-", adjust=no_sensitivity)
    if run["refused"]:
        return {"pythia_recommended": "", "pythia_realised": np.nan, "pythia_regret": np.nan}
    dec, dim = run["decision"], run["dim"]
    coords = [str(c) for c in dec[dim].values]
    chosen = float(run["realised"][coords.index(str(dec.attrs["recommended"]))])
    regret = 0.0 if chosen == oracle_risk else (np.inf if oracle_risk == 0 else chosen / oracle_risk - 1.0)
    return {"pythia_recommended": str(dec.attrs["recommended"]), "pythia_realised": chosen, "pythia_regret": regret}
