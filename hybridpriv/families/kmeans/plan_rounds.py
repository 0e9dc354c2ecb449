"""The first stage of a K-means two-stage plan released for real: one round with the LM users' devices.

:class:`~hybridpriv.families.kmeans.plan.CellCountsProbe` releases each group's count of users per cell of the
pilot start.  The TCM users' points are with the curator; the LM users' are on their devices, so the probe is a
release made in rounds (:mod:`hybridpriv.release.rounds` drives it and keeps the ledger), with one round:

* before round 1: ``DATA/tcm.csv``, the TCM users' raw points (the public group size of rows, in the box);
* round 1: the curator publishes ``OUT/probe/round.json`` (the pilot start's centres, ``share x epsilon``, ``k``, the
  box and a digest binding them to this release); each LM device answers its cell by K-ary randomized response
  (``python -m hybridpriv.families.kmeans.device cell``), collected as ``DATA/lm-cells.csv``
  (``user,cell,digest``, one line per LM user, a header line allowed first); the digest binds each cell to all
  the round publishes (:func:`~.device.cells_digest`), and each device answers only at the epsilon its user agreed
  to (``--epsilon``);
* the release: the TCM counts per cell plus OpenDP Laplace noise of scale ``1 / (share x epsilon)``
  (:func:`~.cells.laplace_counts`), then the LM answers' counts debiased
  (:func:`hybridpriv.noise.rr_debias_counts`): the same ``2k`` numbers, by the same functions, as the
  simulation the plan was judged on (:meth:`~.plan.CellCountsProbe.release`).

Refusals name the group, the file, the row and the rule, never a point, a cell or a count.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...release.data import PrivateDataError, read_rows
from .device import CELL_HEADER, CELLS_FORMAT, cells_digest
from .rounds import load_points

__all__ = ["CellCountsRounds", "CELLS_FILE", "cell_users"]

#: The LM devices' answers to the probe, in the data folder.
CELLS_FILE = "lm-cells.csv"


def _rows(path: Path) -> list[list[str]]:
    """``lm-cells.csv``'s rows, its header line (first or nowhere) dropped."""
    rows = read_rows(path)
    if rows and ",".join(c.strip() for c in rows[0]) == CELL_HEADER:
        rows = rows[1:]
    return rows


def cell_users(path: Path) -> list[str]:
    """The users who answered the probe (``lm-cells.csv``), in file order."""
    return [row[0].strip() for row in _rows(path)]


class CellCountsRounds:
    """The one round of a :class:`~hybridpriv.families.kmeans.plan.CellCountsProbe`'s release (the protocol
    :mod:`hybridpriv.release.rounds` drives; ``spec``: the ``kmeans`` SPEC, for its box)."""

    total = 1
    central = ("tcm",)
    local = ("lm",)
    needs_devices = True

    def __init__(self, probe: Any, spec: Any) -> None:
        self.probe = probe
        self.k, self.d = probe.k, int(probe.centres.shape[1])
        self.lower, self.upper = (float(b) for b in spec.values.bounds)
        self.sizes = {"tcm": probe.n_tcm, "lm": probe.n_lm}

    def files(self) -> str:
        """What the data folder must hold (help and instructions)."""
        return f"tcm.csv (the raw points of group 'tcm'), then {CELLS_FILE} (group 'lm''s devices' cells)"

    def answer_files(self, t: int) -> list[str]:
        """The files the devices' answers to round ``t`` arrive in."""
        return [CELLS_FILE]

    def load(self, directory: str | Path) -> dict[str, Any]:
        """The TCM users' points (checked: the public group size, every coordinate in the box)."""
        return {"points": load_points(directory, "tcm", self.d, self.lower, self.upper, self.sizes["tcm"])}

    def data_bytes(self, data: dict[str, Any]) -> dict[str, bytes]:
        """The TCM points in file order (the ledger's salted fingerprints; the LM devices send only their answer)."""
        return {"tcm": np.ascontiguousarray(data["points"], dtype="<f8").tobytes()}

    def begin(self, rng: np.random.Generator) -> dict[str, Any]:
        """Round 0: the pilot start (public)."""
        return {"centres": self.probe.centres.tolist()}

    def published(self, state: dict[str, Any], t: int, release: str) -> dict[str, Any]:
        """``OUT/probe/round.json``: what the devices read (:func:`~.device.cell_report`)."""
        out = {"format": CELLS_FORMAT, "release": release, "round": t, "centres": state["centres"],
               "epsilon": self.probe.spent, "k": self.k, "bounds": [self.lower, self.upper]}
        return {**out, "digest": cells_digest(out)}

    def answers(self, directory: str | Path, data: dict[str, Any], published: dict[str, Any]
                ) -> dict[str, np.ndarray] | None:
        """The LM devices' reported cells, or ``None`` while ``lm-cells.csv`` is missing."""
        path = Path(directory) / CELLS_FILE
        if not path.is_file():
            return None
        rows = _rows(path)
        seen: set[str] = set()
        cells = np.empty(len(rows), dtype=np.intp)
        for line, row in enumerate(rows, start=1):
            if len(row) != 3:
                raise PrivateDataError(f"group 'lm': data row {line} of {path.name} is not a cell line (rule: "
                                       "user,cell,digest)")
            user = row[0].strip()
            if row[2].strip() != published["digest"]:
                raise PrivateDataError(f"group 'lm': data row {line} of {path.name} answers other centres than those "
                                       "published for this probe (rule: a cell carries the probe's digest)")
            if user in seen:
                raise PrivateDataError(f"group 'lm': data row {line} of {path.name} names a user twice (rule: one "
                                       "cell per user)")
            seen.add(user)
            try:
                cells[line - 1] = int(row[1])
            except ValueError:
                cells[line - 1] = -1
            if not 0 <= cells[line - 1] < self.k:
                raise PrivateDataError(f"group 'lm': data row {line} of {path.name}: the cell is not one of "
                                       f"0..{self.k - 1} (rule: a cell index)")
        if len(rows) != self.sizes["lm"]:
            raise PrivateDataError(f"group 'lm': {path.name} does not hold the group's public size of cells (rule: "
                                   "group sizes are public, every LM user answers once)")
        return {"lm": cells}

    def step(self, state: dict[str, Any], data: dict[str, Any], answers: dict[str, np.ndarray],
             rng: np.random.Generator) -> dict[str, Any]:
        """The release: the TCM counts with Laplace noise, the LM cells' counts debiased."""
        from ...noise import rr_debias_counts
        from .algorithms import nearest_centre
        from .cells import laplace_counts

        centres = np.asarray(state["centres"], dtype=float)
        tcm = laplace_counts(nearest_centre(data["points"], centres)[0], self.k, self.probe.spent, rng)[0]
        reports = np.bincount(answers["lm"], minlength=self.k).astype(float)
        lm = rr_debias_counts(reports, self.sizes["lm"], self.probe.spent, self.k)
        return {**state, "released": [float(v) for v in np.concatenate([tcm, lm])]}

    def result(self, state: dict[str, Any]) -> np.ndarray:
        """The ``2k`` released counts (TCM, then LM)."""
        return np.asarray(state["released"], dtype=float)
