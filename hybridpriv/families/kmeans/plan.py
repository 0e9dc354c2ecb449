"""The K-means family's two-stage plan (:mod:`hybridpriv.engine.plan`): every user spends a share of its epsilon on
its group's count of users per cluster of the pilot start (:class:`CellCountsProbe`: the budget-spending
selector's release, :mod:`.cells`), then the model is fitted again given those counts and the candidates are
chosen at the rest (:func:`refit_spec`).

The TCM users' counts get Laplace noise from the curator (central DP, add/remove-one); the LM users' cells are
reported by ``k``-ary randomized response on their devices (local DP, replace-one) and debiased by the curator.
The preposterior analysis simulates exactly that (:meth:`CellCountsProbe.simulate`: the LM reports drawn as
multinomials of the exact counts, the same law as one report per user); its importance weights read the LM
counts through a Laplace stand-in of the same standard deviation (:attr:`CellCountsProbe.scales`), an
approximation in the *rule* only: the analysis scores that rule on simulated releases of the true law.

``hybridpriv release`` carries the plan out with the LM users' devices (:mod:`.plan_rounds`): the probe is a
release in one round (each device answers its cell, ``python -m hybridpriv.families.kmeans.device cell``), then the
model is fitted again on the released counts and the chosen candidate is released in rounds at the rest of the
budget (:meth:`CellCountsProbe.release` is the simulation the calibration study uses)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ...core.mechanism import Mechanism
from ...core.privacy import Guarantee, check_integer, check_positive
from .cells import rr_count_sd

__all__ = ["CellCountsProbe", "kmeans_probe", "refit_spec"]

#: What the probe releases, in words.
WHAT = "each group's count of users per cluster of the pilot start"
class CellCountsProbe(Mechanism):
    """The first stage of a K-means two-stage plan: each group's count of users per cell (the users whose nearest
    centre of ``centres``, the pilot start, is that cluster's), TCM cells then LM cells (``2k`` features).

    * TCM users: Laplace noise of scale ``1 / (share epsilon)`` per count, ``share x epsilon``-DP, central,
      add/remove-one (one user changes one count by one).
    * LM users: each device reports its cell by ``k``-ary randomized response at ``share x epsilon``
      (``share x epsilon``-local DP, replace-one); the curator debiases the report counts.

    ``n_tcm`` and ``n_lm`` are the public group sizes.  :attr:`scales`: the Laplace scale of each feature for the
    plan's importance weights (the LM counts' is the Laplace stand-in of their standard deviation at an even
    spread, ``sd / sqrt 2``).  ``release`` returns ``(trials, 2k)`` drawn through :mod:`hybridpriv.noise` from the
    given generator (a simulation: a real release needs the LM devices' reports); :meth:`exact` the noiseless
    counts; :meth:`simulate` releases of given exact counts."""

    data_kind: ClassVar[str] = "points"
    label = "probe:cell-counts"

    def __init__(self, centres: Any, n_tcm: int, n_lm: int, epsilon: float, share: float = 0.1) -> None:
        c = np.asarray(centres, dtype=float)
        if c.ndim != 2 or c.shape[0] < 2 or not np.isfinite(c).all():
            raise ValueError(f"centres must be (k >= 2, d) finite numbers, got shape {c.shape}")
        self.centres, self.k = c, c.shape[0]
        self.n_tcm, self.n_lm = check_integer(n_tcm, "n_tcm", 1), check_integer(n_lm, "n_lm", 1)
        self.epsilon = check_positive(epsilon, "epsilon")
        if math.isinf(self.epsilon):
            raise ValueError("epsilon must be finite: a public group needs no probe")
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share < 1:
            raise ValueError(f"share must be in (0, 1), got {share!r}")
        self.share = float(share)
        self.spent = self.share * self.epsilon
        self.tcm_scale = 1.0 / self.spent
        self.lm_sd = float(rr_count_sd(np.array([self.n_lm / self.k]), self.n_lm, self.spent, self.k)[0])
        self.scales = np.concatenate([np.full(self.k, self.tcm_scale), np.full(self.k, self.lm_sd / math.sqrt(2.0))])

    @property
    def privacy(self) -> dict[str, Guarantee]:
        return {"tcm": Guarantee(self.spent, 0.0, "add-remove", "central"),
                "lm": Guarantee(self.spent, 0.0, "replace", "local")}

    @property
    def privacy_events(self) -> dict[str, Any]:
        from ...core import events

        return {"tcm": events.laplace(self.tcm_scale, 1.0), "lm": events.randomized_response(self.spent, self.k)}

    def _cells(self, data: Any) -> tuple[np.ndarray, np.ndarray]:
        from .algorithms import nearest_centre

        points = np.asarray(getattr(data, "points", None), dtype=float)
        trusted = np.asarray(getattr(data, "trusted", None), dtype=bool)
        if points.ndim != 2 or points.shape[1] != self.centres.shape[1] or trusted.shape != (points.shape[0],):
            raise ValueError(f"data must be a PointCloud of {self.centres.shape[1]}-dimensional points")
        if (int(trusted.sum()), int((~trusted).sum())) != (self.n_tcm, self.n_lm):
            raise ValueError("data must hold the public group sizes: "
                             f"{self.n_tcm} TCM users and {self.n_lm} LM users")
        return nearest_centre(points, self.centres)[0], trusted

    def exact(self, data: Any) -> np.ndarray:
        """The TCM users' counts per cell, then the LM users', noiseless (``data``: a
        :class:`~hybridpriv.families.kmeans.algorithms.PointCloud` of the public group sizes)."""
        cells, trusted = self._cells(data)
        return np.concatenate([np.bincount(cells[trusted], minlength=self.k),
                               np.bincount(cells[~trusted], minlength=self.k)]).astype(float)

    def simulate(self, exact: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        """Releases of the rows of ``exact`` (``(rows, 2k)`` exact counts): the TCM counts plus Laplace noise; the LM
        counts' reports drawn by randomized response (for each true cell, a multinomial of its users over the
        reported cells: the law of one report per user) and debiased."""
        from ...noise import rr_debias_counts, rr_probabilities

        exact = np.atleast_2d(np.asarray(exact, dtype=float))
        if exact.shape[1] != 2 * self.k:
            raise ValueError(f"exact must have {2 * self.k} columns (k TCM counts, k LM counts), got {exact.shape}")
        lm = np.rint(exact[:, self.k:]).astype(np.int64)
        if (lm < 0).any() or (lm.sum(1) != self.n_lm).any():
            raise ValueError(f"the exact LM counts must be >= 0 and sum to n_lm = {self.n_lm}")
        tcm = exact[:, :self.k] + gen.laplace(0.0, self.tcm_scale, size=(exact.shape[0], self.k))
        p, q = rr_probabilities(self.spent, self.k)
        moves = np.full((self.k, self.k), q) + np.eye(self.k) * (p - q)  # row j: a cell-j user's report
        reports = gen.multinomial(lm, moves).sum(axis=1)
        return np.concatenate([tcm, rr_debias_counts(reports.astype(float), self.n_lm, self.spent, self.k)], axis=1)

    def release(self, data: Any, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
        """``trials`` releases, ``(trials, 2k)``: the TCM counts by :func:`~.cells.laplace_counts`, the LM users'
        by :func:`~.cells.rr_counts` (one randomized response per user), both through :mod:`hybridpriv.noise`."""
        from ...core.validation import check_rng, check_trials
        from .cells import laplace_counts, rr_counts

        trials, rng = check_trials(trials), check_rng(rng)
        cells, trusted = self._cells(data)
        return np.concatenate([laplace_counts(cells[trusted], self.k, self.spent, rng, trials),
                               rr_counts(cells[~trusted], self.k, self.spent, rng, trials)], axis=1)

    def released_cells(self, observed: Any) -> list[dict[str, Any]]:
        """``model.released_cells`` of a release ``observed`` (``2k`` numbers): each group's counts and the standard
        deviation of their noise (TCM: ``sqrt 2 / (share epsilon)``; LM: the largest at the clipped counts)."""
        values = np.asarray(observed, dtype=float).ravel()
        if values.size != 2 * self.k or not np.isfinite(values).all():
            raise ValueError(f"observed must hold {2 * self.k} finite released counts (k TCM, then k LM), got "
                             f"{values.size}")
        tcm, lm = values[:self.k], values[self.k:]
        return [{"group": "tcm", "counts": [float(x) for x in tcm], "noise_sd": math.sqrt(2.0) / self.spent},
                {"group": "lm", "counts": [float(x) for x in lm],
                 "noise_sd": float(rr_count_sd(lm, self.n_lm, self.spent, self.k).max())}]


def refit_spec(raw: Mapping[str, Any], released_cells: list[dict[str, Any]], share: float) -> dict[str, Any]:
    """The SPEC (TOML data) of the second stage after a release of the cell counts: ``raw`` with
    ``model.released_cells``, epsilon ``(1 - share) x`` the SPEC's (the first stage spent the rest) and
    ``evaluation.plan_share = 0`` (no plan of its own).  Each user's total is the SPEC's epsilon, as choosing now
    charges it (both groups compose sequentially under their own relation)."""
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share < 1:
        raise ValueError(f"share must be in (0, 1), got {share!r}")
    model = dict(raw.get("model") or {})
    if model.get("released_cells"):
        raise ValueError("the SPEC already has model.released_cells: the cells would be released twice; refit from "
                         "the SPEC without them")
    model["released_cells"] = released_cells
    return {**raw, "epsilon": float(raw["epsilon"]) * (1.0 - share), "model": model,
            "evaluation": {**dict(raw.get("evaluation") or {}), "plan_share": 0.0}}


def kmeans_probe(v: Any, share: float, candidates: Any) -> Any:
    """The probe of SPEC values ``v`` (:class:`hybridpriv.engine.plan.Probe`), or ``None`` where none is defined:
    a uniform start (no public cells), ``k = 1`` (one cell), or cells released already.  ``candidates(values,
    posterior)``: the family's candidates; the second stage's are those at ``(1 - share) x epsilon``, by the same
    labels."""
    from ...engine.plan import Probe
    from .model import pilot_start
    from .cells import group_sizes

    kn = v.model
    if kn.start != "pilot" or v.k < 2 or kn.released_cells:
        return None
    sizes = group_sizes(v)  # the public group sizes, as a release counts them
    probe = CellCountsProbe(pilot_start(kn.pilot, v.k), sizes["tcm"], sizes["lm"], v.epsilon, share)
    rest = v.replace(epsilon=v.epsilon * (1.0 - share))

    def later(mechanisms: Mapping[Any, Any], posterior: Any) -> dict[Any, Any]:
        return {c: m for c, m in candidates(rest, posterior).items() if c in mechanisms}

    return Probe(share, WHAT, probe, later,
                 refit=lambda raw, observed: refit_spec(raw, probe.released_cells(observed), share),
                 noise="Laplace for TCM users, randomized response on LM devices")
