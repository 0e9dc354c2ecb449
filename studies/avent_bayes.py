"""Bayes weights under uncertainty (beyond Avent et al.): how much of KVH's oracle gain they recover.

The paper's grid of Figures 1 and 3: Beta(10,10), Beta(1,1) and Beta(0.1,0.1) records on
``[0, 1]`` (``m = 1``, both groups from the same distribution), ``n`` from 1e3 to 1e5,
``c`` in {0.5%, 5%}, ``epsilon`` in {0.1, 1}, Laplace noise.  KVH (Definition 4.1) knows the
true variance (an oracle); PWH (Definition 5.3) ignores it and falls below the better
baseline (``R(PWH) < 1``) in part of the grid.  The Bayes weight
(:meth:`hybridpriv.families.hybrid_trust.model.HybridTrustPosterior.bayes_weight`) minimises the posterior
expected MSE of a curator who knows

* ``knowledge="prior"``: only the default priors of :class:`~hybridpriv.families.hybrid_trust.model.HybridTrustModel`
  (exact prior draws, no records);
* ``knowledge="pilot-K"``: the same priors conditioned on ``K`` public pilot records *from each
  group*, drawn from the true distribution (the records of ``pilot-20`` are the first 20 of
  ``pilot-100``);

under two assumptions: ``"homogeneous"`` (the curator knows both groups share one
distribution, as the paper's Sections 4-5 assume) and ``"gap-prior"`` (separate means and
variances, a Normal(0, 0.5) prior on the logit-scale mean gap).

Measures (all exact, :func:`hybridpriv.theory.avent.hybrid_mse` at the true parameters):
``best = min(E_T, E_F)`` (the better baseline) and, for a weight ``x``,
``gain_x = (best - E_x) / (best - E_KVH)``, the *fraction of KVH's oracle gain recovered*
(1: as good as the oracle; 0: no better than the better baseline; < 0: worse than it, which
is exactly ``R(x) < 1``).  ``gap_closed = (E_PWH - E_bayes) / (E_PWH - E_KVH)`` is the share of
PWH's shortfall from the oracle that the Bayes weight removes.  ``pwh_below`` marks the cells
with ``R(PWH) < 1``.

The posterior depends on the pilot records only, not on ``n``, ``c`` or ``epsilon``: one fit
per (knowledge, assumption, distribution) serves the whole grid (the prior serves every
distribution).  A Monte Carlo check at two or three points runs ``Hybrid(weight="bayes")``
through the evaluation engine (fresh data and noise per dataset, risk against the empirical
mean; the ``engine`` goes there) and compares it with the exact MSE.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..core.random import rng
from ..engine.evaluate import evaluate_many
from ..engine.options import Engine
from ..families.grouped import BetaSampler, Statistic
from ..families.hybrid_trust.summary import mse_summary
from ..families.hybrid_trust.model import HybridTrustModel, fit_many
from ..theory.avent import full_lm_mse, hybrid_mse, kvh_weight, noise_variances, pwh_weight, tcm_only_mse
from . import _avent as av

__all__ = ["ASSUMPTIONS", "DESCRIPTION", "fit_knowledge", "formula_grid", "pilot_model", "plot", "run"]

DESCRIPTION = "Bayes weight under uncertainty: share of KVH's oracle gain recovered where PWH < 1 (beyond the paper)"
CS, EPSILONS, M = (0.005, 0.05), (0.1, 1.0), 1.0
ASSUMPTIONS = ("homogeneous", "gap-prior")
#: points of the Monte Carlo check: (distribution, n, c, epsilon, knowledge, assumption)
#: (the first has R(PWH) < 1; the last one only runs at full scale, which has the gap prior)
MC_POINTS = (
    ("Beta(0.1,0.1)", 1_000.0, 0.05, 1.0, "prior", "homogeneous"),
    ("Beta(1,1)", 10_000.0, 0.05, 1.0, "pilot-100", "homogeneous"),
    ("Beta(10,10)", 10_000.0, 0.05, 1.0, "pilot-20", "gap-prior"),
)
CELLS = ("distribution", "n", "c", "epsilon")


def pilot_model(k: int, assumption: str, a: float, b: float, seed: int, name: str = "") -> HybridTrustModel:
    """The curator's model with ``k`` pilot records per group from the truth ``Beta(a, b)`` on [0, 1]:
    the first ``k`` of 100 per group from stream ``("study", "pilot", name)``, so smaller pilots
    are nested in larger ones."""
    records = M * rng(seed, "study", "pilot", name).beta(a, b, size=(2, max(k, 100)))
    return HybridTrustModel(M, pilot_T=records[0, :k], pilot_L=records[1, :k], **_laws(assumption))


def _laws(assumption: str) -> dict:
    """The model's arguments for ``assumption``: one law, or always two (the study's ``gap-prior`` is the model of
    separate means and variances; the default model's shared-law mixture, issue 25, is not what it measures)."""
    return {"homogeneous": True} if assumption == "homogeneous" else {"shared_prior": 0.0}


def fit_knowledge(knowledge: tuple[str, ...], assumption: str, seed: int, draws: int) -> dict:
    """``{(knowledge, distribution): posterior}`` for one assumption: ``"prior"`` is ``2 * draws``
    exact prior draws (shared by every distribution); every ``"pilot-K"`` model is sampled in one
    :func:`~hybridpriv.families.hybrid_trust.model.fit_many` call (NUTS, 2 chains, ``draws`` tuning + ``draws`` draws)."""
    prior = HybridTrustModel(M, **_laws(assumption)).prior(draws=2 * draws, seed=seed)
    out = {(k, name): prior for k in knowledge if k == "prior" for name, _, _ in av.BETAS}
    keys = [(k, name) for name, _, _ in av.BETAS for k in knowledge if k != "prior"]
    models = [pilot_model(int(k.split("-")[1]), assumption, *next(b[1:] for b in av.BETAS if b[0] == name), seed, name)
              for k, name in keys]
    if models:
        out.update(zip(keys, fit_many(models, draws=draws, tune=draws, chains=2, seed=seed)))
    return out


def formula_grid(ns, weights: xr.DataArray, cs=CS, epsilons=EPSILONS, betas=av.BETAS) -> xr.Dataset:
    """Exact MSEs of the baselines, KVH, PWH, naive and the given Bayes weights (any extra dims)."""
    sigma2 = xr.DataArray([av.beta_variance(a, b) for _, a, b in betas], dims="distribution",
                          coords={"distribution": [b[0] for b in betas]})
    n, c, eps = av.axis("n", ns), av.axis("c", cs), av.axis("epsilon", epsilons)
    s_T2, s_L2 = noise_variances("laplace", eps, M, n, c)
    w_kvh, w_pwh = kvh_weight(n, c, sigma2, s_T2, s_L2), pwh_weight(n, c, s_T2, s_L2)
    e_T, e_F = tcm_only_mse(n, c, sigma2, s_T2), full_lm_mse(n, c, sigma2, sigma2, s_L2)
    best = np.minimum(e_T, e_F)
    e_kvh, e_pwh, e_naive, e_bayes = (hybrid_mse(w, n, c, sigma2, sigma2, s_T2, s_L2)
                                      for w in (w_kvh, w_pwh, c + 0.0 * w_pwh, weights))
    border = ("knowledge", "assumption", *CELLS)
    ds = xr.Dataset({"sigma2": sigma2, "s_T2": s_T2.transpose("n", "c", "epsilon"), "s_L2": s_L2.isel(n=0, c=0, drop=True),
                     "w_pwh": w_pwh.transpose("n", "c", "epsilon")})
    for name, v in (("mse_tcm", e_T), ("mse_full", e_F), ("mse_kvh", e_kvh), ("mse_pwh", e_pwh), ("mse_naive", e_naive),
                    ("w_kvh", w_kvh), ("R_kvh", best / e_kvh), ("R_pwh", best / e_pwh),
                    ("r_pwh", np.maximum(e_T, e_F) / e_pwh), ("R_naive", best / e_naive),
                    ("gain_pwh", (best - e_pwh) / (best - e_kvh)), ("gain_naive", (best - e_naive) / (best - e_kvh))):
        ds[name] = v.transpose(*CELLS)
    for name, v in (("mse_bayes", e_bayes), ("w_bayes", weights.broadcast_like(e_bayes)), ("R_bayes", best / e_bayes),
                    ("gain_bayes", (best - e_bayes) / (best - e_kvh)), ("gap_closed", (e_pwh - e_bayes) / (e_pwh - e_kvh))):
        ds[name] = v.transpose(*border)
    ds["pwh_below"] = ds["R_pwh"] < 1
    return ds


def run(quick: bool = False, seed: int = 0, engine: Engine | None = None) -> xr.Dataset:
    """The exact grid for every knowledge level and assumption, plus the Monte Carlo check."""
    logging.getLogger("pymc").setLevel(logging.ERROR)
    started = time.perf_counter()
    ns = np.unique(np.round(np.logspace(3, 5, 5 if quick else 21)))
    knowledge = ("prior", "pilot-100") if quick else ("prior", "pilot-20", "pilot-100")
    assumptions = ASSUMPTIONS[:1] if quick else ASSUMPTIONS
    draws, mc_draws = (300, 400) if quick else (1000, 4000)
    post = {(k, a, d): p for a in assumptions for (k, d), p in fit_knowledge(knowledge, a, seed, draws).items()}
    fit_seconds = time.perf_counter() - started
    # the Bayes weights over the grid: a vectorised closed form per posterior
    n, c, eps = av.axis("n", ns), av.axis("c", CS), av.axis("epsilon", EPSILONS)
    s_T2, s_L2 = noise_variances("laplace", eps, M, n, c)
    index = {"knowledge": list(knowledge), "assumption": list(assumptions), "distribution": [b[0] for b in av.BETAS]}
    keys = [(k, a, d) for k in knowledge for a in assumptions for d in index["distribution"]]
    shape = tuple(len(v) for v in index.values())
    ws = [post[key].bayes_weight(n, c, s_T2, s_L2).transpose("n", "c", "epsilon") for key in keys]
    w = xr.DataArray(np.stack([x.values for x in ws]).reshape(*shape, *ws[0].shape),
                     dims=(*index, "n", "c", "epsilon"), coords={**index, **ws[0].coords})
    ds = formula_grid(ns, w)
    for var, get in (("post_sigma_T2", lambda p: p.moments["sigma_T2"]), ("post_sigma_L2", lambda p: p.moments["sigma_L2"]),
                     ("post_gap2", lambda p: p.moments["gap2"]), ("max_rhat", lambda p: p.max_rhat)):
        ds[var] = (tuple(index), np.array([get(post[key]) for key in keys]).reshape(shape))
    # summaries over the cells where PWH falls below the better baseline, and over the whole grid
    below = ds["pwh_below"]
    g = ds["gain_bayes"].where(below)
    ds["cells_pwh_below"] = below.sum(CELLS)
    ds["gain_bayes_median"], ds["gain_bayes_min"] = g.median(CELLS), g.min(CELLS)
    ds["gain_pwh_median"] = ds["gain_pwh"].where(below).median(CELLS)
    ds["share_bayes_beats_best"] = (ds["R_bayes"] >= 1).where(below).mean(CELLS)
    ds["gap_closed_median"] = ds["gap_closed"].where(below).median(CELLS)
    ds["share_bayes_below_best_all"] = (ds["R_bayes"] < 1).mean(CELLS)
    ds["share_pwh_below_best_all"] = (ds["R_pwh"] < 1).mean(CELLS)
    ds["gain_bayes_median_all"] = ds["gain_bayes"].median(CELLS)
    # Monte Carlo check of the exact MSE of the Bayes-weighted estimator
    points = [p for p in MC_POINTS if p[4] in knowledge and p[5] in assumptions]
    labels = [f"{p[0]} n={p[1]:g} c={p[2]:g} eps={p[3]:g} {p[4]} {p[5]}" for p in points]

    def runs():
        for lab, (dist, nn, cc, e, k, a) in zip(labels, points):
            _, alpha, beta = next(b for b in av.BETAS if b[0] == dist)
            groups, ests = av.candidates(int(round(cc * nn)), int(nn) - int(round(cc * nn)), e, M,
                                         {"bayes": {"weight": "bayes", "posterior": post[k, a, dist]}})
            yield {"check": lab}, {"bayes": ests["bayes"]}, av.source(
                groups, M, [BetaSampler(alpha, beta, M)] * 2, [M * alpha / (alpha + beta)] * 2, mc_draws)

    ev = evaluate_many(runs(), {"check": labels}, task=Statistic(target="sample"), seed=seed, engine=engine)
    mc = mse_summary(ev).sel(estimator="bayes", drop=True)
    ds["mc_mse"], ds["mc_mse_se"] = mc["mse_mc"], mc["mse_mc_se"]
    ds["mc_mse_exact"] = ("check", [float(ds["mse_bayes"].sel(distribution=d, n=nn, c=cc, epsilon=e, knowledge=k,
                                                                assumption=a)) for d, nn, cc, e, k, a in points])
    ds["mc_z"] = (ds["mc_mse"] - ds["mc_mse_exact"]) / ds["mc_mse_se"]
    for k, v in {
        "gain_bayes": "(best - E_bayes) / (best - E_KVH): share of KVH's oracle gain over the better baseline recovered",
        "gain_pwh": "(best - E_PWH) / (best - E_KVH)",
        "gap_closed": "(E_PWH - E_bayes) / (E_PWH - E_KVH): share of PWH's shortfall from KVH removed",
        "pwh_below": "R(PWH) < 1: PWH worse than the better baseline",
        "mc_mse": f"Monte Carlo MSE of Hybrid(weight='bayes') over {mc_draws} datasets (fresh data and noise)",
        "mc_z": "(Monte Carlo - exact) / Monte Carlo standard error",
        "gain_bayes_median": "median of gain_bayes over the cells with R(PWH) < 1",
    }.items():
        ds[k].attrs["description"] = v
    ds.attrs.update({
        "noise": "laplace", "m": M, "draws": draws, "fit_seconds": round(fit_seconds, 2),
        "prior": "HybridTrustModel defaults: p0 ~ Beta(1,1), v ~ Beta(1,1), gap_logit ~ Normal(0, 0.5)",
        "pilot": "K records per group from the true distribution",
        "config": {"ns": [float(x) for x in ns], "knowledge": list(knowledge), "assumptions": list(assumptions),
                   "draws": draws, "mc_draws": mc_draws},
    })
    return ds


def plot(ds: xr.Dataset, path: str | Path) -> None:
    """One panel per (distribution, assumption): gain recovered over n, PWH in grey, cells with R(PWH) < 1 marked."""
    dists, assumptions = list(ds.distribution.values), list(ds.assumption.values)
    fig = Figure(figsize=(4.4 * len(dists), 3.3 * len(assumptions)))
    axes = fig.subplots(len(assumptions), len(dists), squeeze=False, sharex=True, sharey=True)
    colors = {"prior": "tab:orange", "pilot-20": "tab:green", "pilot-100": "tab:blue"}
    styles = {(0.005, 0.1): "-", (0.005, 1.0): "--", (0.05, 0.1): "-.", (0.05, 1.0): ":"}
    n = ds.n.values
    for i, a in enumerate(assumptions):
        for j, d in enumerate(dists):
            ax = axes[i, j]
            for (c, e), ls in styles.items():
                sel = {"distribution": d, "c": c, "epsilon": e}
                below = ds["pwh_below"].sel(sel).values
                ax.plot(n, np.clip(ds["gain_pwh"].sel(sel), -1.5, 1.2), ls=ls, color="0.6", lw=1)
                for k in ds.knowledge.values:
                    y = np.clip(ds["gain_bayes"].sel({**sel, "knowledge": k, "assumption": a}), -1.5, 1.2)
                    ax.plot(n, y, ls=ls, color=colors.get(str(k), "k"), lw=1.4)
                    ax.plot(n[below], y.values[below], "o", ms=3, color=colors.get(str(k), "k"))
            for level in (0.0, 1.0):
                ax.axhline(level, color="k", lw=0.6)
            ax.set(xscale="log", ylim=(-1.6, 1.3), ylabel="share of KVH's gain recovered" if j == 0 else "",
                   xlabel="n" if i == len(assumptions) - 1 else "")
            ax.set_title(f"{d}, {a}", fontsize=9)
            ax.grid(alpha=0.3, lw=0.4)
    handles = [Line2D([], [], color=colors.get(str(k), "k"), label=f"Bayes, {k}") for k in ds.knowledge.values]
    handles += [Line2D([], [], color="0.6", label="PWH")]
    handles += [Line2D([], [], color="k", ls=ls, label=f"c={100 * c:g}%, eps={e:g}") for (c, e), ls in styles.items()]
    handles += [Line2D([], [], color="k", marker="o", ls="", ms=3, label="R(PWH) < 1")]
    axes[0, -1].legend(handles=handles, fontsize=7, loc="lower left")
    fig.suptitle("(best baseline - MSE) / (best baseline - MSE of KVH); values clipped to [-1.5, 1.2]", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=72)
