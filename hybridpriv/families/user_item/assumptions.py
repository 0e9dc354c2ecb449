"""What the user-item family's model assumes about who holds the reports, and how to break it.

The model (:class:`~hybridpriv.families.user_item.model.UserItemModel`) knows the column sums (each item's
reports) and ``n``; who holds them is its items-per-user prior plus a uniform draw among the matrices with
those margins.  Real matrices are often more unequal than that prior allows (a few heavy users hold much of
the reports; communities of heavy users prefer some items), or less.  The best bound ``k`` moves with the
heavy users' share: more reports held above ``k`` means more dropped by the bound.  One departure, keeping
every column sum, ``n`` and every user's first item:

* ``spread``: in every item, a share ``|delta|`` of its reports moved from the lighter users (those
  holding the first half of the reports, fewest items first) to the heavier ones (most items first) when
  ``delta > 0``, or back when ``delta < 0``, as far as the users can give (each keeps at least one item) and take (never twice the
  same item).

The column sums and ``n`` fix the mean items per user but say nothing of their spread.  The warning keeps the
engine's rule (a costly flip within 5% of the reports); on the calibration truths a wider plausible range (20%)
warned on every truth, those the recommendation got right as much as those it got wrong (issue 25's note).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ...core.assumptions import Assumption
from ...core.params import Parametrized
from ...core.validation import check_user_item_matrix

__all__ = ["MAX_DENSE_CELLS", "SpreadReports", "user_item_assumptions"]

#: The perturbation works on a dense users x items boolean matrix; beyond this many cells the assumption
#: is not checked (the SPEC's header says so) rather than allocate it.
MAX_DENSE_CELLS = 50_000_000


class SpreadReports(Parametrized):
    """``matrix -> matrix``: in every column ``j``, ``min(round(|delta| c_j), givers, takers)`` reports moved
    from the lighter users to the heavier ones (``delta > 0``; the other way for ``delta < 0``).

    Users are ranked by their items (ties by row); the lighter users are those holding the first half of the
    reports in that order, the heavier ones the rest.  Givers and takers are each served in turn, column after
    column (round robin, the lightest givers and heaviest takers first for ``delta > 0``), so the moved reports
    spread evenly over both halves rather than piling on one user.  A giver keeps the first item it holds; a
    taker only takes an item it lacks.  Column sums and the number of users are kept, and so is every user's
    having at least one item when it had one."""

    def __call__(self, data, delta: float):
        csr = check_user_item_matrix(data, "data")
        n, m = csr.shape
        if n * m > MAX_DENSE_CELLS:
            raise ValueError(f"data has {n} x {m} cells > MAX_DENSE_CELLS = {MAX_DENSE_CELLS:,}")
        dense = csr.toarray() > 0
        if delta == 0 or n < 2:
            return sp.csr_array(dense.astype(np.float64))
        r = dense.sum(axis=1)
        by_items = np.lexsort((np.arange(n), r))  # lightest first, ties by row
        # the lighter users hold the first half of the reports (at least one user on each side)
        split = int(np.clip(np.searchsorted(np.cumsum(r[by_items]), r.sum() / 2, side="right"), 1, n - 1))
        lighter, heavier = by_items[:split], by_items[split:][::-1]  # heavier: heaviest first
        givers, takers = (lighter, heavier) if delta > 0 else (heavier, lighter)
        movable = dense.copy()
        held = np.flatnonzero(r > 0)
        movable[held, np.argmax(dense[held], axis=1)] = False  # every giver keeps its first item
        quota = np.rint(abs(delta) * dense.sum(axis=0)).astype(np.int64)
        out = dense.copy()
        give_turn = take_turn = 0  # the next giver's and taker's place in their lists
        for j in np.flatnonzero(quota):
            g = np.flatnonzero(movable[givers, j])  # places in `givers` of those who can give j
            t = np.flatnonzero(~dense[takers, j])
            k = int(min(quota[j], g.size, t.size))
            if k == 0:
                continue
            g, give_turn = _in_turn(g, give_turn, givers.size, k)
            t, take_turn = _in_turn(t, take_turn, takers.size, k)
            out[givers[g], j] = False
            out[takers[t], j] = True
        return sp.csr_array(out.astype(np.float64))


def _in_turn(places: np.ndarray, turn: int, size: int, k: int) -> tuple[np.ndarray, int]:
    """The ``k`` of the sorted ``places`` (in a list of ``size``) served next when the turn is at ``turn``: the first
    at or after it, wrapping round; and the turn after them."""
    chosen = np.roll(places, -int(np.searchsorted(places, turn % size)))[:k]
    return chosen, int(chosen[-1]) + 1


def user_item_assumptions(m: int, n_max: int) -> list[Assumption]:
    """The departure a user-item SPEC's decision is checked against (a share of each item's reports: scale 1);
    none when a matrix of ``n_max`` users x ``m`` items exceeds :data:`MAX_DENSE_CELLS`."""
    if n_max * m > MAX_DENSE_CELLS:
        return []
    return [Assumption("spread", "the reports are spread over the users as the items-per-user prior says",
                       "the share of each item's reports moved from the users holding the lighter half of the "
                       "reports to those holding the heavier half", 1.0, SpreadReports())]
