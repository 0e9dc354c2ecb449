"""Totals by basic composition, PLD and RDP (dp-accounting), against independent computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special

from hybridpriv.core.privacy import Guarantee
from hybridpriv.release.composition import compose


def optimal_composition_epsilon(eps: float, k: int, delta: float) -> float:
    """Exact k-fold composition of eps-DP (Kairouz, Oh & Viswanath 2015): the dominating pair is
    randomized response; the privacy loss is eps (2J - k) with J ~ Binomial(k, e^eps / (1 + e^eps))
    under P, and delta(E) = E_P[(1 - exp(E - L))_+].  Solved for E by bisection."""
    p = math.exp(eps) / (1 + math.exp(eps))
    j = np.arange(k + 1)
    log_pmf = special.gammaln(k + 1) - special.gammaln(j + 1) - special.gammaln(k - j + 1) + j * math.log(p) + (k - j) * math.log1p(-p)
    loss = eps * (2 * j - k)

    def excess(big_e: float) -> float:
        return float(np.sum(np.exp(log_pmf) * np.clip(1 - np.exp(big_e - loss), 0, None))) - delta

    return optimize.brentq(excess, 0.0, k * eps + 1e-9, xtol=1e-12) if excess(0.0) > 0 else 0.0


def mironov_conversion(eps: float, k: int, delta: float, orders: np.ndarray) -> float:
    """Mironov (2017, Proposition 3) conversion of k-fold (alpha, min(eps, alpha eps^2/2))-RDP."""
    curve = k * np.minimum(eps, orders * eps * eps / 2)
    return float(np.min(curve + math.log(1 / delta) / (orders - 1)))


@pytest.mark.parametrize("eps,k", [(0.1, 100), (0.5, 20), (1.0, 5)])
def test_pld_matches_optimal_composition(eps, k):
    t = compose([eps] * k, target_delta=1e-6)
    exact = optimal_composition_epsilon(eps, k, 1e-6)
    assert t.basic_epsilon == pytest.approx(eps * k)
    # the PLD accountant discretises pessimistically: never below the exact value, and close to it
    assert exact - 1e-9 <= t.pld_epsilon <= exact + 0.01


@pytest.mark.parametrize("eps,k", [(0.1, 100), (0.05, 400), (1.0, 3)])
def test_rdp_is_valid_and_no_looser_than_the_classical_conversion(eps, k):
    from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS

    t = compose([Guarantee(eps)] * k, target_delta=1e-6)
    exact = optimal_composition_epsilon(eps, k, 1e-6)
    assert t.rdp_epsilon >= exact - 1e-9  # no valid bound beats the optimal composition
    assert t.rdp_epsilon <= mironov_conversion(eps, k, 1e-6, np.asarray(DEFAULT_RDP_ORDERS, float)) + 1e-9


def test_many_small_releases_are_cheaper_than_basic_composition():
    t = compose([0.1] * 100, 1e-6)
    assert t.pld_epsilon < 0.5 * t.basic_epsilon and t.rdp_epsilon < 0.6 * t.basic_epsilon


def test_mixed_parts_and_delta():
    t = compose([Guarantee(0.5, 1e-7), (0.2, 0.0), 0.3], target_delta=1e-5)
    assert t.basic_epsilon == pytest.approx(1.0) and t.basic_delta == pytest.approx(1e-7)
    assert t.rdp_epsilon is None and "delta > 0" in t.notes[0]
    assert t.pld_epsilon <= 1.0 + 1e-6


def test_public_and_empty():
    assert compose([0.3, math.inf]).pld_epsilon == math.inf
    empty = compose([])
    assert (empty.parts, empty.basic_epsilon, empty.pld_epsilon) == (0, 0.0, 0.0)
    assert compose([Guarantee(0.0)]).parts == 0


@pytest.mark.parametrize("bad", [0, 1, -0.1, float("nan"), True, "1e-6"])
def test_bad_target_delta(bad):
    with pytest.raises(ValueError, match="target_delta"):
        compose([1.0], target_delta=bad)


def test_bad_part():
    with pytest.raises(TypeError, match=r"parts\[1\]"):
        compose([1.0, "x"])


def test_plan_totals_of_hybrid_kmeans_and_algorithm2():
    """Algorithm 2's and hybrid K-means' totals both ways: basic = their declaration; PLD within the
    heterogeneous advanced-composition bound (Kairouz, Oh & Viswanath 2015, Thm. 3.5), computed here."""
    from hybridpriv.families.kmeans.algorithms import HybridKMeans
    from hybridpriv.families.public_private.wang import Algorithm2
    from hybridpriv.release.composition import plan_totals

    a2 = Algorithm2("logistic", (0.3, 0.3, 0.4), [10, 20, 40])
    totals = plan_totals(a2)
    assert set(totals) == {"private"}
    assert totals["private"].basic_epsilon == pytest.approx(a2.privacy["private"].epsilon)
    for tau in (2, 50):
        km = HybridKMeans(k=3, epsilon=1.0, bounds=(0, 1), d=2, tau=tau)
        totals = plan_totals(km, target_delta=1e-6)
        for unit, t in totals.items():
            assert t.basic_epsilon == pytest.approx(km.privacy[unit].epsilon)
            parts = [e[unit] for _, e in km.ledger_plan() if unit in e]
            kov = math.sqrt(2 * math.log(1 / 1e-6) * sum(e * e for e in parts)) + sum(
                e * math.expm1(e) / (math.exp(e) + 1) for e in parts)
            assert t.pld_epsilon <= min(t.basic_epsilon, kov) + 1e-3
    # many small parts: tighter accounting gives a real saving on the TCM unit (basic 1.0)
    assert plan_totals(HybridKMeans(k=3, epsilon=1.0, bounds=(0, 1), d=2, tau=50))["tcm"].pld_epsilon < 0.9
    with pytest.raises(TypeError, match="ledger_plan"):
        plan_totals(object())
