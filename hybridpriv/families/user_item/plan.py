"""The user-item family's two-stage plan (:mod:`hybridpriv.engine.plan`): a share of epsilon buys a Laplace
histogram of the items per user in doubling bins (1, 2, 3-4, 5-8, ...), then ``k`` is chosen at the rest."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ...core.mechanism import Mechanism
from ...core.privacy import Guarantee

__all__ = ["ItemsHistogramProbe", "item_bins", "items_histogram", "user_item_probe"]


def item_bins(m: int) -> np.ndarray:
    """Left edges of the doubling bins of items per user up to ``m``: ``1, 2, 3, 5, 9, ...`` (bin ``j`` holds
    ``edges[j] <= items < edges[j + 1]``, the last up to ``m``)."""
    if not isinstance(m, (int, np.integer)) or m < 1:
        raise ValueError(f"m must be a positive integer, got {m!r}")
    edges, nxt = [1], 2
    while nxt <= m:
        edges.append(nxt)
        nxt = 2 * nxt - 1
    return np.array(edges, dtype=np.int64)


def items_histogram(matrix: Any, edges: np.ndarray) -> np.ndarray:
    """How many users hold a number of items in each bin of ``edges`` (users with no item are in none)."""
    per_user = np.asarray(matrix.sum(axis=1)).ravel()
    per_user = per_user[per_user > 0]
    return np.bincount(np.searchsorted(edges, per_user, side="right") - 1, minlength=edges.size).astype(float)


class ItemsHistogramProbe(Mechanism):
    """The first stage of a user-item two-stage plan: how many users hold a number of items in each doubling bin
    (:func:`item_bins` of ``m``), plus Laplace noise of scale ``1 / (share x epsilon)`` per bin.  Each user adds 1
    to one bin, so the histogram's L1 sensitivity under adding or removing a user is 1: ``share x epsilon``-DP.

    ``release`` returns ``(trials, bins)``; :meth:`exact` the noiseless histogram."""

    data_kind: ClassVar[str] = "user-item"
    label = "probe:items-per-user"

    def __init__(self, m: int, epsilon: float, share: float = 0.1) -> None:
        self.edges = item_bins(m)
        self.m = int(m)
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not 0 < epsilon < math.inf:
            raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share < 1:
            raise ValueError(f"share must be in (0, 1), got {share!r}")
        self.epsilon, self.share = float(epsilon), float(share)
        self.scales = np.full(self.edges.size, 1.0 / (self.share * self.epsilon))

    @property
    def privacy(self) -> dict[str, Guarantee]:
        return {"users": Guarantee(self.share * self.epsilon, 0.0, "add-remove")}

    @property
    def privacy_events(self) -> dict[str, Any]:
        from ...core import events

        return {"users": events.laplace(float(self.scales[0]), 1.0)}

    def exact(self, data: Any) -> np.ndarray:
        """The noiseless histogram of items per user."""
        from ...core.validation import check_user_item_matrix

        return items_histogram(check_user_item_matrix(data), self.edges)

    def release(self, data: Any, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
        from ...core.validation import check_rng, check_trials
        from ...noise import laplace

        trials = check_trials(trials)
        return laplace(np.broadcast_to(self.exact(data), (trials, self.edges.size)).copy(), self.scales,
                       check_rng(rng))


def user_item_probe(epsilon: float, m: int, share: float) -> Any:
    """The probe (:class:`hybridpriv.engine.plan.Probe`) of :class:`ItemsHistogramProbe`; the second stage's
    candidates are ``k`` at ``(1 - share) x epsilon``."""
    from ...engine.plan import Probe
    from .mechanisms import ContributionBoundedCounts

    mech = ItemsHistogramProbe(m, epsilon, share)

    def later(mechanisms: Mapping[Any, Any], posterior: Any) -> dict[Any, Any]:
        return {k: ContributionBoundedCounts(int(k), epsilon * (1.0 - share)) for k in mechanisms}

    edges = mech.edges
    names = ", ".join(f"{a}" if b - a == 1 else f"{a}-{b - 1}" for a, b in zip(edges, [*edges[1:], m + 1]))
    return Probe(share, f"a histogram of items per user (bins {names})", mech, later)
