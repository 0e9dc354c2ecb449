"""Settings and figures shared by the Avent et al. (hybrid trust model) studies.

The library does the work: exact curves from :mod:`hybridpriv.theory.avent`, Monte Carlo through
:func:`hybridpriv.engine.evaluate.evaluate_many` with ``Statistic(target="sample")`` (the paper scores
every estimator against the empirical mean of all records, Definition 2.2), summaries from
:mod:`hybridpriv.families.hybrid_trust.summary`.  Here: the paper's settings, the two-group candidates
and sources every study builds, and the figure helpers (Matplotlib's object API, no pyplot).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from ..core.privacy import Group
from ..engine.stats import Z95
from ..families.grouped import IIDSource
from ..families.hybrid_trust.mechanisms import FullLM, Hybrid, TCMOnly
from ..theory._xarray import axis

__all__ = ["BETAS", "SALARY", "Z95", "axis", "beta_variance", "candidates", "group_sizes", "heatmap",
           "plot_beta_curves", "source", "style"]

#: the three symmetric Beta distributions of Figure 1 (label, alpha, beta) on [0, 1]
BETAS: tuple[tuple[str, float, float], ...] = (
    ("Beta(10,10)", 10.0, 10.0),
    ("Beta(1,1)", 1.0, 1.0),
    ("Beta(0.1,0.1)", 0.1, 0.1),
)

#: the published figures of the 2010 UC salary data (Section 4): the risk depends on the data
#: only through n, m and sigma, so no data file is needed
SALARY = {"n": 252_540, "m": 2_349_033.0, "sigma": 53_254.0}


def beta_variance(a: float, b: float) -> float:
    """Variance of Beta(a, b) on [0, 1]."""
    return a * b / ((a + b) ** 2 * (a + b + 1.0))


def group_sizes(n: int, c: float) -> tuple[int, int]:
    """Integer sizes ``(|T|, |L|)`` for ``n`` users with TCM fraction ``c`` (``|T| = round(c n)``)."""
    t = int(round(c * n))
    if not 1 <= t <= n - 1:
        raise ValueError(f"c * n must round to a size in [1, n - 1], got c={c!r}, n={n!r}")
    return t, n - t


def candidates(n_T: int, n_L: int, epsilon: float, m: float, hybrids: Mapping[str, Mapping]) -> tuple[list[Group], dict]:
    """The groups (TCM users; LM users, who require local DP) and the estimators ``tcm-only``,
    ``full-lm`` and each hybrid (Laplace noise; ``hybrids`` maps a label to ``Hybrid``'s keyword
    arguments), records on ``[0, m]``."""
    groups = [Group("tcm", n_T, epsilon), Group("lm", n_L, epsilon, trust="local")]
    ests = {"tcm-only": TCMOnly(groups, (0.0, m)), "full-lm": FullLM(groups, (0.0, m))}
    ests.update({label: Hybrid(groups, (0.0, m), **kw) for label, kw in hybrids.items()})
    return groups, ests


def source(groups: Sequence[Group], m: float, samplers: Sequence[Callable], means: Sequence[float],
           draws: int) -> IIDSource:
    """Fresh two-group datasets on ``[0, m]``, one sampler per group; the population ``mean`` is the
    pooled one, ``(n_T mu_T + n_L mu_L) / n``."""
    sizes = np.array([g.size for g in groups], dtype=float)
    return IIDSource(groups, (0.0, m), list(samplers), {"mean": float(np.dot(sizes, means) / sizes.sum())}, draws)


def style(k: int) -> dict:
    colors = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink")
    return {"color": colors[k % len(colors)]}


def plot_beta_curves(ds: xr.Dataset, path, variables: Sequence[tuple[str, str]], title: str,
                     columns: str = "distribution", log_y: Sequence[bool] | None = None) -> Figure:
    """One panel per ``columns`` value and per variable: the exact curves over ``n`` for every
    ``(c, epsilon)``, Monte Carlo points (``VAR_mc`` +- 1.96 ``VAR_mc_se``) at ``n_mc``, dotted
    verticals at ``n_crit`` where it falls in the range."""
    cols = list(ds[columns].values)
    fig = Figure(figsize=(4.6 * len(cols), 3.5 * len(variables)))
    axes = fig.subplots(len(variables), len(cols), squeeze=False, sharex=True)
    n = ds.n.values
    for row, (var, label) in enumerate(variables):
        for j, col in enumerate(cols):
            ax = axes[row, j]
            k = 0
            for c in ds.c.values:
                for eps in ds.epsilon.values:
                    st = style(k)
                    k += 1
                    sel = {columns: col, "c": c, "epsilon": eps}
                    ax.plot(n, ds[var].sel(sel), lw=1.6, label=f"c={100 * c:g}%, eps={eps:g}", **st)
                    if f"{var}_mc" in ds:
                        y, e = ds[f"{var}_mc"].sel(sel), Z95 * ds[f"{var}_mc_se"].sel(sel)
                        jitter = 1.0 + 0.04 * (k - 2.5)  # keep the four points at one n apart
                        ax.errorbar(ds.n_mc.values * jitter, y, yerr=e, fmt="o", ms=4, capsize=3, **st)
                    if "n_crit" in ds and columns in ds["n_crit"].dims:
                        nc = float(ds["n_crit"].sel(sel))
                        if n[0] < nc < n[-1]:
                            ax.axvline(nc, ls=":", lw=1, **st)
            ax.set_xscale("log")
            if log_y is not None and log_y[row]:
                ax.set_yscale("log")
            ax.axhline(1.0, color="0.5", lw=0.8)
            ax.set_title(f"{col}" if row == 0 else "")
            ax.set_ylabel(label if j == 0 else "")
            ax.set_xlabel("n" if row == len(variables) - 1 else "")
            ax.grid(alpha=0.3, lw=0.4)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=75)
    return fig


def heatmap(fig: Figure, ax, x: np.ndarray, y: np.ndarray, z: np.ndarray, levels, log: bool = False,
            label: str = "", fmt: str = "%.2g") -> None:
    """``z`` (rows: ``y``) as a colour map with white labelled contours at ``levels``; log colour if ``log``."""
    from matplotlib.colors import LogNorm

    norm = LogNorm(vmin=max(float(z.min()), 1e-300), vmax=float(z.max())) if log else None
    im = ax.pcolormesh(x, y, z, shading="auto", cmap="viridis", norm=norm)
    cs = ax.contour(x, y, z, levels=levels, colors="w", linewidths=0.8)
    ax.clabel(cs, fmt=fmt, fontsize=7)
    fig.colorbar(im, ax=ax, label=label)
