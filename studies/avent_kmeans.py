"""Avent, Dubey & Korolova, Figure 6: WCSS of hybrid, TCM-only and LM DP K-means over tau.

Data (Figure 6a): 4 clusters of 2-D spherical Gaussians, ``sigma = 0.028``, 40,000 points
each, in the unit square.  The paper does not give the cluster centres; we use
``(0.25, 0.25), (0.25, 0.75), (0.75, 0.25), (0.75, 0.75)`` (points are clamped into the
square as a documented step; at 9 sigma from the edge none are moved).  The dataset is drawn
once from the seed, as the paper's figure shows one dataset.  ``epsilon = 7``, ``K = 4``,
``c`` in {0.1%, 1%}, ``tau`` over a grid.

Every ``(c, tau, trial)`` has its own seed, spawned from one ``SeedSequence(seed)``: the
users are split at random into ``round(c n)`` TCM users and the rest, the initial centres
are drawn uniformly in the square (line 1 of Algorithm 1; the paper does not say how it
initialises), and the three algorithms of :mod:`hybridpriv.kmeans` run from the same
initial centres (common random numbers):

* ``tcm``: :func:`~hybridpriv.kmeans.tcm_kmeans` on the TCM users only;
* ``lm``: :func:`~hybridpriv.kmeans.lm_kmeans` on all users;
* ``hybrid``: :func:`~hybridpriv.kmeans.hybrid_kmeans` (Algorithm 1, PWH weight with the
  TCM *mean*'s noise variance, ``pwh_noise="mean"``).

Variants (variable ``wcss_variant``): ``hybrid-printed`` (line 13's ``s_T^2 = 2 b_T^2`` read
literally), ``lm-debiased`` and ``hybrid-debiased`` (randomized response inverted on the LM
counts and sums, beyond the paper) reuse the noise seed of their base algorithm;
``nonprivate`` is Lloyd's algorithm on all points from the same start (``epsilon = inf``).
WCSS is always scored on all users' true points.

Scale: default 30 trials per ``(c, tau)`` (the paper uses 364), ``tau`` in
{1, 2, 3, 4, 5, 6, 8, 10} (6.5-7.5 minutes on one core of a shared machine); ``quick``:
5,000 points per cluster, ``tau`` in {1, 3, 6}, 4 trials (a couple of seconds).  This study
does not use the evaluation engine: ``client``, ``checkpoint`` and ``chunk_size`` are
accepted and ignored.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import xarray as xr

from hybridpriv.kmeans import hybrid_kmeans, initial_centres, lm_kmeans, split_users, tcm_kmeans, wcss
from hybridpriv.privacy import Bounds

from ._common import mse_with_ci

__all__ = ["ALGORITHMS", "CENTRES", "DESCRIPTION", "VARIANTS", "make_data", "plot", "run", "summarise"]

DESCRIPTION = "Avent et al. Fig. 6: WCSS of hybrid, TCM-only and LM DP K-means over iterations tau"
ALGORITHMS = ("hybrid", "tcm", "lm")
VARIANTS = ("hybrid-printed", "lm-debiased", "hybrid-debiased", "nonprivate")
CENTRES = np.array([[0.25, 0.25], [0.25, 0.75], [0.75, 0.25], [0.75, 0.75]])
SIGMA = 0.028
EPSILON = 7.0
K = 4
BOUNDS = Bounds(0.0, 1.0)
CS = (0.001, 0.01)


def make_data(n_per_cluster: int, rng: np.random.Generator) -> np.ndarray:
    """The Figure 6a dataset: ``(4 n_per_cluster, 2)`` points, clamped into the unit square."""
    pts = CENTRES[:, None, :] + SIGMA * rng.standard_normal((len(CENTRES), n_per_cluster, 2))
    return BOUNDS.clamp(pts.reshape(-1, 2))


def _children(ss: np.random.SeedSequence) -> list[np.random.SeedSequence]:
    """The five child seeds of a run: setup, tcm, lm, hybrid, non-private (recreated, not spawned,
    so a variant can reuse its base algorithm's noise seed)."""
    return [np.random.SeedSequence(ss.entropy, spawn_key=(*ss.spawn_key, j)) for j in range(5)]


def _rng(ss: np.random.SeedSequence, j: int) -> np.random.Generator:
    return np.random.default_rng(_children(ss)[j])


def _one(x: np.ndarray, c: float, tau: int, ss: np.random.SeedSequence) -> tuple[list[float], list[float], float]:
    """WCSS of the three algorithms and of the variants for one (c, tau, trial), and the mean PWH weight."""
    setup = _rng(ss, 0)
    xt, xl = split_users(x, c, setup)
    init = initial_centres(K, 2, BOUNDS, setup)
    kw = {"k": K, "epsilon": EPSILON, "tau": tau, "bounds": BOUNDS, "init": init}
    hyb = hybrid_kmeans(xt, xl, rng=_rng(ss, 3), **kw)
    main = [hyb.wcss(x), tcm_kmeans(xt, rng=_rng(ss, 1), **kw).wcss(x), lm_kmeans(x, rng=_rng(ss, 2), **kw).wcss(x)]
    variants = [
        hybrid_kmeans(xt, xl, rng=_rng(ss, 3), pwh_noise="printed", **kw).wcss(x),
        lm_kmeans(x, rng=_rng(ss, 2), debias=True, **kw).wcss(x),
        hybrid_kmeans(xt, xl, rng=_rng(ss, 3), debias=True, **kw).wcss(x),
        tcm_kmeans(x, rng=_rng(ss, 4), **{**kw, "epsilon": np.inf}).wcss(x),
    ]
    return main, variants, float(hyb.weights[-1].mean())


def run(
    quick: bool = False,
    seed: int = 0,
    progress: bool = False,
    client=None,
    checkpoint=None,
    chunk_size=None,
) -> xr.Dataset:
    """Run the study; ``client``, ``checkpoint``, ``chunk_size`` are ignored (no engine)."""
    n_per_cluster = 5_000 if quick else 40_000
    taus = [1, 3, 6] if quick else [1, 2, 3, 4, 5, 6, 8, 10]
    trials = 4 if quick else 30
    started = time.perf_counter()
    root = np.random.SeedSequence(seed)
    data_ss, runs_ss = root.spawn(2)
    x = make_data(n_per_cluster, np.random.default_rng(data_ss))
    run_seeds = runs_ss.spawn(len(CS) * len(taus) * trials)
    shape = (len(CS), len(taus), trials)
    main = np.empty((len(ALGORITHMS), *shape))
    var = np.empty((len(VARIANTS), *shape))
    weight = np.empty(shape)
    for i, c in enumerate(CS):
        for j, tau in enumerate(taus):
            for t in range(trials):
                ss = run_seeds[(i * len(taus) + j) * trials + t]
                m_, v_, w_ = _one(x, c, tau, ss)
                main[:, i, j, t], var[:, i, j, t], weight[i, j, t] = m_, v_, w_
            if progress:
                print(f"c={c:g} tau={tau}: " + ", ".join(f"{a}={main[k, i, j].mean():.0f}" for k, a in enumerate(ALGORITHMS)),
                      f"({time.perf_counter() - started:.0f} s)", flush=True)
    coords = {"c": list(CS), "tau": taus, "trial": np.arange(trials)}
    w = xr.DataArray(main, dims=("algorithm", "c", "tau", "trial"), coords={"algorithm": list(ALGORITHMS), **coords})
    wv = xr.DataArray(var, dims=("variant", "c", "tau", "trial"), coords={"variant": list(VARIANTS), **coords})
    ds = xr.Dataset({"wcss": w, "wcss_variant": wv})
    ds["pwh_weight"] = xr.DataArray(weight, dims=("c", "tau", "trial"), coords=coords).mean("trial")
    ds["pwh_weight"].attrs["description"] = "TCM branch's PWH weight in the last iteration, mean over clusters and trials"
    ds["wcss_optimal"] = wcss(x, CENTRES)
    ds["wcss_optimal"].attrs["description"] = "WCSS at the generating centres"
    ds = summarise(ds)
    ds.attrs.update(
        {
            "trials": trials,
            "n_per_cluster": n_per_cluster,
            "sigma": SIGMA,
            "epsilon": EPSILON,
            "k": K,
            "centres": str(CENTRES.tolist()),
            "init": "uniform in the unit square, shared by all algorithms of a (c, tau, trial)",
            "run_seconds": round(time.perf_counter() - started, 1),
            "config": {"n_per_cluster": n_per_cluster, "taus": taus, "trials": trials, "cs": list(CS)},
        }
    )
    return ds


def summarise(ds: xr.Dataset) -> xr.Dataset:
    """Add means, 95% intervals, quantiles and the ratios to the better baseline (from ``wcss*``)."""
    for name in ("wcss", "wcss_variant"):
        arr = ds[name]
        ds[f"{name}_mean"], ds[f"{name}_low"], ds[f"{name}_high"] = mse_with_ci(arr, ("trial",))
        ds[f"{name}_q025"] = arr.quantile(0.025, "trial").drop_vars("quantile")
        ds[f"{name}_q975"] = arr.quantile(0.975, "trial").drop_vars("quantile")
    m, mv = ds.wcss_mean, ds.wcss_variant_mean
    ds["hybrid_over_best"] = m.sel(algorithm="hybrid", drop=True) / m.sel(algorithm=["tcm", "lm"]).min("algorithm")
    best_debiased = np.minimum(m.sel(algorithm="tcm", drop=True), mv.sel(variant="lm-debiased", drop=True))
    ds["hybrid_debiased_over_best"] = mv.sel(variant="hybrid-debiased", drop=True) / best_debiased
    ds["wcss"].attrs["description"] = "within-cluster sum of squares of all users' true points to the final centres"
    ds["wcss_mean"].attrs["description"] = "mean over trials; _low/_high: normal 95% interval of the mean"
    ds["wcss_q025"].attrs["description"] = "2.5% and 97.5% quantiles over trials (spread of single runs)"
    ds["hybrid_over_best"].attrs["description"] = "mean WCSS of hybrid / min(mean WCSS of tcm, lm)"
    ds["hybrid_debiased_over_best"].attrs["description"] = "hybrid-debiased / min(tcm, lm-debiased), means"
    return ds


def plot(ds: xr.Dataset, path: str | Path) -> None:
    """WCSS against tau, one panel per c: means with 95% bands, and the debiased variants dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"hybrid": "tab:green", "tcm": "tab:blue", "lm": "tab:red"}
    fig, axes = plt.subplots(1, len(ds.c), figsize=(5.2 * len(ds.c), 4.0), sharey=True)
    axes = np.atleast_1d(axes)
    tau = ds.tau.values
    for ax, c in zip(axes, ds.c.values):
        d = ds.sel(c=c)
        for a in ds.algorithm.values:
            e = d.sel(algorithm=a)
            ax.plot(tau, e.wcss_mean, "o-", color=colors.get(str(a), None), label=str(a))
            ax.fill_between(tau, e.wcss_low, e.wcss_high, color=colors.get(str(a), None), alpha=0.2, lw=0)
        for v, a in (("hybrid-debiased", "hybrid"), ("lm-debiased", "lm")):
            e = d.sel(variant=v)
            ax.plot(tau, e.wcss_variant_mean, "--", color=colors[a], lw=1, label=v)
        ax.plot(tau, d.sel(variant="nonprivate").wcss_variant_mean, ":", color="k", lw=1, label="non-private Lloyd")
        ax.axhline(float(ds.wcss_optimal), color="grey", lw=0.6)
        ax.set_yscale("log")
        ax.set_xlabel("iterations tau")
        ax.set_title(f"c = {100 * c:g}% TCM users, epsilon = {ds.attrs.get('epsilon', 7):g}")
    axes[0].set_ylabel("WCSS (mean over trials, 95% band)")
    axes[0].legend(fontsize=7, ncol=2)
    fig.suptitle(f"Hybrid vs TCM-only vs LM DP K-means ({int(ds.attrs['trials'])} trials, "
                 f"{4 * int(ds.attrs['n_per_cluster']):,} points; grey: WCSS at the true centres)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
