"""Run the audit case registry (hybridpriv.testing.cases): built-ins pass, broken variants are caught.

The cases themselves (mechanisms, neighbouring datasets, statistics, broken variants) live in
the package, so that ``benchmarks/audit_rates.py`` measures exactly these settings without
importing tests.  The coverage test walks every module of ``hybridpriv.estimators`` and the
primitives of ``hybridpriv.noise``.
"""

from __future__ import annotations

import sys
import types
from typing import Any, ClassVar

import numpy as np
import pytest

from hybridpriv.core.mechanism import Mechanism
from hybridpriv.core.privacy import Guarantee
from hybridpriv.testing.cases import (
    BROKEN,
    CONFIDENCE,
    CORRECT,
    COVERS,
    SAMPLES,
    dp_claiming_built_ins,
    uncovered,
)


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_built_in_mechanism_passes_its_audit(name):
    reports = CORRECT[name](0)
    assert reports, "nothing was audited"
    for group, rep in reports.items():
        assert rep.samples == SAMPLES and rep.confidence >= CONFIDENCE
        assert rep.passed, f"{name}, group {group}: {rep}"


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_variant_is_caught(name):
    run, target = BROKEN[name]
    for seed in (1, 2, 3):
        reports = run(seed)
        rep = reports[target]
        assert rep.verdict == "violation", f"{name} (seed {seed}) was not caught: {rep}"
        assert rep.epsilon_lower_bound > rep.epsilon


def test_estimator_audits_cover_every_group_with_a_finite_promise():
    """Public groups promise nothing and are skipped; every other group is audited, the strictest included."""
    reports = CORRECT["WeightedMean eps=(1, 2)"](0)
    assert set(reports) == {"strict", "loose"}
    assert reports["strict"].epsilon == 1.0 and reports["loose"].epsilon == 2.0
    # estimators that promise the public group something are audited for it too
    assert set(CORRECT["UniformMean eps=(1, 2)"](0)) == {"strict", "loose", "public"}


def test_every_dp_claiming_built_in_is_audited_at_two_settings():
    missing = uncovered()
    assert not missing, f"add audit cases to hybridpriv/testing/cases/ (two settings each) for: {missing}"


def test_the_coverage_walk_sees_every_family():
    """K-means, Wang's Algorithm 1 / Algorithm 2 / Lei's histogram and the noise primitives are found by the walk."""
    found = dp_claiming_built_ins()
    expected = {"WeightedMean", "PDPSample", "PEMedian", "UniformMean", "PublicMean", "Hybrid", "LMOnly", "FullLM",
                "TCMOnly", "ContributionBoundedCounts", "HybridKMeans", "TCMKMeans", "LMKMeans", "Algorithm1",
                "Algorithm2", "LeiHistogram", "HybridMEstimator", "laplace", "gaussian", "exponential_mechanism",
                "smith_quantile", "randomized_response"}
    assert expected <= set(found), expected - set(found)
    # without a budget nothing is claimed: the non-private Lloyd baseline and the samplers are not listed
    assert not {"LloydKMeans", "PublicOnly", "sample_log_weights", "interval_exponential_mechanism"} & set(found)


class _DummyCountRelease(Mechanism):
    """A new DP-claiming mechanism with no audit case (for the coverage test's own test)."""

    data_kind: ClassVar[str] = "user-item"

    def __init__(self, epsilon: float) -> None:
        self.epsilon = epsilon

    @property
    def privacy(self) -> dict[str, Guarantee]:
        return {"users": Guarantee(self.epsilon)}

    def release(self, data: Any, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
        return rng.laplace(size=(trials, 1))


def test_the_coverage_check_fails_naming_a_class_without_cases():
    module = types.ModuleType("hybridpriv_dummy_family")
    _DummyCountRelease.__module__ = module.__name__
    module._DummyCountRelease = _DummyCountRelease
    module.DummyCountRelease = _DummyCountRelease
    sys.modules[module.__name__] = module
    try:
        claiming = dp_claiming_built_ins(extra_modules=(module,))
        assert claiming["DummyCountRelease"] == module.__name__
        assert uncovered(claiming) == {"DummyCountRelease": 0}
        # one case is not enough: two settings are required
        assert uncovered(claiming, {**COVERS, "dummy eps=1": "DummyCountRelease"}) == {"DummyCountRelease": 1}
        assert uncovered(claiming, {**COVERS, "dummy eps=1": "DummyCountRelease", "dummy eps=2": "DummyCountRelease"}) == {}
    finally:
        del sys.modules[module.__name__]
