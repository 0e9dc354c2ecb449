"""One pipeline for every family (issue 10): a candidate of each of the five families goes through
the same ``evaluate`` -> ``decide`` path and the same accountant, declaring one privacy guarantee per
protected unit.  The audit of each family runs from the registry in ``tests/test_audits.py``."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from hybridpriv.accounting import Accountant, BudgetExceededError
from hybridpriv.core.data import FixedSource
from hybridpriv.core.mechanism import Mechanism
from hybridpriv.core.privacy import Bounds, Group, Guarantee
from hybridpriv.core.random import rng as stream_rng
from hybridpriv.engine.decision import decide
from hybridpriv.engine.evaluate import evaluate
from hybridpriv.estimators import PDPSample, PEMedian, WeightedMean, WeightedMedian
from hybridpriv.families.grouped import BetaSampler, IIDSource, Statistic, normal_source
from hybridpriv.families.hybrid_trust.mechanisms import FullLM, Hybrid, TCMOnly
from hybridpriv.families.kmeans.algorithms import (
    WCSS,
    HybridKMeans,
    LMKMeans,
    TCMKMeans,
    TrustSplitSource,
    gaussian_clusters,
)
from hybridpriv.families.public_private.wang import (
    Algorithm1,
    Algorithm2,
    LeiHistogram,
    LogisticContrast,
    PredictionError,
    PublicOnly,
    Section51Source,
)
from hybridpriv.families.user_item.mechanisms import ContributionBoundedCounts, ItemCounts

GROUPS = [Group("public", 30, math.inf), Group("a", 60, 1.0), Group("b", 40, 0.3)]
BOUNDS = Bounds(0, 10)
TRUST = [Group("tcm", 20, 1.0), Group("lm", 180, 1.0, trust="local")]
KM_BOX = Bounds(0, 1)
CENTRES = np.array([[0.25, 0.25], [0.75, 0.75]])


def _wang():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Algorithm 2's unproven-sensitivity warning
        a2 = Algorithm2(LogisticContrast(), (0.8, 0.2, 1.0), [20, 100])
    c = LogisticContrast()
    return {"alg1": Algorithm1(c, 2.0, 50), "alg2": a2, "lei": LeiHistogram(c, 2.0, 4), "public": PublicOnly(c)}


def _family(name):
    """(candidates, source, task, dim, budgets) of one family: budgets cover every protected unit."""
    if name == "grouped-mean":
        cands = {"weighted": WeightedMean(GROUPS, BOUNDS, 4.0), "pdp": PDPSample(GROUPS, BOUNDS, "opt", sigma2=4.0)}
        return cands, normal_source(GROUPS, BOUNDS, 5.0, 2.0, 6), Statistic(), "estimator", {"a": 1.0, "b": 0.3}
    if name == "grouped-median":
        cands = {"weighted-median": WeightedMedian(GROUPS, BOUNDS, 4.0), "pe-median": PEMedian(GROUPS, BOUNDS)}
        return cands, normal_source(GROUPS, BOUNDS, 5.0, 2.0, 6), Statistic(), "estimator", {"a": 1.0, "b": 0.3}
    if name == "user-item":
        matrix = (stream_rng(1, "family-test").random((50, 12)) < 0.3).astype(np.int8)
        cands = {k: ContributionBoundedCounts(k, 1.0) for k in (1, 3, 6)}
        return cands, FixedSource(sp.csr_matrix(matrix), 6), ItemCounts(), "k", {"users": 1.0}
    if name == "hybrid-trust":
        cands = {"tcm-only": TCMOnly(TRUST, (0, 1)), "full-lm": FullLM(TRUST, (0, 1)), "pwh": Hybrid(TRUST, (0, 1), "pwh")}
        src = IIDSource(TRUST, (0, 1), [BetaSampler(2, 5), BetaSampler(2, 5)], {"mean": 2 / 7}, 6)
        return cands, src, Statistic(target="sample"), "estimator", {"tcm": 1.0, "lm": 1.0}
    if name == "kmeans":
        x = gaussian_clusters(CENTRES, 0.05, 100, KM_BOX, stream_rng(2, "family-test"))
        src = TrustSplitSource(x, KM_BOX, 0.2, 2, draws=4, centres=CENTRES)
        cands = {"hybrid": HybridKMeans(2, 2.0, 2, KM_BOX), "tcm": TCMKMeans(2, 2.0, 2, KM_BOX),
                 "lm": LMKMeans(2, 2.0, 2, KM_BOX)}
        return cands, src, WCSS(), "algorithm", {"tcm": 2.0, "lm": 2.0}
    if name == "wang":
        return _wang(), Section51Source(2, 200, 150, draws=3), PredictionError(), "estimator", {"private": 2.0}
    raise AssertionError(name)


FAMILIES = ["grouped-mean", "grouped-median", "user-item", "hybrid-trust", "kmeans", "wang"]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_goes_through_evaluate_and_decide(family):
    cands, src, task, dim, _ = _family(family)
    ev = evaluate(cands, src, task, trials=2, seed=3, dim=dim)
    assert ev["risk"].dims == (dim, "chain", "draw")
    assert np.isfinite(ev["risk"]).all()
    # one declaration per protected unit, read from the mechanisms themselves
    for coord, mech in cands.items():
        assert isinstance(mech, Mechanism)
        for unit, g in mech.privacy.items():
            assert float(ev["privacy_epsilon"].sel({dim: coord, "unit": unit})) == g.epsilon
            assert str(ev["privacy_relation"].sel({dim: coord, "unit": unit}).values) == g.relation
    # parameters are recorded: a clone has the same fingerprint, a changed parameter another
    for mech in cands.values():
        assert mech.clone().fingerprint() == mech.fingerprint()
    dec = decide(ev)
    assert dec.attrs["candidate_dim"] == dim
    assert str(dec.attrs["recommended"]) in {str(c) for c in cands}
    assert float(dec["p_best"].sum()) == pytest.approx(1.0)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_accountant_charges_a_candidate_of_every_family_by_its_declaration(family):
    cands, _, _, _, budgets = _family(family)
    mech = next(m for m in cands.values() if any(math.isfinite(g.epsilon) and g.epsilon > 0
                                                 for g in m.privacy.values()))
    acc = Accountant(budgets)
    acc.charge(mech)
    declared = {u: g.epsilon for u, g in mech.privacy.items() if u in budgets}
    assert acc.spent_epsilon() == pytest.approx({u: declared.get(u, 0.0) for u in budgets})
    assert acc.releases[-1].label == mech.label
    # charging until the budget runs out is refused, and the refused charge leaves no trace
    with pytest.raises(BudgetExceededError):
        for _ in range(1000):
            acc.charge(mech)
    assert all(acc.spent_epsilon()[u] <= budgets[u] * (1 + 1e-9) for u in budgets)


def test_charging_a_unit_the_accountant_does_not_track_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"unit\(s\) \['b'\] that this accountant has no budget for"):
        Accountant({"a": 1.0}).charge(WeightedMean(GROUPS, BOUNDS, 4.0))
    with pytest.raises(TypeError, match="must declare privacy"):
        Accountant({"a": 1.0}).charge(object())
    # a public unit (no promise) needs no budget; a non-private oracle cannot be charged to a finite one
    acc = Accountant({"private": 5.0})
    with pytest.raises(BudgetExceededError):
        acc.charge(Algorithm1(LogisticContrast(), math.inf))
    assert acc.spent_epsilon() == {"private": 0.0}


def test_decide_compares_the_full_declaration_with_the_requirement():
    # (epsilon, delta, relation, trust) all count: a (1, 1e-3)-DP candidate does not meet a pure 1-DP need
    cands, src, task, dim, _ = _family("hybrid-trust")
    need = {"tcm": Guarantee(1.0, 0.0, "add-remove", "central"), "lm": Guarantee(1.0, 0.0, "replace", "local")}
    gauss = Hybrid(TRUST, (0, 1), "pwh", noise="gaussian", delta=1e-3)
    ev = evaluate({**cands, "gauss": gauss}, src, task, trials=2, seed=3, requirements=need)
    dec = decide(ev)
    assert not bool(dec["meets_requirements"].sel(estimator="gauss"))
    assert str(dec.attrs["recommended"]) != "gauss"
