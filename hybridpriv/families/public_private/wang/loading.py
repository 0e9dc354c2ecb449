"""Your own data (Section 5.2): a private and a public CSV file into a :class:`HybridDesign`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ....core.io import read_table
from ._checks import check_bool
from .design import HybridDesign

__all__ = ["load_hybrid_csv"]


def _read_csv(path: object, name: str, delimiter: str) -> tuple[list[str], list[list[str]]]:
    table = read_table(path, name, ValueError, delimiter)
    return list(table.header), table.rows


def _sort_levels(values: set[str]) -> list[str]:
    try:
        return sorted(values, key=float)
    except ValueError:
        return sorted(values)


def _is_float(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True


def load_hybrid_csv(
    private_csv: str | Path,
    public_csv: str | Path,
    label: str | None = None,
    categorical: Sequence[str] = (),
    columns: Sequence[str] | None = None,
    deduplicate_public: bool = True,
    delimiter: str = ",",
) -> HybridDesign:
    """Load a private and a public CSV file (with headers) into a :class:`HybridDesign`.

    The paper's Section 5.2 data (two acute myocardial infarction cohorts, Edinburgh and
    Sheffield, Kennedy et al. 1996) are not distributed with this package; with your own files,
    ``load_hybrid_csv`` -> :func:`~hybridpriv.families.public_private.wang.algorithm2` (or a mechanism such as
    :class:`~hybridpriv.families.public_private.wang.Algorithm2`) runs the same pipeline.

    Parameters
    ----------
    private_csv, public_csv
        Paths; both must contain every used column.
    label
        Outcome column (0/1, or two values coded 0/1 in sorted order), placed last so the
        logistic contrast finds it.
    categorical
        Names of categorical covariates; their values are coded by the sorted public levels.
    columns
        Covariates to use (default: every public column except the label, in file order).
    deduplicate_public
        Keep the first occurrence of repeated public rows in ``public`` (the paper removes
        replicates so weights are not ambiguous); ``public_all`` keeps them all.
    delimiter
        Field separator.
    """
    ph, pb = _read_csv(private_csv, "private_csv", delimiter)
    eh, eb = _read_csv(public_csv, "public_csv", delimiter)
    if isinstance(categorical, str) or not isinstance(categorical, Sequence):
        raise TypeError(f"categorical must be a sequence of column names, got {categorical!r}")
    if columns is None:
        cols = [h for h in eh if h != label]
    else:
        if isinstance(columns, str) or not isinstance(columns, Sequence):
            raise TypeError(f"columns must be a sequence of column names, got {columns!r}")
        cols = [str(x) for x in columns if x != label]
    if label is not None:
        cols.append(str(label))
    for name, header in (("private_csv", ph), ("public_csv", eh)):
        missing = [x for x in cols if x not in header]
        if missing:
            raise ValueError(f"{name} lacks column(s) {missing}; it has {header}")
    unknown = [x for x in categorical if x not in cols]
    if unknown:
        raise ValueError(f"categorical names column(s) {unknown} that are not used columns {cols}")
    cat_set = set(categorical) | ({label} if label is not None else set())
    levels: dict[str, tuple[str, ...]] = {}
    for col in cols:
        if col in cat_set:
            j = eh.index(col)
            levels[col] = tuple(_sort_levels({r[j].strip() for r in eb}))
    if label is not None:
        lv = levels[label]
        if len(lv) > 2:
            raise ValueError(f"label column {label!r} must have two values, the public file has {list(lv)}")

    def convert(header: list[str], body: list[list[str]], name: str) -> np.ndarray:
        out = np.empty((len(body), len(cols)))
        for k, col in enumerate(cols):
            j = header.index(col)
            raw = [r[j].strip() for r in body]
            if col in cat_set:
                code = {v: i for i, v in enumerate(levels[col])}
                if col == label:
                    bad = [v for v in raw if v not in code]
                    if bad:
                        raise ValueError(f"{name}: label column {label!r} has value {bad[0]!r} not among {list(levels[col])}")
                    if len(levels[col]) == 1 and levels[col][0] in ("0", "1"):
                        code = {levels[col][0]: int(float(levels[col][0]))}
                out[:, k] = [code.get(v, -1) for v in raw]
            else:
                try:
                    out[:, k] = [float(v) for v in raw]
                except ValueError:
                    bad = next(i for i, v in enumerate(raw) if not _is_float(v))
                    raise ValueError(
                        f"{name}: column {col!r} row {bad + 2} is not a number: {raw[bad]!r} "
                        "(mark it categorical, or clean the file)"
                    ) from None
                if not np.isfinite(out[:, k]).all():
                    raise ValueError(f"{name}: column {col!r} has a missing or infinite value")
        return out

    private = convert(ph, pb, "private_csv")
    public_all = convert(eh, eb, "public_csv")
    if check_bool(deduplicate_public, "deduplicate_public"):
        _, first = np.unique(public_all, axis=0, return_index=True)
        public = public_all[np.sort(first)]
    else:
        public = public_all
    cat_idx = tuple(cols.index(x) for x in cols if x in set(categorical))
    return HybridDesign(private=private, public=public, categorical=cat_idx, columns=tuple(cols), label=label,
                        public_all=public_all, levels=levels)
