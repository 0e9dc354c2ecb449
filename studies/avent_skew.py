"""Avent et al., Figures 4 and 5: R(KVH) when the two groups' distributions differ.

**Variance skew** (Figure 4): the TCM group draws from the low-variance Beta(10,10) and the LM
group from the high-variance Beta(0.1,0.1) (``scenario="tcm-low/lm-high"``), and the reverse
(``"tcm-high/lm-low"``); equal means (1/2), m = 1, the KVH weight of the heterogeneous setting
(Definition 6.1, which the curator can use: it knows both variances).  ``R_homogeneous`` is
Figure 1's curve for the TCM group's distribution (everyone drawn from it); the paper says the
two differ by at most 0.1 and typically by less than 0.01.

**Mean skew** (Figure 5): Beta(1,1) centred at 1 (Uniform[0.5, 1.5]) for both groups, then
shifted in opposite directions, TCM by ``-t`` and LM by ``+t`` for ``t`` in {0, 0.25, 0.5},
with m = 2 fixed (the paper's footnote).  The curator mistakenly believes the setting is
homogeneous and uses Definition 4.1's weight with the groups' common variance 1/12 (our reading
of "uses the homogeneous weighting"; the paper does not say which sigma^2 it plugs in).  The
exact risk of that estimator includes the bias ``((w - c)(mu_T - mu_L))^2``.  ``R_mean_oracle``
(not in the paper) is the heterogeneous KVH weight that knows the means.

Grid as Figure 1: n from 1e3 to 1e5, c in {0.5%, 5%}, epsilon in {0.1, 1}, Laplace noise.
Monte Carlo points at a few ``n`` run the estimators on data drawn from the stated
distributions through the evaluation engine.
"""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from . import _avent_common as common
from .avent_kvh import CS, EPSILONS, n_grid

__all__ = ["DESCRIPTION", "MEAN_M", "SCENARIOS", "SHIFTS", "mean_grid", "plot", "run", "variance_grid"]

DESCRIPTION = "Avent et al. Figs. 4, 5: R(KVH) under variance skew and mean skew between the groups"
LOW, HIGH = ("Beta(10,10)", 10.0, 10.0), ("Beta(0.1,0.1)", 0.1, 0.1)
#: scenario -> (TCM distribution, LM distribution)
SCENARIOS = {"tcm-low/lm-high": (LOW, HIGH), "tcm-high/lm-low": (HIGH, LOW)}
SHIFTS = (0.0, 0.25, 0.5)
MEAN_M = 2.0
#: variance of Uniform[0.5, 1.5] (Beta(1,1) centred at 1, not rescaled)
MEAN_SIGMA2 = 1.0 / 12.0


def _axes(ns, cs, epsilons):
    return common.axis("n", ns), common.axis("c", cs), common.axis("epsilon", epsilons)


def variance_grid(ns, cs=CS, epsilons=EPSILONS) -> xr.Dataset:
    """Exact R(KVH) under variance skew (``scenario, n, c, epsilon``) and Figure 1's homogeneous curve."""
    from hybridpriv.theory.avent import (
        hybrid_mse,
        kvh_weight,
        kvh_weight_heterogeneous,
        noise_variances,
        relative_improvement,
    )

    n, c, eps = _axes(ns, cs, epsilons)
    names = list(SCENARIOS)
    vT = xr.DataArray([common.beta_variance(*SCENARIOS[s][0][1:]) for s in names], dims="scenario",
                      coords={"scenario": names})
    vL = xr.DataArray([common.beta_variance(*SCENARIOS[s][1][1:]) for s in names], dims="scenario",
                      coords={"scenario": names})
    s_T2, s_L2 = noise_variances("laplace", eps, 1.0, n, c)
    w = kvh_weight_heterogeneous(n, c, vT, vL, s_T2, s_L2)
    R, _ = relative_improvement(hybrid_mse(w, n, c, vT, vL, s_T2, s_L2), n, c, vT, vL, s_T2, s_L2)
    w0 = kvh_weight(n, c, vT, s_T2, s_L2)
    R0, _ = relative_improvement(hybrid_mse(w0, n, c, vT, vT, s_T2, s_L2), n, c, vT, vT, s_T2, s_L2)
    order = ("scenario", "n", "c", "epsilon")
    return xr.Dataset({"R_variance": R.transpose(*order), "R_homogeneous": R0.transpose(*order),
                       "weight_variance": w.transpose(*order), "sigma_T2": vT, "sigma_L2": vL})


def mean_grid(ns, cs=CS, epsilons=EPSILONS, shifts=SHIFTS) -> xr.Dataset:
    """Exact R of the mistaken homogeneous KVH (and of the oracle weight) under mean skew (``shift, n, c, epsilon``)."""
    from hybridpriv.theory.avent import (
        hybrid_mse,
        kvh_weight,
        kvh_weight_heterogeneous,
        noise_variances,
        relative_improvement,
    )

    n, c, eps = _axes(ns, cs, epsilons)
    t = common.axis("shift", shifts)
    mu_T, mu_L = 1.0 - t, 1.0 + t
    v = MEAN_SIGMA2
    s_T2, s_L2 = noise_variances("laplace", eps, MEAN_M, n, c)
    w = kvh_weight(n, c, v, s_T2, s_L2).broadcast_like(t)
    R, _ = relative_improvement(hybrid_mse(w, n, c, v, v, s_T2, s_L2, mu_T, mu_L), n, c, v, v, s_T2, s_L2, mu_T, mu_L)
    wo = kvh_weight_heterogeneous(n, c, v, v, s_T2, s_L2, mu_T, mu_L)
    Ro, _ = relative_improvement(hybrid_mse(wo, n, c, v, v, s_T2, s_L2, mu_T, mu_L), n, c, v, v, s_T2, s_L2, mu_T, mu_L)
    order = ("shift", "n", "c", "epsilon")
    return xr.Dataset({"R_mean": R.transpose(*order), "R_mean_oracle": Ro.transpose(*order),
                       "weight_mean": w.transpose(*order)})


def run(quick: bool = False, seed: int = 0, progress: bool = False, client=None, checkpoint=None,
        chunk_size=None) -> xr.Dataset:
    """Exact curves on the full grid, Monte Carlo points at ``n_mc`` (engine: ``client``, ``checkpoint``, ``chunk_size``)."""
    ns = n_grid(quick)
    ds = xr.merge([variance_grid(ns), mean_grid(ns)])
    ds["R_diff"] = ds["R_variance"] - ds["R_homogeneous"]
    n_mc = (1000,) if quick else (1000, 10000)
    draws = 300 if quick else 1000
    engine = {"client": client, "checkpoint": checkpoint, "chunk_size": chunk_size}
    ds = ds.merge(_monte_carlo(n_mc, draws, common.child_seeds(seed, 1)[0], progress, engine))
    ds["R_variance"].attrs["description"] = "R(KVH) with the heterogeneous weight (Def. 6.1), groups from different Betas"
    ds["R_homogeneous"].attrs["description"] = "R(KVH) when every user draws from the TCM group's distribution (Fig. 1)"
    ds["R_diff"].attrs["description"] = "R_variance - R_homogeneous"
    ds["R_mean"].attrs["description"] = "R of the homogeneous KVH weight (sigma2 = 1/12) under mean shift t"
    ds["R_mean_oracle"].attrs["description"] = "R of the heterogeneous KVH weight that knows the means (not in the paper)"
    ds.attrs.update({"noise": "laplace", "draws": draws, "m_variance": 1.0, "m_mean": MEAN_M,
                     "config": {"quick": bool(quick), "n_mc": list(n_mc), "draws": draws}})
    return ds


def _cases() -> list[tuple[str, dict]]:
    """Every simulated case: a label and what the Monte Carlo needs (one engine run for all)."""
    cases = []
    for name, ((_, aT, bT), (_, aL, bL)) in SCENARIOS.items():
        vT, vL = common.beta_variance(aT, bT), common.beta_variance(aL, bL)
        cases.append((f"variance:{name}", {
            "m": 1.0,
            "samplers": (common.beta_sampler(aT, bT), common.beta_sampler(aL, bL)),
            "means": (0.5, 0.5),
            "hybrid": {"weight": "kvh-heterogeneous", "sigma_T2": vT, "sigma_L2": vL, "mu_T": 0.5, "mu_L": 0.5},
        }))
    for t in SHIFTS:
        cases.append((f"mean:{t:g}", {
            "m": MEAN_M,
            "samplers": (common.uniform_sampler(0.5 - t, 1.5 - t), common.uniform_sampler(0.5 + t, 1.5 + t)),
            "means": (1.0 - t, 1.0 + t),
            "hybrid": {"weight": "kvh", "sigma2": MEAN_SIGMA2},
        }))
    return cases


def _monte_carlo(n_mc, draws, seed, progress, engine) -> xr.Dataset:
    """One engine run over every case; split back into the variance-skew and mean-skew variables."""
    cases = _cases()

    def runs():
        for label, case in cases:
            for n in n_mc:
                for c in CS:
                    n_T, n_L = common.group_sizes(n, c)
                    for eps in EPSILONS:
                        groups, ests = common.hybrid_setup(n_T, n_L, eps, case["m"], {"kvh": case["hybrid"]})
                        src = common.TwoGroupSource(groups, (0.0, case["m"]), case["samplers"], draws, case["means"])
                        yield {"case": label, "n_mc": n, "c": c, "epsilon": eps}, ests, src

    dims = {"case": [lab for lab, _ in cases], "n_mc": list(n_mc), "c": list(CS), "epsilon": list(EPSILONS)}
    loss = common.mc_mse(runs(), dims, seed, progress, engine)
    summary = common.mc_summary(loss, ["kvh"], keep_estimator_dim=False)
    names = list(SCENARIOS)
    var = summary.sel(case=[f"variance:{s}" for s in names]).rename(case="scenario").assign_coords(scenario=names)
    mean = summary.sel(case=[f"mean:{t:g}" for t in SHIFTS]).rename(case="shift").assign_coords(shift=list(SHIFTS))
    var = var.rename({k: k.replace("_mc", "_variance_mc", 1) for k in var.data_vars})
    mean = mean.rename({k: k.replace("_mc", "_mean_mc", 1) for k in mean.data_vars})
    out = xr.merge([var, mean])
    out["R_variance_theory_mc"] = variance_grid(list(n_mc))["R_variance"].rename(n="n_mc")
    out["R_mean_theory_mc"] = mean_grid(list(n_mc))["R_mean"].rename(n="n_mc")
    return out


def plot(ds: xr.Dataset, path: str | Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = list(ds.scenario.values) + [float(t) for t in ds["shift"].values]
    fig, grid = plt.subplots(2, 3, figsize=(13.5, 7.2))
    panels = [grid[0, 0], grid[0, 1], grid[1, 0], grid[1, 1], grid[1, 2]]
    n = ds.n.values
    for j, col in enumerate(cols):
        ax = panels[j]
        is_var = isinstance(col, str)
        var = "R_variance" if is_var else "R_mean"
        sel0 = {"scenario": col} if is_var else {"shift": col}
        k = 0
        for c in ds.c.values:
            for eps in ds.epsilon.values:
                st = common._style(k)
                sel = {**sel0, "c": c, "epsilon": eps}
                ax.plot(n, ds[var].sel(sel), lw=1.6, label=f"c={100 * c:g}%, eps={eps:g}", **st)
                if is_var:
                    ax.plot(n, ds["R_homogeneous"].sel(sel), lw=0.8, ls="--", **st)
                y = ds[f"{var}_mc"].sel(sel)
                e = common.Z95 * ds[f"{var}_mc_se"].sel(sel)
                ax.errorbar(ds.n_mc.values * (1 + 0.04 * (k - 1.5)), y, yerr=e, fmt="o", ms=4, capsize=3, **st)
                k += 1
        ax.set_xscale("log")
        ax.axhline(1.0, color="0.5", lw=0.8)
        ax.set_xlabel("n")
        ax.set_ylabel("R(KVH)")
        ax.grid(alpha=0.3, lw=0.4)
        if is_var:
            ax.set_title(f"Fig. 4, variance skew: {col}\n(dashed: everyone from the TCM group's Beta)", fontsize=9)
        else:
            ax.set_title(f"Fig. 5, mean skew t={col:g} (homogeneous weight, m=2)", fontsize=9)
            if col > 0:
                ax.set_yscale("log")
    dens = grid[0, 2]
    for k, t in enumerate(ds["shift"].values):
        t = float(t)
        st = common._style(k + 4)
        dens.plot([0.5 - t, 0.5 - t, 1.5 - t, 1.5 - t], [0, 1, 1, 0], lw=1.5, label=f"t={t:g}: TCM", **st)
        dens.plot([0.5 + t, 0.5 + t, 1.5 + t, 1.5 + t], [0, 1.03, 1.03, 0], lw=1.5, ls="--", label=f"t={t:g}: LM", **st)
    dens.set_xlim(-0.1, 2.1)
    dens.set_ylim(0, 1.4)
    dens.set_xlabel("record value (m = 2)")
    dens.set_title("Fig. 5 data: Uniform[0.5, 1.5] shifted by -t (TCM) and +t (LM)", fontsize=9)
    dens.legend(fontsize=7, ncol=3)
    panels[0].legend(fontsize=7)
    fig.suptitle("Avent et al. Figs. 4-5: R(KVH) under variance skew (m=1, Def. 6.1 weight) and mean skew "
                 "(m=2, homogeneous weight); lines exact, points Monte Carlo 95% CI", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=72)
    plt.close(fig)
