"""The two-stage plan (hybridpriv.engine.plan): its weights, its choice and its expected loss against independent
computations."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from hybridpriv.engine.plan import Probe, choose_later, preposterior, second_stage

SHARE = 0.1
LATER = 1.0 / (1.0 - SHARE) ** 2  # a variance-limited risk grows as 1 / epsilon^2


def _evaluation(risk: np.ndarray, coords=("A", "B")) -> xr.Dataset:
    """An evaluation of candidates ``coords`` on ``risk.shape[0]`` datasets (one chain)."""
    return xr.Dataset({"risk": (("estimator", "chain", "draw"), risk.T[:, None, :])},
                      coords={"estimator": list(coords)}, attrs={"candidate_dim": "estimator"})


def _two_types(n: int, gap: float):
    """Half the datasets of type 0 (A's risk 1, B's 2), half of type 1 (the reverse), in pairs (so each of the
    plan's halves, alternate datasets, holds both types alike); feature: gap x type."""
    kind = (np.arange(n) // 2) % 2
    now = np.where(kind[:, None] == 0, [1.0, 2.0], [2.0, 1.0])
    feats = (gap * kind).astype(float)[None, :, None]
    return now, feats


class _Features:
    """A probe mechanism's two parts the analysis reads: the noise scales and the exact features."""

    def __init__(self, scales):
        self.scales = np.asarray(scales, dtype=float)

    def exact(self, data):
        return np.array([data])


def _probe(scale: float) -> Probe:
    return Probe(SHARE, "the type", _Features([scale]), lambda m, p: m)


def test_weights_are_the_laplace_posterior_brute_force():
    rng = np.random.default_rng(1)
    feats = rng.normal(size=(30, 2))
    scales = np.array([0.7, 1.3])
    risk = rng.uniform(size=(30, 3))
    observed = rng.normal(size=(5, 2))
    choice, ess = second_stage(observed, feats, scales, risk, np.ones(3, bool))
    for i, o in enumerate(observed):  # independent: scipy's Laplace density, a loop
        w = np.array([np.prod(stats.laplace.pdf(o, loc=f, scale=scales)) for f in feats])
        w /= w.sum()
        assert choice[i] == np.argmin(w @ risk)
        assert ess[i] == pytest.approx(1 / np.sum(w**2), rel=1e-9)


def test_ineligible_candidates_are_never_chosen():
    feats = np.array([[0.0], [0.0], [10.0]])
    risk = np.array([[1.0, 0.1], [1.0, 0.1], [5.0, 0.1]])
    choice, _ = second_stage(np.array([[0.0]]), feats, np.array([1.0]), risk, np.array([True, False]))
    assert choice[0] == 0


def test_informative_probe_pays_and_uninformative_does_not():
    now, feats = _two_types(200, 100.0)
    plan = preposterior(_evaluation(now), _evaluation(now * LATER), feats, _probe(0.01), seed=0)
    # the features tell the type: the plan always picks the right one at the reduced budget
    assert float(plan["plan_loss"]) == pytest.approx(LATER, rel=1e-12)
    assert float(plan["now_loss"]) == pytest.approx(1.5)
    assert plan.attrs["pays"] == 1
    noisy = preposterior(_evaluation(now), _evaluation(now * LATER), feats, _probe(1e6), seed=0)
    # features pure noise: the second stage picks one candidate blindly, at the higher risk: 1.5 x LATER
    assert float(noisy["plan_loss"]) == pytest.approx(1.5 * LATER, rel=0.01)
    assert noisy.attrs["pays"] == 0


def test_plan_loss_agrees_with_the_misclassification_formula():
    """Types at feature 0 and 1, Laplace scale b: the second stage picks type 0's candidate iff the observation is
    below 1/2, so it errs with probability p = exp(-1 / (2b)) / 2 and the plan's loss is
    LATER x ((1 - p) x 1 + p x 2).  Monte Carlo over 400 datasets x 8 releases: within 4 standard errors."""
    b = 0.5
    now, feats = _two_types(400, 1.0)
    plan = preposterior(_evaluation(now), _evaluation(now * LATER), feats, _probe(b), seed=3)
    p = 0.5 * np.exp(-0.5 / b)
    expected = LATER * (1 + p)
    se = LATER * np.sqrt(p * (1 - p) / (400 * 8))
    assert abs(float(plan["plan_loss"]) - expected) < 4 * se
    assert float(plan["chosen"].sum()) == pytest.approx(1.0)


def test_choose_later_follows_the_observation():
    now, feats = _two_types(40, 10.0)
    plan = preposterior(_evaluation(now), _evaluation(now * LATER), feats, _probe(0.5), seed=0)
    assert choose_later(plan, np.array([0.2])) == "A"
    assert choose_later(plan, np.array([9.7])) == "B"


def test_bad_input_is_refused_naming_it():
    with pytest.raises(ValueError, match="share"):
        Probe(1.0, "x", _Features([1.0]), lambda m, p: m)
    with pytest.raises(ValueError, match="scales"):
        Probe(0.1, "x", _Features([0.0]), lambda m, p: m)
    now, feats = _two_types(10, 1.0)
    with pytest.raises(ValueError, match="features must have shape"):
        preposterior(_evaluation(now), _evaluation(now), feats[:, :5], _probe(1.0), seed=0)
    with pytest.raises(ValueError, match="replicates"):
        preposterior(_evaluation(now), _evaluation(now), feats, _probe(1.0), seed=0, replicates=0)


def test_a_gain_within_the_models_error_does_not_pay_and_says_so():
    from hybridpriv.engine.plan import PAYS_GAIN, plan_lines

    now, feats = _two_types(200, 100.0)
    # features tell the type, but the rest of the budget costs 45%: plan 1.45 against 1.5 now, 3.3% lower; the
    # types as strata, within which the paired difference is constant: no Monte Carlo error, significant, yet
    # below the floor
    kind = (np.arange(200) // 2) % 2
    strat = _evaluation(now).assign_coords(stratum=(("chain", "draw"), kind[None, :]))
    small = preposterior(strat, _evaluation(now * 1.45), feats, _probe(0.01), seed=0)
    assert float(small["plan_loss"]) == pytest.approx(1.45) and small.attrs["gain"] == pytest.approx(0.05 / 1.5)
    assert small.attrs["significant"] == 1 and small.attrs["pays"] == 0
    assert PAYS_GAIN > 0.05 / 1.5 and small.attrs["gain_floor"] == PAYS_GAIN
    lines = plan_lines(small)
    assert "the plan would be 3% lower, less than the 8% it needs" in lines[1] and "choose now" in lines[1]
    # a family's own floor decides instead of the default: 3.3% pays above a 3% floor, not above a 4% one
    low = preposterior(strat, _evaluation(now * 1.45), feats, _probe(0.01), seed=0, gain_floor=0.03)
    assert low.attrs["pays"] == 1 and low.attrs["gain_floor"] == 0.03 and "the plan pays (3% lower)" in plan_lines(low)[1]
    high = preposterior(strat, _evaluation(now * 1.45), feats, _probe(0.01), seed=0, gain_floor=0.04)
    assert high.attrs["pays"] == 0 and "less than the 4% it needs" in plan_lines(high)[1]
    old = small.copy()  # a selection file written before the floor was recorded names no number it cannot know
    del old.attrs["gain_floor"]
    assert "the plan would be 3% lower, less than the floor it needs" in plan_lines(old)[1]
    for bad in (-0.01, 1.0, float("nan"), "six"):
        with pytest.raises(ValueError, match=f"gain_floor must be a share in \\[0, 1\\), got {bad!r}"):
            preposterior(strat, _evaluation(now * 1.45), feats, _probe(0.01), seed=0, gain_floor=bad)
    # a gain above the floor pays (17.7%: 1.5 against 1 / 0.9^2)
    big = preposterior(_evaluation(now), _evaluation(now * LATER), feats, _probe(0.01), seed=0)
    assert big.attrs["gain"] == pytest.approx(1 - LATER / 1.5) and big.attrs["pays"] == 1
    assert "the plan pays (18% lower)" in plan_lines(big)[1]


def test_the_plans_error_is_computed_within_strata():
    # the two types as strata of the draws: the paired difference (plan - now) is constant within a type, so its
    # Monte Carlo error is 0 within strata; read as one series (no strata), the types' alternation is variance
    now, feats = _two_types(200, 100.0)
    kind = (np.arange(200) // 2) % 2
    plain = _evaluation(now)
    strat = plain.assign_coords(stratum=(("chain", "draw"), kind[None, :]))
    a = preposterior(plain, _evaluation(now * LATER), feats, _probe(0.01), seed=0)
    b = preposterior(strat, _evaluation(now * LATER), feats, _probe(0.01), seed=0)
    assert float(a["difference"]) == pytest.approx(float(b["difference"]))
    assert float(a["difference_mcse"]) > 0.01 and float(b["difference_mcse"]) == pytest.approx(0.0, abs=1e-12)


def test_the_held_out_note_speaks_only_where_carrying_the_plan_out_did_better():
    from hybridpriv.engine.plan import plan_held_line

    held = {"truths": 33, "seeds": {4: {"now": (21.1, 67.8), "plan": (15.0, 43.5), "refit": (9.2, 29.9)},
                                    3: {"now": (30.0, 80.0), "plan": (20.0, 50.0), "refit": (10.0, 40.0)}}}
    line = plan_held_line(held, pays=False)
    assert line.startswith("  note (plan): on this kind's held-out truths the analysis above undervalued the probe")
    assert ("the plan did better than choosing now: relative regret in the mean / at the 90th percentile 20% / 50% "
            "against 30% / 80% (seed 3); 15% / 44% against 21% / 68% (seed 4), 33 truths a seed") in line
    assert "choosing again: relative regret" in line and line.endswith("hybridpriv release --plan")
    assert plan_held_line(held, pays=True) == ""  # the verdict already says to spend it
    assert plan_held_line({}, pays=False) == ""  # never measured
    worse_at_p90 = {**held, "seeds": {**held["seeds"], 3: {**held["seeds"][3], "plan": (20.0, 90.0)}}}
    assert plan_held_line(worse_at_p90, pays=False) == ""  # better in the mean alone, and on one seed, is not enough
    one = {"truths": 33, "seeds": {4: {"now": (21.1, 67.8), "plan": (15.0, 43.5)}}}
    assert "(seed 4), 33 truths" in plan_held_line(one, False) and "choosing again" not in plan_held_line(one, False)
    assert plan_held_line(held, False, short=True) == (
        "note (plan): carried out on every held-out truth (seeds 3 and 4), the plan did better than choosing now; the "
        "analysis trusts the model.  hybridpriv release --plan spends it")


def test_the_held_out_note_says_where_the_refit_did_worse_and_that_choosing_now_stands():
    """public-private's evidence: the refit better on seed 4, worse on seeds 3 and 5."""
    from hybridpriv.engine.plan import plan_held_line

    held = {"truths": 33, "seeds": {3: {"now": (9.0, 28.6), "refit": (19.3, 53.5)},
                                    4: {"now": (21.1, 67.8), "plan": (15.0, 43.5), "refit": (9.2, 29.9)},
                                    5: {"now": (9.7, 26.8), "refit": (12.3, 41.7)}}}
    line = plan_held_line(held, pays=False)
    assert line.startswith("  note (plan): on this kind's held-out truths the plan carried out (the model fitted "
                           "again on the release) was better on seed 4 but not on seeds 3 and 5: ")
    assert "19% / 54% against 9.0% / 29% (seed 3)" in line and "12% / 42% against 9.7% / 27% (seed 5)" in line
    assert line.endswith("; choosing now stands")
    assert plan_held_line(held, pays=True) == ""
    worse = {"truths": 33, "seeds": {3: held["seeds"][3]}}
    assert "was not better on seed 3: " in plan_held_line(worse, False)
    # a figure's note: the same verdict without the numbers
    assert plan_held_line(held, False, short=True) == (
        "note (plan): carried out on held-out truths (the model fitted again on the release), the plan did better "
        "than choosing now on seed 4 but not on seeds 3 and 5; choosing now stands")
    assert plan_held_line(worse, False, short=True).endswith("did not do better than choosing now on seed 3; "
                                                             "choosing now stands")
    assert plan_held_line(held, True, short=True) == ""
    everywhere = {"truths": 33, "seeds": {4: {"now": (21.1, 67.8), "refit": (9.2, 29.9)}}}
    assert plan_held_line(everywhere, False) == ""  # the refit better everywhere: held_out_pays speaks instead


def test_held_out_evidence_recommends_a_refitting_plan_only_where_the_refit_did_better_on_every_seed():
    """held_out_pays: only a probe that refits, only with its held-out numbers, only where both are lower on every
    seed."""
    import dataclasses

    from hybridpriv.engine.plan import held_out_pays, plan_lines

    seed4 = {"now": (21.1, 67.8), "plan": (15.0, 43.5), "refit": (9.2, 29.9)}
    held = {"truths": 33, "seeds": {4: seed4}}
    weighted = _probe(0.1)
    refitting = dataclasses.replace(weighted, refit=lambda raw, observed: dict(raw))
    said = held_out_pays(held, refitting)
    assert said == ("relative regret in the mean / at the 90th percentile 9.2% / 30% against 21% / 68% (seed 4), "
                    "33 truths a seed")
    assert held_out_pays(held, weighted) == ""  # the release would choose by the weights, which "refit" did not
    assert held_out_pays(held, None) == "" and held_out_pays({}, refitting) == ""
    assert held_out_pays({"truths": 33, "seeds": {4: {k: v for k, v in seed4.items() if k != "refit"}}},
                         refitting) == ""
    assert held_out_pays({"truths": 33, "seeds": {4: {**seed4, "refit": (9.2, 70.0)}}}, refitting) == ""  # p90
    assert held_out_pays({"truths": 33, "seeds": {4: {**seed4, "refit": (22.0, 29.9)}}}, refitting) == ""  # mean
    # better pooled is not enough: one seed where it did worse (public-private's seeds 3 and 5) says no
    assert held_out_pays({"truths": 33, "seeds": {4: seed4, 5: {"now": (9.7, 26.8), "refit": (12.3, 41.7)}}},
                         refitting) == ""
    two = held_out_pays({"truths": 33, "seeds": {4: seed4, 6: {"now": (30.0, 90.0), "refit": (20.0, 60.0)}}},
                        refitting)
    assert two.endswith("(seed 4); 20% / 60% against 30% / 90% (seed 6), 33 truths a seed")
    # the verdict names the evidence, the analysis's own finding and what release does
    plan = preposterior(_evaluation(np.ones((16, 2))), _evaluation(np.ones((16, 2)) * LATER),
                        np.zeros((1, 16, 1)), refitting, seed=0)
    assert not plan.attrs["pays"] and plan.attrs["pays_by"] == ""
    plan.attrs.update(pays=1, pays_by="held-out", held_out=said)
    tail = plan_lines(plan)[1]
    assert "the analysis finds no gain, but it trusts the model" in tail
    assert said in tail and "select again given its release" in tail


def test_the_plans_error_is_printed_to_its_first_significant_digit():
    """A Monte Carlo error below half a percent printed as "± 0%" read as no error at all: the difference and its
    error take the places the error needs (at most two), and an error below 0.005% says so."""
    from hybridpriv.engine.plan import plan_lines

    plan = preposterior(_evaluation(np.ones((16, 2))), _evaluation(np.ones((16, 2)) * LATER),
                        np.zeros((1, 16, 1)), _probe(0.01), seed=0, criterion="regret")

    def head(d, se):
        p = plan.copy()
        p["regret_difference"], p["regret_difference_mcse"] = d, se
        p["now_regret"] = 0.2
        return plan_lines(p)[0]

    assert "(difference +3% ± 2%)" in head(0.031, 0.02)
    assert "(difference -1.2% ± 0.3%)" in head(-0.0123, 0.003)  # 0.3% was "± 0%"
    assert "(difference +0.42% ± 0.04%)" in head(0.0042, 0.0004)
    assert "(difference +0.00% ± <0.01%)" in head(0.00001, 0.00001)
    assert "(difference +3% ± 0%)" in head(0.03, 0.0)  # a constant difference: no error, whole percent
    assert "(difference +1% ± 1%)" in head(0.0123, 0.0097)  # 0.97% shows as 1%, not 1.0%


def test_a_plan_by_expected_loss_prints_its_error_to_its_first_significant_digit():
    """By expected loss the same rule in the loss's units: 0.002346 +- 0.000686 read "+0.002346 ± 0.000686"."""
    from hybridpriv.engine.plan import plan_lines

    plan = preposterior(_evaluation(np.ones((16, 2))), _evaluation(np.ones((16, 2)) * LATER),
                        np.zeros((1, 16, 1)), _probe(0.01), seed=0)

    def head(d, se):
        p = plan.copy()
        p["difference"], p["difference_mcse"] = d, se
        return plan_lines(p)[0]

    assert "(difference +0.0023 ± 0.0007)" in head(0.002346, 0.000686)
    assert "(difference -0.018 ± 0.005)" in head(-0.01817, 0.005153)
    assert "(difference +12 ± 3)" in head(12.4, 3.2)
    assert "(difference +0.01817 ± 0)" in head(0.01817, 0.0)


#: A probe's ``by_hand`` text (a plugin's probe that ``release`` cannot carry out).
BY_HAND = ("hybridpriv release cannot carry it out yet: the devices have no such report.  By hand: release the "
           "features, add them to the SPEC with epsilon at the rest, then select again")


def test_release_refuses_a_plan_it_cannot_carry_out_before_anything_is_charged():
    """Probe.by_hand (a plugin's probe that release cannot carry out; no built-in has one): release_plan refuses
    with its text before it reads anything else."""
    from hybridpriv.release.plan import release_plan

    probe = SimpleNamespace(by_hand=BY_HAND)
    plan = SimpleNamespace(attrs={"recommended_now": "hybrid-T1"})
    job = SimpleNamespace(problem=SimpleNamespace(probe=probe))  # nothing else: it must refuse before using more
    with pytest.raises(ValueError, match=r"cannot carry it out yet.*--candidate hybrid-T1"):
        release_plan(plan, None, {}, job)


def test_select_says_how_to_carry_out_a_plan_release_cannot():
    import xarray as xr

    from hybridpriv.engine.plan import plan_lines

    plan = xr.Dataset({"plan_loss": 4.0, "now_loss": 5.0, "difference": -1.0, "difference_mcse": 0.1, "ess": 40.0},
                      attrs={"criterion": "loss", "share": 0.1, "what": "the cells", "recommended_now": "tcm-T1",
                             "pays": 1, "significant": 1, "gain": 0.2, "noise": "Laplace for TCM users, randomized "
                             "response on LM devices", "by_hand": BY_HAND})
    head, tail = plan_lines(plan)[:2]
    assert "(Laplace for TCM users, randomized response on LM devices)" in head
    assert "the plan pays (20% lower), but hybridpriv release cannot carry it out yet" in tail
    assert "hybridpriv release carries it out" not in tail


def test_a_plan_recommended_on_held_out_evidence_says_how_to_carry_it_out_by_hand():
    import xarray as xr

    from hybridpriv.engine.plan import plan_lines

    plan = xr.Dataset({"plan_loss": 5.5, "now_loss": 5.0, "difference": 0.5, "difference_mcse": 0.1, "ess": 40.0},
                      attrs={"criterion": "loss", "share": 0.1, "what": "the cells", "recommended_now": "tcm-T1",
                             "pays": 1, "pays_by": "held-out", "held_out": "(numbers)", "significant": 0,
                             "gain": -0.1, "by_hand": BY_HAND})
    tail = plan_lines(plan)[1]
    assert "The plan is recommended: hybridpriv release cannot carry it out yet" in tail
    assert "hybridpriv release carries it out" not in tail
