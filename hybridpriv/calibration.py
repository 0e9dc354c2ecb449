"""How far to trust a recommendation: the select path scored on held-out truths.

For each truth (:mod:`hybridpriv.heldout`) the select path runs on the PUBLIC knowledge only
(:func:`hybridpriv.workflow.run_selection` on the SPEC's problem); then every candidate's realised
risk on the private truth is computed by :func:`hybridpriv.engine.evaluate.evaluate` with a
:class:`~hybridpriv.core.data.FixedSource` (the task's exact risk where it has one, else Monte Carlo of
the mechanism's noise).  :func:`score` compares the two:

* the oracle: the eligible candidate with the lowest realised risk (ties shared);
* the regret of the recommendation: ``realised[recommended] / realised[oracle] - 1``;
* coverage: does the realised risk lie in the reported 5-95% range ``[risk_low, risk_high]``;
* reliability: P(best) against whether the candidate was the oracle, beside the range a calibrated P(best)
  would give in each bin (:mod:`hybridpriv.reliability`).

Layering: :func:`score`, :func:`summarize` and :func:`reliability` are pure NumPy;
:func:`calibrate` runs the truths and returns an ``xarray.Dataset``; :func:`plot_calibration`
draws it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from numbers import Integral
from typing import Any

import numpy as np
import xarray as xr

from .core.random import rng, stream
from .engine.decision import CHANCE_WARNING
from .engine.options import Engine, as_engine
from .engine.sensitivity import MATTERS
from .reliability import BIN_LABELS, BINS, reliability, reliability_band

__all__ = ["BINS", "RETRIES", "calibrate", "calibrate_truth", "plot_calibration", "regret_to_best", "reliability",
           "reliability_band", "score", "summarize"]

#: Draws (and the model's tuning steps, ``fit.tune``, where the family's sampler tunes) of the select run's retries,
#: as multiples of the SPEC's, when the model's convergence check refuses the fit (the refusal's advice).
RETRIES = (1, 2, 4)
#: A regret above this is a failure that must not be silent: select must have warned (issue 25).
SILENT_REGRET = MATTERS  # the regret a sensitivity warning is about (hybridpriv.engine.sensitivity)


def regret_to_best(realised: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """Each candidate's regret against the best eligible one on the same truth: ``realised / best - 1``, 0 for a
    candidate as good as the best (0 / 0 too), infinite where the best is 0 and the candidate is not.  The last
    axis is the candidates (one truth: ``(k,)``; truths by candidates: ``(t, k)``); a truth with no eligible
    candidate is scored against all of them, as :func:`score` does."""
    realised = np.asarray(realised, dtype=float)
    eligible = np.asarray(eligible, dtype=bool)
    pool = np.where(eligible.any(axis=-1, keepdims=True), eligible, True)
    best = np.min(np.where(pool, realised, np.inf), axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(realised == best, 0.0, np.where(best == 0, np.inf, realised / best - 1.0))


def score(expected, low, high, p_best, eligible, realised, recommended: int) -> dict[str, Any]:
    """Score one decision against the realised risks on the truth (one entry per candidate).

    Parameters
    ----------
    expected, low, high, p_best
        The decision's expected loss, 5% and 95% risk quantiles and P(best).
    eligible
        Whether the candidate meets every unit's requirement (the oracle is chosen among these,
        or among all when none is).
    realised
        The candidate's risk on the truth.
    recommended
        The index of the recommended candidate.

    Returns
    -------
    dict
        ``oracle`` (index of the lowest realised risk among the eligible; the first on a tie),
        ``regret`` (``realised[recommended] / realised[oracle] - 1``; 0 when both are 0),
        ``covered`` (bool per candidate: ``low <= realised <= high``), ``is_best`` (per candidate,
        1 / number of tied oracles, else 0; ineligible candidates 0), ``ratio``
        (``expected / realised`` per candidate).
    """
    arrays = [np.asarray(a, dtype=float) for a in (expected, low, high, p_best, realised)]
    expected, low, high, p_best, realised = arrays
    eligible = np.asarray(eligible, dtype=bool)
    k = realised.size
    for name, a in (("expected", expected), ("low", low), ("high", high), ("p_best", p_best), ("eligible", eligible)):
        if a.shape != (k,):
            raise ValueError(f"{name} must have one entry per candidate ({k}), got shape {a.shape}")
    if isinstance(recommended, bool) or not isinstance(recommended, Integral) or not 0 <= int(recommended) < k:
        raise ValueError(f"recommended must be a candidate index in [0, {k}), got {recommended!r}")
    if not np.isfinite(realised).all() or (realised < 0).any():
        raise ValueError(f"realised must be finite and >= 0, got {realised}")
    pool = eligible if eligible.any() else np.ones(k, dtype=bool)
    best_value = realised[pool].min()
    ties = pool & (realised == best_value)
    oracle = int(np.flatnonzero(ties)[0])
    regret = regret_to_best(realised, eligible)[int(recommended)]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = expected / realised
    return {"oracle": oracle, "regret": float(regret), "covered": (low <= realised) & (realised <= high),
            "is_best": ties / ties.sum(), "ratio": ratio}


def summarize(regret, covered, covered_recommended, ratio=()) -> dict[str, float]:
    """Summary of many truths: interval coverage (over the candidate x truth pairs given, NaN skipped; the study
    gives the eligible candidates' alone),
    coverage of the recommended candidate, median and 90th-percentile regret (linear quantiles),
    share of truths where the recommendation was the oracle (regret 0), share of truths whose
    select run was refused (NaN regret; ``truths`` counts the others), and the median of
    ``ratio`` (expected loss / realised risk over the pairs; finite values only)."""
    regret = np.asarray(regret, dtype=float)
    refused = float(np.mean(np.isnan(regret))) if regret.size else float("nan")
    regret = regret[~np.isnan(regret)]
    cov = np.asarray(covered, dtype=float)
    cov_rec = np.asarray(covered_recommended, dtype=float)
    nan = float("nan")
    ratio = np.asarray(ratio, dtype=float).ravel()
    ratio = ratio[np.isfinite(ratio)]
    return {"truths": float(regret.size), "refused": refused,
            "coverage": float(np.nanmean(cov)) if np.isfinite(cov).any() else nan,
            "coverage_recommended": float(np.nanmean(cov_rec)) if np.isfinite(cov_rec).any() else nan,
            "regret_median": float(np.quantile(regret, 0.5)) if regret.size else nan,
            "regret_p90": float(np.quantile(regret, 0.9)) if regret.size else nan,
            "correct": float(np.mean(regret == 0)) if regret.size else nan,
            "ratio_median": float(np.median(ratio)) if ratio.size else nan}


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
    from .families import family

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
    from .core.data import FixedSource
    from .engine.evaluate import evaluate
    from .core.model import ConvergenceError
    from .spec import parse_spec
    from .workflow import run_selection

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
    from .engine.stats import mean_with_se

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
    features of the truth released with Laplace noise (stream ``"plan"`` of the truth), the second stage's choice
    from them, and that choice's realised risk at the rest of the budget (the same realised-risk seed).  A probe
    that refits (:attr:`hybridpriv.engine.plan.Probe.refit`) is carried out as ``release`` does: ``select`` again on
    the SPEC given the release (``realised``: its realised draws and trials), its recommendation's realised risk."""
    if selection.plan is None:
        return {}
    from .core.data import FixedSource
    from .engine.evaluate import evaluate
    from .engine.plan import choose_later

    plan, probe = selection.plan, problem.probe
    noise = rng(seed, "calibration", truth.family, i, "plan").laplace(0.0, probe.scales)
    observed = probe.exact(data) + noise
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
    from .engine.branches import branch_warnings
    from .engine.decision import free_warning, premise_warnings
    from .engine.sensitivity import warnings_of

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
    from .core.family import Family
    from .families import family

    return type(family(name)).pythia is not Family.pythia


def _pythia(raw, truth, seed, i, share, oracle_risk, realised_draws, realised_trials, stage, engine
            ) -> dict[str, Any]:
    from .families import family

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


def calibrate(truths: Sequence[Any], seed: int = 0, settings: dict[str, dict[str, Any]] | None = None,
              stage: Callable[[str], Any] = lambda name: None, engine: Engine | None = None, **options
              ) -> xr.Dataset:
    """Run :func:`calibrate_truth` on every truth and collect the results and their summary.

    ``settings``: per family, SPEC values for the select runs.  ``stage(name)``: a resume folder per
    evaluation.  ``engine``: how the evaluations run (its ``progress``: a line per truth); with a ``client``, the
    truths themselves run as its tasks, each on one worker (every truth has its own seeds: the same numbers as in
    one process).  ``options``: ``realised_draws``, ``realised_trials``, ``pythia_share``.
    Returns dims ``truth``, ``candidate`` (``estimator:NAME`` or ``k:K``; NaN where a truth's family
    lacks it), ``scope`` (each family and ``overall``) and ``bin`` (reliability).
    """
    index: dict[str, int] = {}
    eng = as_engine(engine)
    inner = eng.replace(client=None)
    rows = []
    for t in truths:
        i = index[t.family] = index.get(t.family, -1) + 1
        if eng.progress:
            print(f"[calibration] {t.family} {i}: {t.source} {t.generator}", flush=True)
        name = f"{t.family}-{i}"
        args = (t, seed, i, (settings or {}).get(t.family))
        kwargs = {"stage": lambda part, name=name: stage(f"{name}-{part}"), "engine": inner, **options}
        rows.append(eng.client.submit(calibrate_truth, *args, key=f"calibration-{seed}-{name}", pure=False, **kwargs)
                    if eng.client is not None else calibrate_truth(*args, **kwargs))
    if eng.client is not None:
        rows = eng.client.gather(rows)
    cand = list(dict.fromkeys(f"{r['dim']}:{c}" for r in rows if not r["refused"] for c in r["candidates"]))
    grid = {v: np.full((len(rows), len(cand)), np.nan) for v in
            ("expected_loss", "risk_low", "risk_high", "p_best", "p_costly", "eligible", "realised", "realised_mcse",
             "covered", "is_best", "ratio")}
    for j, (t, r) in enumerate(zip(truths, rows)):
        if r["refused"]:
            continue
        cols = [cand.index(f"{r['dim']}:{c}") for c in r["candidates"]]
        for v in grid:
            grid[v][j, cols] = np.asarray(r[v], dtype=float)
    per_truth = {
        "family": [t.family for t in truths], "source": [t.source for t in truths],
        "generator": [t.generator for t in truths], "recommended": [r.get("recommended", "") for r in rows],
        "oracle": [r.get("oracle", "") for r in rows], "regret": [r.get("regret", np.nan) for r in rows],
        "covered_recommended": [_at_recommended(r, "covered") for r in rows],
        "oracle_at_edge": [bool(r.get("oracle_at_edge", False)) for r in rows],
        "recommended_at_edge": [bool(r.get("recommended_at_edge", False)) for r in rows],
        "max_rhat": [r.get("max_rhat", np.nan) for r in rows], "select_refused": [r["refused"] for r in rows],
        "sensitivity_warning": [r.get("warned", "") for r in rows],
        "checks_flagged": [r.get("checks_flagged", "") for r in rows],
        "p_costly_recommended": [_at_recommended(r, "p_costly") for r in rows],
        "p_costly_raw_recommended": [_at_recommended(r, "p_costly_raw") for r in rows],
        "flip_share": [r.get("flip_share", np.nan) for r in rows],
        "flip_worst": [r.get("flip_worst", np.nan) for r in rows],
        "plan_pays": [bool(r.get("plan_pays", False)) for r in rows],
        "plan_choice": [r.get("plan_choice", "") for r in rows],
        "plan_pays_by": [r.get("plan_pays_by", "") for r in rows],
        "plan_regret": [r.get("plan_regret", np.nan) for r in rows],
        "plan_realised": [r.get("plan_realised", np.nan) for r in rows],
        "plan_difference": [r.get("plan_difference", np.nan) for r in rows],
        "plan_gain": [r.get("plan_gain", np.nan) for r in rows],
        "plan_significant": [bool(r.get("plan_significant", False)) for r in rows],
        "plan_gain_floor": [r.get("plan_gain_floor", np.nan) for r in rows],
        "final_regret": [r.get("final_regret", np.nan) for r in rows],
        "pythia_recommended": [r.get("pythia_recommended", "") for r in rows],
        "pythia_regret": [r.get("pythia_regret", np.nan) for r in rows],
        "pythia_realised": [r.get("pythia_realised", np.nan) for r in rows],
        "recommended_realised": [_at_recommended(r, "realised") for r in rows],
        "select_attempts": [r["attempts"] for r in rows],
        # where the time goes (wall seconds in the truth's process; not reproducible, unlike every number above)
        "seconds": [r.get("seconds", np.nan) for r in rows],
        "pythia_seconds": [r.get("pythia_seconds", np.nan) for r in rows]}
    ds = xr.Dataset({**{v: (("truth", "candidate"), a) for v, a in grid.items()},
                     **{v: ("truth", np.asarray(a)) for v, a in per_truth.items()}},
                    coords={"truth": [f"{t.family}-{i}" for t, i in zip(truths, _numbering(truths))],
                            "candidate": cand})
    scopes = [*dict.fromkeys(t.family for t in truths), "overall"]
    summary = {s: summarize(*_scope(ds, s)) for s in scopes}
    for stat in next(iter(summary.values())):
        ds[stat] = ("scope", [summary[s][stat] for s in scopes])
    from .families import family

    recorded = [family(s).range_coverage if s != "overall" else {} for s in scopes]
    ds["coverage_recorded"] = ("scope", [float(np.mean(list(r.values()))) if r else np.nan for r in recorded])
    ds["coverage_recorded"].attrs["description"] = ("the family's range_coverage (what select prints), averaged over "
                                                    "its seeds: compare with coverage, this run's")
    for stat, values in _pythia_summary(ds, scopes).items():
        ds[stat] = ("scope", values)
    for stat, values in _plan_summary(ds, scopes).items():
        ds[stat] = ("scope", values)
    # never silently wrong (issue 25): how many truths had a regret over 25%, and how many of those were warned
    big = ds["regret"].fillna(0.0) > SILENT_REGRET
    warned = ds["sensitivity_warning"] != ""
    in_scope = [(ds["family"] == s) if s != "overall" else xr.ones_like(big) for s in scopes]
    ds["regret_over_25pct"] = ("scope", [int((big & m).sum()) for m in in_scope])
    ds["regret_over_25pct_warned"] = ("scope", [int((big & warned & m).sum()) for m in in_scope])
    ds["regret_over_25pct"].attrs["description"] = f"truths whose recommendation's regret exceeds {SILENT_REGRET:.0%}"
    ds["regret_over_25pct_warned"].attrs["description"] = ("of those, the truths where select printed a sensitivity "
                                                           "warning (sensitivity_warning names the assumption)")
    # the model's own chance of a costly miss (engine.decision.p_costly): how many misses it expected, how many it
    # warned of by chance (select prints "warning (chance)" at CHANCE_WARNING), and how often it did so in all
    chance = ds["p_costly_recommended"]
    ds["costly_expected"] = ("scope", [float(chance.where(m).sum()) for m in in_scope])
    ds["chance_warnings"] = ("scope", [int(((chance >= CHANCE_WARNING) & m).sum()) for m in in_scope])
    ds["regret_over_25pct_chance"] = ("scope", [int((big & (chance >= CHANCE_WARNING) & m).sum()) for m in in_scope])
    ds["regret_over_25pct_warned_any"] = ("scope", [int((big & (warned | (chance >= CHANCE_WARNING)) & m).sum())
                                                    for m in in_scope])
    checked = ds["checks_flagged"] != ""
    ds["checks_warnings"] = ("scope", [int((checked & m).sum()) for m in in_scope])
    ds["regret_over_25pct_checked"] = ("scope", [int((big & checked & m).sum()) for m in in_scope])
    ds["regret_over_25pct_warned_or_checked"] = ("scope", [
        int((big & (warned | (chance >= CHANCE_WARNING) | checked) & m).sum()) for m in in_scope])
    ds["checks_warnings"].attrs["description"] = "truths where a predictive check of the public knowledge was flagged"
    ds["regret_over_25pct_checked"].attrs["description"] = "truths above 25% regret with a flagged predictive check"
    ds["regret_over_25pct_warned_or_checked"].attrs["description"] = ("truths above 25% regret with any warning or a "
                                                                      "flagged predictive check")
    ds["costly_expected"].attrs["description"] = ("sum over the truths of the recommendation's p_costly: the number of "
                                                  "regrets above 25% the model expected")
    ds["chance_warnings"].attrs["description"] = f"truths where select warned by chance (p_costly >= {CHANCE_WARNING:g})"
    ds["regret_over_25pct_chance"].attrs["description"] = "truths above 25% regret that had the chance warning"
    ds["regret_over_25pct_warned_any"].attrs["description"] = ("truths above 25% regret with any warning: an "
                                                               "assumption's, a branch's or the chance warning")
    rel = [reliability(*_scope(ds, s, "reliability")) for s in scopes]
    for k, v in enumerate(("reliability_predicted", "reliability_observed", "reliability_count")):
        ds[v] = (("scope", "bin"), np.array([r[k] for r in rel]))
    band = [reliability_band(_scope(ds, s, "reliability")[0], rng=rng(seed, "calibration", "reliability", s))
            for s in scopes]
    for k, v in enumerate(("reliability_low", "reliability_high")):
        ds[v] = (("scope", "bin"), np.array([b[k] for b in band]))
        ds[v].attrs["description"] = (f"{'2.5' if k == 0 else '97.5'}% quantile of the share of pairs that win when each "
                                      "truth's winner is drawn from its own P(best) (hybridpriv.reliability)")
    held = [family(s).p_best_held if s != "overall" else {} for s in scopes]
    ds["reliability_recorded"] = (("scope", "bin"), np.array([[h[b][1] if b in h else np.nan for b in BIN_LABELS]
                                                              for h in held]))
    ds["reliability_recorded"].attrs["description"] = ("the family's p_best_held (what select's P(best) note reads): "
                                                       "the share that came true per bin on earlier seeds' "
                                                       "synthetic truths; compare with reliability_observed, this "
                                                       "run's")
    ds = ds.assign_coords(scope=scopes, bin=list(BIN_LABELS))
    ds["regret"].attrs["description"] = "realised risk of the recommendation / the oracle's - 1 (NaN: select refused)"
    ds.attrs["refusals"] = "; ".join(f"{n}: {r['failures'][-1]}" for n, r in zip(ds.truth.values, rows) if r["refused"])
    ds["covered"].attrs["description"] = "realised risk within the reported 5-95% range of the per-dataset risk"
    ds["is_best"].attrs["description"] = ("1 if the candidate has the lowest realised risk among the eligible "
                                          "(ties shared)")
    return ds


def _pythia_summary(ds: xr.Dataset, scopes: Sequence[str]) -> dict[str, list[float]]:
    """Per scope, over the truths where both selectors ran: the budget-spending selector's median and
    90th-percentile regret, the model-only selector's on the same truths, and the share of truths
    where spending budget to choose gave a lower realised risk (ties count half)."""
    out: dict[str, list[float]] = {k: [] for k in ("pythia_truths", "pythia_regret_median", "pythia_regret_p90",
                                                    "model_regret_median", "model_regret_p90", "pythia_wins")}
    for scope in scopes:
        keep = np.isfinite(ds["pythia_regret"].values) & np.isfinite(ds["regret"].values)
        if scope != "overall":
            keep &= ds["family"].values == scope
        p, m = ds["pythia_regret"].values[keep], ds["regret"].values[keep]
        a, b = ds["pythia_realised"].values[keep], ds["recommended_realised"].values[keep]
        none = not keep.any()
        out["pythia_truths"].append(float(keep.sum()))
        for name, v in (("pythia", p), ("model", m)):
            out[f"{name}_regret_median"].append(np.nan if none else float(np.quantile(v, 0.5)))
            out[f"{name}_regret_p90"].append(np.nan if none else float(np.quantile(v, 0.9)))
        out["pythia_wins"].append(np.nan if none else float(np.mean((a < b) + 0.5 * (a == b))))
    return out


def _plan_summary(ds: xr.Dataset, scopes: Sequence[str]) -> dict[str, list[float]]:
    """Per scope, over the truths whose selection judged a two-stage plan (:mod:`hybridpriv.engine.plan`): how many,
    on how many it paid, the plan's realised regret carried out (median, p90) beside choosing now's on the same
    truths, the share where carrying it out beat choosing now (ties half), and the regret of what select
    recommended, the plan where it paid (``final_regret``: median, mean, p90)."""
    keys = ("plan_truths", "plan_paid", "plan_regret_median", "plan_regret_p90", "plan_better",
            "final_regret_median", "final_regret_mean", "final_regret_p90")
    out: dict[str, list[float]] = {k: [] for k in keys}
    for scope in scopes:
        keep = np.isfinite(ds["plan_regret"].values) & np.isfinite(ds["regret"].values)
        if scope != "overall":
            keep &= ds["family"].values == scope
        p, m, f = (ds[v].values[keep] for v in ("plan_regret", "regret", "final_regret"))
        none = not keep.any()
        out["plan_truths"].append(float(keep.sum()))
        out["plan_paid"].append(float(ds["plan_pays"].values[keep].sum()))
        for name, v in (("plan_regret", p), ("final_regret", f)):
            out[f"{name}_median"].append(np.nan if none else float(np.quantile(v, 0.5)))
            out[f"{name}_p90"].append(np.nan if none else float(np.quantile(v, 0.9)))
        out["final_regret_mean"].append(np.nan if none else float(np.mean(f)))
        out["plan_better"].append(np.nan if none else float(np.mean((p < m) + 0.5 * (p == m))))
    return out


def _at_recommended(row: dict[str, Any], key: str) -> float:
    """A truth's per-candidate ``key`` at its recommended candidate (NaN where select refused)."""
    return np.nan if row["refused"] else float(row[key][row["candidates"].index(row["recommended"])])


def _numbering(truths) -> list[int]:
    seen: dict[str, int] = {}
    out = []
    for t in truths:
        seen[t.family] = seen.get(t.family, -1) + 1
        out.append(seen[t.family])
    return out


def _scope(ds: xr.Dataset, scope: str, what: str = "summary"):
    sel = ds if scope == "overall" else ds.isel(truth=np.flatnonzero(ds.family.values == scope))
    if what == "reliability":
        elig = sel.eligible.values == 1
        return np.where(elig, sel.p_best.values, np.nan), np.where(elig, sel.is_best.values, np.nan)
    # coverage over the eligible candidates' ranges, those a user acts on (as P(best)'s reliability): a candidate
    # that is never eligible still has its range printed, and counting it can lift a kind's coverage by ten points
    # (docs/calibration.md, held-out seeds)
    covered = np.where(sel.eligible.values == 1, sel.covered.values, np.nan)
    return sel.regret.values, covered, sel.covered_recommended.values, sel.ratio.values


def plot_calibration(ds: xr.Dataset, axes=None):
    """Three panels: regret by truth (sorted, per family), realised risk / expected loss against the
    reported range, and the reliability diagram of P(best).  Returns the figure."""
    from matplotlib.figure import Figure

    if axes is None:
        fig = Figure(figsize=(15, 4.5), layout="constrained")
        axes = fig.subplots(1, 3)
    fig = axes[0].figure
    ax = axes[0]
    for fam in [s for s in ds.scope.values if s != "overall"]:
        r = np.sort(ds.regret.values[ds.family.values == fam])
        ax.plot(np.arange(1, r.size + 1) / r.size, 100 * r, marker="o", ms=3, label=fam)
    ax.axhline(2, color="grey", ls=":", lw=1)
    ax.axhline(10, color="grey", ls="--", lw=1)
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set(xlabel="share of truths", ylabel="regret of the recommendation (%)", ylim=(0, None),
           title="Regret (targets: median <= 2%, p90 <= 10%)")
    ax.legend()
    ax = axes[1]
    for fam in [s for s in ds.scope.values if s != "overall"]:
        d = ds.isel(truth=np.flatnonzero(ds.family.values == fam))
        lo, hi = (d.risk_low / d.realised).values.ravel(), (d.risk_high / d.realised).values.ravel()
        keep = np.isfinite(lo) & np.isfinite(hi)
        ax.scatter(lo[keep], hi[keep], s=6, alpha=0.5, label=fam)
    ax.axvline(1, color="grey", lw=1)
    ax.axhline(1, color="grey", lw=1)
    ax.set(xscale="log", yscale="log", xlabel="5% of the reported risk / realised risk",
           ylabel="95% / realised", title="Coverage: covered in the upper-left quadrant")
    ax.legend()
    ax = axes[2]
    ax.plot([0, 1], [0, 1], color="grey", lw=1)
    for s in ds.scope.values:
        pred, obs, n = (ds[v].sel(scope=s).values for v in ("reliability_predicted", "reliability_observed",
                                                             "reliability_count"))
        line = ax.plot(pred, obs, marker="o", label=f"{s} ({int(np.nansum(n))} pairs)")[0]
        if "reliability_low" in ds:  # what a calibrated P(best) would give: its 95% range, as a thin bar per bin
            lo, hi = (ds[v].sel(scope=s).values for v in ("reliability_low", "reliability_high"))
            ax.vlines(pred, lo, hi, color=line.get_color(), lw=0.8, alpha=0.6)
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="P(best) reported", ylabel="share of truths where it was best",
           title="Reliability of P(best) (bars: 95% if calibrated)")
    ax.legend()
    return fig
