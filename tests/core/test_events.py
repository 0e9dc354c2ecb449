"""Privacy as events (issue 24, item 3): each formula against an independent computation, the mechanisms'
events against their declarations, the ledger's tight totals, OpenDP's maps at release."""

from __future__ import annotations

import json
import math

import dp_accounting as dpa
import numpy as np
import pytest
from scipy import stats

from hybridpriv.core import events as E
from hybridpriv.core.privacy import Group, Guarantee
from hybridpriv.families.grouped.baselines import UniformMean
from hybridpriv.families.grouped.jorgensen import PDPSample
from hybridpriv.families.grouped.mixed import WeightedMean
from hybridpriv.families.histogram.mechanisms import (
    AdaptiveHistograms,
    LaplaceHistograms,
    PooledHistogram,
    SampleHistogram,
)
from hybridpriv.families.hybrid_trust.mechanisms import FullLM, Hybrid, TCMOnly
from hybridpriv.families.kmeans.algorithms import HybridKMeans, LMKMeans, TCMKMeans
from hybridpriv.families.public_private.wang import Algorithm1, HybridMEstimator, LeiHistogram
from hybridpriv.families.user_item.mechanisms import ContributionBoundedCounts
from hybridpriv.noise import gaussian_sigma, rr_probabilities
from hybridpriv.release.composition import compose
from hybridpriv.release.maps import check_declaration, privacy_map
from hybridpriv.testing.conformance import event_problems

GROUPS = [Group("tcm", 60, 1.0), Group("lm", 200, 0.5, trust="local")]
MIXED = [Group("pub", 30, math.inf), Group("a", 50, 0.5), Group("b", 80, 2.0), Group("c", 40, 0.05)]
CATS = ("none", "one", "two")
PP = [Group("private", 200, 0.7), Group("public", 40, math.inf)]

#: The Laplace-noise built-ins that state their noise as events (before, their bare labels: OpenDP mapped nothing).
LAPLACE_BUILT_INS = [
    WeightedMean(MIXED, (0, 10), 4.0), WeightedMean(MIXED, (0, 10), 4.0, relation="replace"),
    WeightedMean(MIXED, (10, 20), 4.0), WeightedMean(MIXED, (10, 20), 4.0, relation="replace"),  # bounds without 0
    UniformMean(MIXED, (0, 10)), UniformMean(MIXED, (10, 20), relation="replace"), LaplaceHistograms(MIXED, CATS), LaplaceHistograms(MIXED, CATS, "replace", "size"),
    AdaptiveHistograms(MIXED, CATS), PooledHistogram(MIXED, CATS, "replace"), Algorithm1("mean", 0.7),
    LeiHistogram("mean", 0.7, 3), HybridMEstimator(PP, (0, 1)),
]


def _gaussian_epsilon(sigma: float, delta: float) -> float:
    """The exact epsilon of a Gaussian of sd ``sigma`` (sensitivity 1) at ``delta``, solved from Balle & Wang's
    (2018) Theorem 8, ``delta(eps) = Phi(1/(2s) - eps s) - e^eps Phi(-1/(2s) - eps s)``, by bisection."""
    def d(eps: float) -> float:
        return stats.norm.cdf(0.5 / sigma - eps * sigma) - math.exp(eps) * stats.norm.cdf(-0.5 / sigma - eps * sigma)

    lo, hi = 0.0, 50.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if d(mid) > delta else (lo, mid)
    return hi


def test_laplace_and_randomized_response_are_pure_with_the_textbook_epsilons():
    assert E.pure_epsilon(E.laplace(4.0, 2.0)) == pytest.approx(0.5)
    q, r = rr_probabilities(1.3, 4)
    assert E.pure_epsilon(E.randomized_response(1.3, 4)) == pytest.approx(math.log(q / r), rel=1e-12)
    both = E.composed([E.laplace(4.0, 2.0), E.repeated(E.randomized_response(1.3, 4), 3)])
    assert E.pure_epsilon(both) == pytest.approx(0.5 + 3 * 1.3)
    assert E.epsilon(both, 0.0) == pytest.approx(4.4)
    # the PLD agrees with the exact sum at a tiny delta (within its discretisation, from above)
    assert 4.4 - 1e-3 <= float(E.pld(both).get_epsilon_for_delta(1e-12)) <= 4.4 + 1e-2


def test_a_gaussian_event_has_the_analytic_gaussian_epsilon():
    for eps, delta in [(0.5, 1e-6), (1.0, 1e-5), (3.0, 1e-8)]:
        sigma = gaussian_sigma(eps, delta, 1.0)
        assert E.epsilon(E.gaussian(sigma, 1.0), delta) == pytest.approx(eps, abs=2e-3)
        assert _gaussian_epsilon(sigma, delta) == pytest.approx(eps, rel=1e-6)


def test_gaussian_releases_compose_tightly_where_labels_add_up():
    """Ten Gaussian releases at (0.5, 1e-6): labels add to 5; the events compose to the exact profile of one
    Gaussian of sd sigma / sqrt(10) (the sum of ten independent Gaussians), computed by bisection."""
    sigma = gaussian_sigma(0.5, 1e-6, 1.0)
    ten = E.repeated(E.gaussian(sigma, 1.0), 10)
    exact = _gaussian_epsilon(sigma / math.sqrt(10), 1e-5)
    assert E.epsilon(ten, 1e-5) == pytest.approx(exact, abs=5e-3)
    t = compose([Guarantee(0.5, 1e-6)] * 10, 1e-5, events=[E.gaussian(sigma, 1.0)] * 10)
    assert t.basic_epsilon == pytest.approx(5.0) and t.pld_epsilon == pytest.approx(exact, abs=5e-3)
    assert t.rdp_epsilon is not None and exact < t.rdp_epsilon < 5.0


def test_poisson_sampling_amplifies_a_pure_event_by_the_textbook_bound():
    """log(1 + p (e^eps - 1)) (Balle et al. 2018), and the PLD of the sampled Laplace is within it."""
    ev = E.poisson_sampled(0.1, E.laplace(1.0, 1.0))
    bound = math.log1p(0.1 * math.expm1(1.0))
    assert E.pure_epsilon(ev) == pytest.approx(bound)
    assert float(E.pld(ev).get_epsilon_for_delta(1e-12)) <= bound + 1e-3


def test_events_round_trip_through_json_and_refuse_garbage():
    ev = E.composed([E.laplace(2.0, 1.0), E.repeated(E.gaussian(3.0, 1.0), 4),
                     E.poisson_sampled(0.2, E.laplace(1.0, 1.0)), E.randomized_response(0.7, 3), E.epsilon_delta(0.3, 1e-7)])
    back = E.from_json(json.loads(json.dumps(E.to_json(ev))))
    assert back == ev
    with pytest.raises(ValueError, match="events.x is not a privacy event"):
        E.from_json({"type": "laplace"}, "events.x")


def test_charges_in_a_replace_budget_double_every_sensitivity():
    declared, budget = Guarantee(0.5, 0.0, "add-remove"), Guarantee(2.0, 0.0, "replace")
    assert E.pure_epsilon(E.charge_to(E.laplace(4.0, 2.0), declared, budget)) == pytest.approx(1.0)
    sigma = gaussian_sigma(0.5, 1e-6, 1.0)
    doubled = E.charge_to(E.gaussian(sigma, 1.0), Guarantee(0.5, 1e-6), Guarantee(2.0, 1e-5, "replace"))
    assert doubled == E.gaussian(sigma, 2.0)
    # a local promise charged to a central budget of the same relation is the event itself
    rr = E.randomized_response(1.0, 2)
    assert E.charge_to(rr, Guarantee(1.0, 0, "replace", "local"), Guarantee(2.0, 0, "replace")) is rr
    # a central promise to a local budget costs inf
    assert E.pure_epsilon(E.charge_to(E.laplace(1.0, 1.0), Guarantee(1.0), Guarantee(2.0, 0, "add-remove", "local"))) == math.inf


@pytest.mark.parametrize("mech", [
    TCMOnly(GROUPS, (0, 100), noise="gaussian", delta=1e-6), FullLM(GROUPS, (0, 100), noise="gaussian", delta=1e-6),
    Hybrid(GROUPS, (0, 100), 0.4), ContributionBoundedCounts(3, 0.8), HybridKMeans(3, 5.0, 4, (0, 1)),
    PDPSample([Group("a", 50, 0.5), Group("b", 80, 2.0), Group("pub", 30, math.inf)], (0, 10), threshold="max",
              denominator="expected"),
    LMKMeans(2, 2.0, 3, (0, 1)), TCMKMeans(2, 2.0, 3, (0, 1)), *LAPLACE_BUILT_INS,
    SampleHistogram(MIXED, CATS, threshold="max"), SampleHistogram(MIXED, CATS, "replace", threshold="avg")],
    ids=lambda m: f"{type(m).__name__}-{m.label}")
def test_a_mechanism_s_events_give_back_its_declaration(mech):
    """Each event describes the noise: its epsilon at the declared delta equals the declaration (not merely below)."""
    assert event_problems(mech) == []
    for unit, g in mech.privacy.items():
        got = E.epsilon(mech.privacy_events[unit], g.delta, g.relation)
        assert got == pytest.approx(g.epsilon, rel=1e-6, abs=1e-12), unit


def test_an_understated_declaration_is_caught_by_its_events():
    class Understated(TCMOnly):
        @property
        def privacy(self):
            out = dict(super().privacy)
            out["tcm"] = Guarantee(0.5, 0.0)
            return out

    problems = event_problems(Understated(GROUPS, (0, 100)))
    assert problems and "gives epsilon 1 at delta 0, above the declared 0.5" in problems[0]


def test_opendp_maps_vouch_for_pure_parts_and_report_rho_for_gaussian_ones():
    m = HybridKMeans(3, 5.0, 4, (0, 1))
    maps = check_declaration(m)
    assert maps["tcm"]["epsilon"] == pytest.approx(5.0) and maps["lm"]["epsilon"] == pytest.approx(5.0)
    sigma = gaussian_sigma(1.0, 1e-6, 1.0)
    got = privacy_map(E.repeated(E.gaussian(sigma, 1.0), 3))
    assert got["rho"] == pytest.approx(3 / (2 * sigma**2), rel=1e-9) and got["epsilon"] == 0.0
    assert privacy_map(E.poisson_sampled(0.5, E.laplace(1.0, 1.0)))["unmapped"] == ["PoissonSampledDpEvent"]

    # a bare label is unmapped: OpenDP then vouches for no total (0.0 would read as "costs nothing")
    label = privacy_map(E.composed([E.laplace(2.0, 1.0), E.epsilon_delta(0.3)]))
    assert label["epsilon"] is None and label["mapped_epsilon"] == pytest.approx(0.5)
    assert label["unmapped"] == ["EpsilonDeltaDpEvent"]

    class Overclaims(ContributionBoundedCounts):
        @property
        def privacy_events(self):
            return {"users": E.laplace(self.scale / 2, self.sensitivity)}

    with pytest.raises(ValueError, match="OpenDP's privacy maps of its noise give unit 'users' epsilon 1.6"):
        check_declaration(Overclaims(3, 0.8))


@pytest.mark.parametrize("mech", LAPLACE_BUILT_INS, ids=lambda m: f"{type(m).__name__}-{m.label}")
def test_opendp_maps_every_laplace_built_in_to_its_declaration(mech):
    """OpenDP's own Laplace map of each unit's noise is the declared epsilon: the release's record vouches for it
    (not a bare label it cannot map)."""
    for unit, m in check_declaration(mech).items():
        assert m["unmapped"] == [], unit
        g = mech.privacy[unit]
        assert m["epsilon"] == ("inf" if math.isinf(g.epsilon) else pytest.approx(g.epsilon, rel=1e-9)), unit


def test_the_ledger_keeps_events_and_composes_them(tmp_path):
    from hybridpriv.release.ledger import Ledger

    sigma = gaussian_sigma(0.5, 1e-6, 1.0)
    budget = {"u": Guarantee(10.0, 1e-4)}
    led = Ledger(tmp_path / "l.json")
    for _ in range(10):
        with led.locked(budget) as state:
            state.record({"u": Guarantee(0.5, 1e-6)}, "g", events={"u": E.gaussian(sigma, 1.0)})
    t = led.read().totals(1e-5)["u"]
    assert t.basic_epsilon == pytest.approx(5.0)
    assert t.pld_epsilon == pytest.approx(_gaussian_epsilon(sigma / math.sqrt(10), 1e-5), abs=5e-3)
    # a damaged event is refused naming where it is
    data = json.loads((tmp_path / "l.json").read_text())
    data["releases"][3]["events"]["u"] = {"type": "gaussian"}
    (tmp_path / "l.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"releases\[3\].events.u is not a privacy event"):
        led.read()
    assert isinstance(E.laplace(1.0, 1.0), dpa.DpEvent) and np.isfinite(sigma)
