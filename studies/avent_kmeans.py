"""Avent, Dubey & Korolova, Figure 6: WCSS of hybrid, TCM-only and LM DP K-means over tau (docs/avent-kmeans.md).

Data (Figure 6a): 4 clusters of 2-D Gaussians, ``sigma = 0.028``, 40,000 points each, around our
centres (the paper gives none), clamped into the unit square, drawn once from stream
``("study", "avent-kmeans", "points")``; ``epsilon = 7``, ``K = 4``, ``c`` in {0.1%, 1%}.
One engine setting per ``(c, tau)``, the seven algorithms of :func:`candidates` along
``algorithm``; each dataset (:class:`~hybridpriv.estimators.kmeans.TrustSplitSource`) is a fresh
trust split and a fresh public start shared by every algorithm (common random numbers).
``pwh_weight``: the hybrid's TCM weight in the last iteration, replayed here on the engine's own
streams for the first 5 datasets of each setting.  Scale: 30 datasets per setting, ``tau`` in
{1, 2, 3, 4, 5, 6, 8, 10}; ``quick``: 5,000 points per cluster, ``tau`` in {1, 3, 6}, 4 datasets.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from hybridpriv.estimators.kmeans import (WCSS, HybridKMeans, LloydKMeans, LMKMeans, TCMKMeans, TrustSplitSource,
                                          gaussian_clusters)
from hybridpriv.evaluate import evaluate_many
from hybridpriv.random import rng
from hybridpriv.stats import mean_with_ci

__all__ = ["CENTRES", "DESCRIPTION", "PAPER", "candidates", "claims", "plot", "run", "summarise"]

DESCRIPTION = "Avent et al. Fig. 6: WCSS of hybrid, TCM-only and LM DP K-means over iterations tau"
PAPER = "Avent, Dubey, Korolova: The Power of the Hybrid Model for Mean Estimation (PETS 2020)"
#: "approximately equal": the hybrid's mean WCSS within this factor of the better baseline's ...
APPROX = 1.1
CENTRES = np.array([[0.25, 0.25], [0.25, 0.75], [0.75, 0.25], [0.75, 0.75]])
SIGMA, EPSILON, K, BOUNDS, CS = 0.028, 7.0, 4, (0.0, 1.0), (0.001, 0.01)


def candidates(tau: int) -> list:
    """The seven algorithms at ``tau`` iterations (labels: their coordinates along ``algorithm``)."""
    kw = {"k": K, "epsilon": EPSILON, "tau": tau, "bounds": BOUNDS}
    return [HybridKMeans(**kw), TCMKMeans(**kw), LMKMeans(**kw), HybridKMeans(**kw, pwh_noise="printed"),
            LMKMeans(**kw, debias=True), HybridKMeans(**kw, debias=True), LloydKMeans(K, tau, BOUNDS)]


def run(quick: bool = False, seed: int = 0, progress: bool = False, client=None, checkpoint=None,
        chunk_size=None) -> xr.Dataset:
    """Run the study; ``client``, ``checkpoint`` and ``chunk_size`` go to the engine (:func:`evaluate_many`)."""
    n_per, taus, draws = (5_000, [1, 3, 6], 4) if quick else (40_000, [1, 2, 3, 4, 5, 6, 8, 10], 30)
    x = gaussian_clusters(CENTRES, SIGMA, n_per, BOUNDS, rng(seed, "study", "avent-kmeans", "points"))
    sources = {c: TrustSplitSource(x, BOUNDS, c, K, draws, CENTRES) for c in CS}
    grid = [(c, tau) for c in CS for tau in taus]
    ev = evaluate_many((({"c": c, "tau": t}, candidates(t), sources[c]) for c, t in grid), {"c": list(CS), "tau": taus},
                       task=WCSS(), seed=seed, dim="algorithm", progress=progress, client=client,
                       checkpoint=checkpoint, chunk_size=chunk_size)
    ds = summarise(ev)
    weight = [np.mean([candidates(t)[0].run(sources[c].generate(0, j, rng(seed, "dataset", 0, j)),
                                            rng(seed, "mechanism", "hybrid", 0, j)).weights[-1]
                       for j in range(min(draws, 5))]) for c, t in grid]
    ds["pwh_weight"] = (("c", "tau"), np.reshape(weight, (len(CS), len(taus))))
    ds["pwh_weight"].attrs["description"] = "hybrid's TCM weight in the last iteration, mean over clusters, first 5 datasets"
    ds.attrs.update({"n_per_cluster": n_per, "draws": draws, "sigma": SIGMA, "epsilon": EPSILON, "k": K,
                     "centres": str(CENTRES.tolist()), "config": {"n_per_cluster": n_per, "taus": taus, "draws": draws}})
    return ds


def summarise(ev: xr.Dataset) -> xr.Dataset:
    """``wcss`` ``(algorithm, c, tau, draw)`` from the evaluation, means with 95% intervals, quantiles, ratios."""
    ds = ev.drop_vars(["loss", "risk", "truth"])  # risk is wcss below (one release per dataset)
    ds["wcss"] = wcss = ev["risk"].isel(chain=0, drop=True).transpose("algorithm", "c", "tau", "draw")
    ds["wcss_mean"], ds["wcss_low"], ds["wcss_high"] = mean_with_ci(wcss, "draw")
    ds["wcss_q025"], ds["wcss_q975"] = (wcss.quantile(q, "draw").drop_vars("quantile") for q in (0.025, 0.975))
    ds["wcss_generating"] = ev["truth"].sel(quantity="wcss_generating").isel(chain=0, draw=0, c=0, tau=0, drop=True)
    m = {a: ds["wcss_mean"].sel(algorithm=a, drop=True) for a in ds.algorithm.values}
    ds["hybrid_over_best"] = m["hybrid"] / np.minimum(m["tcm"], m["lm"])
    ds["hybrid_debiased_over_best"] = m["hybrid-debiased"] / np.minimum(m["tcm"], m["lm-debiased"])
    ds["wcss"].attrs["description"] = "WCSS of all users' true points to the final centres, one per dataset"
    ds["wcss_mean"].attrs["description"] = "mean over datasets; _low/_high: normal 95% interval of the mean"
    ds["hybrid_over_best"].attrs["description"] = "mean WCSS of hybrid / min(tcm, lm); _debiased: of the debiased"
    return ds


def plot(ds: xr.Dataset, path: str | Path) -> Figure:
    """WCSS against tau, one panel per c: means with 95% bands; debiased variants dashed, Lloyd dotted."""
    fig = Figure(figsize=(5.2 * ds.c.size, 4.0))
    axes = fig.subplots(1, ds.c.size, sharey=True, squeeze=False)[0]
    style = {"hybrid": ("tab:green", "o-"), "tcm": ("tab:blue", "o-"), "lm": ("tab:red", "o-"),
             "hybrid-debiased": ("tab:green", "--"), "lm-debiased": ("tab:red", "--"), "lloyd": ("k", ":")}
    tau = ds.tau.values
    for ax, c in zip(axes, ds.c.values):
        for a, (color, fmt) in style.items():
            e = ds.sel(c=c, algorithm=a)
            ax.plot(tau, e.wcss_mean, fmt, color=color, lw=1.5 if fmt == "o-" else 1, label=a)
            if fmt == "o-":
                ax.fill_between(tau, e.wcss_low, e.wcss_high, color=color, alpha=0.2, lw=0)
        ax.axhline(float(ds.wcss_generating), color="grey", lw=0.6)
        ax.set(yscale="log", xlabel="iterations tau", title=f"c = {100 * c:g}% TCM users, epsilon = {EPSILON:g}")
    axes[0].set_ylabel("WCSS (mean over datasets, 95% band)")
    axes[0].legend(fontsize=7, ncol=2)
    fig.suptitle(f"Hybrid vs TCM-only vs LM DP K-means ({int(ds.attrs['draws'])} datasets, "
                 f"{4 * int(ds.attrs['n_per_cluster']):,} points; grey: WCSS at the true centres)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    return fig


def claims(ds: xr.Dataset) -> list:
    """Section 7's claims about Figure 6 (grid layout, this run's c and tau).  "Approximately equal to the
    better of the two": the hybrid's mean WCSS is at most :data:`APPROX` times the better baseline's, or
    the two 95% intervals overlap.  "Better" baseline: the lower mean; *significantly* better: the
    intervals do not overlap."""
    from ._claims import Claim

    def pick(a):
        return (ds["wcss_mean"].sel(algorithm=a, drop=True), ds["wcss_low"].sel(algorithm=a, drop=True),
                ds["wcss_high"].sel(algorithm=a, drop=True))

    (h, hl, hh), (t, tl, th), (lm, ll, lh) = pick("hybrid"), pick("tcm"), pick("lm")
    tcm_better = t <= lm
    b, bl, bh = xr.where(tcm_better, t, lm), xr.where(tcm_better, tl, ll), xr.where(tcm_better, th, lh)
    ok = (h <= APPROX * b) | ((hl <= bh) & (bl <= hh))
    ratio = h / b
    cells = int(ok.size)
    rows = [Claim("Sec. 7, Fig. 6", "the hybrid algorithm is able to maintain a WCSS approximately equal to the better "
                  "of the two baselines (TCM-only, LM)", "-",
                  f"hybrid / better baseline {float(ratio.min()):.2f}-{float(ratio.max()):.2f}; approximately equal "
                  f"(<= {APPROX:g}x or 95% intervals overlap) in {int(ok.sum())} of {cells} (c, tau) cells",
                  "holds" if bool(ok.all()) else ("partly" if int(ok.sum()) * 2 >= cells else "does not hold"))]
    sig_tcm = (th < ll)  # TCM-only significantly better
    sig_lm = (lh < tl)
    panels = [("TCM" if bool(sig_tcm.sel(c=c).any()) else "") + ("LM" if bool(sig_lm.sel(c=c).any()) else "")
              for c in ds.c.values]
    each = any("TCM" in p for p in panels) and any("LM" in p for p in panels)
    text = "; ".join(f"c = {100 * float(c):g}%: significantly better at some tau: {p or 'neither'}"
                     for c, p in zip(ds.c.values, panels))
    rows.append(Claim("Sec. 7, Fig. 6", "one example of each regime: LM better than TCM-only in one panel, TCM-only "
                      "better in the other", "-", text, "holds" if each else "does not hold"))
    return rows
