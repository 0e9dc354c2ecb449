"""Avent, Dubey & Korolova, Figure 6: WCSS of hybrid, TCM-only and LM DP K-means over tau (docs/avent-kmeans.md).

Data (Figure 6a): 4 clusters of 2-D Gaussians, ``sigma = 0.028``, 40,000 points each, clamped
into the unit square; ``epsilon = 7``, ``K = 4``, ``c`` in {0.1%, 1%}.  The paper gives no centres,
so the study runs several **layouts** (:func:`layout_centres`): ``grid`` (:data:`CENTRES`, points
from stream ``("study", "avent-kmeans", "points")``) and ``random-i``, centres uniform in
``[MARGIN, 1 - MARGIN]^2`` with pairwise separation >= :data:`MIN_SEPARATION` (rejection sampling
from stream ``("study", "avent-kmeans", "layout", i)``; points from ``(..., "points", "random-i")``).
One engine setting per ``(layout, c, tau)``, the seven algorithms of :func:`candidates` along
``algorithm``; each dataset (:class:`~hybridpriv.families.kmeans.algorithms.TrustSplitSource`) is a fresh
trust split and a fresh public start shared by every algorithm (common random numbers; draw ``j``
has the same split and start in every layout); :data:`SPLIT_FREE` algorithms run at the first ``c``
only, their results copied to the others (the same numbers: they ignore the split).  ``pwh_weight``:
the hybrid's TCM weight in the last iteration, replayed on the engine's own streams for the first 5
datasets of each setting.
Scales (:data:`SCALES`): default 30 datasets per setting, ``tau`` in {1, 2, 3, 4, 5, 6, 8, 10};
``full``: the paper's 364; ``quick``: 1,500 points per cluster, ``tau`` in {1, 4}, 4 datasets.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.patches import Circle

from ..core.random import rng
from ..engine.evaluate import evaluate_many
from ..engine.options import Engine
from ..engine.stats import mean_with_ci
from ..families.kmeans.algorithms import (
    WCSS,
    HybridKMeans,
    LloydKMeans,
    LMKMeans,
    TCMKMeans,
    TrustSplitSource,
    gaussian_clusters,
)

__all__ = ["CENTRES", "DESCRIPTION", "LAYOUTS", "PAPER", "SCALES", "SPLIT_FREE", "candidates", "claim_cells", "claims",
           "layout_centres", "plot", "run", "share_split_free", "summarise"]

DESCRIPTION = "Avent et al. Fig. 6: WCSS of hybrid, TCM-only and LM DP K-means over iterations tau"
PAPER = "Avent, Dubey, Korolova: The Power of the Hybrid Model for Mean Estimation (PETS 2020)"
#: "approximately equal": the hybrid's mean WCSS within this factor of the better baseline's ...
APPROX = 1.1
CENTRES = np.array([[0.25, 0.25], [0.25, 0.75], [0.75, 0.25], [0.75, 0.75]])
SIGMA, EPSILON, K, BOUNDS, CS = 0.028, 7.0, 4, (0.0, 1.0), (0.001, 0.01)
#: The cluster layouts every scale runs: the fixed grid, then random centres (:func:`layout_centres`).
LAYOUTS = ("grid", "random-0", "random-1")
#: Random layouts: centres at least this far apart (~7 sigma: no two clusters touch) and this far
#: from the edges (~3.6 sigma: clamping into the square moves almost no point).
MIN_SEPARATION, MARGIN = 0.2, 0.1
#: Algorithms that read every user alike and ignore the trust split: on the same draw they give the
#: same numbers at every ``c`` (same points, start and noise stream), so they run at the first ``c``
#: only and their results are copied to the others (:func:`share_split_free`).
SPLIT_FREE = ("lm", "lm-debiased", "lloyd")
#: ``(points per cluster, tau values, datasets per setting)`` of each scale.
SCALES = {"quick": (1_500, [1, 4], 4), "default": (40_000, [1, 2, 3, 4, 5, 6, 8, 10], 30),
          "full": (40_000, [1, 2, 3, 4, 5, 6, 8, 10], 364)}


def layout_centres(layout: str, seed: int = 0) -> np.ndarray:
    """The ``(K, 2)`` generating centres of ``layout``: :data:`CENTRES` for ``"grid"``; for
    ``"random-i"`` (``i >= 0``), ``K`` centres uniform in ``[MARGIN, 1 - MARGIN]^2``, redrawn (whole
    sets, from stream ``("study", "avent-kmeans", "layout", i)``) until every pair is at least
    :data:`MIN_SEPARATION` apart."""
    if layout == "grid":
        return CENTRES.copy()
    prefix, _, index = layout.partition("-") if isinstance(layout, str) else ("", "", "")
    if prefix != "random" or not index.isdigit():
        raise ValueError(f"layout must be 'grid' or 'random-<i>' (i = 0, 1, ...), got {layout!r}")
    gen = rng(seed, "study", "avent-kmeans", "layout", int(index))
    while True:
        c = MARGIN + (1 - 2 * MARGIN) * gen.random((K, 2))
        gaps = np.sqrt(((c[:, None] - c[None]) ** 2).sum(-1))[np.triu_indices(K, 1)]
        if gaps.min() >= MIN_SEPARATION:
            return c


def _points(layout: str, n_per: int, seed: int) -> np.ndarray:
    keys = ("study", "avent-kmeans", "points") + (() if layout == "grid" else (layout,))
    return gaussian_clusters(layout_centres(layout, seed), SIGMA, n_per, BOUNDS, rng(seed, *keys))


def candidates(tau: int) -> list:
    """The seven algorithms at ``tau`` iterations (labels: their coordinates along ``algorithm``)."""
    kw = {"k": K, "epsilon": EPSILON, "tau": tau, "bounds": BOUNDS}
    return [HybridKMeans(**kw), TCMKMeans(**kw), LMKMeans(**kw), HybridKMeans(**kw, pwh_noise="printed"),
            LMKMeans(**kw, debias=True), HybridKMeans(**kw, debias=True), LloydKMeans(K, tau, BOUNDS)]


def run(quick: bool = False, seed: int = 0, full: bool = False, engine: Engine | None = None,
        layouts=LAYOUTS) -> xr.Dataset:
    """Run the study over ``layouts`` (:data:`SCALES`: ``quick``, default or ``full``, the paper's 364
    datasets per setting); ``engine`` goes to :func:`evaluate_many`."""
    if quick and full:
        raise ValueError("quick and full exclude each other, got quick=True and full=True")
    layouts = list(layouts)
    if not layouts or len(set(layouts)) != len(layouts):
        raise ValueError(f"layouts must be distinct layout names, at least one, got {layouts!r}")
    n_per, taus, draws = SCALES["quick" if quick else "full" if full else "default"]
    centres = {name: layout_centres(name, seed) for name in layouts}
    sources = {(name, c): TrustSplitSource(x, BOUNDS, c, K, draws, centres[name])
               for name in layouts for x in [_points(name, n_per, seed)] for c in CS}
    grid = [(name, c, tau) for name in layouts for c in CS for tau in taus]
    runs = (({"layout": name, "c": c, "tau": t}, [m for m in candidates(t) if c == CS[0] or m.label not in SPLIT_FREE],
             sources[name, c]) for name, c, t in grid)
    ev = evaluate_many(runs, {"layout": layouts, "c": list(CS), "tau": taus}, task=WCSS(), seed=seed, dim="algorithm",
                       engine=engine)
    ds = summarise(share_split_free(ev))
    weight = [np.mean([candidates(t)[0].run(sources[name, c].generate(0, j, rng(seed, "dataset", 0, j)),
                                            rng(seed, "mechanism", "hybrid", 0, j)).weights[-1]
                       for j in range(min(draws, 5))]) for name, c, t in grid]
    ds["pwh_weight"] = (("layout", "c", "tau"), np.reshape(weight, (len(layouts), len(CS), len(taus))))
    ds["pwh_weight"].attrs["description"] = "hybrid's TCM weight in the last iteration, mean over clusters, first 5 datasets"
    ds["centres"] = (("layout", "cluster", "coordinate"), np.stack([centres[name] for name in layouts]))
    ds["centres"].attrs["description"] = "generating centres of each layout (grid: fixed; random-i: named stream)"
    ds.attrs.update({"n_per_cluster": n_per, "draws": draws, "sigma": SIGMA, "epsilon": EPSILON, "k": K,
                     "min_separation": MIN_SEPARATION, "margin": MARGIN,
                     "config": {"n_per_cluster": n_per, "taus": taus, "draws": draws, "layouts": layouts}})
    return ds


def share_split_free(ev: xr.Dataset) -> xr.Dataset:
    """The evaluation with every :data:`SPLIT_FREE` algorithm's entries at ``c = CS[0]`` (risks, losses,
    declarations, labels) copied to the other ``c`` values, where the engine left them empty."""
    ev = ev.copy()
    free, rest = list(SPLIT_FREE), list(CS[1:])
    for name, var in ev.data_vars.items():
        if "c" in var.dims and "algorithm" in var.dims:
            var = var.copy()
            var.loc[{"c": rest, "algorithm": free}] = var.sel(c=[CS[0]], algorithm=free).values
            ev[name] = var
    return ev


def summarise(ev: xr.Dataset) -> xr.Dataset:
    """``wcss`` ``(algorithm, layout, c, tau, draw)`` from the evaluation, means with 95% intervals, quantiles, ratios."""
    ds = ev.drop_vars(["loss", "risk", "truth"])  # risk is wcss below (one release per dataset)
    ds["wcss"] = wcss = ev["risk"].isel(chain=0, drop=True).transpose("algorithm", "layout", "c", "tau", "draw")
    ds["wcss_mean"], ds["wcss_low"], ds["wcss_high"] = mean_with_ci(wcss, "draw")
    ds["wcss_q025"], ds["wcss_q975"] = (wcss.quantile(q, "draw").drop_vars("quantile") for q in (0.025, 0.975))
    ds["wcss_generating"] = ev["truth"].sel(quantity="wcss_generating").isel(chain=0, draw=0, c=0, tau=0, drop=True)  # per layout
    m = {a: ds["wcss_mean"].sel(algorithm=a, drop=True) for a in ds.algorithm.values}
    ds["hybrid_over_best"] = m["hybrid"] / np.minimum(m["tcm"], m["lm"])
    ds["hybrid_debiased_over_best"] = m["hybrid-debiased"] / np.minimum(m["tcm"], m["lm-debiased"])
    ds["wcss"].attrs["description"] = "WCSS of all users' true points to the final centres, one per dataset"
    ds["wcss_mean"].attrs["description"] = "mean over datasets; _low/_high: normal 95% interval of the mean"
    ds["hybrid_over_best"].attrs["description"] = "mean WCSS of hybrid / min(tcm, lm); _debiased: of the debiased"
    return ds


def plot(ds: xr.Dataset, path: str | Path) -> Figure:
    """One row per layout: the layout (centres, 2 sigma circles), then WCSS against tau per c (means with
    95% bands; debiased variants dashed, Lloyd dotted, grey: the WCSS at the generating centres)."""
    rows = ds.layout.size
    fig = Figure(figsize=(3.0 + 4.4 * ds.c.size, 3.3 * rows))
    axes = fig.subplots(rows, 1 + ds.c.size, squeeze=False, gridspec_kw={"width_ratios": [0.62] + [1] * ds.c.size})
    style = {"hybrid": ("tab:green", "o-"), "tcm": ("tab:blue", "o-"), "lm": ("tab:red", "o-"),
             "hybrid-debiased": ("tab:green", "--"), "lm-debiased": ("tab:red", "--"), "lloyd": ("k", ":")}
    tau = ds.tau.values
    for row, layout in zip(axes, ds.layout.values):
        lay = ds.sel(layout=layout)
        for (cx, cy) in lay.centres.values:
            row[0].add_patch(Circle((cx, cy), 2 * SIGMA, color="tab:purple", alpha=0.35, lw=0))
        row[0].plot(*lay.centres.values.T, "+", color="k", ms=6)
        row[0].set(xlim=BOUNDS, ylim=BOUNDS, aspect="equal", xticks=[0, 0.5, 1], yticks=[0, 0.5, 1])
        row[0].set_title(f"layout: {layout}", fontsize=9)
        for ax, c in zip(row[1:], ds.c.values):
            for a, (color, fmt) in style.items():
                e = lay.sel(c=c, algorithm=a)
                ax.plot(tau, e.wcss_mean, fmt, color=color, lw=1.5 if fmt == "o-" else 1, ms=3, label=a)
                if fmt == "o-":
                    ax.fill_between(tau, e.wcss_low, e.wcss_high, color=color, alpha=0.2, lw=0)
            ax.axhline(float(lay.wcss_generating), color="grey", lw=0.6)
            ax.set(yscale="log")
            ax.set_title(f"{layout}: c = {100 * c:g}% TCM users", fontsize=9)
        row[1].set_ylabel("WCSS (mean, 95% band)", fontsize=8)
    for ax in axes[-1, 1:]:
        ax.set_xlabel("iterations tau")
    axes[0, -1].legend(fontsize=7, ncol=2)
    fig.suptitle(f"Hybrid vs TCM-only vs LM DP K-means, epsilon = {EPSILON:g} ({int(ds.attrs['draws'])} datasets, "
                 f"{4 * int(ds.attrs['n_per_cluster']):,} points per layout; grey: WCSS at the true centres)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    return fig


def claim_cells(ds: xr.Dataset) -> xr.Dataset:
    """Per ``(layout, c, tau)`` cell: ``ratio`` (hybrid / better baseline), ``approx`` (at most
    :data:`APPROX` times, or the 95% intervals overlap), ``tcm_sig`` / ``lm_sig`` (TCM-only / LM
    significantly better: the intervals do not overlap); ``better`` is the lower mean."""
    def pick(a):
        return tuple(ds[v].sel(algorithm=a, drop=True) for v in ("wcss_mean", "wcss_low", "wcss_high"))

    (h, hl, hh), (t, tl, th), (lm, ll, lh) = pick("hybrid"), pick("tcm"), pick("lm")
    tcm_better = t <= lm
    b, bl, bh = xr.where(tcm_better, t, lm), xr.where(tcm_better, tl, ll), xr.where(tcm_better, th, lh)
    return xr.Dataset({"ratio": h / b, "approx": (h <= APPROX * b) | ((hl <= bh) & (bl <= hh)),
                       "tcm_sig": th < ll, "lm_sig": lh < tl})


def claims(ds: xr.Dataset) -> list:
    """Section 7's claims about Figure 6, one verdict per layout (this run's c and tau).  "Approximately
    equal to the better of the two": the hybrid's mean WCSS is at most :data:`APPROX` times the better
    baseline's, or the two 95% intervals overlap; holds in every cell: holds, in at least half: partly.
    "One example of each regime": in one c panel TCM-only is significantly better (intervals apart) at
    some tau, and LM in another (or the same) panel."""
    from ._claims import Claim

    cells = claim_cells(ds)
    rows = []
    for layout in ds.layout.values:
        cl = cells.sel(layout=layout)
        ok, ratio = cl.approx, cl.ratio
        n_ok, n = int(ok.sum()), int(ok.size)
        per_c = "; ".join(f"c = {100 * float(c):g}%: {float(ratio.sel(c=c).min()):.2f}-{float(ratio.sel(c=c).max()):.2f}"
                          for c in ds.c.values)
        rows.append(Claim(f"Sec. 7, Fig. 6 ({layout} layout)", "the hybrid algorithm is able to maintain a WCSS "
                          "approximately equal to the better of the two baselines (TCM-only, LM)", "-",
                          f"{layout}: hybrid / better baseline {float(ratio.min()):.2f}-{float(ratio.max()):.2f} "
                          f"({per_c}); approximately equal (<= {APPROX:g}x or 95% intervals overlap) in {n_ok} of {n} "
                          "(c, tau) cells",
                          "holds" if n_ok == n else ("partly" if 2 * n_ok >= n else "does not hold")))
        panels = [" and ".join(name for name, sig in (("TCM", cl.tcm_sig), ("LM", cl.lm_sig)) if bool(sig.sel(c=c).any()))
                  for c in ds.c.values]
        each = any("TCM" in p and "LM" in q for i, p in enumerate(panels) for j, q in enumerate(panels) if i != j)
        text = "; ".join(f"c = {100 * float(c):g}%: significantly better at some tau: {p or 'neither'}"
                         for c, p in zip(ds.c.values, panels))
        rows.append(Claim(f"Sec. 7, Fig. 6 ({layout} layout)", "one example of each regime: LM better than TCM-only "
                          "in one panel, TCM-only better in the other", "-", f"{layout}: {text}",
                          "holds" if each else "does not hold"))
    return rows
