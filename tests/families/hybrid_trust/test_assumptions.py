"""The hybrid-trust family's declared assumption: the LM group's mean shifted against the TCM group's."""

from __future__ import annotations

import numpy as np
import pytest

from hybridpriv.families.grouped import GroupedDataset
from hybridpriv.families.hybrid_trust.assumptions import hybrid_trust_assumptions
from hybridpriv.spec import builtin_example_path, load_spec


def test_the_gap_departure_shifts_the_lm_group_only_and_moves_the_mean_by_its_share():
    (gap,) = hybrid_trust_assumptions(100.0)
    assert gap.name == "gap" and gap.scale == 100.0
    rng = np.random.default_rng(0)
    tcm, lm = rng.uniform(20, 60, 300), rng.uniform(20, 60, 700)  # far from the bounds: no clipping at +-10
    data = GroupedDataset((tcm, lm), {"mean": float(np.concatenate([tcm, lm]).mean())})
    for delta in (-10.0, 5.0):
        out = gap.perturb(data, delta)
        np.testing.assert_array_equal(out.values[0], tcm)
        np.testing.assert_allclose(out.values[1], lm + delta)
        assert out.population["mean"] == pytest.approx(data.population["mean"] + 0.7 * delta, rel=1e-12)
    clipped = gap.perturb(data, 60.0).values[1]  # records pushed past m stay at m
    assert clipped.max() == 100.0 and np.all(clipped >= lm)


def test_every_hybrid_trust_spec_declares_it():
    problem = load_spec(builtin_example_path("salaries")).problem()
    assert [a.name for a in problem.assumptions] == ["gap"] and problem.assumptions[0].scale == 250.0
    assert problem.criterion == "regret"
