"""Avent et al., Figures 2 and 8: R(KVH), R(PWH) and r(PWH) on the UC salary parameters.

n = 252,540, m = 2,349,033, sigma = 53,254 (the paper's published figures of the 2010 UC
salaries; the risk depends on the data only through these three numbers, so no data file is
needed), Laplace noise, c in [0.1%, 10%] and epsilon in [0.1, 10] on log grids.  The heatmaps
are the exact formulas (one vectorised call).  Monte Carlo points at a few ``(c, epsilon)`` run
the estimators on synthetic salaries with the same n, m and sigma: ``m * Beta(a, b)`` with mean
60,000 (our assumption; the homogeneous risk does not depend on the mean) and standard
deviation 53,254, scored against the empirical mean of all 252,540 records.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from . import _avent_common as common

__all__ = ["DESCRIPTION", "MC_POINTS", "formula_grid", "plot", "run", "salary_beta"]

DESCRIPTION = "Avent et al. Figs. 2, 8: R(KVH), R(PWH), r(PWH) heatmaps on the UC salary parameters"
N, M, SIGMA = common.SALARY["n"], common.SALARY["m"], common.SALARY["sigma"]
#: mean of the synthetic salaries used by the Monte Carlo points (an assumption: not published)
MEAN = 60_000.0
ESTIMATORS = ("kvh", "pwh")
#: (c, epsilon) of the Monte Carlo points; quick runs the first only
MC_POINTS = ((0.01, 1.0), (0.1, 0.1), (0.003, 10.0))


def salary_beta() -> tuple[float, float]:
    """``(a, b)`` with ``m * Beta(a, b)`` of mean :data:`MEAN` and standard deviation sigma."""
    p, v = MEAN / M, (SIGMA / M) ** 2
    total = p * (1 - p) / v - 1
    return p * total, (1 - p) * total


def formula_grid(cs, epsilons, n=N) -> xr.Dataset:
    """Exact R and r of KVH and PWH over ``estimator x c x epsilon`` (one vectorised call each)."""
    from hybridpriv.theory.avent import hybrid_mse, kvh_weight, noise_variances, pwh_weight, relative_improvement

    sigma2 = SIGMA**2
    c, eps = common.axis("c", cs), common.axis("epsilon", epsilons)
    n = xr.DataArray(float(n))
    s_T2, s_L2 = noise_variances("laplace", eps, M, n, c)
    w = xr.concat([kvh_weight(n, c, sigma2, s_T2, s_L2), pwh_weight(n, c, s_T2, s_L2) + 0 * c * eps],
                  dim=xr.DataArray(list(ESTIMATORS), dims="estimator"))
    mse = hybrid_mse(w, n, c, sigma2, sigma2, s_T2, s_L2)
    R, r = relative_improvement(mse, n, c, sigma2, sigma2, s_T2, s_L2)
    order = ("estimator", "c", "epsilon")
    return xr.Dataset({"R": R.transpose(*order), "r": r.transpose(*order), "weight": w.transpose(*order),
                       "mse": mse.transpose(*order)})


def run(quick: bool = False, seed: int = 0, progress: bool = False, client=None, checkpoint=None,
        chunk_size=None) -> xr.Dataset:
    """Exact heatmaps plus Monte Carlo points (engine: ``client``, ``checkpoint``, ``chunk_size``)."""
    cs = np.logspace(-3, -1, 81)
    epsilons = np.logspace(-1, 1, 81)
    ds = formula_grid(cs, epsilons)
    points = MC_POINTS[:1] if quick else MC_POINTS
    draws = 200 if quick else 400
    ds = ds.merge(_monte_carlo(points, draws, seed, progress,
                               {"client": client, "checkpoint": checkpoint, "chunk_size": chunk_size}))
    ds["R"].attrs["description"] = "min(MSE_TCM-only, MSE_Full-LM) / MSE, exact (Theorems 4.3, 5.5)"
    ds["r"].attrs["description"] = "max(MSE_TCM-only, MSE_Full-LM) / MSE, exact (Definition 5.1)"
    ds.attrs.update({"noise": "laplace", "n": N, "m": M, "sigma": SIGMA, "draws": draws,
                     "mc_data": "m * Beta(a, b), mean 60,000, sd 53,254 (synthetic; mean assumed)",
                     "config": {"quick": bool(quick), "mc_points": [list(p) for p in points], "draws": draws}})
    return ds


def _monte_carlo(points, draws, seed, progress, engine) -> xr.Dataset:
    a, b = salary_beta()
    sampler = common.beta_sampler(a, b, scale=M)
    point = list(range(len(points)))
    c_used = []

    def runs():
        for k, (c, eps) in enumerate(points):
            n_T, n_L = common.group_sizes(N, c)
            c_used.append(n_T / N)
            groups, ests = common.hybrid_setup(n_T, n_L, eps, M, {
                "kvh": {"weight": "kvh", "sigma2": SIGMA**2}, "pwh": {"weight": "pwh"}})
            source = common.TwoGroupSource(groups, (0.0, M), (sampler, sampler), draws, (MEAN, MEAN))
            yield {"point": k}, ests, source

    loss = common.mc_mse(runs(), {"point": point}, common.child_seeds(seed, 1)[0], progress, engine)
    out = common.mc_summary(loss, ESTIMATORS)
    # theory at exactly the simulated settings (c = |T| / n)
    th = [formula_grid([c], [eps]).isel(c=0, epsilon=0, drop=True) for c, (_, eps) in zip(c_used, points)]
    th = xr.concat(th, dim=xr.DataArray(point, dims="point"))
    out["R_theory_mc"] = th["R"].transpose("estimator", "point")
    out["r_theory_mc"] = th["r"].transpose("estimator", "point")
    out["mse_theory_mc"] = th["mse"].transpose("estimator", "point")
    out = out.assign_coords(c_mc=("point", np.array(c_used)), epsilon_mc=("point", np.array([p[1] for p in points])))
    return out


def plot(ds: xr.Dataset, path: str | Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    panels = (("R", "kvh", "R(KVH)  (Fig. 2b)", False), ("R", "pwh", "R(PWH)  (Fig. 8a)", False),
              ("r", "pwh", "r(PWH)  (Fig. 8b, log colour)", True))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    c, eps = ds.c.values * 100, ds.epsilon.values
    for ax, (var, est, title, log) in zip(axes, panels):
        z = ds[var].sel(estimator=est).transpose("epsilon", "c").values
        norm = LogNorm(vmin=max(z.min(), 1e-3), vmax=z.max()) if log else None
        im = ax.pcolormesh(c, eps, z, shading="auto", cmap="viridis", norm=norm)
        cs = ax.contour(c, eps, z, levels=[0.5, 1.0, 2.0] if not log else [10, 100, 1500], colors="w", linewidths=0.8)
        ax.clabel(cs, fmt="%g", fontsize=7)
        fig.colorbar(im, ax=ax)
        if "c_mc" in ds:
            ax.plot(ds.c_mc.values * 100, ds.epsilon_mc.values, "r^", ms=7, clip_on=False, zorder=5)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("c (% of users in TCM)")
        ax.set_ylabel("epsilon")
        ax.set_title(title)
    fig.suptitle("UC salaries (n=252,540, m=2,349,033, sigma=53,254), Laplace: exact; red triangles: Monte Carlo points",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
