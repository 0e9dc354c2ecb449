"""Provenance, netCDF output and the decision figure."""

from __future__ import annotations

import json
import platform
import subprocess
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import xarray as xr

from . import __version__

__all__ = ["git_hash", "plot_decision", "provenance", "write_netcdf"]


def git_hash() -> str:
    """The git commit of the source tree the package was imported from, or ``"unknown"``."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True
        )
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=5,
        ).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def provenance(
    config: Mapping[str, object], seed: int, started: float | None = None, dask: str = "none"
) -> dict[str, object]:
    """Attributes recording how a result was made (all netCDF-serialisable).

    ``dask``: where the chunks ran (:func:`hybridpriv.cluster.describe_client`: ``"none"``,
    ``"local N workers"`` or ``"scheduler ADDRESS (N workers)"``); ``started``: a
    :func:`time.perf_counter` value, for the wall time.
    """
    attrs: dict[str, object] = {
        "hybridpriv_version": __version__,
        "git_hash": git_hash(),
        "seed": int(seed),
        "config": json.dumps(config, sort_keys=True, default=str),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "xarray": xr.__version__,
        "dask": str(dask),
    }
    if started is not None:
        attrs["wall_time_seconds"] = round(time.perf_counter() - started, 3)
    return attrs


def _clean_attrs(attrs: Mapping[str, object]) -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in attrs.items():
        if isinstance(v, bool):
            out[k] = int(v)
        elif isinstance(v, (str, int, float, np.integer, np.floating)):
            out[k] = v
        else:
            out[k] = json.dumps(v, default=str)
    return out


def write_netcdf(ds: xr.Dataset, path: str | Path) -> Path:
    """Write ``ds`` to ``path`` (creating folders), with attributes made serialisable."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ds = ds.copy()
    ds.attrs = _clean_attrs(ds.attrs)
    for name in list(ds.variables):
        ds[name].attrs = _clean_attrs(ds[name].attrs)
    ds.to_netcdf(path, engine="h5netcdf")
    return path


def plot_decision(decision: xr.Dataset, path: str | Path, title: str | None = None) -> Path:
    """Expected loss per estimator with its 5-95% interval over datasets and its MC error."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = decision.sortby("expected_loss")
    labels = [str(x) for x in d.estimator.values]
    y = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(7.5, 0.6 * len(labels) + 2.0))
    rec = decision.attrs.get("recommended")
    colors = ["tab:green" if lab == rec else "tab:blue" for lab in labels]
    ax.hlines(y, d.risk_low, d.risk_high, color="0.6", lw=3, label="5-95% over simulated datasets")
    ax.errorbar(d.expected_loss, y, xerr=2 * d.mcse, fmt="none", ecolor="k", capsize=3, label="±2 MC s.e.")
    ax.scatter(d.expected_loss, y, c=colors, zorder=3, label="expected loss")
    meets = d["meets_requirements"] if "meets_requirements" in d else None
    ticks = []
    for lab in labels:
        fails = meets is not None and not bool(meets.sel(estimator=lab))
        ticks.append(f"{lab}{' (fails eps)' if fails else ''}\nP(best) {float(d.p_best.sel(estimator=lab)):.2f}")
    ax.set_yticks(y, ticks)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel(f"{decision.attrs.get('loss', 'squared')} error (log scale)")
    ax.set_title(title or f"Mechanism selection: recommended {rec}")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14 - 0.3 / len(labels)), ncol=3, fontsize=8, frameon=False)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
