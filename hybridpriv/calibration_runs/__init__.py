"""A calibration run kept as two small CSV tables, so that its numbers can be scored again after ``/tmp`` is gone.

:func:`hybridpriv.calibration.calibrate` returns one ``xarray.Dataset`` with a ``truth`` dimension, a ``candidate``
dimension and per-``scope`` summaries.  The summaries are derived; what a later analysis needs (another plan
floor, a P(best) recalibration, coverage per generator) is the per-truth and per-(truth, candidate) records.
:func:`write_records` writes them as ``NAME-truths.csv`` (one row per truth: every variable on ``truth`` alone) and
``NAME-pairs.csv`` (one row per truth and candidate of that truth's family: every variable on both), plus
``NAME.json`` with what produced them; :func:`read_records` rebuilds the per-truth and per-pair part of the dataset
(candidates a truth's family lacks are NaN again, as the study writes them).

Missing numbers are written ``nan`` and empty strings stay empty (a sensitivity warning that was not printed is
``""``, not missing; numbers to six significant digits).  This package's folder keeps the held-out runs the docs
quote (:func:`stored`, :func:`stored_names`; its README says which run is which); :func:`p_best_bins` pools runs'
P(best) exactly, pair by pair, in the form of a family's ``p_best_held``; :func:`regret_rules` scores the
recommendation against every fixed rule (always the same candidate) over the pooled truths; :func:`warning_lines`
counts the silent failures and the warnings ``select`` would have printed with its chance line elsewhere.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

#: Where the stored runs are (this package's folder).
HERE = Path(__file__).parent

#: The per-pair variables that say whether a candidate belongs to a truth's family (NaN in all of them: it does not).
_PRESENCE = ("expected_loss", "realised", "eligible")


def _split(ds: xr.Dataset) -> tuple[list[str], list[str]]:
    if "truth" not in ds.dims or "candidate" not in ds.dims:
        raise ValueError(f"ds must be a calibration run with dims 'truth' and 'candidate', got dims {dict(ds.sizes)}")
    per_truth = [v for v in ds.data_vars if ds[v].dims == ("truth",)]
    per_pair = [v for v in ds.data_vars if ds[v].dims == ("truth", "candidate")]
    return per_truth, per_pair


def to_tables(ds: xr.Dataset) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The run's per-truth table (index column ``truth``) and per-pair table (``truth``, ``candidate``), the latter
    without the candidates a truth's family lacks."""
    per_truth, per_pair = _split(ds)
    truths = ds[per_truth].to_dataframe().reset_index()
    pairs = ds[per_pair].transpose("truth", "candidate").to_dataframe().reset_index()
    present = [v for v in _PRESENCE if v in pairs]
    if present:
        pairs = pairs[pairs[present].notna().any(axis=1)].reset_index(drop=True)
    return truths, pairs


def from_tables(truths: pd.DataFrame, pairs: pd.DataFrame) -> xr.Dataset:
    """The dataset :func:`to_tables` was given, per-truth and per-pair variables only (NaN where a truth's family
    lacks a candidate; candidates in the order they first appear)."""
    for name, table, cols in (("truths", truths, ["truth"]), ("pairs", pairs, ["truth", "candidate"])):
        missing = [c for c in cols if c not in table]
        if missing:
            raise ValueError(f"{name} must have the columns {cols}, missing {missing}")
    order = list(truths["truth"])
    if len(set(order)) != len(order):
        raise ValueError("truths has a truth named twice in its 'truth' column")
    unknown = sorted(set(pairs["truth"]) - set(order))
    if unknown:
        raise ValueError(f"pairs names truths that truths lacks: {unknown[:5]}")
    ds = xr.Dataset.from_dataframe(truths.set_index("truth")).reindex(truth=order)
    cand = list(dict.fromkeys(pairs["candidate"]))
    grid = xr.Dataset.from_dataframe(pairs.set_index(["truth", "candidate"])).reindex(truth=order, candidate=cand)
    return xr.merge([ds, grid])


def write_records(ds: xr.Dataset, directory: str | Path, name: str, about: dict[str, Any] | None = None) -> list[Path]:
    """Write ``NAME-truths.csv``, ``NAME-pairs.csv`` and ``NAME.json`` (``about``, e.g. the kind, seed, commit and
    minutes, with the run's own attributes) into ``directory``; return the three paths."""
    if not name or "/" in name:
        raise ValueError(f"name must be a plain file stem, got {name!r}")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    truths, pairs = to_tables(ds)
    paths = [out / f"{name}-truths.csv", out / f"{name}-pairs.csv", out / f"{name}.json"]
    truths.to_csv(paths[0], index=False, na_rep="nan", float_format="%.6g")
    pairs.to_csv(paths[1], index=False, na_rep="nan", float_format="%.6g")
    attrs = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in ds.attrs.items()}
    text = [c for t in (truths, pairs) for c in t if t[c].dtype.kind in "OUS"]  # read back as text, not numbers
    paths[2].write_text(json.dumps({**(about or {}), "text_columns": sorted(set(text)), "attrs": attrs},
                                   indent=1, default=str) + "\n")
    return paths


def read_records(directory: str | Path, name: str) -> xr.Dataset:
    """The records :func:`write_records` wrote, as a dataset (``NAME.json``'s content in its attributes)."""
    base = Path(directory)
    paths = [base / f"{name}-truths.csv", base / f"{name}-pairs.csv", base / f"{name}.json"]
    for p in paths:
        if not p.is_file():
            raise FileNotFoundError(f"no calibration records {name!r} in {str(base)!r}: {p.name} is missing")
    about = json.loads(paths[2].read_text())
    text = set(about.get("text_columns", []))
    truths, pairs = (_read_table(p, f"calibration records {name!r}", text) for p in paths[:2])
    ds = from_tables(truths, pairs)
    ds.attrs.update({k: v for k, v in about.items() if k != "attrs"})
    ds.attrs.update({f"run_{k}": v for k, v in about.get("attrs", {}).items()})
    return ds


def _read_table(path: Path, what: str, text: set[str]) -> pd.DataFrame:
    """One records table through the toolkit's one CSV reader: ``text`` columns stay strings (empty ones too),
    ``True``/``False`` columns are booleans, the others integers where every cell is one, else floats (``nan``)."""
    from ..core.io import read_table

    table = read_table(path, what, min_rows=0)

    def convert(name: str, cells: list[str]) -> np.ndarray:
        if name in text:
            return np.array(cells, dtype=object)
        if cells and all(c in ("True", "False") for c in cells):
            return np.array([c == "True" for c in cells])
        try:
            return np.array([int(c) for c in cells], dtype=np.int64)
        except ValueError:
            pass
        try:
            return np.array([float(c) for c in cells], dtype=np.float64)
        except ValueError:
            from ..release.data import is_number

            row, cell = next((r, c) for r, c in enumerate(cells, start=2) if not is_number(c))
            raise ValueError(f"{what}: {path.name} row {row} column {name!r} must be a number, got {cell!r}") from None

    columns = list(zip(*table.rows)) if table.rows else [()] * len(table.header)
    return pd.DataFrame({h: convert(h, list(col)) for h, col in zip(table.header, columns)})


def stored_names() -> list[str]:
    """The names of the runs stored with the package (for :func:`stored`)."""
    return sorted(p.stem for p in HERE.glob("*.json"))


def stored(name: str) -> xr.Dataset:
    """A run stored with the package, by name (:func:`stored_names`; ``docs/calibration.md`` quotes them)."""
    names = stored_names()
    if name not in names:
        raise ValueError(f"name must be one of the stored calibration runs {names}, got {name!r}")
    return read_records(HERE, name)


def p_best_bins(runs: list[xr.Dataset], source: str = "synthetic") -> dict[str, tuple[float, float, int]]:
    """P(best) against what came true, pooled exactly over ``runs`` (datasets from :func:`stored` or
    :func:`read_records`): every eligible (truth, candidate) pair of the truths whose ``source`` is ``source``
    (``"synthetic"``, ``"real"``, or ``"any"``), binned as :func:`hybridpriv.reliability.reliability` bins them.
    Per non-empty bin: (mean reported P(best), share of the pairs whose candidate was best, pairs), the form of a
    family's :attr:`~hybridpriv.core.family.Family.p_best_held`."""
    from ..reliability import BIN_LABELS, reliability

    if source not in ("synthetic", "real", "any"):
        raise ValueError(f"source must be 'synthetic', 'real' or 'any', got {source!r}")
    if isinstance(runs, xr.Dataset):
        raise ValueError("runs must be a list of calibration runs, got one Dataset: pass [ds]")
    if not runs:
        raise ValueError("runs must hold at least one calibration run, got none")
    p, best = [], []
    for k, ds in enumerate(runs):
        missing = [v for v in ("source", "eligible", "p_best", "is_best") if v not in ds]
        if missing:
            raise ValueError(f"runs[{k}] lacks the variables {missing}: not a calibration run's records")
        keep = (ds["eligible"].values == 1)
        if source != "any":
            keep &= (ds["source"].values == source)[:, None]
        p.append(ds["p_best"].values[keep])
        best.append(ds["is_best"].values[keep])
    predicted, observed, count = reliability(np.concatenate(p), np.concatenate(best))
    return {b: (float(m), float(o), int(n)) for b, m, o, n in zip(BIN_LABELS, predicted, observed, count) if n > 0}


def regret_rules(runs: list[xr.Dataset], real_once: bool = False) -> pd.DataFrame:
    """The recommendation's regret against every fixed rule's, pooled over ``runs`` (one family's runs).

    A fixed rule always chooses the same candidate; its regret on a truth is
    :func:`hybridpriv.calibration.regret_to_best`, the recommendation's ``regret`` definition.  Only candidates
    eligible on every pooled truth are rules (a rule must be allowed to act).  Where every run recorded the
    budget-spending selector (``pythia_regret``), a last row ``"budget-spending selector"`` gives its regret on
    the same truths (against the same best candidate).
    Truths where ``select`` refused (regret NaN) are left out of every rule alike; ``attrs["left_out"]`` counts
    them.  ``real_once``: each real dataset counted once, its regrets averaged over the runs, where the runs are
    seeds of one study: a real truth is the same data in every seed (only ``select``'s draws differ), so pooling
    seeds counts it once per seed, and two real datasets in a seed of 33 truths then fill most of the top
    decile (the runs need ``source`` and ``generator``, the dataset's name).  Returns one row per rule,
    ``"recommendation"`` first, then the candidates by mean: ``median``, ``mean``, ``p90`` (percent),
    ``above_25pct`` (truths whose regret exceeds 25%) and ``truths``.
    """
    if isinstance(runs, xr.Dataset):
        raise ValueError("runs must be a list of calibration runs, got one Dataset: pass [ds]")
    if not runs:
        raise ValueError("runs must hold at least one calibration run, got none")
    names, families = None, set()
    rec, realised, eligible, selector, keys, left_out = [], [], [], [], [], 0
    with_selector = all("pythia_regret" in ds for ds in runs)
    for k, ds in enumerate(runs):
        missing = [v for v in ("regret", "realised", "eligible", *(("source", "generator") if real_once else ()))
                   if v not in ds]
        if missing:
            raise ValueError(f"runs[{k}] lacks the variables {missing}: not a calibration run's records")
        if "family" in ds:
            families.update(str(f) for f in ds["family"].values)
            if len(families) > 1:
                raise ValueError(f"runs[{k}] brings the families to {sorted(families)}: pool one family's runs")
        present = ds["realised"].notnull().any("truth").values
        these = [str(c) for c in ds["candidate"].values[present]]
        if names is None:
            names = these
        elif sorted(these) != sorted(names):
            raise ValueError(f"runs[{k}] has the candidates {these}, runs[0] {names}: pool one family's runs")
        kept = np.isfinite(ds["regret"].values)
        left_out += int((~kept).sum())
        sub = ds.isel(truth=np.flatnonzero(kept)).sel(candidate=names)
        rec.append(sub["regret"].values * 100)
        realised.append(sub["realised"].transpose("truth", "candidate").values)
        eligible.append(sub["eligible"].transpose("truth", "candidate").values == 1)
        if with_selector:
            selector.append(sub["pythia_regret"].values * 100)
        if real_once:  # a real dataset is one truth however many runs hold it; a synthetic truth is its run's own
            keys += [f"real:{g}" if src == "real" else f"{k}:{t}" for t, src, g in
                     zip(sub["truth"].values, sub["source"].values, sub["generator"].values)]
    r, risk, ok = np.concatenate(rec), np.concatenate(realised), np.concatenate(eligible)
    if r.size == 0:
        raise ValueError("runs hold no truth where select chose (every regret is NaN)")
    from ..calibration import regret_to_best

    regret = regret_to_best(risk, ok) * 100  # the study's own regret, for every candidate
    rows = {"recommendation": r}
    for j in sorted(np.flatnonzero(ok.all(axis=0)), key=lambda j: float(regret[:, j].mean())):
        rows[names[j]] = regret[:, j]
    if with_selector:
        rows["budget-spending selector"] = np.concatenate(selector)
    if real_once:  # average each key's truths (a real dataset's runs); the order of first appearance
        rows = {rule: pd.Series(v).groupby(keys, sort=False).mean().values for rule, v in rows.items()}
    # the selector's row over the truths where it chose (its ``truths`` says how many); every other row has them all
    rows = {rule: v[~np.isnan(v)] for rule, v in rows.items()}
    table = pd.DataFrame({rule: {"median": float(np.median(v)), "mean": float(v.mean()),
                                 "p90": float(np.quantile(v, 0.9)), "above_25pct": int((v > 25).sum()),
                                 "truths": int(v.size)} for rule, v in rows.items() if v.size}).T
    table = table.astype({"above_25pct": int, "truths": int})
    table.attrs["left_out"] = left_out
    return table


#: The chance lines :func:`warning_lines` recounts by default (``select``'s own first).
CHANCE_LINES = (0.25, 0.2, 0.15, 0.1, 0.05)


def warning_lines(runs: list[xr.Dataset], lines: Any = CHANCE_LINES) -> pd.DataFrame:
    """What ``select``'s warnings would have caught, and cost, with its chance line at each of ``lines``.

    ``select`` warns by chance when the recommendation's ``p_costly`` reaches the line
    (:data:`hybridpriv.engine.decision.CHANCE_WARNING`, the SPEC key ``evaluation.chance_warning``); its other
    warnings (an assumption's, an alternative's, the free candidate's, a premise's: ``sensitivity_warning``) do not
    depend on it and count as recorded.  A failure is a truth whose regret exceeds
    :data:`hybridpriv.calibration.SILENT_REGRET`; it is silent when no warning was printed.  Truths where ``select``
    refused (regret NaN) are left out (``attrs["left_out"]``).  Returns one row per line: ``failures``, ``silent``,
    ``warned`` (truths with any warning), ``false_alarms`` (warned truths that were not failures), ``fine`` (truths
    that were not failures) and ``truths``: the price of fewer silent failures in warnings on fine truths."""
    from ..calibration import SILENT_REGRET

    if isinstance(runs, xr.Dataset):
        raise ValueError("runs must be a list of calibration runs, got one Dataset: pass [ds]")
    if not runs:
        raise ValueError("runs must hold at least one calibration run, got none")
    lines = [float(x) for x in np.atleast_1d(np.asarray(lines, dtype=float))]
    bad = [x for x in lines if not 0.0 < x <= 1.0]
    if not lines or bad:
        raise ValueError(f"lines must be chance lines in (0, 1], got {bad or lines}")
    regret, chance, other = [], [], []
    for k, ds in enumerate(runs):
        missing = [v for v in ("regret", "p_costly_recommended", "sensitivity_warning") if v not in ds]
        if missing:
            raise ValueError(f"runs[{k}] lacks the variables {missing}: not a calibration run's records (one made "
                             "before p_costly existed cannot be recounted)")
        regret.append(np.asarray(ds["regret"].values, dtype=float))
        chance.append(np.asarray(ds["p_costly_recommended"].values, dtype=float))
        other.append(np.asarray(ds["sensitivity_warning"].values, dtype=str) != "")
    r, p, w = np.concatenate(regret), np.concatenate(chance), np.concatenate(other)
    kept = np.isfinite(r)
    if np.isnan(p[kept]).any():
        raise ValueError("runs hold a truth where select chose but recorded no p_costly: it cannot be recounted")
    r, p, w = r[kept], p[kept], w[kept]
    failed = r > SILENT_REGRET
    rows = {}
    for line in lines:
        warned = w | (p >= line)
        rows[line] = {"failures": int(failed.sum()), "silent": int((failed & ~warned).sum()),
                      "warned": int(warned.sum()), "false_alarms": int((warned & ~failed).sum()),
                      "fine": int((~failed).sum()), "truths": int(r.size)}
    table = pd.DataFrame(rows).T
    table.index.name = "chance_line"
    table.attrs["left_out"] = int((~kept).sum())
    return table
