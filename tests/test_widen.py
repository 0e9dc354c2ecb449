"""The k range of a user-item selection is widened (up to m) while the best k sits at its edge."""

import numpy as np
import pytest

from hybridpriv.spec import parse_spec
from hybridpriv.workflow import run_selection

# 40 users who each report about 24 of 30 items: at epsilon = 20 the best k is far above 10
BASE = {"kind": "user-item", "column_sums": [32] * 30, "n": 40, "epsilon": 20.0,
        "evaluation": {"draws": 8, "chains": 2, "seed": 3}}


@pytest.mark.slow
def test_the_best_k_at_the_edge_widens_the_range_and_numbers_equal_one_evaluation():
    widened = run_selection(parse_spec(BASE).problem())
    ks = [int(k) for k in widened.decision.k.values]
    assert ks[:10] == list(range(1, 11)) and max(ks) > 10  # widened beyond the default 1..10
    best = int(widened.decision.attrs["recommended"])
    assert best < max(ks) or max(ks) == 30  # it stops once the best k is inside the range (or at m)
    assert "widened" in widened.attrs and any("edge of the range" in line for line in widened.diagnostics)
    # the same numbers as one evaluation of the whole range given explicitly (which is never widened)
    direct = run_selection(parse_spec({**BASE, "k": [1, max(ks)]}).problem())
    assert "widened" not in direct.attrs
    np.testing.assert_array_equal(direct.evaluation.risk.sel(k=ks).values, widened.evaluation.risk.sel(k=ks).values)
    assert int(direct.decision.attrs["recommended"]) == best


@pytest.mark.slow
def test_a_range_given_in_the_spec_is_never_widened():
    result = run_selection(parse_spec({**BASE, "k": [1, 5]}).problem())
    assert [int(k) for k in result.decision.k.values] == [1, 2, 3, 4, 5]
    assert int(result.decision.attrs["recommended"]) == 5  # at the edge, and the CLI says so
