"""Avent et al., Figure 3: R(PWH) and r(PWH) of the privacy-weighted hybrid on the Beta grid.

The same setting as Figure 1 (:mod:`hybridpriv.studies.avent_kvh`): Beta(10,10), Beta(1,1),
Beta(0.1,0.1) on [0, 1], n from 1e3 to 1e5, c in {0.5%, 5%}, epsilon in {0.1, 1}, Laplace
noise.  Curves: the exact formulas (PWH weight of Definition 5.3 in
:func:`hybridpriv.theory.avent.hybrid_mse`, then
:func:`~hybridpriv.theory.avent.relative_improvement`); R(KVH) is stored beside them for the
comparison the paper makes.  Monte Carlo points at a few ``n`` run ``Hybrid(weight="pwh")``,
``TCMOnly`` and ``FullLM`` through the evaluation engine.
"""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from . import _avent_common as common
from .avent_kvh import CS, EPSILONS, M, formula_grid, n_grid

__all__ = ["DESCRIPTION", "plot", "run"]

DESCRIPTION = "Avent et al. Fig. 3: R(PWH) and r(PWH) on Beta data over n, c, epsilon (exact + Monte Carlo)"


def run(quick: bool = False, seed: int = 0, progress: bool = False, client=None, checkpoint=None,
        chunk_size=None) -> xr.Dataset:
    """Exact curves on the full grid, Monte Carlo points at ``n_mc`` (engine: ``client``, ``checkpoint``, ``chunk_size``)."""
    ns = n_grid(quick)
    pwh = formula_grid(ns, weight="pwh")
    kvh = formula_grid(ns, weight="kvh")
    naive = formula_grid(ns, weight="naive")
    ds = pwh[["R", "r", "weight", "mse", "sigma2", "c_crit", "n_crit"]]
    ds["R_kvh"] = kvh["R"]
    ds["R_naive"] = naive["R"]
    n_mc = (1000,) if quick else (1000, 10000)
    draws = 400 if quick else 1500
    mc = common.beta_mc(n_mc, CS, EPSILONS, common.BETAS, M, {"pwh": {"weight": "pwh"}}, draws,
                        common.child_seeds(seed, 1)[0], progress,
                        {"client": client, "checkpoint": checkpoint, "chunk_size": chunk_size})
    at_mc = formula_grid(list(n_mc), weight="pwh").rename(n="n_mc")
    mc["R_theory_mc"] = at_mc["R"]
    mc["r_theory_mc"] = at_mc["r"]
    mc["mse_theory_mc"] = at_mc["mse"]
    ds = ds.merge(mc)
    ds["R"].attrs["description"] = "R(PWH) = min(MSE_TCM-only, MSE_Full-LM) / MSE_PWH, exact (Theorem 5.5)"
    ds["r"].attrs["description"] = "r(PWH) = max(MSE_TCM-only, MSE_Full-LM) / MSE_PWH, exact (Theorem 5.5)"
    ds["R_kvh"].attrs["description"] = "R(KVH) on the same grid, for comparison"
    ds["R_naive"].attrs["description"] = "R of the naive weight w = c (Section 5 mentions it, no figure)"
    ds.attrs.update({
        "noise": "laplace",
        "m": M,
        "draws": draws,
        "config": {"quick": bool(quick), "n_points": len(ns), "n_mc": list(n_mc), "draws": draws},
    })
    return ds


def plot(ds: xr.Dataset, path: str | Path) -> None:
    common.plot_beta_curves(ds, path, [("R", "R(PWH)"), ("r", "r(PWH)  (log)")],
                            "Avent et al. Fig. 3: PWH, Laplace, m = 1 (lines: exact; points: Monte Carlo, 95% CI; "
                            "dotted: n_crit)", log_y=[False, True])
