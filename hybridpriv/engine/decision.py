"""Decision summaries over simulated datasets: expected loss, its uncertainty, P(best), the choice.

Layering: :func:`decide` works on an evaluation ``xarray.Dataset`` (from
:func:`hybridpriv.engine.evaluate.evaluate`) over any candidate dimension; the Monte Carlo standard
errors come from ``arviz_stats`` (:mod:`hybridpriv.engine.stats`: effective sample size over ``chain``
and ``draw``, so autocorrelated posterior draws are not over-counted).  Selection lives here only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from numbers import Real
from typing import Any

import numpy as np
import xarray as xr

from ..core.privacy import Guarantee

__all__ = ["CHANCE_WARNING", "COSTLY", "CRITERIA", "FREE_WARNING", "chance_line", "decide", "eligibility", "format_summary",
           "format_table", "free_line", "free_warning", "P_BEST_PAIRS", "P_BEST_TOLERANCE", "p_best_line",
           "premise_lines", "premise_warnings", "range_line", "RANGE_NOMINAL", "RANGE_TARGET", "regret_ratio", "seed_list",
           "spends_nothing", "summarize_by"]

#: What a decision minimises: ``"loss"``, the posterior expected loss; ``"regret"``, the posterior expected
#: relative regret ``E[risk_c / min_eligible risk - 1]`` (every dataset counts alike, however small its best risk).
CRITERIA = ("loss", "regret")
#: A candidate's regret above this on a dataset is a costly miss there (``p_costly``); the sensitivity checks and
#: the calibration study use the same line (:data:`hybridpriv.engine.sensitivity.MATTERS`).
COSTLY = 0.25
#: ``select`` warns when the recommendation's ``p_costly`` reaches this: on at least one in four of the model's
#: own datasets it is more than :data:`COSTLY` worse than the best candidate (fixed before it was measured on the
#: calibration truths).
CHANCE_WARNING = 0.25
#: A candidate that spends no budget and is best on at least this share of the model's datasets, while another is
#: recommended, is printed as a warning (:func:`free_line`): its risk is the public data's own error, which the
#: model knows only as a range, and when that error is small it beats any noisy candidate by far.  Chosen on the
#: stored results of two calibration runs (401 truths): from 0.2 it names 7 of their 19 silent failures, at 12
#: more false alarms on the 327 truths below a 25% regret (from 0.15: 11, at 22 more).
FREE_WARNING = 0.2
#: The share of realised risks a 5-95% range holds when the model is right, and the least share issue 25 accepts on
#: held-out truths (:func:`range_line` says when a family's ranges held less).
RANGE_NOMINAL, RANGE_TARGET = 0.90, 0.80
#: P(best) is noted (:func:`p_best_line`) where, on held-out truths, the reports in its bin came true this far from
#: their mean (issue 25's tolerance) ...
P_BEST_TOLERANCE = 0.10
#: ... in a bin of at least this many (truth, candidate) pairs (issue 25's smallest bin).
P_BEST_PAIRS = 10
#: A dataset's best risk below this share of the smallest expected loss counts as this share (no 0 / 0).
REGRET_FLOOR = 1e-9


def _mcse(da: xr.DataArray) -> xr.DataArray:
    """Monte Carlo standard error of the mean over (chain, draw) (:func:`hybridpriv.engine.stats.mcse_mean`)."""
    from .stats import mcse_mean

    return mcse_mean(da, ("chain", "draw"))


def eligibility(evaluation: xr.Dataset) -> xr.DataArray:
    """Per candidate: does its privacy declaration give every unit what the unit requires?

    Compares epsilon and delta under the required neighbouring relation and the trust model
    (:meth:`hybridpriv.core.privacy.Guarantee.satisfies`).  All ``True`` when the evaluation holds no
    requirements.
    """
    dim = evaluation.attrs.get("candidate_dim", "estimator")
    if "required_epsilon" not in evaluation:
        return xr.DataArray(np.ones(evaluation.sizes[dim], dtype=bool), dims=dim, coords={dim: evaluation[dim]})
    units = evaluation["unit"].values
    required = [Guarantee(float(evaluation["required_epsilon"].sel(unit=u)), float(evaluation["required_delta"].sel(unit=u)),
                          str(evaluation["required_relation"].sel(unit=u).item()),
                          str(evaluation["required_trust"].sel(unit=u).item())) for u in units]
    ok = []
    for c in evaluation[dim].values:
        row = evaluation.sel({dim: c})
        ok.append(all(
            Guarantee(float(row["privacy_epsilon"].sel(unit=u)), float(row["privacy_delta"].sel(unit=u)),
                      str(row["privacy_relation"].sel(unit=u).item()), str(row["privacy_trust"].sel(unit=u).item()))
            .satisfies(req)
            for u, req in zip(units, required)
        ))
    return xr.DataArray(np.array(ok, dtype=bool), dims=dim, coords={dim: evaluation[dim]})


def spends_nothing(evaluation: xr.Dataset) -> xr.DataArray:
    """Per candidate: does it promise epsilon 0 and delta 0 to every unit that requires protection (a finite
    required epsilon)?  Such a candidate reads no private record and spends no budget (``public-mean``,
    ``public-only``, ``public-start``).  All ``False`` when the evaluation holds no requirements."""
    dim = evaluation.attrs.get("candidate_dim", "estimator")
    if "required_epsilon" not in evaluation or "privacy_epsilon" not in evaluation:
        return xr.DataArray(np.zeros(evaluation.sizes[dim], dtype=bool), dims=dim, coords={dim: evaluation[dim]})
    private = np.isfinite(evaluation["required_epsilon"].values)
    eps = evaluation["privacy_epsilon"].transpose(dim, "unit").values[:, private]
    delta = evaluation["privacy_delta"].transpose(dim, "unit").values[:, private]
    free = bool(private.any()) & (eps == 0).all(axis=1) & (delta == 0).all(axis=1)
    return xr.DataArray(np.asarray(free, dtype=bool), dims=dim, coords={dim: evaluation[dim]})


def regret_ratio(risk: xr.DataArray, meets: xr.DataArray, dim: str) -> xr.DataArray:
    """Per dataset, each candidate's risk over the lowest eligible one (1 for the best): ``(dim, chain, draw)``.

    A dataset whose best risk is 0 (or below :data:`REGRET_FLOOR` times the smallest expected loss) is
    divided by that floor, so a ratio is always finite; with no eligible candidate, every candidate counts.
    """
    pool = risk.where(meets) if bool(meets.any()) else risk
    best = pool.min(dim)
    return risk / np.maximum(best, _regret_floor(float(pool.mean(("chain", "draw")).min())))


def _regret_floor(scale: float) -> float:
    """The smallest best risk a ratio divides by: :data:`REGRET_FLOOR` times ``scale`` (the lowest expected loss of
    an eligible candidate), or the tiniest float when that is 0."""
    return REGRET_FLOOR * scale if scale > 0 else np.finfo(float).tiny


def _cross_fitted_share(a: np.ndarray, b: np.ndarray, eligible: np.ndarray, floor: float) -> np.ndarray:
    """Per candidate, the share of datasets on which its risk is more than :data:`COSTLY` above the best eligible
    candidate's, with the best chosen on one set of trials (``a``: ``(candidates, datasets)`` risks) and both risks
    read on the other (``b``), averaged over the two ways round: choosing and measuring on the same noisy numbers
    (the minimum of noisy risks is too low) is what inflates the plain count most."""
    out = np.zeros(a.shape[0])
    datasets = np.arange(a.shape[1])
    for pick, read in ((a, b), (b, a)):
        best = np.where(eligible[:, None], pick, np.inf).argmin(axis=0)
        out += np.mean(read / np.maximum(read[best, datasets], floor) - 1.0 > COSTLY, axis=1)
    return out / 2.0


def _p_costly(evaluation: xr.Dataset, risk: xr.DataArray, meets: xr.DataArray, dim: str,
              costly: xr.DataArray) -> tuple[xr.DataArray, xr.DataArray, str]:
    """Each candidate's share of costly datasets, counted (``raw``) and corrected for the trials' noise.

    A per-dataset risk run by Monte Carlo is the mean of ``T`` trials' losses: with 20 trials of a squared error
    its relative error is about 0.32, so candidates of equal risk differ by more than 25% on a good share of the
    datasets, and the plain count overstates the chance (by 0.10-0.16 on the simulated cases of
    ``tests/engine/test_decision.py``, 0.37 when the candidates are close).  Two corrections, both from the trials
    already run:

    * **cross-fitting**: the best candidate of a dataset is chosen on one half of the trials and the ratio read on
      the other (:func:`_cross_fitted_share`), which removes the winner's curse of a minimum of noisy numbers;
    * **simulation-extrapolation** (SIMEX, Cook and Stefanski 1994) of what noise is left: the same share with
      quarters of the trials (twice the noise variance) ``p(T/4)``, and the line through the two read at noise 0:
      ``2 p(T/2) - p(T/4)``, clipped to [0, 1].

    On the simulated cases this leaves a mean error under 0.04, except when every candidate is within 10% of the
    others on every dataset (plain count +0.37, corrected about +0.14: 20 trials cannot tell such candidates
    apart; the test states this limit too).  Fewer than 4 trials: cross-fitting alone; no trials (exact risks, or an
    evaluation without ``loss``): the count as it is."""
    raw = costly.mean(("chain", "draw"))
    loss = evaluation.get("loss")
    if loss is None or set(loss.dims) != {dim, "chain", "draw", "trial"} or loss.sizes["trial"] < 2:
        return raw, raw, "counted (the per-dataset risks carry no trial noise to correct)"
    t = loss.sizes["trial"]
    k = risk.sizes[dim]
    trials = loss.transpose(dim, "chain", "draw", "trial").values.reshape(k, -1, t)
    exact = risk.transpose(dim, "chain", "draw").values.reshape(k, -1)
    eligible = meets.values if bool(meets.any()) else np.ones(k, dtype=bool)
    floor = _regret_floor(float(exact.mean(axis=1)[eligible].min()))  # as regret_ratio's

    def means(part: slice) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            m = trials[:, :, part].mean(axis=2)
        return np.where(np.isfinite(m), m, exact)  # a candidate scored by its exact risk keeps it

    half = t // 2
    p_half = _cross_fitted_share(means(slice(0, half)), means(slice(half, 2 * half)), eligible, floor)
    if t < 4:
        value, how = p_half, f"cross-fitted over the two halves of {t} trials"
    else:
        q = t // 4
        p_quarter = 0.5 * sum(_cross_fitted_share(means(slice(2 * j * q, (2 * j + 1) * q)),
                                                  means(slice((2 * j + 1) * q, (2 * j + 2) * q)), eligible, floor)
                              for j in range(2))
        value = np.clip(2.0 * p_half - p_quarter, 0.0, 1.0)
        how = f"cross-fitted over halves of {t} trials, extrapolated to no trial noise (SIMEX: 2 p(T/2) - p(T/4))"
    return raw.copy(data=value), raw, how


def decide(evaluation: xr.Dataset, dim: str | None = None, interval: tuple[float, float] = (0.05, 0.95),
           criterion: str = "loss") -> xr.Dataset:
    """Summarise an evaluation into a decision over any candidate dimension.

    Parameters
    ----------
    evaluation
        The result of :func:`hybridpriv.engine.evaluate.evaluate` (needs ``risk`` with dims
        ``(dim, chain, draw)``: the expected loss given each simulated dataset).
    dim
        The candidate dimension (``"estimator"``, ``"k"``, ``"subset_size"``, ``"tau"`` ...);
        default: the evaluation's ``candidate_dim``.
    interval
        Quantiles of the per-dataset risk reported as the interval over datasets.
    criterion
        What the recommendation minimises among eligible candidates (:data:`CRITERIA`): ``"loss"``
        (default), the posterior expected loss; ``"regret"``, the posterior expected relative regret
        ``E[risk_c / risk_best - 1]``, where ``risk_best`` is the lowest eligible risk on the same
        dataset.  The first is the Bayes rule for the loss itself and is dominated by the datasets
        where every candidate errs much; the second for the ratio to the best candidate, which
        weighs every dataset alike (the calibration study scores selectors by it).

    Returns
    -------
    xarray.Dataset
        Per candidate: ``expected_loss`` (posterior expected loss), ``mcse`` (its Monte Carlo
        standard error, from ``arviz_stats`` over chain and draw), ``risk_low``/``risk_high`` (the
        interval over datasets of the per-dataset risk), ``p_best`` (share of datasets on which the
        candidate has the lowest risk among the eligible ones; ties shared), ``expected_regret`` and
        ``regret_mcse`` (the posterior expected relative regret and its Monte Carlo error), ``regret_difference``
        and ``regret_difference_mcse`` (paired against the recommended one), ``difference`` and
        ``difference_mcse`` (expected loss minus the recommended one's, paired over datasets),
        ``p_costly`` (the share of datasets on which its risk is more than :data:`COSTLY` above the best eligible
        one's: for the recommended candidate, the model's own chance of a costly miss; corrected for the Monte Carlo
        error of the per-dataset risks, :func:`_p_costly`) and ``p_costly_raw`` (the share as counted),
        ``meets_requirements``
        (its privacy declaration gives every unit at least what the unit
        requires: epsilon, delta, relation and trust; candidates that do not are never
        recommended while one that does exists); ``spends_nothing`` (:func:`spends_nothing`: epsilon 0 for every unit
        that requires protection); ``risk`` ``(dim, chain, draw)``; attribute and
        scalar ``recommended``; attribute ``costly_best``: the candidate most often best on the datasets where the
        recommended one is a costly miss (``""`` when there are none).
    """
    if not isinstance(evaluation, xr.Dataset):
        raise TypeError(
            "evaluation must be an xarray.Dataset (the output of hybridpriv.engine.evaluate.evaluate), "
            f"got {type(evaluation).__name__}"
        )
    if dim is None:
        dim = evaluation.attrs.get("candidate_dim", "estimator")
    if not isinstance(dim, str) or dim not in evaluation.dims:
        raise ValueError(f"dim must be the candidate dimension of the evaluation, got {dim!r} (dims: {list(evaluation.dims)})")
    if "risk" not in evaluation:
        raise ValueError("evaluation must hold a 'risk' variable (the output of hybridpriv.engine.evaluate.evaluate)")
    risk = evaluation["risk"]
    dims = (dim, "chain", "draw")
    if set(risk.dims) != set(dims):
        raise ValueError(f"evaluation 'risk' must have dims {dims}, got {risk.dims}")
    if risk.dtype.kind not in "iuf":
        raise TypeError(f"evaluation 'risk' must be numeric, got dtype {risk.dtype}")
    if not np.isfinite(risk.values).all():
        raise ValueError("evaluation 'risk' must be finite, got NaN or infinite values")
    if (
        isinstance(interval, (str, bytes))
        or not isinstance(interval, Sequence)
        or len(interval) != 2
        or not all(isinstance(q, Real) and not isinstance(q, bool) for q in interval)
    ):
        raise TypeError(f"interval must be a pair of quantiles (low, high), got {interval!r}")
    lo, hi = (float(q) for q in interval)
    if not (0.0 <= lo < hi <= 1.0):
        raise ValueError(f"interval must be two quantiles 0 <= low < high <= 1, got {interval!r}")
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {list(CRITERIA)}, got {criterion!r}")
    n_sets = evaluation.sizes["chain"] * evaluation.sizes["draw"]
    if n_sets < 2:
        raise ValueError(f"decide needs at least 2 simulated datasets for a Monte Carlo error, got {n_sets}")
    risk = risk.transpose(*dims)
    expected = risk.mean(("chain", "draw"))
    meets = eligibility(evaluation.assign_attrs(candidate_dim=dim))
    any_eligible = bool(meets.any())
    regret = regret_ratio(risk, meets, dim) - 1.0
    expected_regret = regret.mean(("chain", "draw"))
    target = expected if criterion == "loss" else expected_regret
    eligible = target.where(meets) if any_eligible else target
    best = evaluation[dim].values[int(np.nanargmin(eligible.values))]  # keeps the coordinate's dtype (idxmin gives floats)
    best = best.item() if isinstance(best, np.generic) else best
    pool = risk.where(meets) if any_eligible else risk
    is_min = (pool == pool.min(dim)) & (meets if any_eligible else True)
    p_best = (is_min / is_min.sum(dim)).mean(("chain", "draw"))
    diff = risk - risk.sel({dim: best})
    rdiff = regret - regret.sel({dim: best})
    costly = regret > COSTLY
    p_costly, p_costly_raw, method = _p_costly(evaluation, risk, meets, dim, costly)
    missed = costly.sel({dim: best}).values.ravel()
    winners = (is_min / is_min.sum(dim)).transpose(dim, "chain", "draw").values.reshape(risk.sizes[dim], -1)[:, missed]
    costly_best = str(evaluation[dim].values[int(np.argmax(winners.sum(axis=1)))]) if missed.any() else ""
    q = risk.quantile([lo, hi], dim=("chain", "draw"))
    out = xr.Dataset(
        {
            "expected_loss": expected,
            "mcse": _mcse(risk),
            "risk_low": q.sel(quantile=lo, drop=True),
            "risk_high": q.sel(quantile=hi, drop=True),
            "p_best": p_best,
            "expected_regret": expected_regret,
            "regret_mcse": _mcse(regret),
            "p_costly": p_costly,
            "p_costly_raw": p_costly_raw,
            "regret_difference": rdiff.mean(("chain", "draw")),
            "regret_difference_mcse": _mcse(rdiff).where(rdiff[dim] != best, 0.0),
            "difference": diff.mean(("chain", "draw")),
            "difference_mcse": _mcse(diff).where(diff[dim] != best, 0.0),
            "risk": risk,
            "meets_requirements": meets,
            "spends_nothing": spends_nothing(evaluation.assign_attrs(candidate_dim=dim)),
            "recommended": best,
        }
    )
    from .evaluate import CANDIDATE_COORDS

    keep = [c for c in CANDIDATE_COORDS if c in evaluation.coords]
    out = out.assign_coords({c: evaluation.coords[c] for c in keep})
    out.attrs.update(evaluation.attrs)
    out.attrs["candidate_dim"] = dim
    out.attrs["recommended"] = best.item() if isinstance(best, np.generic) else best
    out.attrs["interval"] = f"{lo:g}-{hi:g} quantiles of the per-dataset risk"
    what = "lowest expected loss" if criterion == "loss" else "lowest expected relative regret"
    out.attrs["criterion"] = criterion
    out.attrs["costly_best"] = costly_best
    out.attrs["p_costly_method"] = method
    out.attrs["recommendation_rule"] = (
        f"{what} among candidates that give every unit at least its required protection"
        if any_eligible
        else f"{what} (no candidate meets every unit's requirement)"
    )
    return out


def chance_line(decision: xr.Dataset, short: bool = False) -> str:
    """The recommendation's chance of a costly miss under the model, in words; ``""`` for a decision without
    ``p_costly`` (made before it existed).  Starts with ``warning:`` when it reaches the decision's chance line
    (``attrs["chance_warning"]``, the SPEC key ``evaluation.chance_warning``; :data:`CHANCE_WARNING` for a decision
    without it).  ``short``: the few words written under the plot, and only for a warning (else ``""``)."""
    if "p_costly" not in decision:
        return ""
    dim, best = decision.attrs["candidate_dim"], decision.attrs["recommended"]
    line = float(decision.attrs.get("chance_warning", CHANCE_WARNING))
    p = float(decision["p_costly"].sel({dim: best}))
    share = f"{p:.0%}" if (round(p, 2) >= line) == (p >= line) else f"{p:.1%}"  # 24.8%, not 25%
    if short:
        return (f"warning (chance): {best} is more than {COSTLY:.0%} worse than the best on {share} of the model's datasets"
                if p >= line else "")
    text = (f"on {share} of the model's datasets the recommendation is more than {COSTLY:.0%} worse than the best "
            "candidate")
    if p == 0:
        return f"chance of a costly miss: none ({text.replace(f'on {share} of', 'on none of')})"
    there = f" ({decision.attrs.get('costly_best')} best on most of them)" if decision.attrs.get("costly_best") else ""
    if p >= line:
        yours = "" if line == CHANCE_WARNING else f" (warned from {line:.0%}, evaluation.chance_warning)"
        return (f"warning (chance): {text}{there}{yours}; the public knowledge cannot tell whether the private data are "
                "one of those: if such a miss would cost you much, compare the two candidates' 95% bounds before acting")
    return f"chance of a costly miss: {text}{there}"


def free_warning(decision: xr.Dataset) -> tuple[str, float] | None:
    """The candidate that spends no budget (and so meets every requirement) and is best on at least
    :data:`FREE_WARNING` of the model's datasets while another is recommended (the one with the highest P(best)), and
    that P(best); ``None`` when there is none, or for a decision without ``spends_nothing`` (made before it existed)."""
    if "spends_nothing" not in decision:
        return None
    dim, best = decision.attrs["candidate_dim"], decision.attrs["recommended"]
    if bool(decision["spends_nothing"].sel({dim: best})):
        return None
    free = [(float(decision["p_best"].sel({dim: c})), str(c)) for c in decision[dim].values
            if bool(decision["spends_nothing"].sel({dim: c}))]
    likely = [(p, c) for p, c in free if p >= FREE_WARNING]
    if not likely:
        return None
    p, c = max(likely)
    return c, p


def free_line(decision: xr.Dataset, short: bool = False) -> str:
    """:func:`free_warning` in words (``""`` for none); ``short``: the few words written under the plot."""
    found = free_warning(decision)
    if found is None:
        return ""
    c, p = found
    best, p = decision.attrs["recommended"], round(p, 2)  # the share the table's P(best) column shows
    if short:
        return f"warning (free candidate): {c} spends no budget and is best on {p:.0%} of the model's datasets"
    return (f"warning (free candidate): {c} spends no budget and is best on {p:.0%} of the model's datasets: its error "
            f"is the public data's own, which the public knowledge leaves open; where that error is small it beats "
            f"{best} by far and keeps the whole budget: compare their 5-95% ranges before acting")


def _ranked_by(decision: xr.Dataset) -> str:
    """The variable the decision's rule minimised: ``expected_regret`` for ``criterion="regret"``, else (and for a
    decision made before it existed) ``expected_loss``."""
    by_regret = decision.attrs.get("criterion") == "regret" and "expected_regret" in decision
    return "expected_regret" if by_regret else "expected_loss"


def premise_warnings(decision: xr.Dataset, premises: Sequence[Any]) -> list[tuple[Any, str, float]]:
    """The premises (:class:`hybridpriv.core.assumptions.Premise`) the recommendation rests on and the user did not
    state, each with the best eligible candidate not resting on it (the one the decision's criterion ranks first;
    not a claim that it is safer) and how far it lies above the recommendation: its expected loss over the
    recommendation's minus 1 (NaN where the recommendation's is 0), or under ``criterion="regret"`` its expected
    relative regret minus the recommendation's.  Where no such candidate is eligible: ``""`` and NaN.  A premise
    naming candidates the decision lacks (a SPEC may leave some out) rests on none of them."""
    from ..core.assumptions import Premise

    premises = list(premises) if not isinstance(premises, Premise) else premises
    if isinstance(premises, Premise) or not all(isinstance(p, Premise) for p in premises):
        raise TypeError(f"premises must be a sequence of Premise, got {premises!r}")
    if not premises:
        return []
    dim = decision.attrs.get("candidate_dim")
    missing = [v for v in ("expected_loss", "meets_requirements") if v not in decision]
    if dim not in decision.dims or missing or "recommended" not in decision.attrs:
        raise ValueError(f"decision must be a decide() result (candidate_dim, recommended, expected_loss, "
                         f"meets_requirements), got dims {list(decision.dims)} and variables {list(decision.data_vars)}")
    names = [str(c) for c in decision[dim].values]
    best = str(decision.attrs["recommended"])
    if best not in names:
        raise ValueError(f"decision's recommended {best!r} is not one of its candidates {names}")
    ranked_by = _ranked_by(decision)
    by_regret, by = ranked_by == "expected_regret", decision[ranked_by].values
    eligible = decision["meets_requirements"].values.astype(bool)
    out = []
    for premise in premises:
        if premise.candidates is None and "spends_nothing" not in decision:
            raise ValueError(f"premise {premise.name!r} rests on the candidates that spend nothing, but the decision "
                             "has no spends_nothing (made before it existed): decide() again")
        rests = (decision["spends_nothing"].values.astype(bool) if premise.candidates is None
                 else np.isin(names, premise.candidates))
        if premise.stated or not rests[names.index(best)]:
            continue
        others = np.flatnonzero(~rests & eligible)
        if not others.size:
            out.append((premise, "", float("nan")))
            continue
        j = others[int(np.argmin(by[others]))]
        here = by[names.index(best)]
        excess = float(by[j] - here) if by_regret else (float(by[j] / here - 1) if here > 0 else float("nan"))
        out.append((premise, names[j], excess))
    return out


def premise_lines(decision: xr.Dataset, premises: Sequence[Any], short: bool = False) -> list[str]:
    """:func:`premise_warnings` in words, one ``warning (premise: NAME)`` line each: what the recommendation rests
    on, that the table's numbers do not hold for it where that fails, the premise's ``advice`` (else the best
    eligible candidate not resting on it alone, named as such, not as a safer one), and the SPEC key that states
    it holds.  ``short``: the few words written under the plot."""
    best = decision.attrs.get("recommended")
    by_regret = decision.attrs.get("criterion") == "regret"
    lines = []
    for premise, other, excess in premise_warnings(decision, premises):
        if short:
            lines.append(f"warning (premise: {premise.name}): {best} rests on {premise.assumes} (say {premise.key} = true if it does)")
            continue
        how = f" ({premise.fails})" if premise.fails else ""
        if premise.advice:
            then = f" {premise.advice.rstrip('.')}."
        elif other:
            gap = ("" if not np.isfinite(excess) else
                   f", {100 * excess:.0f} points above it in expected regret" if by_regret else
                   f", {excess:.0%} above it in expected loss")
            then = f" The best eligible candidate that does not rest on it alone is {other}{gap} on the model's datasets."
        else:
            then = " No eligible candidate does without it."
        lines.append(f"warning (premise: {premise.name}): {best} rests on {premise.assumes}, which nothing public "
                     f"here can check; if it does not hold{how}, the table's numbers do not hold for {best}.{then}  "
                     f"If it does hold, say {premise.key} = true")
    return lines


def _shares(coverage: Mapping[int, float], name: str) -> tuple[float, str, str]:
    """The lowest share of ``coverage`` (by seed), the shares as printed ("87-90%") and the seeds ("seeds 4, 5")."""
    values = sorted(float(v) for v in coverage.values())
    if any(not 0.0 <= v <= 1.0 for v in values):
        raise ValueError(f"{name} must hold shares in [0, 1], got {dict(coverage)}")
    lo, hi = values[0], values[-1]
    held = f"{lo:.0%}" if round(lo, 2) == round(hi, 2) else f"{100 * lo:.0f}-{hi:.0%}"
    return lo, held, f"seed{'s' if len(coverage) > 1 else ''} " + seed_list(coverage)


def seed_list(seeds: Iterable[int]) -> str:
    """Seeds in words, sorted: three or more consecutive ones as ``a-b`` (``0-6, 12-20``; ``0, 2``; ``4, 5``)."""
    runs: list[list[int]] = []
    for s in sorted(seeds):
        if runs and s == runs[-1][-1] + 1:
            runs[-1].append(s)
        else:
            runs.append([s])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)


def range_line(coverage: Mapping[int, float], short: bool = False, real: Mapping[int, float] | None = None) -> str:
    """How well the table's 5-95% ranges held on data the model did not generate, in words: ``coverage`` is a
    family's :attr:`~hybridpriv.core.family.Family.range_coverage` (the share of realised risks inside the ranges on
    the calibration study's held-out truths, per seed); ``""`` when it was never measured.  ``real``: the same share
    on the real datasets among those truths alone (:attr:`~hybridpriv.core.family.Family.range_coverage_real`, per
    seed), said beside it.  Below :data:`RANGE_TARGET` on any seed, of either, it says to read the ranges as too
    narrow (on real data, where only the real share fell short).  It is a note, not one of the warnings the
    calibration counts: it is the same for every selection of the family.  ``short``: the few words written under
    the plot, and only when the ranges held too little (else ``""``)."""
    if not coverage:
        return ""
    lo, held, seeds = _shares(coverage, "range_coverage")
    real_lo, real_held, real_seeds = _shares(real, "range_coverage_real") if real else (1.0, "", "")
    if real and not set(real) <= set(coverage):
        raise ValueError(f"range_coverage_real's seeds {sorted(real)} must be among range_coverage's {sorted(coverage)}")
    if short:
        if lo >= RANGE_TARGET and real_lo >= RANGE_TARGET:
            return ""
        on_real = f"; {real_held} on the real datasets" if real else ""
        return f"ranges: held {held} of realised risks on held-out truths (not {RANGE_NOMINAL:.0%}){on_real}"
    where = (f"on the calibration study's held-out truths of this kind ({seeds}; docs/calibration.md) the 5-95% "
             f"ranges held {held} of the realised risks")
    among = f"on the real datasets among them ({real_seeds}) {real_held}" if real else ""
    if lo < RANGE_TARGET:
        return (f"note (ranges): {where}, not {RANGE_NOMINAL:.0%}: the real risk falls outside them more often than "
                "they say; read them as too narrow"
                + (f" (on the real datasets among them, {real_seeds}: {real_held})" if real else ""))
    if real_lo < RANGE_TARGET:
        return (f"note (ranges): {where} ({RANGE_NOMINAL:.0%} if the model were right), but {among}: on real data "
                "read them as too narrow")
    return f"note (ranges): {where} ({RANGE_NOMINAL:.0%} if the model were right)" + (f"; {among}" if real else "")


def p_best_line(held: Mapping[str, tuple[float, float, int]], seeds: Sequence[int], p: float,
                short: bool = False) -> str:
    """How often a P(best) like ``p`` came true on data the model did not generate, in words, where it came true
    more than :data:`P_BEST_TOLERANCE` away from what was reported (else ``""``).

    ``held`` is a family's :attr:`~hybridpriv.core.family.Family.p_best_held`: per bin of
    :data:`hybridpriv.reliability.BIN_LABELS`, ``(mean P(best) reported, share of those candidates that were best,
    pairs)`` on the calibration study's held-out truths of ``seeds``; a bin of fewer than :data:`P_BEST_PAIRS` pairs
    is not read.  Like :func:`range_line` it is a note, the same for every selection whose P(best) falls in the bin.
    ``short``: the few words written under the plot."""
    from ..reliability import BIN_LABELS, bin_label

    for label, value in held.items():
        ok = label in BIN_LABELS and len(value) == 3
        if ok:
            reported, came, pairs = value
            ok = (0.0 <= float(reported) <= 1.0 and 0.0 <= float(came) <= 1.0 and isinstance(pairs, (int, np.integer))
                  and not isinstance(pairs, bool) and pairs >= 0)
        if not ok:
            raise ValueError(f"p_best_held must map bins of {BIN_LABELS} to (reported, came true, pairs) with shares "
                             f"in [0, 1] and a count of pairs, got {label!r}: {value!r}")
    label = bin_label(p)
    if label not in held:
        return ""
    reported, came, pairs = held[label]
    if pairs < P_BEST_PAIRS or abs(came - reported) <= P_BEST_TOLERANCE:
        return ""
    if short:
        return f"P(best) {label}: best on {came:.0%} of held-out truths (reported {reported:.2f})"
    where = "seed" + ("s " if len(seeds) > 1 else " ") + seed_list(seeds)
    return (f"note (P(best)): on the calibration study's held-out synthetic truths of this kind ({where}; "
            f"docs/calibration.md) candidates reported at a P(best) of {label} ({reported:.2f} on average) were best "
            f"on {came:.0%} of {pairs}: read this {float(p):.2f} as nearer {came:.2f}")


def format_table(decision: xr.Dataset) -> str:
    """A plain-text table of a decision, sorted by what it minimised, for the terminal (any candidate dimension).

    A decision by expected relative regret (``criterion="regret"``) shows it in an ``E[regret]`` column."""
    dim = decision["expected_loss"].dims[0]
    ranked_by = _ranked_by(decision)
    by_regret, key = ranked_by == "expected_regret", decision[ranked_by]
    order = key.sortby(key)[dim].values
    has_meets = "meets_requirements" in decision
    w = max(18, len(dim) + 2, *(len(str(c)) + 2 for c in decision[dim].values))
    head = (f"{dim:<{w}}{'expected loss':>15}{'MC s.e.':>11}{'5%':>11}{'95%':>11}{'P(best)':>9}"
            + (f"{'E[regret]':>11}" if by_regret else "")
            + f"{'vs best (± MC s.e.)':>24}" + ("  eligible" if has_meets else ""))
    lines = [head, "-" * len(head)]
    plugins = {p.strip() for p in str(decision.attrs.get("unaudited_plugins", "")).split(",") if p.strip()}
    for lab in order:
        r = decision.sel({dim: lab})
        mark = "  <- recommended" if str(lab) == str(decision.attrs.get("recommended")) else ""
        mark += "  [plugin, unaudited]" if str(lab) in plugins else ""
        meets = (f"  {'yes' if bool(r['meets_requirements']) else 'NO ':<9}" if has_meets else "")
        lines.append(
            f"{str(lab):<{w}}{float(r.expected_loss):>15.4g}{float(r.mcse):>11.2g}{float(r.risk_low):>11.3g}"
            f"{float(r.risk_high):>11.3g}{float(r.p_best):>9.2f}"
            + (f"{float(r.expected_regret):>11.0%}" if by_regret else "")
            + f"{f'{float(r.difference):+.3g} ± {float(r.difference_mcse):.2g}':>24}{meets}{mark}"
        )
    if plugins:
        lines.append("[plugin, unaudited]: a mechanism that does not ship with hybridpriv; its privacy declaration is "
                     "unchecked: `hybridpriv audit` tests it, and `hybridpriv release` audits it before releasing it")
    return "\n".join(lines)


def summarize_by(decision: xr.Dataset, group_of, name: str = "approach") -> xr.Dataset:
    """The decision summarised over groups of candidates (e.g. approaches, each at several sizes).

    ``group_of(coordinate) -> str`` names each candidate's group.  Per group: ``p_best`` (the share
    of datasets on which the best eligible candidate belongs to the group: the sum of its members'
    ``p_best``, since those shares partition the datasets), ``best`` (its member with the lowest
    expected loss, or expected relative regret for a decision by ``criterion="regret"``, among eligible
    ones, or among all if none is eligible) with that member's
    ``expected_loss``, ``risk_low`` and ``risk_high``, and ``eligible`` (any member eligible).
    """
    dim = decision.attrs["candidate_dim"]
    coords = list(decision[dim].values)
    labels = [str(group_of(c)) for c in coords]
    names = list(dict.fromkeys(labels))
    meets = decision["meets_requirements"] if "meets_requirements" in decision else None
    # a group's best by the rule that made the recommendation (expected loss, or expected relative regret)
    key = _ranked_by(decision)
    rows = []
    for g in names:
        members = [c for c, lab in zip(coords, labels) if lab == g]
        ok = [c for c in members if meets is None or bool(meets.sel({dim: c}))]
        pool = ok or members
        best = min(pool, key=lambda c: float(decision[key].sel({dim: c})))
        sel = decision.sel({dim: best})
        rows.append((float(decision.p_best.sel({dim: members}).sum()), str(best), float(sel.expected_loss),
                     float(sel.risk_low), float(sel.risk_high), bool(ok)))
    cols = list(zip(*rows))
    return xr.Dataset(
        {"p_best": (name, np.array(cols[0])), "best": (name, np.array(cols[1], dtype=object)),
         "expected_loss": (name, np.array(cols[2])), "risk_low": (name, np.array(cols[3])),
         "risk_high": (name, np.array(cols[4])), "eligible": (name, np.array(cols[5]))},
        coords={name: names},
        attrs={"candidate_dim": dim, "description": f"the decision summarised by {name}"},
    )


def format_summary(summary: xr.Dataset) -> str:
    """A table of :func:`summarize_by`'s result."""
    name = next(iter(summary.dims))
    w = max(12, len(name) + 2, *(len(str(c)) + 2 for c in summary[name].values))
    wb = max(14, *(len(str(b)) + 2 for b in summary.best.values))
    head = f"{name:<{w}}{'P(best)':>9}  {'its best':<{wb}}{'expected loss':>15}{'5%':>11}{'95%':>11}"
    lines = [head, "-" * len(head)]
    for g in summary[name].values:
        r = summary.sel({name: g})
        lines.append(f"{str(g):<{w}}{float(r.p_best):>9.2f}  {str(r.best.item()):<{wb}}{float(r.expected_loss):>15.4g}"
                     f"{float(r.risk_low):>11.3g}{float(r.risk_high):>11.3g}" + ("" if bool(r.eligible) else "  (not eligible)"))
    return "\n".join(lines)

