"""Many truths: :func:`calibrate` runs :func:`~hybridpriv.calibration.truth.calibrate_truth` on each (as dask tasks
with an engine's client) and collects the results and their summary per family into one ``xarray.Dataset``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import xarray as xr

from ..core.random import rng
from ..engine.decision import CHANCE_WARNING
from ..engine.options import Engine, as_engine
from ..reliability import BIN_LABELS, reliability, reliability_band
from .scoring import SILENT_REGRET, summarize
from .truth import calibrate_truth

__all__ = ["calibrate"]

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
        # the chance line select warned from (its SPEC's evaluation.chance_warning; the default where it refused)
        "chance_warning": [float(r.get("chance_warning", CHANCE_WARNING)) for r in rows],
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
    from ..families import family

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
    # warned of by chance (select prints "warning (chance)" from its chance line), and how often it did so in all
    chance = ds["p_costly_recommended"]
    by_chance = chance >= ds["chance_warning"]
    ds["costly_expected"] = ("scope", [float(chance.where(m).sum()) for m in in_scope])
    ds["chance_warnings"] = ("scope", [int((by_chance & m).sum()) for m in in_scope])
    ds["regret_over_25pct_chance"] = ("scope", [int((big & by_chance & m).sum()) for m in in_scope])
    ds["regret_over_25pct_warned_any"] = ("scope", [int((big & (warned | by_chance) & m).sum()) for m in in_scope])
    checked = ds["checks_flagged"] != ""
    ds["checks_warnings"] = ("scope", [int((checked & m).sum()) for m in in_scope])
    ds["regret_over_25pct_checked"] = ("scope", [int((big & checked & m).sum()) for m in in_scope])
    ds["regret_over_25pct_warned_or_checked"] = ("scope", [
        int((big & (warned | by_chance | checked) & m).sum()) for m in in_scope])
    ds["checks_warnings"].attrs["description"] = "truths where a predictive check of the public knowledge was flagged"
    ds["regret_over_25pct_checked"].attrs["description"] = "truths above 25% regret with a flagged predictive check"
    ds["regret_over_25pct_warned_or_checked"].attrs["description"] = ("truths above 25% regret with any warning or a "
                                                                      "flagged predictive check")
    ds["costly_expected"].attrs["description"] = ("sum over the truths of the recommendation's p_costly: the number of "
                                                  "regrets above 25% the model expected")
    ds["chance_warnings"].attrs["description"] = "truths where select warned by chance (p_costly >= chance_warning)"
    ds["chance_warning"].attrs["description"] = (f"the chance line select warned from (evaluation.chance_warning; "
                                                 f"{CHANCE_WARNING:g} by default)")
    ds["regret_over_25pct_chance"].attrs["description"] = "truths above 25% regret that had the chance warning"
    ds["regret_over_25pct_warned_any"].attrs["description"] = ("truths above 25% regret with any warning: an "
                                                               "assumption's, a branch's or the chance warning")
    # the same counts with the chance line elsewhere (hybridpriv.calibration_runs.warning_lines): the price of fewer
    # silent failures in warnings on fine truths, per scope
    from ..calibration_runs import CHANCE_LINES, warning_lines

    lines = [warning_lines([ds.isel(truth=np.flatnonzero(m.values))]) if bool(m.any()) else None for m in in_scope]
    for v, col in (("silent_by_line", "silent"), ("false_alarms_by_line", "false_alarms")):
        ds[v] = (("scope", "chance_line"), np.array([[t.loc[x, col] if t is not None else 0 for x in CHANCE_LINES]
                                                      for t in lines], dtype=int))
    ds["silent_by_line"].attrs["description"] = ("truths above 25% regret with no warning had select warned by chance "
                                                 "from each chance_line (its other warnings as printed)")
    ds["false_alarms_by_line"].attrs["description"] = ("truths at most 25% regret that would then have had a warning")
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
    ds = ds.assign_coords(scope=scopes, bin=list(BIN_LABELS), chance_line=list(CHANCE_LINES))
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
