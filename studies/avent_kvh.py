"""Avent et al., Figure 1: relative improvement R(KVH) of the known-variance hybrid estimator.

Beta(10,10), Beta(1,1) and Beta(0.1,0.1) records on [0, 1] (m = 1), n from 1e3 to 1e5,
c in {0.5%, 5%}, epsilon in {0.1, 1}, Laplace noise (the paper's empirical setting).
The curves are the exact formulas (:func:`hybridpriv.theory.avent.hybrid_mse` with the KVH
weight of Definition 4.1 and :func:`~hybridpriv.theory.avent.relative_improvement`), one
vectorised call over the grid.  Monte Carlo points at a few ``n`` run the estimators
(``Hybrid(weight="kvh")``, ``TCMOnly``, ``FullLM``) through the evaluation engine against
the empirical mean of all records, fresh data and noise per dataset.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from . import _avent_common as common

__all__ = ["DESCRIPTION", "plot", "run", "formula_grid"]

DESCRIPTION = "Avent et al. Fig. 1: R(KVH) on Beta data over n, c, epsilon (exact + Monte Carlo)"
CS = (0.005, 0.05)
EPSILONS = (0.1, 1.0)
M = 1.0


def n_grid(quick: bool) -> np.ndarray:
    """Log-spaced n in [1e3, 1e5] (whole numbers; 1e3, 1e4 and 1e5 included)."""
    per_decade = 40  # the formulas are cheap: the same fine grid at every scale
    return np.unique(np.round(np.logspace(3, 5, 2 * per_decade + 1)))


def formula_grid(ns, cs=CS, epsilons=EPSILONS, betas=common.BETAS, weight: str = "kvh") -> xr.Dataset:
    """Exact MSEs, weight, R and r over ``distribution x n x c x epsilon`` (one vectorised call each).

    ``weight``: ``"kvh"`` (Definition 4.1), ``"pwh"`` (Definition 5.3) or ``"naive"`` (``w = c``).
    """
    from hybridpriv.theory.avent import (
        c_crit_laplace,
        hybrid_mse,
        kvh_weight,
        n_crit_laplace,
        noise_variances,
        pwh_weight,
        relative_improvement,
    )

    dist = xr.DataArray([b[0] for b in betas], dims="distribution")
    sigma2 = xr.DataArray([common.beta_variance(a, b) for _, a, b in betas], dims="distribution",
                          coords={"distribution": dist})
    n, c, eps = common.axis("n", ns), common.axis("c", cs), common.axis("epsilon", epsilons)
    s_T2, s_L2 = noise_variances("laplace", eps, M, n, c)
    if weight == "kvh":
        w = kvh_weight(n, c, sigma2, s_T2, s_L2)
    elif weight == "pwh":  # the PWH weight does not depend on the data: broadcast it over the distributions
        w = pwh_weight(n, c, s_T2, s_L2).broadcast_like(sigma2)
    elif weight == "naive":  # w = c (Section 5: "weight ... based purely on the group size")
        w = (c + 0 * s_T2).broadcast_like(sigma2)
    else:
        raise ValueError(f"weight must be 'kvh', 'pwh' or 'naive', got {weight!r}")
    mse = hybrid_mse(w, n, c, sigma2, sigma2, s_T2, s_L2)
    R, r = relative_improvement(mse, n, c, sigma2, sigma2, s_T2, s_L2)
    order = ("distribution", "n", "c", "epsilon")
    ds = xr.Dataset({
        "R": R.transpose(*order),
        "r": r.transpose(*order),
        "weight": w.transpose(*order),
        "mse": mse.transpose(*order),
        "sigma2": sigma2,
        "c_crit": c_crit_laplace(eps, M, sigma2).transpose("distribution", "epsilon"),
        "n_crit": n_crit_laplace(c, eps, M, sigma2).transpose("distribution", "c", "epsilon"),
    })
    return ds


def run(quick: bool = False, seed: int = 0, progress: bool = False, client=None, checkpoint=None,
        chunk_size=None) -> xr.Dataset:
    """Exact curves on the full grid, Monte Carlo points at ``n_mc`` (engine: ``client``, ``checkpoint``, ``chunk_size``)."""
    ns = n_grid(quick)
    ds = formula_grid(ns)
    n_mc = (1000,) if quick else (1000, 10000)
    draws = 400 if quick else 1500
    mc = common.beta_mc(n_mc, CS, EPSILONS, common.BETAS, M, {"kvh": {"weight": "kvh"}}, draws,
                        common.child_seeds(seed, 1)[0], progress,
                        {"client": client, "checkpoint": checkpoint, "chunk_size": chunk_size})
    at_mc = formula_grid(list(n_mc)).rename(n="n_mc")
    mc["R_theory_mc"] = at_mc["R"]
    mc["mse_theory_mc"] = at_mc["mse"]
    ds = ds.merge(mc)
    ds["R"].attrs["description"] = "R(KVH) = min(MSE_TCM-only, MSE_Full-LM) / MSE_KVH, exact (Theorem 4.3)"
    ds.attrs.update({
        "noise": "laplace",
        "m": M,
        "draws": draws,
        "config": {"quick": bool(quick), "n_points": len(ns), "n_mc": list(n_mc), "draws": draws},
    })
    return ds


def plot(ds: xr.Dataset, path: str | Path) -> None:
    common.plot_beta_curves(ds, path, [("R", "R(KVH)")],
                            "Avent et al. Fig. 1: R(KVH), Laplace, m = 1 (lines: exact; points: Monte Carlo, 95% CI; "
                            "dotted: n_crit)")
