"""The audit matrix (hybridpriv.testing.matrix): bounds of every shape, every relation, every unit.

CI runs the quick subset (``matrix.QUICK``); the whole matrix at one seed is ``slow``, and
``benchmarks/audit_matrix.py`` runs it over repeated seeds for the power and false-alarm figures.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import signal

from hybridpriv.core.privacy import Group
from hybridpriv.estimators import PDPSample
from hybridpriv.testing.matrix import (
    MATRIX,
    MATRIX_BOUNDS,
    QUICK,
    RELATIONS,
    ExpectedDenominatorFromZero,
    pdp_sample_exact_loss,
)
from hybridpriv.theory.ferrando import pdp_replace_loss

OLD_REPLACE = "BROKEN PDPSample expected before dc0982c, t=max replace {}"


def test_the_bounds_straddle_exclude_zero_on_both_sides_and_are_asymmetric():
    shapes = set()
    for a, b in MATRIX_BOUNDS.values():
        assert a < b
        shapes.add("straddles" if a < 0 < b else ("positive" if a > 0 else "negative"))
        if a < 0 < b and -a != b:
            shapes.add("asymmetric")
    assert shapes == {"straddles", "positive", "negative", "asymmetric"}


def test_every_grouped_family_is_in_the_matrix_under_each_relation_and_bounds():
    for family in ("WeightedMean", "PDPSample", "UniformMean", "TCMOnly", "Hybrid", "FullLM", "LMOnly"):
        for relation in RELATIONS:
            for blabel in MATRIX_BOUNDS:
                assert any(c.family == family and c.relation == relation and c.bounds == blabel for c in MATRIX.values()), (
                    family, relation, blabel)
    for family in ("PEMedian", "HybridKMeans", "TCMKMeans", "LMKMeans", "Algorithm1", "LeiHistogram"):
        assert {c.bounds for c in MATRIX.values() if c.family == family} == set(MATRIX_BOUNDS), family


def test_each_unit_is_audited_in_turn():
    reports = MATRIX["WeightedMean replace [-1, 5]"].run(0, samples=4_000)
    assert list(reports) == ["strict", "loose"]  # the public group promises nothing
    hybrid = MATRIX["Hybrid kvh add-remove [10, 20]"].run(0, samples=4_000)
    assert list(hybrid) == ["strict", "loose"]  # the TCM group (central) and the LM group (local)
    assert {r.pair_labels[0].split(":")[0] for r in hybrid.values()} == {"record 0 of group 'strict'",
                                                                            "record 0 of group 'loose'"}


@pytest.mark.parametrize("name", QUICK)
def test_quick_matrix(name):
    case = MATRIX[name]
    reports = case.run(0)
    if case.broken:
        rep = reports[case.target]
        assert rep.verdict == "violation", f"{name} was not caught: {rep}"
    else:
        for unit, rep in reports.items():
            assert rep.passed, f"{name}, unit {unit}: {rep}"


@pytest.mark.parametrize("bounds", ["[10, 20]", "[-20, -10]"])
def test_the_matrix_finds_the_old_pdp_sample_bug_where_bounds_exclude_zero(bounds):
    """PDP Sample before dc0982c summed raw records: a false promise that no [-1, 1] audit could see."""
    case = MATRIX[OLD_REPLACE.format(bounds)]
    assert case.target == "strict"
    for seed in (1, 2, 3):
        rep = case.run(seed)["strict"]
        assert rep.verdict == "violation" and rep.epsilon_lower_bound > rep.epsilon, rep


def test_the_old_pdp_sample_holds_on_bounds_symmetric_about_zero():
    """On [-1, 1] the old and the new sum coincide (midpoint 0): the audits that used only [-1, 1] had nothing to find."""
    name = "NOT BROKEN HERE PDPSample expected before dc0982c, t=max replace [-1, 1]"
    assert not MATRIX[name].broken
    assert all(r.passed for r in MATRIX[name].run(0).values())


def test_the_old_pdp_sample_subclass_reproduces_the_old_code():
    """Raw sums (no centre), noise sized to the raw sensitivity, promise min(eps_i, t): the code of 1afc28e."""
    groups = [Group("s", 10, 0.5), Group("l", 10, 2.0)]
    old = ExpectedDenominatorFromZero(groups, (10.0, 20.0), "max", denominator="expected", relation="replace")
    assert old.centre == 0.0 and old.sensitivity == 10.0 and old.threshold == 2.0
    assert old.privacy["s"].epsilon == 0.5 and old.privacy["s"].relation == "replace"
    # E[release] = E[kept sum] / E[M]: a record at 10 kept w.p. p contributes 10 p (not (10 - 15) p + 15)
    data = [np.full(10, 10.0), np.full(10, 20.0)]
    out = old.release(data, np.random.default_rng(0), 200_000)
    p = old.keep_probabilities
    expected = (10 * 10.0 * p[0] + 10 * 20.0 * p[1]) / old.expected_kept
    assert abs(out.mean() - expected) < 5 * out.std() / math.sqrt(out.size)


def test_the_old_pdp_sample_exact_loss_is_the_issue_figure():
    """Issue 15: exact loss 1.363 at bounds [10, 20], t = 2, for a promised 0.5; 3.11 at t = 4."""
    for t, loose, expected in ((2.0, 2.0, 1.363), (4.0, 4.0, 3.11)):
        old = ExpectedDenominatorFromZero([Group("s", 10, 0.5), Group("l", 10, loose)], (10.0, 20.0), "max",
                                          denominator="expected", relation="replace")
        assert old.threshold == t
        p = float(old.keep_probabilities[0])
        # independent closed form: atoms at 0 (not kept), 10 or 20 (kept); Laplace scale 10 / t; the right tail
        closed = math.log((1 - p + p * math.exp(20 * t / 10)) / (1 - p + p * math.exp(10 * t / 10)))
        assert pdp_sample_exact_loss(old, "s") == pytest.approx(closed, rel=1e-6)
        assert closed == pytest.approx(expected, abs=5e-3)


@pytest.mark.parametrize("threshold", ["min", "max", 1.5])
@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize("bounds", list(MATRIX_BOUNDS.values()), ids=list(MATRIX_BOUNDS))
def test_pdp_sample_declares_its_exact_loss_across_the_matrix(bounds, relation, threshold):
    """The declared epsilon of every group equals the exact loss computed by direct evaluation of the densities."""
    groups = [Group("strict", 5, 0.5), Group("mid", 5, 1.0), Group("loose", 5, 4.0), Group("public", 5, math.inf)]
    est = PDPSample(groups, bounds, threshold, denominator="expected", relation=relation)
    for g, p in zip(groups, est.keep_probabilities):
        declared = est.privacy[g.name]
        assert declared.relation == relation
        exact = pdp_sample_exact_loss(est, g.name)
        assert declared.epsilon == pytest.approx(exact, rel=1e-6, abs=1e-9), (g.name, declared, exact)
        if relation == "replace":
            assert declared.epsilon == pytest.approx(pdp_replace_loss(float(p), est.threshold), rel=1e-9)


@pytest.mark.slow
def test_the_whole_matrix_at_one_seed():
    failures = []
    for name, case in MATRIX.items():
        reports = case.run(0)
        if case.broken and reports[case.target].passed:
            failures.append(f"not caught: {name}: {reports[case.target]}")
        if not case.broken:
            failures += [f"false alarm: {name}, {u}: {r}" for u, r in reports.items() if not r.passed]
    assert not failures, "\n".join(failures)


def test_strict_noise_loss_matches_a_numerical_convolution():
    """The closed-form density of a sum of two Laplace variables against a grid convolution of the two densities."""
    from hybridpriv.testing.cases.grouped import StrictNoiseAtLoosestEpsilon
    from hybridpriv.testing.matrix import _groups, _s2, strict_noise_loss

    est = StrictNoiseAtLoosestEpsilon(_groups(), (-1.0, 1.0), _s2((-1.0, 1.0)))
    w, n = est.weights, est.sizes
    b1, b2 = w[0] * est.sensitivity / 4.0 / n[0], w[1] * est.sensitivity / 4.0 / n[1]
    shift = w[0] * 1.0 / n[0]
    h = min(b1, b2) / 400
    x = np.arange(-40 * max(b1, b2), 40 * max(b1, b2) + h / 2, h)
    f = signal.fftconvolve(np.exp(-np.abs(x) / b1) / (2 * b1), np.exp(-np.abs(x) / b2) / (2 * b2), mode="same") * h
    k = int(round(shift / h))
    inner = slice(len(x) // 4, 3 * len(x) // 4)  # away from the grid's truncated ends
    numeric = np.max(np.abs(np.log(f[inner]) - np.log(np.roll(f, k)[inner])))
    assert strict_noise_loss(est, 1.0) == pytest.approx(numeric, rel=2e-2)
    assert strict_noise_loss(est, 1.0) > 0.5  # broken at [-1, 1] under add-remove: its promise is 0.5
