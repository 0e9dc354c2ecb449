"""Bayes weights under uncertainty (beyond Avent et al.): how much of KVH's oracle gain they recover.

The paper's grid of Figures 1 and 3: Beta(10,10), Beta(1,1) and Beta(0.1,0.1) records on
``[0, 1]`` (``m = 1``, both groups from the same distribution), ``n`` from 1e3 to 1e5,
``c`` in {0.5%, 5%}, ``epsilon`` in {0.1, 1}, Laplace noise.  KVH (Definition 4.1) knows the
true variance (an oracle); PWH (Definition 5.3) ignores it and falls below the better
baseline (``R(PWH) < 1``) in part of the grid.  The Bayes weight
(:meth:`hybridpriv.models.avent.HybridTrustPosterior.bayes_weight`) minimises the posterior
expected MSE of a curator who knows

* ``knowledge="prior"``: only the default priors of :class:`~hybridpriv.models.avent.HybridTrustModel`
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
distribution).  A Monte Carlo check at two points runs ``Hybrid(weight="bayes")`` through the
evaluation engine (fresh data and noise per dataset, risk against the empirical mean) and
compares it with the exact MSE.  The formula part ignores ``client``/``checkpoint``/``chunk_size``;
they are passed to the engine for the Monte Carlo check.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import xarray as xr

from hybridpriv.estimators.avent import Hybrid
from hybridpriv.models.avent import HybridTrustModel, HybridTrustPosterior, fit_many
from hybridpriv.privacy import Group
from hybridpriv.theory.avent import (
    full_lm_mse,
    hybrid_mse,
    kvh_weight,
    noise_variances,
    pwh_weight,
    tcm_only_mse,
)

from ._avent_common import BETAS, TwoGroupSource, axis, beta_sampler, beta_variance, mc_mse, mean_with_se

__all__ = ["ASSUMPTIONS", "DESCRIPTION", "fit_knowledge", "formula_grid", "pilot_model", "plot", "run"]

DESCRIPTION = "Bayes weight under uncertainty: share of KVH's oracle gain recovered where PWH < 1 (beyond the paper)"
CS = (0.005, 0.05)
EPSILONS = (0.1, 1.0)
M = 1.0
ASSUMPTIONS = ("homogeneous", "gap-prior")
#: points of the Monte Carlo check: (distribution, n, c, epsilon, knowledge, assumption)
#: (the first has R(PWH) < 1; the last one only runs at full scale, which has the gap prior)
MC_POINTS = (
    ("Beta(0.1,0.1)", 1_000.0, 0.05, 1.0, "prior", "homogeneous"),
    ("Beta(1,1)", 10_000.0, 0.05, 1.0, "pilot-100", "homogeneous"),
    ("Beta(10,10)", 10_000.0, 0.05, 1.0, "pilot-20", "gap-prior"),
)


def n_grid(quick: bool) -> np.ndarray:
    """Log-spaced ``n`` in [1e3, 1e5] (whole numbers)."""
    return np.unique(np.round(np.logspace(3, 5, 5 if quick else 21)))


def pilot_model(k: int, assumption: str, a: float, b: float, seed: int) -> HybridTrustModel:
    """The curator's model with ``k`` pilot records per group from the truth ``Beta(a, b)`` on [0, 1].

    The records are the first ``k`` of 100 per group drawn with ``SeedSequence([seed, 0])``, so
    smaller pilots are nested in larger ones.
    """
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0]))
    records = M * rng.beta(a, b, size=(2, max(k, 100)))
    return HybridTrustModel(M, pilot_T=records[0, :k], pilot_L=records[1, :k], homogeneous=assumption == "homogeneous")


def fit_knowledge(knowledge: tuple[str, ...], assumption: str, seed: int, draws: int) -> dict:
    """``{(knowledge, distribution): posterior}`` for one assumption.

    ``"prior"``: ``2 * draws`` exact prior draws (shared by every distribution).  ``"pilot-K"``:
    :func:`pilot_model` per distribution; all of them are sampled in one
    :func:`~hybridpriv.models.avent.fit_many` call (NUTS, 2 chains, ``draws`` tuning + ``draws`` draws).
    """
    seeds = [int(s.generate_state(1)[0] % 2**31) for s in np.random.SeedSequence(seed).spawn(len(BETAS) + 1)]
    out = {}
    prior = HybridTrustModel(M, homogeneous=assumption == "homogeneous").prior(draws=2 * draws, seed=seeds[-1])
    keys, models = [], []
    for j, (name, a, b) in enumerate(BETAS):
        for know in knowledge:
            if know == "prior":
                out[know, name] = prior
            else:
                keys.append((know, name))
                models.append(pilot_model(int(know.split("-")[1]), assumption, a, b, seeds[j]))
    if models:
        out.update(zip(keys, fit_many(models, draws=draws, tune=draws, chains=2, seed=seeds[-1])))
    return out


def formula_grid(ns, weights: xr.DataArray, cs=CS, epsilons=EPSILONS, betas=BETAS) -> xr.Dataset:
    """Exact MSEs of the baselines, KVH, PWH, naive and the given Bayes weights (any extra dims)."""
    dist = [b[0] for b in betas]
    sigma2 = xr.DataArray([beta_variance(a, b) for _, a, b in betas], dims="distribution", coords={"distribution": dist})
    n, c, eps = axis("n", ns), axis("c", cs), axis("epsilon", epsilons)
    s_T2, s_L2 = noise_variances("laplace", eps, M, n, c)
    w_kvh = kvh_weight(n, c, sigma2, s_T2, s_L2)
    w_pwh = pwh_weight(n, c, s_T2, s_L2)
    w_naive = c + 0.0 * w_pwh

    def mse(w):
        return hybrid_mse(w, n, c, sigma2, sigma2, s_T2, s_L2)

    e_T = tcm_only_mse(n, c, sigma2, s_T2)
    e_F = full_lm_mse(n, c, sigma2, sigma2, s_L2)
    best = np.minimum(e_T, e_F)
    e_kvh, e_pwh, e_naive, e_bayes = mse(w_kvh), mse(w_pwh), mse(w_naive), mse(weights)

    def gain(e):
        return (best - e) / (best - e_kvh)

    order = ("distribution", "n", "c", "epsilon")
    border = ("knowledge", "assumption", *order)
    ds = xr.Dataset({
        "sigma2": sigma2,
        "s_T2": s_T2.transpose("n", "c", "epsilon"),
        "s_L2": s_L2.isel(n=0, c=0, drop=True),
        "mse_tcm": e_T.transpose(*order),
        "mse_full": e_F.transpose(*order),
        "mse_kvh": e_kvh.transpose(*order),
        "mse_pwh": e_pwh.transpose(*order),
        "mse_naive": e_naive.transpose(*order),
        "mse_bayes": e_bayes.transpose(*border),
        "w_kvh": w_kvh.transpose(*order),
        "w_pwh": w_pwh.transpose("n", "c", "epsilon"),
        "w_bayes": weights.broadcast_like(e_bayes).transpose(*border),
        "R_kvh": (best / e_kvh).transpose(*order),
        "R_pwh": (best / e_pwh).transpose(*order),
        "r_pwh": (np.maximum(e_T, e_F) / e_pwh).transpose(*order),
        "R_naive": (best / e_naive).transpose(*order),
        "R_bayes": (best / e_bayes).transpose(*border),
        "gain_pwh": gain(e_pwh).transpose(*order),
        "gain_naive": gain(e_naive).transpose(*order),
        "gain_bayes": gain(e_bayes).transpose(*border),
        "gap_closed": ((e_pwh - e_bayes) / (e_pwh - e_kvh)).transpose(*border),
    })
    ds["pwh_below"] = ds["R_pwh"] < 1
    return ds


def _mc_check(posteriors, points, draws: int, seed: int, progress: bool, engine: dict) -> xr.Dataset:
    """Monte Carlo MSE of ``Hybrid(weight="bayes")`` at ``points`` (squared error against the
    pooled empirical mean, one fresh dataset per draw)."""
    labels = [f"{p[0]} n={p[1]:g} c={p[2]:g} eps={p[3]:g} {p[4]} {p[5]}" for p in points]
    betas = {name: (a, b) for name, a, b in BETAS}

    def runs():
        for lab, (dist, n, c, eps, know, assume) in zip(labels, points):
            t = int(round(c * n))
            groups = [Group("tcm", t, eps), Group("lm", int(n) - t, eps)]
            a, b = betas[dist]
            est = Hybrid(groups, (0.0, M), weight="bayes", posterior=posteriors[know, assume, dist])
            src = TwoGroupSource(groups, (0.0, M), [beta_sampler(a, b, M)] * 2, draws, [a / (a + b) * M] * 2)
            yield {"check": lab}, {"bayes": est}, src

    loss = mc_mse(runs(), {"check": labels}, seed, progress, engine).isel(estimator=0, drop=True)
    mean, se = mean_with_se(loss)
    return xr.Dataset({"mc_mse": mean, "mc_mse_se": se})


def run(quick: bool = False, seed: int = 0, progress: bool = False, client=None, checkpoint=None,
        chunk_size=None) -> xr.Dataset:
    """The exact grid for every knowledge level and assumption, plus the Monte Carlo check."""
    logging.getLogger("pymc").setLevel(logging.ERROR)
    started = time.perf_counter()
    ns = n_grid(quick)
    knowledge = ("prior", "pilot-100") if quick else ("prior", "pilot-20", "pilot-100")
    assumptions = ("homogeneous",) if quick else ASSUMPTIONS
    draws = 300 if quick else 1000
    dists = [name for name, _, _ in BETAS]
    # one posterior per (knowledge, assumption, distribution); the prior is shared by every distribution
    posteriors: dict[tuple[str, str, str], HybridTrustPosterior] = {}
    for assume in assumptions:
        for (know, name), post in fit_knowledge(knowledge, assume, seed, draws).items():
            posteriors[know, assume, name] = post
    fit_seconds = time.perf_counter() - started
    # the Bayes weights over the grid: a vectorised closed form per posterior
    n, c, eps = axis("n", ns), axis("c", CS), axis("epsilon", EPSILONS)
    s_T2, s_L2 = noise_variances("laplace", eps, M, n, c)
    w = xr.concat(
        [xr.concat(
            [xr.concat([posteriors[k, a, d].bayes_weight(n, c, s_T2, s_L2) for d in dists], dim="distribution")
             for a in assumptions], dim="assumption")
         for k in knowledge], dim="knowledge",
    ).assign_coords(knowledge=list(knowledge), assumption=list(assumptions), distribution=dists)
    ds = formula_grid(ns, w)
    moments = {
        key: xr.DataArray(
            np.array([[[posteriors[k, a, d].moments[m_] if m_ != "max_rhat" else posteriors[k, a, d].max_rhat
                        for d in dists] for a in assumptions] for k in knowledge]),
            dims=("knowledge", "assumption", "distribution"),
        )
        for key, m_ in (("post_sigma_T2", "sigma_T2"), ("post_sigma_L2", "sigma_L2"), ("post_gap2", "gap2"),
                        ("max_rhat", "max_rhat"))
    }
    ds = ds.assign(moments)
    # summaries over the cells where PWH falls below the better baseline
    below = ds["pwh_below"]
    g = ds["gain_bayes"].where(below)
    cells = ("distribution", "n", "c", "epsilon")
    ds["cells_pwh_below"] = below.sum(cells)
    ds["gain_bayes_median"] = g.median(cells)
    ds["gain_bayes_min"] = g.min(cells)
    ds["gain_pwh_median"] = ds["gain_pwh"].where(below).median(cells)
    ds["share_bayes_beats_best"] = (ds["R_bayes"] >= 1).where(below).mean(cells)
    ds["gap_closed_median"] = ds["gap_closed"].where(below).median(cells)
    # and over the whole grid
    ds["share_bayes_below_best_all"] = (ds["R_bayes"] < 1).mean(cells)
    ds["share_pwh_below_best_all"] = (ds["R_pwh"] < 1).mean(cells)
    ds["gain_bayes_median_all"] = ds["gain_bayes"].median(cells)
    # Monte Carlo check of the exact MSE of the Bayes-weighted estimator
    points = [p for p in MC_POINTS if p[4] in knowledge and p[5] in assumptions]
    mc_draws = 400 if quick else 4000
    mc = _mc_check(posteriors, points, mc_draws, seed, progress,
                   {"client": client, "checkpoint": checkpoint, "chunk_size": chunk_size})
    exact = [float(ds["mse_bayes"].sel(distribution=d, n=nn, c=cc, epsilon=e, knowledge=k, assumption=a))
             for d, nn, cc, e, k, a in points]
    ds["mc_mse"] = mc["mc_mse"]
    ds["mc_mse_se"] = mc["mc_mse_se"]
    ds["mc_mse_exact"] = ("check", exact)
    ds["mc_z"] = (ds["mc_mse"] - ds["mc_mse_exact"]) / ds["mc_mse_se"]
    descriptions = {
        "gain_bayes": "(best - E_bayes) / (best - E_KVH): share of KVH's oracle gain over the better baseline recovered",
        "gain_pwh": "(best - E_PWH) / (best - E_KVH)",
        "gap_closed": "(E_PWH - E_bayes) / (E_PWH - E_KVH): share of PWH's shortfall from KVH removed",
        "pwh_below": "R(PWH) < 1: PWH worse than the better baseline",
        "mc_mse": f"Monte Carlo MSE of Hybrid(weight='bayes') over {mc_draws} datasets (fresh data and noise)",
        "mc_z": "(Monte Carlo - exact) / Monte Carlo standard error",
        "gain_bayes_median": "median of gain_bayes over the cells with R(PWH) < 1",
    }
    for k, v in descriptions.items():
        ds[k].attrs["description"] = v
    ds.attrs.update({
        "noise": "laplace",
        "m": M,
        "prior": "HybridTrustModel defaults: p0 ~ Beta(1,1), v ~ Beta(1,1), gap_logit ~ Normal(0, 0.5)",
        "pilot": "K records per group from the true distribution",
        "draws": draws,
        "fit_seconds": round(fit_seconds, 2),
        "config": {"ns": [float(x) for x in ns], "knowledge": list(knowledge), "assumptions": list(assumptions),
                   "draws": draws, "mc_draws": mc_draws},
    })
    return ds


def plot(ds: xr.Dataset, path: str | Path) -> None:
    """One panel per (distribution, assumption): gain recovered over n, PWH in grey, cells with R(PWH) < 1 marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dists = list(ds.distribution.values)
    assumptions = list(ds.assumption.values)
    fig, axes = plt.subplots(len(assumptions), len(dists), figsize=(4.4 * len(dists), 3.3 * len(assumptions)),
                             squeeze=False, sharex=True, sharey=True)
    colors = {"prior": "tab:orange", "pilot-20": "tab:green", "pilot-100": "tab:blue"}
    styles = {(0.005, 0.1): "-", (0.005, 1.0): "--", (0.05, 0.1): "-.", (0.05, 1.0): ":"}
    n = ds.n.values
    for i, a in enumerate(assumptions):
        for j, d in enumerate(dists):
            ax = axes[i, j]
            for (c, e), ls in styles.items():
                sel = {"distribution": d, "c": c, "epsilon": e}
                ax.plot(n, np.clip(ds["gain_pwh"].sel(sel), -1.5, 1.2), ls=ls, color="0.6", lw=1)
                for k in ds.knowledge.values:
                    y = np.clip(ds["gain_bayes"].sel({**sel, "knowledge": k, "assumption": a}), -1.5, 1.2)
                    ax.plot(n, y, ls=ls, color=colors.get(str(k), "k"), lw=1.4)
                    below = ds["pwh_below"].sel(sel).values
                    ax.plot(n[below], y.values[below], "o", ms=3, color=colors.get(str(k), "k"))
            ax.axhline(1.0, color="k", lw=0.6)
            ax.axhline(0.0, color="k", lw=0.6)
            ax.set_xscale("log")
            ax.set_ylim(-1.6, 1.3)
            ax.set_title(f"{d}, {a}", fontsize=9)
            if j == 0:
                ax.set_ylabel("share of KVH's gain recovered")
            if i == len(assumptions) - 1:
                ax.set_xlabel("n")
            ax.grid(alpha=0.3, lw=0.4)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=colors.get(str(k), "k"), label=f"Bayes, {k}") for k in ds.knowledge.values]
    handles.append(Line2D([], [], color="0.6", label="PWH"))
    handles += [Line2D([], [], color="k", ls=ls, label=f"c={100 * c:g}%, eps={e:g}") for (c, e), ls in styles.items()]
    handles.append(Line2D([], [], color="k", marker="o", ls="", ms=3, label="R(PWH) < 1"))
    axes[0, -1].legend(handles=handles, fontsize=7, loc="lower left")
    fig.suptitle("(best baseline - MSE) / (best baseline - MSE of KVH); values clipped to [-1.5, 1.2]", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=72)
    plt.close(fig)
