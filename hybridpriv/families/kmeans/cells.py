"""Released cell counts: how many users of each group lie in each cluster of the pilot start.

The K-means model (a Bayesian bootstrap of the pilot, :mod:`.model`) cannot tell from public knowledge how the
users spread over the pilot's clusters, nor whether the users who trust the curator come from some clusters more
than others.  A small DP release answers both: per group, a noisy count of its users in each *cell*, the users
whose nearest centre of :func:`~hybridpriv.families.kmeans.model.pilot_start` is that cluster's (public: the
cells are a function of the pilot).

* TCM users (central DP, add/remove-one): the curator adds Laplace noise of scale ``1 / epsilon`` to each count
  (:func:`laplace_cell_counts`; one user more or less changes one count by one, so the histogram's L1
  sensitivity is 1).
* LM users (local DP, replace-one): each device reports its cell through ``k``-ary randomized response
  (:func:`randomized_response_counts`: the true cell with probability ``e^eps / (e^eps + k - 1)``, else one of
  the others uniformly; :mod:`hybridpriv.noise`'s), and the curator debiases the report counts.

:class:`ReleasedCells` is one group's release as the model reads it (``model.released_cells`` in a SPEC): the
unbiased counts and the standard deviation of their noise.  :func:`draw_cell_shares` turns it into posterior
draws of the group's shares of users per cell (normal noise, shares clipped at 0 and normalised): a large-count
approximation that treats the counts' noise as normal with the stated sd and, given the group's size (public),
keeps only the shares.  The budget-spending selector (:func:`pythia_kmeans`) spends a share of every user's
epsilon on these releases through the two-stage plan's probe
(:class:`~hybridpriv.families.kmeans.plan.CellCountsProbe`, which draws them by :func:`laplace_counts` and
:func:`rr_counts`, ``trials`` at once); the candidates get the rest.

Simulation noise (a NumPy generator, through :mod:`hybridpriv.noise`) in :func:`laplace_counts` and
:func:`rr_counts`: they simulate a release for the calibration study's selector and the plan, not a release of
real data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["CELL_GROUPS", "ReleasedCells", "draw_cell_shares", "group_sizes", "laplace_cell_counts", "laplace_counts",
           "pythia_kmeans", "randomized_response_counts", "rr_count_sd", "rr_counts"]

#: The groups a cell release may describe.
CELL_GROUPS = ("tcm", "lm")


def group_sizes(spec: Any) -> dict[str, int]:
    """The public group sizes of a ``kmeans`` SPEC (its values, or anything with ``c`` and ``n``): ``round(c n)`` TCM
    users, the rest LM users, as a release counts them."""
    n_t = int(round(float(spec.c) * int(spec.n)))
    return {"tcm": n_t, "lm": int(spec.n) - n_t}


@dataclass(frozen=True)
class ReleasedCells:
    """One group's noisy counts of users per cell of the pilot start.

    ``group``: ``"tcm"`` or ``"lm"``; ``counts``: one unbiased (noisy, possibly negative) count per cell, in the
    order of :func:`~hybridpriv.families.kmeans.model.pilot_start`'s centres; ``noise_sd``: the standard deviation
    of each count's noise (``>= 0``; 0: exact counts).
    """

    group: str
    counts: tuple[float, ...]
    noise_sd: float

    def __post_init__(self) -> None:
        if self.group not in CELL_GROUPS:
            raise ValueError(f"group must be one of {CELL_GROUPS}, got {self.group!r}")
        counts = np.asarray(self.counts, dtype=float)
        if counts.ndim != 1 or counts.size < 1 or not np.isfinite(counts).all():
            raise ValueError(f"counts of group {self.group!r} must be a non-empty list of finite numbers, "
                             f"got {self.counts!r}")
        sd = self.noise_sd
        if isinstance(sd, bool) or not isinstance(sd, (int, float)) or not 0.0 <= float(sd) < math.inf:
            raise ValueError(f"noise_sd of group {self.group!r} must be a finite number >= 0, got {sd!r}")
        object.__setattr__(self, "counts", tuple(float(c) for c in counts))
        object.__setattr__(self, "noise_sd", float(sd))


def draw_cell_shares(released: ReleasedCells, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws of the group's shares of users per cell, ``(size, k)``: ``counts + noise_sd z`` (``z``
    standard normal per cell), clipped at 0 and normalised (uniform where every cell clipped to 0)."""
    counts = np.asarray(released.counts, dtype=float)
    draws = np.maximum(counts[None, :] + released.noise_sd * rng.standard_normal((size, counts.size)), 0.0)
    total = draws.sum(axis=1, keepdims=True)
    return np.where(total > 0, draws / np.where(total > 0, total, 1.0), 1.0 / counts.size)


def laplace_counts(cells: np.ndarray, k: int, epsilon: float, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
    """``trials`` releases of the ``k`` counts of ``cells`` (each user's cell index), each count plus Laplace noise of
    scale ``1 / epsilon`` (:func:`hybridpriv.noise.laplace`; ``epsilon``-DP, central, add/remove-one): ``(trials, k)``."""
    from ...noise import laplace

    if not epsilon > 0 or not math.isfinite(epsilon):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    true = np.bincount(np.asarray(cells), minlength=k).astype(float)
    return laplace(np.broadcast_to(true, (trials, k)).copy(), 1.0 / epsilon, rng)


def laplace_cell_counts(cells: np.ndarray, k: int, epsilon: float, rng: np.random.Generator) -> ReleasedCells:
    """The TCM group's release: one of :func:`laplace_counts` (``epsilon``-DP, central, add/remove-one);
    ``noise_sd = sqrt(2) / epsilon``."""
    return ReleasedCells("tcm", tuple(laplace_counts(cells, k, epsilon, rng)[0]), math.sqrt(2.0) / epsilon)


def rr_count_sd(estimate: np.ndarray, n: int, epsilon: float, k: int) -> np.ndarray:
    """The standard deviation of each debiased randomized-response count (:func:`hybridpriv.noise.rr_debias_counts`)
    of ``n`` reports over ``k`` labels at ``epsilon``, at true counts ``estimate`` (clipped into ``[0, n]``):
    ``sqrt(c p (1 - p) + (n - c) q (1 - q)) / (p - q)``, the reports being independent Bernoulli per label."""
    from ...noise import rr_probabilities

    p, q = rr_probabilities(epsilon, k)
    c = np.clip(np.asarray(estimate, dtype=float), 0.0, n)
    return np.sqrt(c * p * (1 - p) + (n - c) * q * (1 - q)) / (p - q)


def rr_counts(cells: np.ndarray, k: int, epsilon: float, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
    """``trials`` releases of the debiased counts of ``cells`` over ``k >= 2`` cells, ``(trials, k)``: every device
    reports its cell by ``k``-ary randomized response at ``epsilon`` (:func:`hybridpriv.noise.randomized_response`:
    ``epsilon``-local DP, replace-one) and the curator debiases the report counts
    (:func:`hybridpriv.noise.rr_debias_counts`: ``(o - n q) / (p - q)`` with ``p, q`` of
    :func:`hybridpriv.noise.rr_probabilities`), unbiased for the true counts."""
    from ...noise import randomized_response, rr_debias_counts

    if not epsilon > 0 or not math.isfinite(epsilon):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    cells = np.asarray(cells)
    reports = randomized_response(np.broadcast_to(cells, (trials, cells.size)), k, epsilon, rng)
    counts = np.bincount((reports + k * np.arange(trials)[:, None]).ravel(), minlength=trials * k)
    return rr_debias_counts(counts.reshape(trials, k).astype(float), cells.size, epsilon, k)


def randomized_response_counts(cells: np.ndarray, k: int, epsilon: float, rng: np.random.Generator) -> ReleasedCells:
    """The LM group's release: one of :func:`rr_counts`.  ``noise_sd``: the largest of the counts' standard
    deviations (:func:`rr_count_sd`) at the clipped estimates.  With ``k = 1`` there is nothing to hide: the count
    is exact (``noise_sd = 0``)."""
    cells = np.asarray(cells)
    if k == 1:
        return ReleasedCells("lm", (float(cells.size),), 0.0)
    estimate = rr_counts(cells, k, epsilon, rng)[0]
    return ReleasedCells("lm", tuple(estimate), float(rr_count_sd(estimate, cells.size, epsilon, k).max()))


def pythia_kmeans(raw: dict[str, Any], data: Any, share: float, rng: np.random.Generator) -> dict[str, Any]:
    """The budget-spending selector's SPEC: every user spends ``share`` of its epsilon on its group's cell release
    (the two-stage plan's probe, :class:`~hybridpriv.families.kmeans.plan.CellCountsProbe`: TCM users by
    :func:`laplace_cell_counts`, LM users by :func:`randomized_response_counts`), which enters the model as
    ``model.released_cells``; the candidates get ``(1 - share) epsilon``, so each user is charged the same total
    as under the model-only selector (both groups' guarantees compose sequentially under their own relation).
    ``data``: the truth's :class:`~hybridpriv.families.kmeans.algorithms.PointCloud`."""
    from .model import pilot_start
    from .plan import CellCountsProbe, refit_spec

    if (raw.get("model") or {}).get("released_cells"):  # refused before anything is drawn (refit_spec would too)
        raise ValueError("the SPEC already has model.released_cells: the selector would release the cells twice")
    trusted = np.asarray(data.trusted, dtype=bool)
    probe = CellCountsProbe(pilot_start(np.asarray(raw["model"]["pilot"], dtype=float), int(raw["k"])),
                            int(trusted.sum()), int((~trusted).sum()), float(raw["epsilon"]), share)
    return refit_spec(raw, probe.released_cells(probe.release(data, rng)[0]), share)
