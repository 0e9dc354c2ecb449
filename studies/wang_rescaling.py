"""Wang et al. (2018), Section 3.2 and Figures 2-3: how Algorithm 1's rescaling changes the weights.

Setting (the paper's Figure 2): ``D``: ``n_D = 10^4`` points, ``X_D ~ MVN(0, diag(1, 1))``, outcome
logistic in ``X_D`` with ``beta_D = (0.2, 0.4)``; ``E``: ``n_E = 10^4``, ``X_E ~ MVN(0, diag(0.5, 1))``,
``beta_E = (0.5, -0.1)``.  Each public point's count ``|D_y|`` (how many private points have it as
their nearest, the outcome column included) on the original points and on the rescaled ones
(Algorithm 1, step 1: both sets to the public range; private values beyond it are truncated).  The
paper reports one draw: "42 out of 10^4" public points whose counts differ by more than 2, "mainly"
on the boundaries of covariate 1.  We repeat the draw (``repeats``, each from stream ``("study",
"wang-rescaling", r)``) and report the distribution.  A deterministic property of each dataset (no
releases, no noise): the engine options do not apply.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from ..core.random import rng
from ..engine.options import Engine, as_engine
from ..families.public_private.wang import HybridDesign, representation_counts
from .wang_subset import PAPER

__all__ = ["TAIL", "DESCRIPTION", "PAPER", "claims", "plot", "run", "simulate"]

DESCRIPTION = "Wang et al. Sec. 3.2, Figs. 2-3: how rescaling to the public range changes the representation weights"
#: "On the boundaries of covariate 1": among the public points with the lowest or the highest ``TAIL``
#: share of covariate 1 (so ``2 TAIL`` of all public points are there).
TAIL = 0.05


def simulate(n_private: int, n_public: int, g: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One draw of Figure 2's ``(D, E)``, columns ``x0, x1, y``.  Draws: ``X_D``, ``X_E``, the uniforms of
    ``y_D`` then of ``y_E``."""
    Xd = g.standard_normal((n_private, 2))
    Xe = g.standard_normal((n_public, 2)) * np.sqrt([0.5, 1.0])
    yd = (g.random(n_private) < 1 / (1 + np.exp(-Xd @ [0.2, 0.4]))).astype(float)
    ye = (g.random(n_public) < 1 / (1 + np.exp(-Xe @ [0.5, -0.1]))).astype(float)
    return np.c_[Xd, yd], np.c_[Xe, ye]


def run(quick: bool = False, seed: int = 0, engine: Engine | None = None) -> xr.Dataset:
    """Counts on the original and the rescaled points, per repeat (``quick``: n = 2,000, 5 repeats;
    default: the paper's n = 10^4, 100 repeats)."""
    engine = as_engine(engine)
    given = [o for o, v in (("--workers", engine.client), ("--resume", engine.checkpoint),
                            ("--chunk-size", engine.chunk_size)) if v is not None]
    if given:
        raise ValueError(f"wang-rescaling computes a property of each dataset (no Monte Carlo of releases): "
                         f"{', '.join(given)} {'does' if len(given) == 1 else 'do'} not apply")
    n, repeats = (2_000, 5) if quick else (10_000, 100)
    over, max_diff, band_over, band_all, clipped = (np.zeros(repeats) for _ in range(5))
    first = {}
    for r in range(repeats):
        D, E = simulate(n, n, rng(seed, "study", "wang-rescaling", r))
        design = HybridDesign(D, E, columns=("x0", "x1", "y"), label="y")
        d01, e01, _ = design.rescaled()
        diff = design.counts() - representation_counts(D, E, "kdtree")
        big = np.abs(diff) > 2
        lo, hi = np.quantile(e01[:, 0], [TAIL, 1 - TAIL])
        edge = (e01[:, 0] < lo) | (e01[:, 0] > hi)
        over[r], max_diff[r] = big.sum(), np.abs(diff).max()
        band_over[r] = edge[big].mean() if big.any() else np.nan
        band_all[r] = edge.mean()
        clipped[r] = ((D[:, 0] < E[:, 0].min()) | (D[:, 0] > E[:, 0].max())).mean()
        if r == 0:
            first = {"D": D, "E": E, "d01": d01, "e01": e01, "diff": diff}
    ds = xr.Dataset(
        {
            "over_2": (("repeat",), over), "max_abs_diff": (("repeat",), max_diff),
            "boundary_share_over_2": (("repeat",), band_over), "boundary_share_all": (("repeat",), band_all),
            "private_clipped_x0": (("repeat",), clipped),
            "private": (("point", "column"), first["D"]), "public": (("public_point", "column"), first["E"]),
            "private01": (("point", "column"), first["d01"]), "public01": (("public_point", "column"), first["e01"]),
            "count_diff": (("public_point",), first["diff"]),
        },
        coords={"repeat": np.arange(repeats), "column": ["x0", "x1", "y"]},
    )
    ds["over_2"].attrs["description"] = "public points whose |D_y| differs by more than 2 (rescaled minus original)"
    ds["boundary_share_over_2"].attrs["description"] = (f"share of those among the lowest or highest {TAIL:.0%} of "
                                                        "the public points in covariate 1 (NaN: none)")
    ds["boundary_share_all"].attrs["description"] = "the same share among all public points"
    ds["private_clipped_x0"].attrs["description"] = "share of private points outside the public range of covariate 1"
    ds.attrs.update({"n_private": n, "n_public": n, "repeats": repeats, "tail": TAIL})
    return ds


def claims(ds: xr.Dataset) -> list:
    """Section 3.2's numbers: '42 of 10^4' counts differ by more than 2; they lie mainly on covariate 1's
    boundaries."""
    from ._claims import Claim

    over, n = ds.over_2.values, int(ds.attrs["n_public"])
    lo, med, hi = np.percentile(over, [5, 50, 95])
    inside = lo <= 42 * n / 10_000 <= hi
    rows = [Claim("Sec. 3.2, Fig. 3", "only 42 out of 10^4 public points have weights that differ by more than 2 "
                  "counts after rescaling (public and private sets not very different)", "42 of 10^4",
                  f"median {med:g} of {n:,} (5-95%: {lo:g}-{hi:g}) over {len(over)} draws; largest difference "
                  f"{int(ds.max_abs_diff.max())} counts",
                  "not comparable" if n != 10_000 else ("holds" if inside else "does not hold"))]
    b_over = float(np.nanmean(ds.boundary_share_over_2.values))
    b_all = float(ds.boundary_share_all.mean())
    rows.append(Claim("Sec. 3.2, Fig. 3", "the points with large different weights mainly lie on the boundaries of "
                      "covariate 1", "-", f"{100 * b_over:.0f}% of them among the lowest or highest "
                      f"{ds.attrs['tail']:.0%} of the public points in covariate 1 (all public points: "
                      f"{100 * b_all:.0f}%); private points beyond the public range of "
                      f"covariate 1: {100 * float(ds.private_clipped_x0.mean()):.1f}%",
                      "holds" if b_over > 0.5 else ("partly" if b_over > 2 * b_all else "does not hold")))
    return rows


def plot(ds: xr.Dataset, path: str | Path) -> None:
    """Figure 2 (original and rescaled sets, outcome by colour) and Figure 3 (public points whose count
    changed by at most 2 / more than 2), from the first draw."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 6.4))
    axes = fig.subplots(2, 3)
    sets = [("private", "D"), ("public", "E"), ("private01", "rescaled D"), ("public01", "rescaled E")]
    for ax, (name, title) in zip([axes[0, 0], axes[0, 1], axes[1, 0], axes[1, 1]], sets):
        v = ds[name].values
        ax.scatter(v[:, 0], v[:, 1], c=np.where(v[:, 2] > 0, "tab:red", "tab:blue"), s=1, alpha=0.4, lw=0)
        ax.set_title(title, fontsize=9)
        ax.tick_params(labelsize=7)
    e01, big = ds.public01.values, np.abs(ds.count_diff.values) > 2
    for ax, mask, title in ((axes[0, 2], ~big, "counts changed by <= 2"), (axes[1, 2], big, "counts changed by > 2")):
        ax.scatter(e01[:, 0], e01[:, 1], s=1, color="0.8", lw=0)
        ax.scatter(e01[mask, 0], e01[mask, 1], s=3 if mask is big else 1, color="tab:red", lw=0)
        ax.set_title(f"rescaled E: {title} ({int(mask.sum())} points)", fontsize=9)
        ax.tick_params(labelsize=7)
    fig.suptitle(f"Wang et al. Figs. 2-3: rescaling (first of {ds.attrs['repeats']} draws, n_D = n_E = "
                 f"{ds.attrs['n_private']:,}); red dots: y = 1 (left), changed counts (right)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=70)
