"""Provenance, the result files (netCDF, one DataTree per select run) and the decision figure.

Plots take ``ax=`` (or make a figure not tied to a GUI backend) and return the figure; the
library never switches matplotlib's backend.
"""

from __future__ import annotations

import functools
import json
import platform
import subprocess
import textwrap
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import xarray as xr

from . import __version__

__all__ = ["result_tree", "git_hash", "machine", "plot_decision", "provenance", "save_figure", "write_netcdf", "write_result"]


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


#: The widest SIMD extension named in a machine description (the first found, widest first).
SIMD_LEVELS = ("avx512f", "avx2", "avx", "sse4_2", "neon", "asimd")


@functools.cache
def machine(cpuinfo: str | Path = "/proc/cpuinfo") -> str:
    """The machine a result was computed on, in one line: architecture, processor model, its widest SIMD extension
    and the number of cores (e.g. ``"x86_64, Intel(R) Xeon(R) Processor, avx512f, 2 cores"``).  Models fitted by NUTS
    (PyTensor's C code, compiled for the host processor, and the BLAS kernels it picks) draw different numbers on
    different machines from the same seed; a result says where it was made so that two results can be compared
    knowing that.  ``"unknown"`` for what cannot be read (``cpuinfo``: Linux's processor description, read once
    per process and path)."""
    import os

    try:
        text = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        text = ""
    fields: dict[str, str] = {}  # the first processor's description: each key's first value
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    model = next((fields[k] for k in ("model name", "Model", "Hardware") if fields.get(k)),
                 platform.processor() or "unknown")
    flags = set(fields.get("flags", fields.get("Features", "")).split())
    simd = next((f for f in SIMD_LEVELS if f in flags), "unknown")
    return f"{platform.machine() or 'unknown'}, {model}, {simd}, {os.cpu_count() or 0} cores"


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def provenance(
    config: Mapping[str, object], seed: int, started: float | None = None, dask: str = "none"
) -> dict[str, object]:
    """Attributes recording how a result was made (all netCDF-serialisable).

    ``dask``: where the chunks ran (:func:`hybridpriv.engine.cluster.describe_client`: ``"none"``,
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
        "pymc": _version("pymc"),
        "pytensor": _version("pytensor"),
        "machine": machine(),
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
        elif isinstance(v, np.ndarray) and v.ndim == 1 and v.dtype.kind in "iuf" and v.size:
            out[k] = v  # a list of numbers (hybridpriv.core.params.as_attrs)
        elif isinstance(v, list) and v and all(isinstance(x, str) for x in v):
            out[k] = v  # a list of strings
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


def _figure(ax, size: tuple[float, float]):
    """``(figure, axes)``: ``ax``'s figure, or a new figure not tied to any GUI backend."""
    if ax is not None:
        return ax.figure, ax
    from matplotlib.figure import Figure

    fig = Figure(figsize=size)
    return fig, fig.add_subplot()


#: Height (inches) of the strip under a categorical selection plot that holds its legend.
LEGEND_STRIP = 0.3


def _log_axis(ax, low: float, high: float) -> None:
    """A log x axis labelled in plain numbers (matplotlib's own minor labels print "3x10^1" into "4x10^1"): every
    power of ten, and between them 2 and 5 times it where the data span under two decades, 2, 3, 4, 5, 6 and 8
    times it where they span under one; where that leaves fewer than two labels in ``[low, high]`` (a span of about
    2x or less, where matplotlib places linear minor ticks), every tick."""
    from matplotlib import ticker

    ax.set_xscale("log")
    shown = (2.0, 3.0, 4.0, 5.0, 6.0, 8.0) if high < 10 * low else (2.0, 5.0) if high < 100 * low else ()
    decades = 10.0 ** np.arange(np.floor(np.log10(low)), np.ceil(np.log10(high)) + 1)
    marks = [d * m for d in decades for m in (1.0, *shown)]
    every = sum(low <= v <= high for v in marks) < 2

    def label(v: float, _: int) -> str:
        if v <= 0:
            return ""
        return f"{v:g}" if every or round(v / 10 ** np.floor(np.log10(v)), 6) in (1.0, *shown) else ""

    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(ticker.FuncFormatter(label))


def plot_decision(decision: xr.Dataset, ax=None, title: str | None = None, notes: Sequence[str] = ()):
    """Expected loss of every candidate with its 5-95% interval over datasets, ±2 MC s.e. and P(best).

    Works for any candidate dimension: categorical candidates (estimators) as rows, numeric ones
    (``k``, ``subset_size``, ``tau``) as a curve with its band.  Candidates that do not meet every
    unit's requirement are marked.  ``notes``: lines printed under the plot (a selection's warnings and
    two-stage plan), wrapped; on a new figure they add to its height.  Draws on ``ax`` if given, else on a
    new figure; returns the figure (save it with ``fig.savefig(path)``).
    """
    own = ax is None  # a figure of its own: its legend strip and notes are laid out here
    blocks = [textwrap.wrap(str(note), 110, subsequent_indent="    ") for note in notes]
    extra = 0.125 * sum(len(b) for b in blocks) + (0.1 if blocks else 0.0)
    dim = decision.attrs.get("candidate_dim", decision["expected_loss"].dims[0])
    rec = decision.attrs.get("recommended")
    loss = decision.attrs.get("loss", "loss")
    values = decision[dim].values
    numeric = values.dtype.kind in "iuf" and values.size > 1
    meets = decision["meets_requirements"] if "meets_requirements" in decision else None
    if numeric:
        fig, ax = _figure(ax, (7.0, 4.2 + extra))
        d = decision.sortby(dim)
        x = d[dim].values
        ax.fill_between(x, d.risk_low, d.risk_high, color="tab:blue", alpha=0.2, label="5-95% over simulated datasets")
        ax.errorbar(x, d.expected_loss, yerr=2 * d.mcse, fmt="o-", color="tab:blue", capsize=3, ms=4,
                    label="expected loss ± 2 MC s.e.")
        if meets is not None and not bool(d["meets_requirements"].all()):
            bad = ~d["meets_requirements"].values
            ax.scatter(x[bad], d.expected_loss.values[bad], marker="x", color="tab:red", zorder=4,
                       label="does not meet a requirement")
        if rec is not None:
            ax.axvline(float(rec), color="tab:green", ls="--", lw=1, label=f"recommended {dim} = {rec}")
        for xx, pb, hi in zip(x, d.p_best.values, d.risk_high.values):
            if pb > 0.005:
                ax.annotate(f"{pb:.2f}", (xx, hi), xytext=(0, 4), textcoords="offset points", ha="center", va="bottom",
                            rotation=90, fontsize=7)  # upright: neighbouring k's labels would overlap side by side
        ax.set_xlabel(dim)
        ax.set_ylabel(f"expected {loss}")
        ax.set_title(title or f"Choosing {dim} (numbers above the band: P(best))")
        ax.legend(fontsize=8)
    else:
        n = len(values)
        fig, ax = _figure(ax, (7.5, 0.6 * n + 2.0 + extra))
        d = decision.sortby("expected_loss")
        labels = [str(v) for v in d[dim].values]
        y = np.arange(n)
        colors = ["tab:green" if lab == str(rec) else "tab:blue" for lab in labels]
        ax.hlines(y, d.risk_low, d.risk_high, color="0.6", lw=3, label="5-95% over simulated datasets")
        ax.errorbar(d.expected_loss, y, xerr=2 * d.mcse, fmt="none", ecolor="k", capsize=3, label="±2 MC s.e.")
        ax.scatter(d.expected_loss, y, c=colors, zorder=3, label="expected loss")
        ticks = []
        for lab, v in zip(labels, d[dim].values):
            fails = meets is not None and not bool(d["meets_requirements"].sel({dim: v}))
            ticks.append(f"{lab}{' (not eligible)' if fails else ''}\nP(best) {float(d.p_best.sel({dim: v})):.2f}")
        ax.set_yticks(y, ticks)
        ax.invert_yaxis()
        if float(d.risk_low.min()) > 0:
            _log_axis(ax, float(d.risk_low.min()), float(d.risk_high.max()))
        ax.set_xlabel(f"{loss}" + (" (log scale)" if ax.get_xscale() == "log" else ""))
        ax.set_title(title or f"Mechanism selection: recommended {rec}")
    height = fig.get_figheight()
    # categorical: the legend in a strip of its own under the axis label, just above the notes (placed in the axes'
    # coordinates it floated half an inch below the label, and the notes as far below it)
    # (on a caller's axes, under those axes, as before: the caller's figure may hold other plots)
    strip = LEGEND_STRIP if not numeric and own else 0.0
    if strip:
        handles, names = ax.get_legend_handles_labels()
        fig.legend(handles, names, loc="lower center", bbox_to_anchor=(0.5, (extra + 0.02) / height), ncol=3,
                   fontsize=8, frameon=False)
    elif not numeric:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14 - 0.3 / len(values)), ncol=3, fontsize=8,
                  frameon=False)
    if blocks or strip:
        fig.tight_layout(rect=(0, (extra + strip) / height, 1, 1))
        y = 0.05 / height  # from the bottom up: the last note lowest; warnings in red
        for block, note in reversed(list(zip(blocks, notes))):
            fig.text(0.01, y, "\n".join(block), fontsize=7, va="bottom", ha="left", family="monospace",
                     color="tab:red" if str(note).startswith("warning") else "0.15")
            y += 0.125 * len(block) / height
    else:
        fig.tight_layout()
    return fig


def save_figure(fig, path: str | Path, dpi: int = 100) -> Path:
    """Write ``fig`` to ``path`` (creating folders) and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    return path


def result_tree(groups: Mapping[str, xr.Dataset | None], attrs: Mapping[str, object] = {}) -> xr.DataTree:
    """One DataTree: one group per entry of ``groups`` (``None`` entries are left out) and ``attrs`` at the root,
    every attribute made netCDF-serialisable."""
    tree: dict[str, xr.Dataset] = {"/": xr.Dataset(attrs=_clean_attrs(attrs))}
    for name, ds in groups.items():
        if ds is None:
            continue
        ds = ds.copy()
        ds.attrs = _clean_attrs(ds.attrs)
        for var in list(ds.variables):
            ds[var].attrs = _clean_attrs(ds[var].attrs)
        tree[f"/{name}"] = ds
    return xr.DataTree.from_dict(tree)


def write_result(path: str | Path, groups: Mapping[str, xr.Dataset | None] | xr.DataTree,
                 attrs: Mapping[str, object] = {}) -> Path:
    """Write one netCDF file holding a DataTree (given, or :func:`result_tree` of ``groups`` and ``attrs``).

    A select run writes ``posterior`` (and the other groups of PyMC's output, left as PyMC wrote
    them), ``evaluation`` and ``decision`` (:meth:`hybridpriv.workflow.Selection.to_datatree`); read it
    back with ``xarray.open_datatree(path)``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tree = groups if isinstance(groups, xr.DataTree) else result_tree(groups, attrs)
    tree.to_netcdf(path, engine="h5netcdf")
    return path
