"""Shared pieces of the Avent et al. (hybrid trust model) studies.

The curves of every study come from the exact risk formulas of :mod:`hybridpriv.theory.avent`
(one vectorised call over the whole grid).  The Monte Carlo points beside them run the
estimators of :mod:`hybridpriv.estimators.avent` through :func:`hybridpriv.evaluate.evaluate_many`
with ``target="sample"``: the paper scores every estimator against the non-private empirical
mean of all ``n`` records (Definition 2.2), which is the engine's pooled sample mean.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr

from hybridpriv.data import GroupedDataset
from hybridpriv.evaluate import evaluate_many
from hybridpriv.stats import mean_with_se, ratio_with_se
from hybridpriv.tasks import Statistic
from hybridpriv.privacy import Bounds, Group, check_groups

from ._common import Z95

__all__ = [
    "BETAS",
    "SALARY",
    "Z95",
    "TwoGroupSource",
    "axis",
    "beta_mc",
    "beta_sampler",
    "beta_variance",
    "child_seeds",
    "group_sizes",
    "hybrid_setup",
    "mc_mse",
    "mc_summary",
    "mean_with_se",
    "mse_table",
    "plot_beta_curves",
    "ratio_with_se",
    "relative_improvements_mc",
    "uniform_sampler",
]

#: the three symmetric Beta distributions of Figure 1 (label, alpha, beta) on [0, 1]
BETAS: tuple[tuple[str, float, float], ...] = (
    ("Beta(10,10)", 10.0, 10.0),
    ("Beta(1,1)", 1.0, 1.0),
    ("Beta(0.1,0.1)", 0.1, 0.1),
)

#: the published figures of the 2010 UC salary data (Section 4): the risk depends on the data
#: only through n, m and sigma, so no data file is needed
SALARY = {"n": 252_540, "m": 2_349_033.0, "sigma": 53_254.0}


def axis(name: str, values: Sequence[float]) -> xr.DataArray:
    """A grid axis: the float ``values`` as a 1-D DataArray over dimension ``name``, with itself as coordinate."""
    v = np.asarray(values, dtype=float)
    return xr.DataArray(v, dims=name, coords={name: v})


def beta_variance(a: float, b: float) -> float:
    """Variance of Beta(a, b) on [0, 1]."""
    return a * b / ((a + b) ** 2 * (a + b + 1.0))


@dataclass(frozen=True)
class _BetaSampler:
    a: float
    b: float
    scale: float = 1.0
    shift: float = 0.0

    def __call__(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return self.shift + self.scale * rng.beta(self.a, self.b, size=size)


@dataclass(frozen=True)
class _UniformSampler:
    low: float
    high: float

    def __call__(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.uniform(self.low, self.high, size=size)


def beta_sampler(a: float, b: float, scale: float = 1.0, shift: float = 0.0) -> Callable:
    """``f(rng, size)`` drawing ``shift + scale * Beta(a, b)`` (picklable, for cluster runs)."""
    return _BetaSampler(a, b, scale, shift)


def uniform_sampler(low: float, high: float) -> Callable:
    """``f(rng, size)`` drawing Uniform(low, high) (picklable, for cluster runs)."""
    return _UniformSampler(low, high)


def child_seeds(seed: int, k: int) -> list[int]:
    """``k`` independent integer seeds spawned from ``SeedSequence(seed)`` (one per engine run)."""
    return [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(seed).spawn(k)]


def group_sizes(n: int, c: float) -> tuple[int, int]:
    """Integer sizes ``(|T|, |L|)`` for ``n`` users with TCM fraction ``c`` (``|T| = round(c n)``)."""
    t = int(round(c * n))
    if not 1 <= t <= n - 1:
        raise ValueError(f"c * n must round to a size in [1, n - 1], got c={c!r}, n={n!r}")
    return t, n - t


class TwoGroupSource:
    """Datasets with a TCM group and an LM group, each drawn from its own distribution.

    Satisfies :class:`hybridpriv.data.DatasetSource`; records are clipped into ``bounds``
    (the samplers used here never leave them).
    """

    def __init__(self, groups: Sequence[Group], bounds: Bounds | tuple[float, float],
                 samplers: Sequence[Callable], draws: int, means: Sequence[float]) -> None:
        self.groups = check_groups(groups)
        self.bounds = Bounds.from_pair(bounds)
        if len(samplers) != len(self.groups):
            raise ValueError(f"samplers must give one sampler per group ({len(self.groups)}), got {len(samplers)}")
        self.samplers = tuple(samplers)
        self.draws = int(draws)
        sizes = np.array([g.size for g in self.groups], dtype=float)
        self.population = {"mean": float(np.dot(sizes, means) / sizes.sum())}

    @property
    def shape(self) -> tuple[int, int]:
        return (1, self.draws)

    def generate(self, chain: int, draw: int, rng: np.random.Generator) -> GroupedDataset:
        values = tuple(
            np.clip(np.asarray(f(rng, g.size), dtype=float), self.bounds.lower, self.bounds.upper)
            for f, g in zip(self.samplers, self.groups)
        )
        return GroupedDataset(values, self.population)


def mc_mse(runs: Iterable, dim_values: Mapping[str, Sequence], seed: int, progress: bool = False,
           engine: Mapping | None = None) -> xr.DataArray:
    """Squared error against the pooled empirical mean, one value per dataset.

    ``runs`` yields ``(coords, estimators, source)`` as for :func:`~hybridpriv.evaluate.evaluate_many`;
    every dataset is fresh data and fresh noise (``trials=1``), so the per-draw losses are
    independent and their mean is the MSE of Definition 2.2.  Returns ``loss`` with dims
    ``(estimator, *dims, draw)``.
    """
    res = evaluate_many(runs, dim_values, task=Statistic(target="sample"), trials=1, seed=seed, progress=progress,
                        **dict(engine or {}))
    loss = res["loss"].isel(chain=0, trial=0, drop=True)
    return loss.transpose("estimator", *dim_values, "draw")


def relative_improvements_mc(loss: xr.DataArray, hybrid: str, tcm: str = "tcm-only",
                             full: str = "full-lm") -> dict[str, xr.DataArray]:
    """Monte Carlo ``R`` and ``r`` of estimator ``hybrid`` with standard errors.

    ``R = min(MSE_T, MSE_F) / MSE``, ``r = max(MSE_T, MSE_F) / MSE`` (Definitions 3.5, 5.1); the
    better / worse baseline is the one with the smaller / larger Monte Carlo MSE.
    """
    lt, lf, lh = (loss.sel(estimator=e, drop=True) for e in (tcm, full, hybrid))
    t_better = lt.mean("draw") <= lf.mean("draw")
    best = xr.where(t_better, lt, lf)
    worst = xr.where(t_better, lf, lt)
    R, R_se = ratio_with_se(best, lh)
    r, r_se = ratio_with_se(worst, lh)
    return {"R": R, "R_se": R_se, "r": r, "r_se": r_se}


def mse_table(loss: xr.DataArray) -> xr.Dataset:
    """Monte Carlo MSE per estimator with its standard error and 95% interval."""
    m, se = mean_with_se(loss)
    return xr.Dataset({"mse_mc": m, "mse_mc_se": se, "mse_mc_low": m - Z95 * se, "mse_mc_high": m + Z95 * se})


def _style(k: int) -> dict:
    colors = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")
    return {"color": colors[k % len(colors)]}


def plot_beta_curves(ds: xr.Dataset, path, variables: Sequence[tuple[str, str]], title: str,
                     columns: str = "distribution", log_y: Sequence[bool] | None = None) -> None:
    """One panel per ``columns`` value and per variable: the exact curves over ``n`` for every
    ``(c, epsilon)``, Monte Carlo points (``VAR_mc`` +- 1.96 ``VAR_mc_se``) at ``n_mc``, dotted
    verticals at ``n_crit`` where it falls in the range."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = list(ds[columns].values)
    fig, axes = plt.subplots(len(variables), len(cols), figsize=(4.6 * len(cols), 3.5 * len(variables)),
                             squeeze=False, sharex=True)
    n = ds.n.values
    for row, (var, label) in enumerate(variables):
        for j, col in enumerate(cols):
            ax = axes[row, j]
            k = 0
            for c in ds.c.values:
                for eps in ds.epsilon.values:
                    st = _style(k)
                    k += 1
                    sel = {columns: col, "c": c, "epsilon": eps}
                    ax.plot(n, ds[var].sel(sel), lw=1.6, label=f"c={100 * c:g}%, eps={eps:g}", **st)
                    if f"{var}_mc" in ds:
                        y = ds[f"{var}_mc"].sel(sel)
                        e = Z95 * ds[f"{var}_mc_se"].sel(sel)
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
            if j == 0:
                ax.set_ylabel(label)
            if row == len(variables) - 1:
                ax.set_xlabel("n")
            ax.grid(alpha=0.3, lw=0.4)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=75)
    plt.close(fig)


def mc_summary(loss: xr.DataArray, hybrids: Sequence[str], keep_estimator_dim: bool = True) -> xr.Dataset:
    """MSE per estimator (dim ``mc_estimator``) and ``R_mc``, ``r_mc`` with standard errors per hybrid.

    ``R_mc``/``r_mc`` have dim ``estimator`` (the hybrids) unless ``keep_estimator_dim`` is False
    and there is one hybrid.
    """
    out = mse_table(loss).rename(estimator="mc_estimator")
    parts = [relative_improvements_mc(loss, h) for h in hybrids]
    for key in ("R", "R_se", "r", "r_se"):
        name = key[0] + "_mc" + key[1:]
        val = xr.concat([p[key] for p in parts], dim=xr.DataArray(list(hybrids), dims="estimator"))
        if not keep_estimator_dim and len(hybrids) == 1:
            val = val.isel(estimator=0, drop=True)
        out[name] = val
    out["R_mc"].attrs["description"] = "Monte Carlo min(MSE_TCM-only, MSE_Full-LM) / MSE (better baseline by MC)"
    out["R_mc_se"].attrs["description"] = "delta-method standard error of R_mc (paired datasets)"
    return out


def hybrid_setup(n_T: int, n_L: int, epsilon: float, m: float, hybrids: Mapping[str, Mapping],
                 bounds: tuple[float, float] | None = None) -> tuple[list[Group], dict]:
    """The two groups and the estimators ``tcm-only``, ``full-lm`` and each hybrid (Laplace noise).

    ``hybrids`` maps a label to the keyword arguments of :class:`hybridpriv.estimators.avent.Hybrid`
    (``weight`` and what it needs).  Records lie in ``bounds`` (default ``(0, m)``).
    """
    from hybridpriv.estimators.avent import FullLM, Hybrid, TCMOnly

    groups = [Group("tcm", n_T, epsilon), Group("lm", n_L, epsilon)]
    b = (0.0, m) if bounds is None else bounds
    ests = {"tcm-only": TCMOnly(groups, b), "full-lm": FullLM(groups, b)}
    for label, kwargs in hybrids.items():
        ests[label] = Hybrid(groups, b, **kwargs)
    return groups, ests


def beta_mc(n_mc: Sequence[int], cs: Sequence[float], epsilons: Sequence[float], betas, m: float,
            hybrid: Mapping[str, Mapping], draws: int, seed: int, progress: bool, engine: Mapping) -> xr.Dataset:
    """Monte Carlo of ``tcm-only``, ``full-lm`` and the hybrid(s) on the homogeneous Beta grid.

    Returns ``mse_mc*`` (``mc_estimator, distribution, n_mc, c, epsilon``) and ``R_mc``,
    ``r_mc`` with standard errors (``distribution, n_mc, c, epsilon``, plus ``estimator`` when
    there are several hybrids).  ``c * n`` must be whole for every simulated point.
    """
    labels = [b[0] for b in betas]

    def runs():
        for label, a, b in betas:
            for n in n_mc:
                for c in cs:
                    n_T, n_L = group_sizes(n, c)
                    if abs(n_T - c * n) > 1e-9:
                        raise ValueError(f"c * n must be whole for the Monte Carlo points, got c={c}, n={n}")
                    for eps in epsilons:
                        kw = {k: dict(v) for k, v in hybrid.items()}
                        for v in kw.values():
                            if v.get("weight") == "kvh":
                                v["sigma2"] = beta_variance(a, b)
                        groups, ests = hybrid_setup(n_T, n_L, eps, m, kw)
                        src = TwoGroupSource(groups, (0.0, m), (beta_sampler(a, b, m), beta_sampler(a, b, m)), draws,
                                             (m * a / (a + b),) * 2)
                        yield {"distribution": label, "n_mc": n, "c": c, "epsilon": eps}, ests, src

    dims = {"distribution": labels, "n_mc": list(n_mc), "c": list(cs), "epsilon": list(epsilons)}
    loss = mc_mse(runs(), dims, seed, progress, engine)
    return mc_summary(loss, list(hybrid), keep_estimator_dim=len(hybrid) > 1)
