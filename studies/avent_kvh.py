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

from ..engine.evaluate import evaluate_many
from ..engine.options import Engine
from ..families.grouped import BetaSampler, Statistic
from ..families.hybrid_trust.summary import improvement_summary
from ..theory.avent import (
    c_crit_laplace,
    hybrid_mse,
    kvh_weight,
    n_crit_laplace,
    noise_variances,
    pwh_weight,
    relative_improvement,
)
from . import _avent as av

__all__ = ["CS", "DESCRIPTION", "EPSILONS", "M", "PAPER", "beta_monte_carlo", "claims", "formula_grid", "n_grid", "plot",
           "run"]

DESCRIPTION = "Avent et al. Fig. 1: R(KVH) on Beta data over n, c, epsilon (exact + Monte Carlo)"
PAPER = "Avent, Dubey, Korolova: The Power of the Hybrid Model for Mean Estimation (PETS 2020)"
CS = (0.005, 0.05)
EPSILONS = (0.1, 1.0)
M = 1.0


def n_grid(quick: bool) -> np.ndarray:
    """Log-spaced n in [1e3, 1e5], 40 per decade at every scale (the formulas are cheap)."""
    return np.unique(np.round(np.logspace(3, 5, 81)))


def formula_grid(ns, cs=CS, epsilons=EPSILONS, betas=av.BETAS, weight: str = "kvh") -> xr.Dataset:
    """Exact MSE, weight, R and r over ``distribution x n x c x epsilon`` (one vectorised call each).

    ``weight``: ``"kvh"`` (Definition 4.1), ``"pwh"`` (Definition 5.3) or ``"naive"`` (``w = c``).
    """
    names = [b[0] for b in betas]
    sigma2 = xr.DataArray([av.beta_variance(a, b) for _, a, b in betas], dims="distribution",
                          coords={"distribution": names})
    n, c, eps = av.axis("n", ns), av.axis("c", cs), av.axis("epsilon", epsilons)
    s_T2, s_L2 = noise_variances("laplace", eps, M, n, c)
    weights = {"kvh": lambda: kvh_weight(n, c, sigma2, s_T2, s_L2),
               "pwh": lambda: pwh_weight(n, c, s_T2, s_L2).broadcast_like(sigma2),  # data-free weight
               "naive": lambda: (c + 0 * s_T2).broadcast_like(sigma2)}  # w = c (Section 5)
    if weight not in weights:
        raise ValueError(f"weight must be 'kvh', 'pwh' or 'naive', got {weight!r}")
    w = weights[weight]()
    mse = hybrid_mse(w, n, c, sigma2, sigma2, s_T2, s_L2)
    R, r = relative_improvement(mse, n, c, sigma2, sigma2, s_T2, s_L2)
    order = ("distribution", "n", "c", "epsilon")
    return xr.Dataset({"R": R.transpose(*order), "r": r.transpose(*order), "weight": w.transpose(*order),
                       "mse": mse.transpose(*order), "sigma2": sigma2,
                       "c_crit": c_crit_laplace(eps, M, sigma2).transpose("distribution", "epsilon"),
                       "n_crit": n_crit_laplace(c, eps, M, sigma2).transpose("distribution", "c", "epsilon")})


def beta_monte_carlo(n_mc, weight: str, draws: int, seed: int, engine: Engine | None) -> xr.Dataset:
    """``TCMOnly``, ``FullLM`` and ``Hybrid(weight)`` on the Beta grid at ``n_mc`` (one engine run):
    Monte Carlo MSEs, ``R``, ``r`` with standard errors, and the exact values there (``*_theory_mc``)."""
    def runs():
        for name, a, b in av.BETAS:
            hybrid = {weight: {"weight": weight, **({"sigma2": av.beta_variance(a, b)} if weight == "kvh" else {})}}
            for n in n_mc:
                for c in CS:
                    for eps in EPSILONS:
                        groups, ests = av.candidates(*av.group_sizes(n, c), eps, M, hybrid)
                        src = av.source(groups, M, [BetaSampler(a, b, M)] * 2, [M * a / (a + b)] * 2, draws)
                        yield {"distribution": name, "n_mc": n, "c": c, "epsilon": eps}, ests, src

    dims = {"distribution": [b[0] for b in av.BETAS], "n_mc": list(n_mc), "c": list(CS), "epsilon": list(EPSILONS)}
    ev = evaluate_many(runs(), dims, task=Statistic(target="sample"), seed=seed, engine=engine)
    mc = improvement_summary(ev, [weight], squeeze=True)
    exact = formula_grid(list(n_mc), weight=weight).rename(n="n_mc")
    return mc.assign(R_theory_mc=exact["R"], r_theory_mc=exact["r"], mse_theory_mc=exact["mse"])


def run(quick: bool = False, seed: int = 0, engine: Engine | None = None) -> xr.Dataset:
    """Exact curves on the full grid, Monte Carlo points at ``n_mc`` (through ``engine``)."""
    ns = n_grid(quick)
    n_mc, draws = ((1000,), 400) if quick else ((1000, 10000), 1500)
    mc = beta_monte_carlo(n_mc, "kvh", draws, seed, engine)
    ds = formula_grid(ns).merge(mc)
    ds["R"].attrs["description"] = "R(KVH) = min(MSE_TCM-only, MSE_Full-LM) / MSE_KVH, exact (Theorem 4.3)"
    ds.attrs.update({"noise": "laplace", "m": M, "draws": draws,
                     "config": {"quick": bool(quick), "n_points": len(ns), "n_mc": list(n_mc), "draws": draws}})
    return ds


def plot(ds: xr.Dataset, path: str | Path) -> None:
    av.plot_beta_curves(ds, path, [("R", "R(KVH)")],
                        "Avent et al. Fig. 1: R(KVH), Laplace, m = 1 (lines: exact; points: Monte Carlo, 95% CI; "
                        "dotted: n_crit)")


def claims(ds: xr.Dataset) -> list:
    """Corollary 4.4 / Fig. 1 on this run's grid."""
    from ._claims import Claim

    best = float(ds["R"].max())
    return [
        Claim("Cor. 4.4, Fig. 1", "max R(KVH) is between 17/8 and 16/7 for epsilon <= 1; 'none are much larger "
              "than 2'", "17/8 = 2.125 <= sup <= 16/7 = 2.286", f"max on the grid {best:.3f}",
              "holds" if best <= 16 / 7 else "does not hold"),
    ]
