"""Whether to spend budget to choose: a two-stage plan judged from public knowledge alone (preposterior analysis).

Choosing now spends every unit's whole budget on the chosen candidate.  A two-stage plan first spends a
``share`` of each unit's budget on DP features of the private data (a :class:`Probe`: e.g. each group's mean, a
histogram of items per user), then chooses among the same candidates at the rest of the budget.  Whether that
pays is decided before any budget is spent, on the datasets the fitted model simulates:

1. every candidate is evaluated again at ``(1 - share)`` of the budget on the same datasets (the same streams);
2. for each simulated dataset ``n``, the features are released as the plan would release them (Laplace noise of
   the probe's scales, :data:`REPLICATES` times), and the second stage's choice is the candidate with the lowest
   expected risk over the simulated datasets of the *other half* (cross-fitting: the datasets alternate between
   two halves), each weighted by the likelihood of the noisy features given its exact features (the posterior
   given the release, by importance weighting).  Keeping dataset ``n`` out keeps the truth out of its own answer;
   taking the whole other half, not every other dataset, keeps the reference the same for every ``n`` of a half
   (leaving one out would tilt the reference against ``n``'s own kind, which near a tie decides the choice);
3. the plan's loss on dataset ``n`` is the risk of that choice there; its average over datasets and replicates
   is the plan's expected loss, compared pairwise with choosing now.

The plan is recommended when it lowers the decision's criterion by more than :data:`PAYS_Z` Monte Carlo
standard errors and by at least a floor share of choosing now's: the Monte Carlo error is the analysis's own, the
model's error is not in it, and on held-out truths smaller gains did not hold.  The floor is the family's
(:attr:`hybridpriv.core.family.Family.plan_gain_floor`, measured on its own held-out truths), else
:data:`PAYS_GAIN`.  :func:`second_stage` is the
rule the plan then follows on the real release (the release of the features, the weights, the choice): the same
rule the analysis scored.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["DEFAULT_SHARE", "PAYS_GAIN", "PAYS_Z", "REPLICATES", "Probe", "choose_later", "groups_probe",
           "held_out_pays", "plan_held_line", "plan_lines", "preposterior",
           "run_plan", "second_stage"]

#: The share of each unit's budget a two-stage plan spends on its probe by default.
DEFAULT_SHARE = 0.1
#: Simulated releases of the features per simulated dataset.
REPLICATES = 8
#: The plan is recommended when its paired gain over choosing now exceeds this many Monte Carlo standard errors.
PAYS_Z = 2.0
#: ... and lowers it by at least this share of choosing now's, unless the family measured its own floor
#: (``Family.plan_gain_floor``).  The analysis trusts the model's datasets, so small gains are a coin toss.  8% was
#: chosen on user-item's held-out truths of seeds 0-2 (2026-11-29); user-item's own 6% of seven seeds did worse than
#: 8% on the held-out seeds 5-9 and was dropped (2026-11-30), so every shipped family uses this (grouped: no plan's
#: gain reached 2% on its held-out truths, seeds 0-1, so no floor can be told apart there; docs/calibration-history.md).
PAYS_GAIN = 0.08
#: Rows of the (dataset x dataset) weight matrix computed at once (a size guard: ``ROWS x datasets`` floats).
ROWS = 256


@dataclass(frozen=True)
class Probe:
    """What the first stage of a two-stage plan buys: Laplace-noised features of the private data.

    Parameters
    ----------
    share
        The share of each unit's budget spent on the features (in ``(0, 1)``).
    what
        The features in words ("each central group's mean").
    mechanism
        The features' release (a :class:`~hybridpriv.core.mechanism.Mechanism`, released and charged like any
        candidate): ``mechanism.exact(dataset)``, the noiseless features of a dataset the family's mechanisms
        read; ``mechanism.scales``, the Laplace scale of each (what makes them ``share x epsilon``-DP);
        ``mechanism.release``, the features plus that noise.
    later
        ``later(mechanisms, posterior) -> {coordinate: mechanism}``: the same candidates at ``(1 - share)`` of the
        budget (candidates it cannot rebudget, e.g. a SPEC's plugins, are left out).
    refit
        ``refit(raw, observed) -> raw``, or ``None``: the SPEC (as TOML data) of a second stage that fits the model
        again given the released features ``observed`` and chooses among the candidates at ``(1 - share)`` of the
        budget, judging no plan of its own.  With it, a release carries the plan out by a second ``select`` on that
        SPEC (the budget-spending selector's procedure) instead of :func:`choose_later`'s importance weights; the
        preposterior analysis still judges the plan by the weights (it cannot fit the model once per simulated
        dataset), so a family whose held-out truths show the refit paying says so (:func:`held_out_pays`).
    noise
        The release's noise in words (``select``'s verdict).  A release whose noise is not Laplace of
        :attr:`scales` simulates itself: ``mechanism.simulate(exact, gen)`` (rows of exact features to noisy ones,
        :meth:`simulate`); the importance weights still read it through Laplace of :attr:`scales` (a stand-in in
        the second stage's rule, which the analysis scores on releases of the true law).
    by_hand
        How to carry the plan out where ``hybridpriv release`` cannot ("": it can); ``select`` says it and
        ``release --plan`` refuses with it before anything is charged.
    """

    share: float
    what: str
    mechanism: Any
    later: Callable[[Mapping[Any, Any], Any], Mapping[Any, Any]]
    refit: Callable[[Mapping[str, Any], np.ndarray], dict[str, Any]] | None = None
    noise: str = "Laplace"
    by_hand: str = ""

    def __post_init__(self) -> None:
        share = float(self.share)
        if not 0.0 < share < 1.0:
            raise ValueError(f"share must be in (0, 1), got {self.share!r}")
        scales = np.atleast_1d(np.asarray(self.mechanism.scales, dtype=float))
        if scales.ndim != 1 or scales.size == 0 or not (np.isfinite(scales).all() and (scales > 0).all()):
            raise ValueError(f"the probe's scales must be positive finite numbers, one per feature, got {scales!r}")
        object.__setattr__(self, "share", share)

    @property
    def scales(self) -> np.ndarray:
        """The Laplace noise scale of each feature."""
        return np.atleast_1d(np.asarray(self.mechanism.scales, dtype=float))

    def exact(self, data: Any) -> np.ndarray:
        """The exact features of ``data``, checked against :attr:`scales`."""
        f = np.asarray(self.mechanism.exact(data), dtype=float)
        if f.shape != self.scales.shape or not np.isfinite(f).all():
            raise RuntimeError(f"probe features must be {self.scales.size} finite numbers, got shape {f.shape}")
        return f

    def simulate(self, exact: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        """Simulated releases of the rows of ``exact`` (``(rows, features)``): ``mechanism.simulate`` where the
        mechanism has one, else Laplace noise of :attr:`scales`."""
        exact = np.atleast_2d(np.asarray(exact, dtype=float))
        own = getattr(self.mechanism, "simulate", None)
        if own is None:
            return exact + gen.laplace(0.0, self.scales, size=exact.shape)
        out = np.asarray(own(exact, gen), dtype=float)
        if out.shape != exact.shape or not np.isfinite(out).all():
            raise RuntimeError(f"the probe's simulated releases must be {exact.shape} finite numbers, got {out.shape}")
        return out


def groups_probe(mechanism: Any, groups: Any, share: float, candidates: Callable[[Any, Any], Mapping[Any, Any]],
                 feature: str) -> Probe:
    """The :class:`Probe` of a ``mechanism`` that reads the groups ``mechanism.which`` (indices into ``groups``, each
    at ``share`` of its epsilon): the second stage's candidates are ``candidates(rest, posterior)`` with those groups
    at ``(1 - share)`` of their epsilon (``rest``; the others as they are), by the same labels; ``what`` is
    "``feature`` of group(s) NAMES"."""
    import dataclasses

    which = list(mechanism.which)
    rest = tuple(dataclasses.replace(g, epsilon=g.epsilon * (1.0 - share)) if k in which else g
                 for k, g in enumerate(groups))

    def later(mechanisms: Mapping[Any, Any], posterior: Any) -> dict[Any, Any]:
        return {c: m for c, m in candidates(rest, posterior).items() if c in mechanisms}

    names = ", ".join(groups[k].name for k in which)
    return Probe(share, f"{feature} of group{'s' if len(which) > 1 else ''} {names}", mechanism, later)


def _weights(observed: np.ndarray, features: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Normalised Laplace likelihoods ``p(observed_i | features_k)``: ``(len(observed), len(features))``."""
    logw = -(np.abs(observed[:, None, :] - features[None, :, :]) / scales).sum(-1)
    logw -= logw.max(axis=1, keepdims=True)
    w = np.exp(logw)
    return w / w.sum(axis=1, keepdims=True)


def _score(risk: np.ndarray, eligible: np.ndarray, criterion: str) -> np.ndarray:
    """What the second stage minimises per dataset and candidate: the risk, or the relative regret against the
    lowest eligible risk on the dataset; ineligible candidates never chosen (``inf``)."""
    pool = risk[:, eligible] if eligible.any() else risk
    if criterion == "regret":
        from .decision import REGRET_FLOOR

        floor = REGRET_FLOOR * max(float(pool.mean(0).min()), np.finfo(float).tiny)
        out = risk / np.maximum(pool.min(1, keepdims=True), floor) - 1.0
    else:
        out = risk.copy()
    if eligible.any():
        out[:, ~eligible] = np.inf
    return out


def second_stage(observed: np.ndarray, features: np.ndarray, scales: np.ndarray, later_risk: np.ndarray,
                 eligible: np.ndarray, criterion: str = "loss") -> tuple[np.ndarray, np.ndarray]:
    """The plan's choice after its release: per row of ``observed`` (noisy features), the candidate (column of
    ``later_risk``, ``(datasets, candidates)``) with the lowest expected ``criterion`` over the simulated datasets
    weighted by the likelihood of the observation (:func:`_weights`).  Returns the choices and each row's
    effective number of datasets (``1 / sum w^2``)."""
    observed = np.atleast_2d(np.asarray(observed, dtype=float))
    score = _score(np.asarray(later_risk, dtype=float), np.asarray(eligible, dtype=bool), criterion)
    finite = np.where(np.isfinite(score), score, 0.0)
    choice = np.empty(len(observed), dtype=np.int64)
    ess = np.empty(len(observed))
    for start in range(0, len(observed), ROWS):
        rows = slice(start, start + ROWS)
        w = _weights(observed[rows], features, scales)
        expected = w @ finite
        expected[:, ~np.isfinite(score).all(0)] = np.inf
        choice[rows] = np.argmin(expected, axis=1)
        ess[rows] = 1.0 / (w**2).sum(1)
    return choice, ess


def _flat(risk: xr.DataArray, dim: str) -> np.ndarray:
    return risk.transpose("chain", "draw", dim).values.reshape(-1, risk.sizes[dim])


def preposterior(now: xr.Dataset, later: xr.Dataset, features: np.ndarray, probe: Probe, *, seed: int,
                 criterion: str = "loss", replicates: int = REPLICATES, gain_floor: float | None = None
                 ) -> xr.Dataset:
    """The expected loss of the two-stage plan against choosing now, on the same simulated datasets.

    ``now``, ``later``: evaluations (:func:`hybridpriv.engine.evaluate.evaluate`) at the whole budget and at
    ``(1 - share)`` of it, on the same datasets; ``features``: ``(chain, draw, feature)``, the exact features of
    each dataset.  Returns the scalars ``plan_loss``, ``now_loss``, ``difference`` (plan minus now, paired) and
    ``difference_mcse``, the same for the relative regret against the best candidate at the whole budget on each
    dataset (``plan_regret``, ``now_regret``, ``regret_difference(_mcse)``), ``ess`` (the median effective number
    of datasets behind a second-stage choice), ``chosen`` (how often the second stage picks each candidate), and
    what :func:`second_stage` needs on a real release (``features``, ``scale``, ``later_risk``,
    ``later_eligible``); attrs ``pays`` (the plan lowers the criterion by more than :data:`PAYS_Z` errors and by
    at least ``gain_floor``), ``gain`` (how much lower, as a share of choosing now's), ``significant`` (the first
    condition alone), ``gain_floor`` (the floor it needed: ``None`` means :data:`PAYS_GAIN`), ``share``, ``what``,
    ``criterion``, ``recommended_now``."""
    from ..core.random import rng
    from .decision import decide, eligibility
    from .stats import mcse_mean

    if not isinstance(replicates, int) or replicates < 1:
        raise ValueError(f"replicates must be a positive integer, got {replicates!r}")
    try:
        floor_gain = PAYS_GAIN if gain_floor is None else float(gain_floor)
    except (TypeError, ValueError):
        floor_gain = np.nan
    if not 0.0 <= floor_gain < 1.0:
        raise ValueError(f"gain_floor must be a share in [0, 1), got {gain_floor!r}")
    dim = now.attrs.get("candidate_dim", "estimator")
    chains, draws = now.sizes["chain"], now.sizes["draw"]
    feats = np.asarray(features, dtype=float)
    if feats.shape != (chains, draws, probe.scales.size):
        raise ValueError(f"features must have shape {(chains, draws, probe.scales.size)}, got {feats.shape}")
    if (later.sizes["chain"], later.sizes["draw"]) != (chains, draws):
        raise ValueError("now and later must be evaluated on the same datasets")
    n = chains * draws
    if n < 4:
        raise ValueError(f"a two-stage plan needs at least 4 simulated datasets, got {n}")
    decision = decide(now, criterion=criterion)
    coords_now = [str(c) for c in now[dim].values]
    r_now = _flat(now["risk"], dim)
    c_now = coords_now.index(str(decision.attrs["recommended"]))
    meets_now = eligibility(now).values
    best_now = (r_now[:, meets_now] if meets_now.any() else r_now).min(1)
    r_later = _flat(later["risk"], dim)
    meets_later = eligibility(later).values
    flat = feats.reshape(n, -1)
    gen = rng(seed, "plan")
    loss = np.empty((replicates, n))
    counts = np.zeros(r_later.shape[1])
    ess = np.empty((replicates, n))
    half = np.arange(n) % 2
    for r in range(replicates):
        observed = probe.simulate(flat, gen)
        choice = np.empty(n, dtype=np.int64)
        for h in (0, 1):  # cross-fitting: each half's releases are answered by the other half's datasets
            rows, ref = half == h, half != h
            choice[rows], ess[r, rows] = second_stage(observed[rows], flat[ref], probe.scales, r_later[ref],
                                                      meets_later, criterion)
        loss[r] = r_later[np.arange(n), choice]
        counts += np.bincount(choice, minlength=r_later.shape[1])
    plan = loss.mean(0)
    floor = np.maximum(best_now, np.finfo(float).tiny)

    strata = {"stratum": now["stratum"]} if "stratum" in now.coords else {}  # errors within strata (stats.mcse_mean)

    def per_dataset(x: np.ndarray) -> xr.DataArray:
        return xr.DataArray(x.reshape(chains, draws), dims=("chain", "draw"), coords=strata)

    stats = {}
    for name, p, c in (("", plan, r_now[:, c_now]),
                       ("regret", (loss / floor).mean(0) - 1.0, r_now[:, c_now] / floor - 1.0)):
        d = per_dataset(p - c)
        prefix = f"{name}_" if name else ""
        stats[f"plan_{name or 'loss'}"] = float(p.mean())
        stats[f"now_{name or 'loss'}"] = float(c.mean())
        stats[f"{prefix}difference"] = float(d.mean())
        stats[f"{prefix}difference_mcse"] = float(mcse_mean(d))
    key = "difference" if criterion == "loss" else "regret_difference"
    now_value = stats["now_loss" if criterion == "loss" else "now_regret"]
    gain = -stats[key] / now_value if now_value > 0 else 0.0
    significant = bool(stats[key] < -PAYS_Z * stats[f"{key}_mcse"])
    pays = significant and gain >= floor_gain
    later_dim = f"later_{dim}"
    coords_later = [str(c) for c in later[dim].values]
    out = xr.Dataset(
        {**{k: ((), v) for k, v in stats.items()},
         "ess": ((), float(np.median(ess))),
         "chosen": ((later_dim,), counts / counts.sum()),
         "features": (("chain", "draw", "feature"), feats),
         "scale": (("feature",), probe.scales),
         "later_risk": ((later_dim, "chain", "draw"), r_later.T.reshape(-1, chains, draws)),
         "later_eligible": ((later_dim,), meets_later)},
        coords={later_dim: coords_later},
        attrs={"pays": int(pays), "pays_by": "analysis" if pays else "", "held_out": "", "gain": gain, "significant": int(significant), "gain_floor": floor_gain,
               "share": probe.share,
               "what": probe.what, "noise": probe.noise, "by_hand": probe.by_hand, "criterion": criterion,
               "recommended_now": coords_now[c_now], "replicates": replicates, "candidate_dim": dim,
               "description": "a two-stage plan (spend share of each unit's budget on the probe's features, then "
                              "choose at the rest) against choosing now, on the selection's simulated datasets"})
    return out


def choose_later(plan: xr.Dataset, observed: np.ndarray) -> str:
    """The second stage on a real release: the candidate the plan picks given the noisy ``observed`` features."""
    dim = plan.attrs["candidate_dim"]
    feats = plan["features"].values.reshape(-1, plan.sizes["feature"])
    risk = plan["later_risk"].transpose(f"later_{dim}", "chain", "draw").values.reshape(plan.sizes[f"later_{dim}"], -1).T
    choice, _ = second_stage(np.asarray(observed, dtype=float)[None, :], feats, plan["scale"].values, risk,
                             plan["later_eligible"].values.astype(bool), plan.attrs["criterion"])
    return str(plan[f"later_{dim}"].values[choice[0]])


def run_plan(probe: Probe, mechanisms: Mapping[Any, Any], source: Any, now: xr.Dataset, problem: Any,
             posterior: Any, engine: Any = None, gain_floor: float | None = None
             ) -> tuple[xr.Dataset, dict[Any, Any]]:
    """Evaluate the candidates at the rest of the budget on ``now``'s datasets (the same seed: the same datasets),
    compute each dataset's features and run :func:`preposterior` (with ``gain_floor``, the family's floor).
    Returns the plan and the later candidates."""
    from ..core.random import rng
    from .evaluate import evaluate
    from .options import as_engine

    later = dict(probe.later(mechanisms, posterior))
    if not later:
        raise ValueError("the probe rebudgets none of the candidates")
    engine = as_engine(engine).replace(checkpoint=None)  # recomputed on a resume, never reused
    ev = evaluate(later, source, problem.task, trials=problem.trials, seed=problem.seed, dim=problem.dim,
                  requirements=problem.requirements, engine=engine)
    chains, draws = source.shape
    feats = np.array([[probe.exact(source.generate(c, d, rng(problem.seed, "dataset", c, d))) for d in range(draws)]
                      for c in range(chains)])
    return preposterior(now, ev, feats, probe, seed=problem.seed, criterion=problem.criterion,
                        gain_floor=gain_floor), later


def _with_error(d: float, se: float, percent: bool) -> str:
    """``+d ± se`` to the error's first significant digit (never "± 0%" for an error below half a percent); in
    percent (at most two places, an error below 0.005% as "<0.01%") or in the loss's units; an error of 0 (every
    dataset alike) as 0, the difference then in whole percent or four significant digits."""
    scale, unit = (100.0, "%") if percent else (1.0, "")
    x, e = scale * d, scale * se
    if e == 0:
        return f"{x:+.0f}% ± 0%" if percent else f"{x:+.4g} ± 0"
    places = -math.floor(math.log10(e))
    if round(e, places) >= 10.0 ** (1 - places):  # 0.97 shows as 1: one place fewer
        places -= 1
    places = max(places, 0)
    if percent and places > 2:
        return f"{x:+.2f}% ± {'<0.01' if e < 0.005 else format(e, '.2f')}%"
    return f"{x:+.{places}f}{unit} ± {e:.{places}f}{unit}"


def plan_lines(plan: xr.Dataset) -> list[str]:
    """The plan's verdict in words."""
    by_regret = plan.attrs["criterion"] == "regret"
    p, c = (float(plan["plan_regret"]), float(plan["now_regret"])) if by_regret else (
        float(plan["plan_loss"]), float(plan["now_loss"]))
    d, se = (float(plan["regret_difference"]), float(plan["regret_difference_mcse"])) if by_regret else (
        float(plan["difference"]), float(plan["difference_mcse"]))
    se = 0.0 if se <= 1e-9 * max(abs(d), abs(c)) else se  # a constant difference (every dataset alike): no error
    what = "expected relative regret" if by_regret else "expected loss"
    fmt = (lambda x: f"{100 * x:.0f}%") if by_regret else (lambda x: f"{x:.4g}")
    share = float(plan.attrs["share"])
    head = (f"two-stage plan: spend {share:.0%} of each unit's budget on {plan.attrs['what']} "
            f"({plan.attrs.get('noise', 'Laplace')}), then choose "
            f"at the other {1 - share:.0%}: {what} {fmt(p)} against {fmt(c)} choosing "
            f"{plan.attrs['recommended_now']} now (difference {_with_error(d, se, by_regret)})")
    ess = float(plan["ess"])
    gain = float(plan.attrs.get("gain", -d / c if c else 0.0))  # preposterior's (a file older than it: the same ratio)
    by_hand = plan.attrs.get("by_hand", "")
    if plan.attrs.get("pays_by", "analysis") == "held-out":
        tail = (f"  the analysis finds {'a gain of ' + format(gain, '.0%') if gain > 0 else 'no gain'}, but it trusts "
                "the model; on this kind's held-out truths the plan carried out (the model fitted again on the "
                f"release) did better than choosing now: {plan.attrs['held_out']}.  The plan is recommended: "
                + (by_hand if by_hand else
                   "hybridpriv release carries it out, the probe first, then select again given its release"))
    elif plan.attrs["pays"] and by_hand:
        tail = f"  the plan pays ({gain:.0%} lower), but {by_hand}"
    elif plan.attrs["pays"]:
        tail = (f"  the plan pays ({gain:.0%} lower): hybridpriv release carries it out, the probe first, then the "
                "candidate its features choose")
    elif int(plan.attrs.get("significant", 0)):
        # a file older than the per-family floor does not say which floor it used (8% or, for a day, 6%)
        floor = f"the {float(plan.attrs['gain_floor']):.0%}" if "gain_floor" in plan.attrs else "the floor"
        tail = (f"  the plan would be {gain:.0%} lower, less than {floor} it needs: on held-out truths "
                "smaller gains did not hold (the model's error is not in the ± above); choose now")
    else:
        tail = "  choosing now is at least as good: the plan does not pay"
    lines = [head, tail]
    if ess < 10:
        lines.append(f"  note: a second-stage choice rests on {ess:.1f} simulated datasets (median effective "
                     "number): more evaluation.draws would make this analysis steadier")
    return lines


def _seeds(held: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    return sorted((int(k), v) for k, v in held.get("seeds", {}).items())


def _which(seeds: list[int]) -> str:
    words = [str(x) for x in seeds]
    return f"seed {words[0]}" if len(words) == 1 else f"seeds {', '.join(words[:-1])} and {words[-1]}"


def _lower(row: Mapping[str, Any], key: str) -> bool:
    """Whether ``row[key]`` (mean, p90) is below choosing now's in both."""
    return key in row and row[key][0] < row["now"][0] and row[key][1] < row["now"][1]


def _pct(x: float) -> str:
    """A regret in percent: one decimal below 10 (where whole numbers would hide which is lower), else none."""
    return f"{x:.1f}%" if abs(x) < 10 else f"{x:.0f}%"


def _held_numbers(held: Mapping[str, Any], key: str, rows: list[tuple[int, Mapping[str, Any]]]) -> str:
    """``rows``' numbers under ``key`` against choosing now's, seed by seed, in words."""
    parts = [f"{_pct(row[key][0])} / {_pct(row[key][1])} against {_pct(row['now'][0])} / {_pct(row['now'][1])} "
             f"(seed {seed})" for seed, row in rows]
    return (f"relative regret in the mean / at the 90th percentile {'; '.join(parts)}, {held['truths']} truths a "
            "seed")


def held_out_pays(held: Mapping[str, Any], probe: Probe | None) -> str:
    """Whether the family's held-out truths (``held``: :attr:`hybridpriv.core.family.Family.plan_held_out`) show a
    probe that refits (:attr:`Probe.refit`) paying: carried out that way on every truth (each seed's ``"refit"``),
    the plan's relative regret was lower than choosing now's in the mean and at the 90th percentile **on every
    seed** (one seed where it was not is evidence enough that the gain does not hold).  Returns those numbers in
    words, or ``""`` (no refit, not measured, or not better on every seed)."""
    rows = _seeds(held)
    if probe is None or probe.refit is None or not rows or not all(_lower(row, "refit") for _, row in rows):
        return ""
    return _held_numbers(held, "refit", rows)


def plan_held_line(held: Mapping[str, Any], pays: bool, short: bool = False) -> str:
    """A note under a verdict that the plan does not pay, from the family's held-out truths (``held``:
    :attr:`hybridpriv.core.family.Family.plan_held_out`), where the plan was carried out on every truth: where the
    weighted plan (``"plan"``) did better than choosing now in the mean and at the 90th percentile on every seed,
    it says the analysis undervalued the probe; where the refit (``"refit"``) was measured and did not do better
    on every seed, it says on which seeds it did worse, so choosing now stands on evidence; ``""`` otherwise.
    ``short``: one line without the numbers (a figure's note)."""
    rows = _seeds(held)
    if pays or not rows:
        return ""
    if all(_lower(row, "plan") for _, row in rows):
        if short:
            return (f"note (plan): carried out on every held-out truth ({_which([seed for seed, _ in rows])}), the plan "
                    "did better than choosing now; the analysis trusts the model.  hybridpriv release --plan spends it")
        line = (f"  note (plan): on this kind's held-out truths the analysis above undervalued the probe: carried out "
                f"on every truth, the plan did better than choosing now: {_held_numbers(held, 'plan', rows)}")
        if all("refit" in row for _, row in rows):
            line += (" (fitting the model again on the same release and choosing again: "
                     f"{_held_numbers(held, 'refit', rows)})")
        return (line + "; the analysis trusts the model, and the release shows what the public knowledge cannot.  "
                "To spend it anyway: hybridpriv release --plan")
    measured = [(seed, row) for seed, row in rows if "refit" in row]
    worse = [seed for seed, row in measured if not _lower(row, "refit")]
    if not worse:
        return ""
    better = [seed for seed, row in measured if _lower(row, "refit")]
    if short:
        did = (f"did better than choosing now on {_which(better)} but not on " if better else
               "did not do better than choosing now on ")
        return (f"note (plan): carried out on held-out truths (the model fitted again on the release), the plan "
                f"{did}{_which(worse)}; choosing now stands")
    said = f"better on {_which(better)} but not on " if better else "not better on "
    return (f"  note (plan): on this kind's held-out truths the plan carried out (the model fitted again on the "
            f"release) was {said}{_which(worse)}: "
            f"{_held_numbers(held, 'refit', measured)}; choosing now stands")
