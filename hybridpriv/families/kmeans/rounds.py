"""A K-means release in rounds: the curator's side of Algorithm 1 with real devices between the iterations.

The LM users' devices (:mod:`hybridpriv.families.kmeans.device`) take part in every iteration: each
answers round ``t`` with the randomized cluster nearest to its own point among the centres published
after round ``t - 1``.  So the release runs in rounds, one ``hybridpriv release`` command per round
(:mod:`hybridpriv.release.rounds` drives them and keeps the ledger):

* before round 1: ``DATA/<unit>.csv`` (the raw points of the users the candidate reads centrally: ``tcm``
  for ``tcm-T`` and ``hybrid-T``) and ``DATA/<unit>-reports.csv`` (line 4: one report per user who reports
  locally, ``lm`` for ``hybrid-T``, both groups for ``lm-T``), drawn by the devices with the SPEC's
  ``epsilon``, the candidate's ``tau``, ``k`` and the box;
* round ``t``: ``DATA/<unit>-round-<t>.csv``: every reporting user's answer ``user,cluster,round,digest``
  to the centres published in ``OUT/round.json`` (the digest binds the answer to them).

Each round, the curator releases the TCM branch's noisy counts and sums (lines 9-10, OpenDP Laplace),
computes the LM branch's means from the reports and answers (lines 11-12), mixes them by the PWH weight
(lines 13-15) and publishes the new centres: the same functions as the simulation
(:func:`~hybridpriv.families.kmeans.algorithms.algorithm.lm_means`, :func:`~hybridpriv.families.kmeans.algorithms.algorithm.mix`).
A candidate without local users (``tcm-T``) needs no device and runs every round at once.

Refusals name the group, the file, the row and the rule, never a point, an answer or a count.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ...release.data import PrivateDataError, data_file, is_number, read_rows
from .cells import group_sizes
from .device import centres_digest

__all__ = ["KMeansRounds"]


def _read_points(path: Path, unit: str, d: int, lo: float, hi: float) -> np.ndarray:
    rows = read_rows(path)
    if rows and not is_number(rows[0][0].strip()):
        rows = rows[1:]
    out = np.empty((len(rows), d))
    for line, row in enumerate(rows, start=1):
        if len(row) != d:
            raise PrivateDataError(f"group {unit!r}: data row {line} of {path.name} does not have {d} cells (rule: one "
                                   "coordinate per column)")
        try:
            out[line - 1] = [float(c) for c in row]
        except ValueError:
            raise PrivateDataError(f"group {unit!r}: data row {line} of {path.name}: a cell is not a number (rule: "
                                   "every coordinate is a number)") from None
        if not (np.isfinite(out[line - 1]).all() and ((out[line - 1] >= lo) & (out[line - 1] <= hi)).all()):
            raise PrivateDataError(f"group {unit!r}: data row {line} of {path.name} lies outside the box "
                                   f"[{lo:g}, {hi:g}] (rule: every coordinate lies in the SPEC's bounds)")
    return out


def load_points(directory: str | Path, unit: str, d: int, lo: float, hi: float, size: int) -> np.ndarray:
    """``DIR/<unit>.csv``: the group's raw points, checked (``d`` coordinates each, in the box, the group's public
    ``size`` of rows)."""
    path = data_file(directory, f"{unit}.csv", f"group {unit!r}: its users' points")
    x = _read_points(path, unit, d, lo, hi)
    if x.shape[0] != size:
        raise PrivateDataError(f"group {unit!r}: {path.name} does not hold the group's public size of points "
                               "(rule: group sizes are public, the file must match)")
    return x


class KMeansRounds:
    """The rounds of one K-means candidate's release (the protocol :mod:`hybridpriv.release.rounds` drives).

    Parameters
    ----------
    mech
        The candidate (a :class:`~hybridpriv.families.kmeans.algorithms.mechanisms._KMeans`: ``tcm-T``, ``lm-T``,
        ``hybrid-T`` and their debiased variants).
    spec
        The ``kmeans`` SPEC (group sizes, box, pilot start).
    """

    def __init__(self, mech: Any, spec: Any) -> None:
        self.mech, self.spec = mech, spec
        self.total = int(mech.tau)
        self.central = tuple(mech._tcm_units or ())
        self.local = tuple(mech._lm_units or ())
        self.sizes = group_sizes(spec)
        self.k, self.d, self.bounds = int(mech.k), int(mech.d), mech.bounds

    @property
    def needs_devices(self) -> bool:
        """Whether some users report locally (the rounds wait for their devices' answers)."""
        return bool(self.local)

    def files(self) -> str:
        """What the data folder must hold before round 1 (help and instructions)."""
        parts = [f"{u}.csv (the raw points of group {u!r})" for u in self.central]
        parts += [f"{u}-reports.csv (group {u!r}'s device reports)" for u in self.local]
        return ", ".join(parts)

    def waiting_for(self, directory: str | Path) -> str:
        """What the devices must send before round 1 and is not in ``directory`` yet, with the command that draws
        it (``""``: all there).  A two-stage plan learns its second candidate only after its probe, so the LM
        devices report then (:func:`hybridpriv.release.plan.release_plan` stops and says so)."""
        missing = [u for u in self.local if not (Path(directory) / f"{u}-reports.csv").is_file()]
        if not missing:
            return ""
        lo, hi = self.bounds.lower, self.bounds.upper
        return (f"{', '.join(f'{u}-reports.csv' for u in missing)} in the data folder: the report of each device "
                f"of group {', '.join(repr(u) for u in missing)} (python -m hybridpriv.families.kmeans.device report "
                "--epsilon "
                f"{float(self.mech.epsilon)!r} --tau {self.total} --k {self.k} --bounds {lo!r} {hi!r} ...)")

    # -- private data before round 1 ------------------------------------------------------------
    def load(self, directory: str | Path) -> dict[str, Any]:
        """The raw points of the central units and the line-4 reports of the local ones (checked)."""
        lo, hi = self.bounds.lower, self.bounds.upper
        data: dict[str, Any] = {"points": {}, "reports": {}, "users": {}}
        for u in self.central:
            data["points"][u] = load_points(directory, u, self.d, lo, hi, self.sizes[u])
        want = (float(self.mech.epsilon), self.total, self.k, lo, hi)
        for u in self.local:
            path = data_file(directory, f"{u}-reports.csv", f"group {u!r}: its devices' reports (line 4)")
            rows = [r for r in read_rows(path) if r[0].strip() != "user"]
            users, reports = [], np.empty((len(rows), self.d))
            for line, row in enumerate(rows, start=1):
                if len(row) != self.d + 6:
                    raise PrivateDataError(f"group {u!r}: data row {line} of {path.name} is not a report line (rule: "
                                           f"user,x1..x{self.d},epsilon,tau,k,lower,upper)")
                try:
                    reports[line - 1] = [float(c) for c in row[1 : 1 + self.d]]
                    used = (float(row[-5]), int(row[-4]), int(row[-3]), float(row[-2]), float(row[-1]))
                except ValueError:
                    raise PrivateDataError(f"group {u!r}: data row {line} of {path.name}: a cell is not a number "
                                           "(rule: user,x1..xd,epsilon,tau,k,lower,upper)") from None
                if not np.isfinite(reports[line - 1]).all():
                    raise PrivateDataError(f"group {u!r}: data row {line} of {path.name}: the report is not finite")
                if not (math.isclose(used[0], want[0]) and used[1:3] == want[1:3] and math.isclose(used[3], want[3])
                        and math.isclose(used[4], want[4])):
                    raise PrivateDataError(
                        f"group {u!r}: data row {line} of {path.name} was drawn for other parameters than the "
                        f"candidate's (epsilon {want[0]:g}, tau {want[1]}, k {want[2]}, bounds [{lo:g}, {hi:g}]) (rule: "
                        "the group's promise is what its devices drew)")
                users.append(row[0].strip())
            if len(set(users)) != len(users):
                raise PrivateDataError(f"group {u!r}: {path.name} names a user twice (rule: one report per user)")
            if len(users) != self.sizes[u]:
                raise PrivateDataError(f"group {u!r}: {path.name} does not hold the group's public size of reports "
                                       "(rule: group sizes are public, the file must match)")
            self._same_users_as_cells(directory, u, users)
            data["reports"][u], data["users"][u] = reports, users
        return data

    @staticmethod
    def _same_users_as_cells(directory: str | Path, unit: str, users: list[str]) -> None:
        """After a two-stage plan's probe (``lm-cells.csv`` in the data folder), the LM users who report must be
        the ones who answered their cells: the probe counted them (the names are compared, never a point)."""
        from .plan_rounds import CELLS_FILE, cell_users

        path = Path(directory) / CELLS_FILE
        if unit != "lm" or not path.is_file():
            return
        if set(cell_users(path)) != set(users):
            raise PrivateDataError(f"group 'lm': the users of lm-reports.csv are not those of {CELLS_FILE} (rule: the "
                                   "LM users who report are the ones who answered the plan's probe)")

    def data_bytes(self, data: dict[str, Any]) -> dict[str, bytes]:
        """Each unit's points or reports, in file order (the ledger's salted fingerprints)."""
        out = {u: np.ascontiguousarray(x, dtype="<f8").tobytes() for u, x in data["points"].items()}
        for u, r in data["reports"].items():
            out[u] = out.get(u, b"") + "\n".join(data["users"][u]).encode() + np.ascontiguousarray(r, "<f8").tobytes()
        return out

    # -- the rounds -----------------------------------------------------------------------------
    def begin(self, rng: np.random.Generator) -> dict[str, Any]:
        """Round 0: the public start (line 1): the SPEC's pilot start, or uniform in the box (from ``rng``)."""
        kn = self.spec.values.model
        if kn.start == "pilot":
            from .model import pilot_start

            start = pilot_start(kn.pilot, self.k)
        else:
            start = self.bounds.lower + self.bounds.width * rng.random((self.k, self.d))
        return {"centres": start.tolist(), "history": [start.tolist()]}

    def published(self, state: dict[str, Any], t: int, release: str) -> dict[str, Any]:
        """What the devices read to answer round ``t`` (``OUT/round.json``): the centres after round ``t - 1``."""
        c = state["centres"]
        return {"format": "hybridpriv-kmeans-round", "release": release, "round": t, "centres": c,
                "digest": centres_digest(c, t, release), "epsilon": float(self.mech.epsilon), "tau": self.total,
                "k": self.k, "bounds": [self.bounds.lower, self.bounds.upper]}

    def answers(self, directory: str | Path, data: dict[str, Any], published: dict[str, Any]) -> dict[str, np.ndarray] | None:
        """The reporting users' clusters for the round ``published`` asks (in report order), or ``None`` while a
        group's answers are not all in (a group's file is missing)."""
        t, digest = published["round"], published["digest"]
        out = {}
        for u in self.local:
            path = Path(directory) / f"{u}-round-{t}.csv"
            if not path.is_file():
                return None
            rows = [r for r in read_rows(path) if r[0].strip() != "user"]
            index = {user: i for i, user in enumerate(data["users"][u])}
            labels = np.full(len(index), -1, dtype=np.intp)
            for line, row in enumerate(rows, start=1):
                if len(row) != 4:
                    raise PrivateDataError(f"group {u!r}: data row {line} of {path.name} is not an answer line (rule: "
                                           "user,cluster,round,digest)")
                i = index.get(row[0].strip())
                if i is None:
                    raise PrivateDataError(f"group {u!r}: data row {line} of {path.name} names a user who sent no "
                                           "report (rule: the users who reported answer)")
                if row[2].strip() != str(t) or row[3].strip() != digest:
                    raise PrivateDataError(f"group {u!r}: data row {line} of {path.name} answers other centres than "
                                           f"those published for round {t} (rule: an answer carries the round's digest)")
                try:
                    cluster = int(row[1])
                except ValueError:
                    cluster = -1
                if not 0 <= cluster < self.k or labels[i] >= 0:
                    raise PrivateDataError(f"group {u!r}: data row {line} of {path.name}: "
                                           + ("a second answer of a user" if labels[i] >= 0 else
                                              f"the cluster is not one of 0..{self.k - 1}")
                                           + " (rule: one answer per user, a cluster index)")
                labels[i] = cluster
            if (labels < 0).any():
                raise PrivateDataError(f"group {u!r}: {path.name} lacks the answer of a user who reported (rule: every "
                                       "reporting user answers every round)")
            out[u] = labels
        return out

    def step(self, state: dict[str, Any], data: dict[str, Any], answers: dict[str, np.ndarray],
             rng: np.random.Generator) -> dict[str, Any]:
        """One iteration from the published centres: lines 6-15 with the TCM noise drawn from ``rng``."""
        from .algorithms.algorithm import (
            _cluster_sums,
            _Ledger,
            _TCMBranch,
            lm_means,
            mix,
            noise_scales,
        )

        lo, m = self.bounds.lower, self.bounds.width
        centres = np.asarray(state["centres"], dtype=float)[None] - lo
        b_t, b_l = noise_scales(self.mech.epsilon, self.total, m, self.d)
        tcm = lm = None
        if self.central:
            x = np.concatenate([data["points"][u] for u in self.central]) - lo
            branch = _TCMBranch(x, self.k, b_t, _Ledger([("line 9", {}), ("line 10", {})], None))
            tcm = branch.step(centres, m, rng)
        if self.local:
            reports = np.concatenate([data["reports"][u] for u in self.local]) - lo
            labels = np.concatenate([answers[u] for u in self.local])[None]
            n_l, s_l = _cluster_sums(reports, labels, self.k)
            total = reports.sum(axis=0)[None] if self.mech.debias else None
            lm = lm_means(n_l, s_l, centres, m, self.k, self.mech.epsilon / (self.total + 1), reports.shape[0], total)
        if tcm is not None and lm is not None:
            new = mix(centres, tcm, lm, self.total, m, self.d, self.mech.pwh_noise)[0]
        else:
            new = (tcm if tcm is not None else lm)[0]  # type: ignore[index]
        c = (new[0] + lo).tolist()
        return {"centres": c, "history": [*state["history"], c]}

    def result(self, state: dict[str, Any]) -> np.ndarray:
        """The released centres, ``(k, d)``."""
        return np.asarray(state["centres"], dtype=float)
