"""The matrix level of UserItemModel: independent draws of ``matrix_for`` against brute force.

Issue 12: each matrix used to start from the same greedy realization of its margins and get 5 n
Curveball trades, which is not uniform given the margins.  On column sums [4, 2, 2, 1] with row
sums (3, 2, 2, 1, 1) there are 36 matrices; 40,000 independent draws put about 1,100 in each, so a
cell over- or under-drawn by 10% stands 3 standard errors out and the chi-square test sees it.
The default (a random start and 10 n trades) must pass, the old default must fail.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy import stats

from _support.matrices import all_matrices
from hybridpriv.models import TRADES_PER_ROW, UserItemModel
from hybridpriv.families.user_item.model_chains import random_start
from hybridpriv.families.user_item.model_checks import csr_margins

C = [4, 2, 2, 1]
R = (3, 2, 2, 1, 1)  # matrix_for returns rows by decreasing row sum
H = np.bincount(R, minlength=len(C) + 1)[1:]
DRAWS = 40_000


def frequencies(model: UserItemModel, seed: int, draws: int = DRAWS) -> Counter:
    rng = np.random.default_rng(seed)  # one generator: every matrix is its own chain, so draws are independent
    out: Counter = Counter()
    for _ in range(draws):
        mat = model.matrix_for(H, rng)
        out[tuple(tuple(mat.indices[mat.indptr[i] : mat.indptr[i + 1]].tolist()) for i in range(len(R)))] += 1
    return out


def chisquare_p(counts: Counter) -> tuple[float, float]:
    """p-value of uniformity over every matrix with the margins, and the largest relative deviation."""
    mats = all_matrices(R, C)
    assert len(mats) == 36 and set(counts) <= set(mats)
    obs = np.array([counts.get(m, 0) for m in mats], dtype=float)
    exp = np.full(obs.size, obs.sum() / obs.size)
    return float(stats.chisquare(obs, exp).pvalue), float(np.max(np.abs(obs / exp - 1)))


@pytest.mark.slow
def test_default_matrix_sampler_is_uniform_given_its_margins_and_the_old_default_is_not():
    model = UserItemModel(C, len(R))
    assert (model.start, model.trades_per_row) == ("random", TRADES_PER_ROW)
    p_new, dev_new = chisquare_p(frequencies(model, seed=1))
    p_old, dev_old = chisquare_p(frequencies(UserItemModel(C, len(R), trades_per_row=5, start="greedy"), seed=1))
    print(f"\n40,000 draws, 36 matrices: default p = {p_new:.3g} (largest deviation {dev_new:.1%}); "
          f"greedy start + 5 n trades p = {p_old:.2g} (largest deviation {dev_old:.1%})")
    assert p_new > 1e-3, (p_new, dev_new)
    assert p_old < 1e-4, (p_old, dev_old)


def test_random_start_alone_has_exact_margins_reaches_every_matrix_and_is_random():
    rng = np.random.default_rng(2)
    r, c = np.array(R), np.array(C)
    seen = Counter()
    for _ in range(4000):
        indptr, indices = random_start(r, c, rng)
        rr, cc = csr_margins(indptr, indices, len(C))
        assert np.array_equal(rr, r) and np.array_equal(cc, c)
        seen[tuple(tuple(indices[indptr[i] : indptr[i + 1]].tolist()) for i in range(len(R)))] += 1
    assert len(seen) == 36  # every matrix is a possible start: no fixed realization
    # rows are strictly increasing and the margins exact on a large case with heavy rows
    big_c = np.round(1200 / np.arange(1, 101)).astype(int)  # the favorite-sites example's 6,222 reports
    big_r = np.r_[np.full(3, 95), np.full(40, 6), np.ones(big_c.sum() - 3 * 95 - 40 * 6, dtype=int)]
    indptr, indices = random_start(big_r, big_c, rng)
    rr, cc = csr_margins(indptr, indices, 100)
    assert np.array_equal(rr, big_r) and np.array_equal(cc, big_c)
    assert all(np.all(np.diff(x) > 0) for x in np.split(indices, indptr[1:-1]))


@pytest.mark.parametrize("r,c,match", [
    ([1, 2, 3], [3, 2, 1], "r must be sorted in non-increasing order, got"),
    ([3, 3], [3, 2, 1], r"r and c must be feasible margins \(Gale-Ryser\), got r = "),
    ([3, 1], [2, 2], r"r and c must be feasible margins \(Gale-Ryser\), got r = "),
])
def test_random_start_refuses_bad_margins(r, c, match):
    with pytest.raises(ValueError, match=match):
        random_start(np.array(r), np.array(c), np.random.default_rng(0))


def test_bad_start_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"start must be one of \['random', 'greedy'\], got 'fixed'"):
        UserItemModel(C, 5, start="fixed")


def test_the_spec_default_is_the_models():
    from hybridpriv.families.user_item import spec as spec_useritem

    assert spec_useritem.TRADES_PER_ROW == TRADES_PER_ROW
    assert next(k for k in spec_useritem.TOP.keys if k.name == "trades_per_row").default == TRADES_PER_ROW


def test_the_specs_copies_of_the_models_constants_agree():
    """The SPEC module keeps copies (importing the model loads PyMC) for its size guards: they must not drift."""
    from hybridpriv.families.user_item import model, model_mixture
    from hybridpriv.families.user_item import spec as spec_useritem

    assert spec_useritem.BLOCK == model.BLOCK
    assert (spec_useritem.MOVES_PER_REPORT, spec_useritem.MIN_MOVES) == (model.MOVES_PER_REPORT, model.MIN_MOVES)
    assert spec_useritem.FIXED_MOVES_PER_REPORT == model.FIXED_MOVES_PER_REPORT
    assert spec_useritem.MIXTURE_COMPONENTS == len(model_mixture.MIXTURE_SHAPES)
