"""Avent et al., Figure 7: privacy amplification of the Gaussian KVH estimator (Theorem 8.1).

Both groups use the (1, 1e-7) Gaussian mechanism with the paper's classic calibration
``s = sqrt(2 ln(1.25/delta)) Delta / epsilon`` (:func:`hybridpriv.theory.avent.noise_variances`,
``calibration="classic"``), on the UC salary parameters (n = 252,540, m = 2,349,033,
sigma = 53,254), the KVH weight, c in [0.1%, 10%] (log grid) and the fraction of LM users in
the adversarial coalition in [0, 1].  ``epsilon_prime`` (dims ``group, c, adversarial_fraction``)
is :func:`~hybridpriv.theory.avent.amplified_epsilon` for

* ``group="worst"``: the guarantee every user gets (the larger of the TCM and LM users');
* ``"tcm"``, ``"lm"``: each group's own epsilon';
* ``"paper"``: Theorem 8.1 as printed, whose case split takes the *smaller* of the two
  sensitivities (``w m/(c n)`` when ``w <= c``, else ``(1-w) m/((1-c) n)``), i.e. the better-off
  group's epsilon'.

``epsilon_prime_analytic`` is the exact Gaussian epsilon' for the same delta (Balle & Wang),
valid beyond epsilon' < 1.  A pure-formula study with no Monte Carlo: it refuses the engine's
options (an ``Engine`` with a ``client``, ``checkpoint`` or ``chunk_size``: ``--workers``, ``--resume``, ``--chunk-size``)
rather than ignore them; the tests check the sensitivity and the joint noise variance against
the estimators directly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from hybridpriv.theory.avent import amplified_epsilon, kvh_weight, noise_variances

from ..engine.options import Engine, as_engine
from . import _avent as av

__all__ = ["DELTA", "DESCRIPTION", "EPSILON", "GROUPS", "PAPER", "claims", "formula_grid", "plot", "run"]

DESCRIPTION = "Avent et al. Fig. 7: amplified epsilon' of the (1, 1e-7) Gaussian KVH on the salary parameters"
PAPER = "Avent, Dubey, Korolova: The Power of the Hybrid Model for Mean Estimation (PETS 2020)"
#: the tolerances behind the verdicts of :func:`claims`
MODERATE = 0.5  # "a moderate fraction of adversarial LM users": half of them
SIGNIFICANT = 0.8  # "significant" amplification: epsilon' <= 0.8 epsilon (at least 20% lower)
RTOL = 0.01  # the printed formula is "the users' guarantee" if it is within 1% of every user's epsilon'
N, M, SIGMA = av.SALARY["n"], av.SALARY["m"], av.SALARY["sigma"]
EPSILON, DELTA = 1.0, 1e-7
GROUPS = ("worst", "tcm", "lm", "paper")


def formula_grid(cs, fractions, epsilon: float = EPSILON, delta: float = DELTA, analytic: bool = True) -> xr.Dataset:
    """Exact epsilon' over ``group x c x adversarial_fraction`` (one vectorised call per group)."""
    c, f, n = av.axis("c", cs), av.axis("adversarial_fraction", fractions), xr.DataArray(float(N))
    s_T2, s_L2 = noise_variances("gaussian", epsilon, M, n, c, delta=delta, calibration="classic")
    w = kvh_weight(n, c, SIGMA**2, s_T2, s_L2)

    def eps_prime(groups, dim, method="classic"):
        return xr.concat([amplified_epsilon(w, n, c, M, s_T2, s_L2, delta, f, group=g, method=method) for g in groups],
                         dim=xr.DataArray(list(groups), dims=dim)).transpose(dim, "c", "adversarial_fraction")

    ds = xr.Dataset({"epsilon_prime": eps_prime(GROUPS, "group"), "weight": w, "s_T2": s_T2, "s_L2": s_L2})
    if analytic:
        ds["epsilon_prime_analytic"] = eps_prime(GROUPS[:3], "group_analytic", "analytic")
    return ds


def run(quick: bool = False, seed: int = 0, engine: Engine | None = None) -> xr.Dataset:
    """The exact epsilon' grid (pure formula: the seed is not used, the engine options are refused)."""
    engine = as_engine(engine)
    given = [o for o, v in (("--workers", engine.client), ("--resume", engine.checkpoint),
                            ("--chunk-size", engine.chunk_size)) if v is not None]
    if given:
        raise ValueError(f"avent-amplification is a pure-formula study (no Monte Carlo): {', '.join(given)} "
                         f"{'does' if len(given) == 1 else 'do'} not apply")
    cs = np.logspace(-3, -1, 21 if quick else 81)
    fractions = np.linspace(0.0, 1.0, 11 if quick else 51)
    # the analytic epsilon' solves one root per cell: a coarser grid keeps it to a second
    ds = formula_grid(cs, fractions, analytic=False)
    ana = formula_grid(cs[::2] if quick else cs[::4], fractions[::2] if quick else fractions[::5])
    ds["epsilon_prime_analytic"] = ana["epsilon_prime_analytic"].rename(
        c="c_analytic", adversarial_fraction="fraction_analytic")
    ds["epsilon_prime"].attrs["description"] = (
        "amplified epsilon' against output-viewing adversaries (Theorem 8.1, classic Gaussian inversion); "
        "group: worst (every user), tcm, lm, paper (the printed case formula)")
    ds["epsilon_prime_analytic"].attrs["description"] = "exact (Balle & Wang) epsilon' for the same delta, coarser grid"
    ds.attrs.update({"noise": "gaussian", "calibration": "classic", "epsilon": EPSILON, "delta": DELTA, "n": N,
                     "m": M, "sigma": SIGMA,
                     "config": {"quick": bool(quick), "c_points": len(cs), "fraction_points": len(fractions)}})
    return ds


def plot(ds: xr.Dataset, path: str | Path) -> None:
    fig = Figure(figsize=(15, 4.2))
    axes = fig.subplots(1, 3)
    c, f = ds.c.values * 100, ds.adversarial_fraction.values
    panels = (("worst", "every user: max(TCM, LM) (= TCM users here)", False),
              ("paper", "Theorem 8.1 as printed (= LM users' epsilon')", True))
    for ax, (g, title, log) in zip(axes, panels):
        z = ds.epsilon_prime.sel(group=g).transpose("adversarial_fraction", "c").values
        levels = np.geomspace(z.min(), z.max(), 6)[1:-1] if log else [0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99]
        av.heatmap(fig, ax, c, f, z, levels, log=log, label="epsilon'")
        ax.set(xscale="log", xlabel="c (% of users in TCM)", ylabel="fraction of LM users adversarial")
        ax.set_title(f"epsilon': {title}", fontsize=9)
    ax = axes[2]
    for k, cv in enumerate((0.001, 0.003, 0.01, 0.1)):
        sel = ds.epsilon_prime.sel(c=cv, method="nearest")
        cl = float(sel.c) * 100
        ax.plot(f, sel.sel(group="worst"), lw=1.6, label=f"c={cl:.2g}%: every user", **av.style(k))
        ax.plot(f, sel.sel(group="paper"), lw=1.0, ls="--", label=f"c={cl:.2g}%: as printed", **av.style(k))
    ax.set(yscale="log", xlabel="fraction of LM users adversarial", ylabel="epsilon'")
    ax.set_title("epsilon' against the coalition size (epsilon = 1)", fontsize=9)
    ax.grid(alpha=0.3, which="both", lw=0.4)
    ax.legend(fontsize=6, ncol=2)
    fig.suptitle(f"Avent et al. Fig. 7: (1, 1e-7) Gaussian KVH on the UC salary parameters, classic calibration "
                 f"(epsilon = {ds.attrs.get('epsilon', EPSILON):g})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)


def claims(ds: xr.Dataset) -> list:
    """Section 8's claims about Theorem 8.1 and Figure 7 on this run's grid (``group="worst"`` is the
    guarantee every user gets).  Tolerances: the module constants above."""
    from ._claims import Claim

    eps = float(ds.attrs["epsilon"])
    e = ds["epsilon_prime"]
    worst, printed = e.sel(group="worst"), e.sel(group="paper")
    half = worst.sel(adversarial_fraction=MODERATE)
    significant = half <= SIGNIFICANT * eps
    c_sig = float(half.c.where(significant).max()) if bool(significant.any()) else float("nan")
    picks = half.sel(c=[float(ds.c[0]), 0.01, float(ds.c[-1])], method="nearest")
    tcm_alone = float(worst.sel(adversarial_fraction=1.0).min())
    rel = float((np.abs(printed - worst) / worst).max())
    exact = ds["epsilon_prime_analytic"].sel(group_analytic="worst")
    exact_alone = float(exact.sel(fraction_analytic=1.0).max())  # the (unamplified) noise of the TCM group
    exact_best = float(exact.min())
    classic_best = float(worst.min())
    return [
        Claim("Sec. 8, Fig. 7", "for practical applications, even with a moderate fraction of adversarial LM users, "
              "this amplification can be significant (UC salaries, (1, 1e-7) Gaussian KVH, c in [0.1%, 10%])", "-",
              f"epsilon' of every user with {100 * MODERATE:g}% of the LM users adversarial: "
              + ", ".join(f"{float(v):.4f} at c = {100 * float(v.c):.2g}%" for v in picks)
              + (f"; <= {SIGNIFICANT:g} epsilon only for c <= {100 * c_sig:.2g}%" if significant.any() else ""),
              "holds" if bool(significant.all()) else ("partly" if bool(significant.any()) else "does not hold")),
        Claim("Thm. 8.1", "the users' epsilon' against output-viewing adversaries is sqrt(2 ln(1.25/delta)) m/(n s') "
              "times w/c if w <= c, else (1-w)/(1-c)",
              f"as printed: {float(printed.min()):.2g} to {float(printed.max()):.2g} on Fig. 7's grid",
              f"every user's epsilon' {classic_best:.3f} to {float(worst.max()):.3f}; with every LM user adversarial "
              f"the TCM users are back at {tcm_alone:.3f} (the printed case is the better-off group's sensitivity)",
              "holds" if rel <= RTOL else "does not hold"),
        Claim("Sec. 8, Fig. 7", "the (1, 1e-7)-DP Gaussian mechanism, calibrated s = sqrt(2 ln(1.25/delta)) Delta/"
              "epsilon (the classic bound, proven for epsilon < 1)", f"epsilon = {eps:g}",
              f"exact epsilon of that noise (Balle & Wang, same delta): {exact_alone:.3f}; amplified, at best "
              f"{exact_best:.3f} exact vs {classic_best:.3f} classic",
              "holds" if exact_alone <= eps * (1 + 1e-9) else "does not hold"),
    ]
