"""The public-private family's private data: ``DIR/private.csv``, the private cohort's records.

A header row naming at least the SPEC's ``columns`` and its ``outcome`` (other columns are ignored).
Each value is read as the SPEC declares its column (a number, an integer, or a categorical level that
the public records have); the outcome is coded 1 where it equals ``outcome_positive`` (``"1"`` for a
0/1 column).  The number of records must be the SPEC's ``private.n`` (it is published).  Continuous
columns are standardised with the public means and sds, exactly as the model's simulated cohorts are,
and the records are laid beside the public ones as the candidates read them
(:class:`~hybridpriv.families.public_private.wang.HybridDesign`).  Refusals name the column, the row and the rule,
never a value or a count.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...release.data import PrivateDataError, data_file, read_rows

__all__ = ["load_private_records", "stand_in_design"]


def _layout(spec: Any):
    from .model import Layout
    from .spec import _standardise

    return Layout(spec.values, *_standardise(spec.values))


def load_private_records(directory: str | Path, spec: Any) -> Any:
    """The private cohort of a ``public-private`` SPEC beside its public records (see the module docstring)."""
    from .wang import HybridDesign

    path = data_file(directory, "private.csv", "the private records, with a header row")
    rows = read_rows(path)
    v = spec.values
    cols, outcome = v.columns, v.outcome
    header = [h.strip() for h in rows[0]] if rows else []
    for name in [*cols, outcome]:
        if name not in header:
            raise PrivateDataError(f"{path.name} has no column {name!r} (rule: the SPEC's columns and outcome)")
    body = rows[1:]
    if len(body) != v.private.n:
        raise PrivateDataError(f"{path.name} does not hold the SPEC's private.n = {v['private']['n']} records "
                               "(rule: n is published, the file must match)")
    X = np.empty((len(body), len(cols)))
    levels = v.public["levels"]
    for j, (name, kind) in enumerate(cols.items()):
        k = header.index(name)
        for i, r in enumerate(body, start=1):
            cell = r[k].strip() if k < len(r) else ""
            if kind == "categorical":
                if cell not in levels[name]:
                    raise PrivateDataError(f"column {name!r}: data row {i} of {path.name} is not a level of the public "
                                           "records (rule: a categorical value is one the public records have)")
                X[i - 1, j] = levels[name].index(cell)
                continue
            try:
                x = float(cell)
            except ValueError:
                x = float("nan")
            if not np.isfinite(x) or (kind == "integer" and x != round(x)):
                raise PrivateDataError(f"column {name!r}: data row {i} of {path.name} is not {'an integer' if kind == 'integer' else 'a number'} "
                                       f"(rule: the column is declared {kind})")
            X[i - 1, j] = x
    positive = v.outcome_positive or "1"
    k = header.index(outcome)
    raw = [r[k].strip() if k < len(r) else "" for r in body]
    allowed = set(map(str, (0, 1))) if v.outcome_positive is None else None
    if allowed is not None:
        bad = next((i for i, y in enumerate(raw, start=1) if y not in allowed), None)
        if bad is not None:
            raise PrivateDataError(f"outcome {outcome!r}: data row {bad} of {path.name} is not 0 or 1 (rule: a 0/1 "
                                   "outcome unless outcome_positive names the value coded 1)")
    y = np.array([value == positive for value in raw], dtype=float)
    layout = _layout(spec)
    Z = (X - layout.center) / layout.scale
    private = np.column_stack([Z, y]) if layout.logistic else Z
    return HybridDesign(private, layout.public, categorical=layout.categorical, columns=layout.columns,
                        label=layout.label)


def stand_in_design(spec: Any) -> Any:
    """Public data only: the public records (cycled to the private size) in the private cohort's place."""
    from .wang import HybridDesign

    layout = _layout(spec)
    n = spec.values.private.n
    private = layout.public[np.arange(n) % layout.public.shape[0]]
    return HybridDesign(private, layout.public, categorical=layout.categorical, columns=layout.columns,
                        label=layout.label)
