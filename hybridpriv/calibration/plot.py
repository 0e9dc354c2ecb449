"""The calibration study's figure: regret by truth, the reported ranges against the realised risks, and the
reliability of P(best)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from .scoring import SILENT_REGRET

__all__ = ["plot_calibration"]


def plot_calibration(ds: xr.Dataset, axes=None):
    """Three panels: regret by truth (sorted, per family), realised risk / expected loss against the
    reported range, and the reliability diagram of P(best).  Returns the figure."""
    from matplotlib.figure import Figure

    if axes is None:
        fig = Figure(figsize=(15, 4.5), layout="constrained")
        axes = fig.subplots(1, 3)
    fig = axes[0].figure
    ax = axes[0]
    for fam in [s for s in ds.scope.values if s != "overall"]:
        r = np.sort(ds.regret.values[ds.family.values == fam])
        ax.plot(np.arange(1, r.size + 1) / r.size, 100 * r, marker="o", ms=3, label=fam)
    ax.axhline(100 * SILENT_REGRET, color="grey", ls="--", lw=1)
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set(xlabel="share of truths", ylabel="regret of the recommendation (%)", ylim=(0, None),
           title=f"Regret (above {SILENT_REGRET:.0%}: a failure select must warn of)")
    ax.legend()
    ax = axes[1]
    for fam in [s for s in ds.scope.values if s != "overall"]:
        d = ds.isel(truth=np.flatnonzero(ds.family.values == fam))
        lo, hi = (d.risk_low / d.realised).values.ravel(), (d.risk_high / d.realised).values.ravel()
        keep = np.isfinite(lo) & np.isfinite(hi)
        ax.scatter(lo[keep], hi[keep], s=6, alpha=0.5, label=fam)
    ax.axvline(1, color="grey", lw=1)
    ax.axhline(1, color="grey", lw=1)
    ax.set(xscale="log", yscale="log", xlabel="5% of the reported risk / realised risk",
           ylabel="95% / realised", title="Coverage: covered in the upper-left quadrant")
    ax.legend()
    ax = axes[2]
    ax.plot([0, 1], [0, 1], color="grey", lw=1)
    for s in ds.scope.values:
        pred, obs, n = (ds[v].sel(scope=s).values for v in ("reliability_predicted", "reliability_observed",
                                                             "reliability_count"))
        line = ax.plot(pred, obs, marker="o", label=f"{s} ({int(np.nansum(n))} pairs)")[0]
        if "reliability_low" in ds:  # what a calibrated P(best) would give: its 95% range, as a thin bar per bin
            lo, hi = (ds[v].sel(scope=s).values for v in ("reliability_low", "reliability_high"))
            ax.vlines(pred, lo, hi, color=line.get_color(), lw=0.8, alpha=0.6)
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="P(best) reported", ylabel="share of truths where it was best",
           title="Reliability of P(best) (bars: 95% if calibrated)")
    ax.legend()
    return fig
