"""Ferrando et al., Figure 2: RMSE of the weighted median against Jorgensen's PE median.

``n = 1001`` records from ``N(0, 1)`` clamped to ``[-4, 4]`` (bounds not stated in the paper;
we take +-4 sigma), a high-privacy group (``epsilon_H``) and a low-privacy group
(``epsilon_L``), the share of high-privacy users from 0.1 to 0.9; scenarios
``(epsilon_H, epsilon_L) = (0.1, 1.0)`` and ``(0.01, 10.0)``; RMSE against the population
median 0, every trial with fresh data.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from ..core.privacy import Bounds, Group
from ..engine.evaluate import evaluate_many
from ..engine.options import Engine
from ..estimators import PEMedian, WeightedMedian
from ..families.grouped import clamped_normal_moments, normal_source
from ._common import mse_with_ci

__all__ = ["DESCRIPTION", "PAPER", "SCENARIOS", "claims", "plot", "run"]

DESCRIPTION = "Ferrando et al. Fig. 2: RMSE of weighted vs PE medians over the high-privacy share"
PAPER = "Ferrando, Gillenwater, Kulesza: Combining Public and Private Data"
N = 1001
BOUNDS = Bounds(-4.0, 4.0)
SCENARIOS = ((0.1, 1.0), (0.01, 10.0))


def run(quick: bool = False, seed: int = 0, engine: Engine | None = None) -> xr.Dataset:
    """``engine``: for :func:`~hybridpriv.engine.evaluate.evaluate_many`."""
    shares = [0.1, 0.5, 0.9] if quick else [round(0.1 * k, 1) for k in range(1, 10)]
    trials = 100 if quick else 500
    sigma2 = clamped_normal_moments(0.0, 1.0, BOUNDS)["variance"]

    def runs():
        for s, (eh, el) in enumerate(SCENARIOS):
            for share in shares:
                nh = int(round(share * N))
                groups = [Group("high", nh, eh), Group("low", N - nh, el)]
                ests = {"weighted-median": WeightedMedian(groups, BOUNDS, sigma2), "pe-median": PEMedian(groups, BOUNDS)}
                yield {"scenario": s, "share": share}, ests, normal_source(groups, BOUNDS, 0.0, 1.0, draws=trials)

    res = evaluate_many(runs(), {"scenario": list(range(len(SCENARIOS))), "share": shares}, trials=1, seed=seed,
                        engine=engine)
    mse, low, high = mse_with_ci(res["loss"], ("chain", "draw", "trial"))
    ds = xr.Dataset(
        {
            "rmse": np.sqrt(mse).transpose("estimator", "scenario", "share"),
            "rmse_low": np.sqrt(np.maximum(low, 0)).transpose("estimator", "scenario", "share"),
            "rmse_high": np.sqrt(high).transpose("estimator", "scenario", "share"),
        }
    ).reindex(estimator=["weighted-median", "pe-median"])
    ds = ds.assign_coords(
        epsilon_high=("scenario", [e for e, _ in SCENARIOS]), epsilon_low=("scenario", [e for _, e in SCENARIOS])
    )
    ds["rmse"].attrs["description"] = "root mean squared error against the population median 0"
    ds["rmse_low"].attrs["description"] = "95% interval (normal interval of the MSE, square-rooted)"
    ds["share"].attrs["description"] = "share of high-privacy users"
    ds.attrs.update({"trials": trials, "n": N, "bounds": f"[{BOUNDS.lower:g}, {BOUNDS.upper:g}]",
                     "config": {"shares": shares, "trials": trials}})
    return ds


def plot(ds: xr.Dataset, path: str | Path) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4))
    axes = fig.subplots(1, ds.sizes["scenario"])
    for ax, s in zip(np.atleast_1d(axes), ds.scenario.values):
        d = ds.sel(scenario=s)
        for est, color in (("weighted-median", "tab:blue"), ("pe-median", "tab:red")):
            e = d.sel(estimator=est)
            ax.plot(d.share, e.rmse, "o-", color=color, label=est)
            ax.fill_between(d.share, e.rmse_low, e.rmse_high, color=color, alpha=0.2)
        ax.set_title(f"eps_H={float(d.epsilon_high):g}, eps_L={float(d.epsilon_low):g}")
        ax.set_xlabel("share of high-privacy users")
        ax.set_ylabel("RMSE of the median")
        ax.legend()
    fig.suptitle(f"Weighted vs PE median, n={int(ds.attrs['n'])}, {int(ds.attrs['trials'])} trials (band: 95% CI)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def claims(ds: xr.Dataset) -> list:
    """Sections 2 and 3's claims about Figure 2, from the Monte Carlo RMSEs and their 95% intervals.

    Tolerance: one estimator is *better* at a share when its interval lies wholly below the other's
    (non-overlapping 95% intervals, a conservative test), *worse* when wholly above.
    """
    from ._claims import Claim

    w, pe = ds.sel(estimator="weighted-median"), ds.sel(estimator="pe-median")
    better = w["rmse_high"] < pe["rmse_low"]  # (scenario, share)
    worse = w["rmse_low"] > pe["rmse_high"]
    ratio = pe["rmse"] / w["rmse"]
    rows = []
    for side, k in (("left", 0), ("right", 1)):
        b, r, bad = better.sel(scenario=k), ratio.sel(scenario=k), worse.sel(scenario=k)
        eh, el = float(ds.epsilon_high.sel(scenario=k)), float(ds.epsilon_low.sel(scenario=k))
        rows.append(Claim(
            f"Sec. 3, Fig. 2 {side}", f"the competitive advantage of the weighted median over the PE median "
            f"(epsilon_H = {eh:g}, epsilon_L = {el:g})", "-",
            f"RMSE of PE / weighted {float(r.min()):.2f}-{float(r.max()):.2f} over the high-privacy shares "
            f"{float(ds.share[0]):g}-{float(ds.share[-1]):g}; weighted better (95% intervals apart) at "
            f"{int(b.sum())} of {b.size} shares, worse at {int(bad.sum())}",
            "holds" if bool(b.all()) else
            ("partly" if bool(b.any()) and not bool(bad.any()) else "does not hold")))
    rows.append(Claim(
        "Sec. 2, 'Quantiles'", "re-using the means' mixing weights, the weighted median is competitive with the PE "
        "mechanism in RMSE", "-",
        f"weighted worse (95% intervals apart) in {int(worse.sum())} of {worse.size} settings; RMSE of PE / weighted "
        f"at least {float(ratio.min()):.2f}",
        "holds" if not bool(worse.any()) else "does not hold"))
    return rows
