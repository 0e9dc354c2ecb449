"""The user-item family's declared departure (issue 25): reports moved between lighter and heavier users."""

import numpy as np
import pytest
import scipy.sparse as sp

from hybridpriv.core.random import rng as stream
from hybridpriv.families.user_item import assumptions as ua
from hybridpriv.families.user_item.assumptions import SpreadReports, user_item_assumptions
from hybridpriv.families.user_item.heldout import user_item_truth


def _rows(matrix) -> list[set[int]]:
    d = np.asarray(sp.csr_array(matrix).todense()) > 0
    return [set(np.flatnonzero(row).tolist()) for row in d]


def test_a_hand_worked_case():
    # u0 {0}, u1 {0,1}, u2 {0,1,2}, u3 {1,2}: 8 reports; by items u0, u1, u3, u2 hold 1, 3, 5, 8 of them,
    # so the lighter users (the first half, 4 reports) are u0 and u1, the heavier u2 then u3.
    m = sp.csr_array(np.array([[1, 0, 0], [1, 1, 0], [1, 1, 1], [0, 1, 1]], dtype=float))
    # delta = -0.5: heavier users give, lightest first take.  Quotas rint(0.5 x (3, 3, 2)) = (2, 2, 1).
    # item 0: no heavier user can give it (u2 keeps its first item, 0; u3 lacks it).
    # item 1: only u2 can give, only u0 lacks it: u2 -> u0.
    # item 2: u2 and u3 can give; the round robin goes on to the next giver (u3) and taker (u1): u3 -> u1.
    assert _rows(SpreadReports()(m, -0.5)) == [{0, 1}, {0, 1, 2}, {0, 2}, {1}]
    # delta = +0.5: the lighter users give, but u0 holds one item and u1 keeps its first (0); u1's item 1
    # would go to a heavier user lacking it, and both hold it: nothing moves.
    assert _rows(SpreadReports()(m, 0.5)) == _rows(m)
    assert _rows(SpreadReports()(m, 0.0)) == _rows(m)


@pytest.mark.parametrize("i", range(6))
@pytest.mark.parametrize("delta", [-0.2, -0.05, 0.05, 0.2])
def test_moves_keep_the_margins_and_go_the_declared_way(i, delta):
    truth = user_item_truth(i, stream(3, "ui-assumption", i), quick=True)
    before = sp.csr_array(truth.data).toarray() > 0
    after = SpreadReports()(truth.data, delta).toarray() > 0
    assert after.shape == before.shape
    np.testing.assert_array_equal(after.sum(axis=0), before.sum(axis=0))  # every item keeps its reports
    r = before.sum(axis=1)
    assert (after.sum(axis=1) >= 1).all()  # nobody loses their last item
    # lighter users: those holding the first half of the reports, by items then row (computed again here)
    order = sorted(range(r.size), key=lambda u: (r[u], u))
    held, lighter = 0, set()
    for u in order:
        if held + r[u] > r.sum() / 2 and lighter:
            break
        held += r[u]
        lighter.add(u)
    givers = lighter if delta > 0 else set(range(r.size)) - lighter
    lost = after < before
    gained = after > before
    assert set(np.flatnonzero(lost.any(axis=1))) <= givers
    assert not (set(np.flatnonzero(gained.any(axis=1))) & givers)
    # per item: as many moved as the quota allows, unless the givers or the takers run out
    for j in range(before.shape[1]):
        first = np.array([row.argmax() == j for row in before])  # whose first item is j (kept)
        can_give = sum(1 for u in givers if before[u, j] and not first[u])
        can_take = sum(1 for u in range(r.size) if u not in givers and not before[u, j])
        assert lost[:, j].sum() == min(round(abs(delta) * before[:, j].sum()), can_give, can_take)


def test_the_spread_of_items_per_user_moves_with_delta():
    # over quick truths, moving toward the heavier users widens the items per user, moving back narrows it
    # (a truth where the lighter users hold one item each can give nothing, so compare the sums)
    up = down = 0.0
    for i in range(9):
        data = user_item_truth(i, stream(4, "ui-assumption", i), quick=True).data
        var = lambda x: np.asarray(sp.csr_array(x).sum(axis=1)).ravel().var()  # noqa: E731
        base = var(data)
        up += var(SpreadReports()(data, 0.2)) - base
        down += var(SpreadReports()(data, -0.2)) - base
    assert up > 0 > down, (up, down)


def test_size_guard_refuses_before_allocating(monkeypatch):
    monkeypatch.setattr(ua, "MAX_DENSE_CELLS", 10)
    with pytest.raises(ValueError, match=r"data has 4 x 3 cells > MAX_DENSE_CELLS = 10"):
        SpreadReports()(sp.csr_array(np.eye(4, 3)), 0.1)
    assert user_item_assumptions(3, 4) == []
    monkeypatch.undo()
    (a,) = user_item_assumptions(3, 4)
    assert a.name == "spread" and a.scale == 1.0
