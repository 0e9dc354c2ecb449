"""Avent et al., Figure 3: R(PWH) and r(PWH) of the privacy-weighted hybrid on the Beta grid.

The same setting as Figure 1 (:mod:`hybridpriv.studies.avent_kvh`): Beta(10,10), Beta(1,1),
Beta(0.1,0.1) on [0, 1], n from 1e3 to 1e5, c in {0.5%, 5%}, epsilon in {0.1, 1}, Laplace
noise.  Curves: the exact formulas (PWH weight of Definition 5.3 in
:func:`hybridpriv.theory.avent.hybrid_mse`, then
:func:`~hybridpriv.theory.avent.relative_improvement`); R(KVH) and R of the naive weight are
stored beside them for the comparisons the paper makes.  Monte Carlo points at a few ``n`` run
``Hybrid(weight="pwh")``, ``TCMOnly`` and ``FullLM`` through the evaluation engine.
"""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from . import _avent as av
from .avent_kvh import M, beta_monte_carlo, formula_grid, n_grid

__all__ = ["DESCRIPTION", "plot", "run"]

DESCRIPTION = "Avent et al. Fig. 3: R(PWH) and r(PWH) on Beta data over n, c, epsilon (exact + Monte Carlo)"


def run(quick: bool = False, seed: int = 0, progress: bool = False, client=None, checkpoint=None,
        chunk_size=None) -> xr.Dataset:
    """Exact curves on the full grid, Monte Carlo points at ``n_mc`` (engine: ``client``, ``checkpoint``, ``chunk_size``)."""
    ns = n_grid(quick)
    ds = formula_grid(ns, weight="pwh")
    ds["R_kvh"] = formula_grid(ns, weight="kvh")["R"]
    ds["R_naive"] = formula_grid(ns, weight="naive")["R"]
    n_mc, draws = ((1000,), 400) if quick else ((1000, 10000), 1500)
    ds = ds.merge(beta_monte_carlo(n_mc, "pwh", draws, seed, progress,
                                   {"client": client, "checkpoint": checkpoint, "chunk_size": chunk_size}))
    for var, text in (("R", "R(PWH) = min(MSE_TCM-only, MSE_Full-LM) / MSE_PWH, exact (Theorem 5.5)"),
                      ("r", "r(PWH) = max(MSE_TCM-only, MSE_Full-LM) / MSE_PWH, exact (Theorem 5.5)"),
                      ("R_kvh", "R(KVH) on the same grid, for comparison"),
                      ("R_naive", "R of the naive weight w = c (Section 5 mentions it, no figure)")):
        ds[var].attrs["description"] = text
    ds.attrs.update({"noise": "laplace", "m": M, "draws": draws,
                     "config": {"quick": bool(quick), "n_points": len(ns), "n_mc": list(n_mc), "draws": draws}})
    return ds


def plot(ds: xr.Dataset, path: str | Path) -> None:
    av.plot_beta_curves(ds, path, [("R", "R(PWH)"), ("r", "r(PWH)  (log)")],
                        "Avent et al. Fig. 3: PWH, Laplace, m = 1 (lines: exact; points: Monte Carlo, 95% CI; "
                        "dotted: n_crit)", log_y=[False, True])
