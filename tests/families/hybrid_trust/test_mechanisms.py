"""The hybrid-model estimators (TCMOnly, FullLM, LMOnly, Hybrid): API, guarantees, weights, risk.

Risks are checked by Monte Carlo within z = 4 standard errors of the mean squared error
(CLT interval); weights against hand-coded Definitions 4.1, 5.3 and 6.1.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from hybridpriv.core.privacy import Group, Guarantee
from hybridpriv.families.hybrid_trust.mechanisms import FullLM, Hybrid, LMOnly, TCMOnly
from hybridpriv.testing import audit_estimator
from hybridpriv.theory.avent import kvh_mse, pwh_mse

G = [Group("opt-in", 30, 1.0), Group("local", 270, 0.5)]


def rng_for(key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([0xE57, key]))


class StandInPosterior:
    """Tiny stand-in for hybridpriv/families/hybrid_trust/model.py's posterior: records the call and returns a fixed weight."""

    def __init__(self, value):
        self.value = value
        self.calls = []

    def bayes_weight(self, n, c, s_T2, s_L2):
        self.calls.append((n, c, s_T2, s_L2))
        return self.value


class FittedVariance:
    variance_posterior_mean = 0.04


def test_guarantees_carry_the_trust_model():
    t, l_ = "opt-in", "local"
    unread = Guarantee(0.0, 0.0, "add-remove", "local")  # a group whose data are never read: nothing leaks
    assert TCMOnly(G, (0, 1)).privacy == {t: Guarantee(1.0, 0.0, "add-remove", "central"), l_: unread}
    assert LMOnly(G, (0, 1)).privacy == {t: unread, l_: Guarantee(0.5, 0.0, "replace", "local")}
    assert FullLM(G, (0, 1)).privacy == {t: Guarantee(1.0, 0.0, "replace", "local"),
                                         l_: Guarantee(0.5, 0.0, "replace", "local")}
    h = Hybrid(G, (0, 1), "pwh", noise="gaussian", delta=1e-6, relation="replace")
    assert h.privacy == {t: Guarantee(1.0, 1e-6, "replace", "central"), l_: Guarantee(0.5, 1e-6, "replace", "local")}
    assert [g.trust for g in h.privacy.values()] == ["central", "local"]
    assert not hasattr(h, "trust_model")  # the trust is in each Guarantee, nowhere else
    assert Hybrid(G, (0, 1), 0.0).privacy[t] == unread
    assert Hybrid(G, (0, 1), 1.0).privacy[l_] == unread
    # each group's own delta is used when delta is not given
    gd = [Group("a", 30, 1.0, 1e-7), Group("b", 270, 0.5, 1e-5)]
    h = Hybrid(gd, (0, 1), 0.5, noise="gaussian")
    assert (h.privacy["a"].delta, h.privacy["b"].delta) == (1e-7, 1e-5)


def test_group_trust_requirements_are_met_only_by_the_right_promises():
    # LM users who require local DP (Group.trust="local", under replace-one): the local promises meet
    # it, so does the never-read group of TCMOnly; a TCM group requiring local DP is not served
    # by the curator's central promise
    groups = [Group("tcm", 30, 1.0), Group("lm", 270, 0.5, trust="local")]
    need = {g.name: g.requirement("replace") for g in groups}
    for est in (TCMOnly(groups, (0, 1)), LMOnly(groups, (0, 1)), FullLM(groups, (0, 1)), Hybrid(groups, (0, 1), 0.5)):
        assert est.privacy["lm"].satisfies(need["lm"]), est.label
    strict = [Group("tcm", 30, 1.0, trust="local"), Group("lm", 270, 0.5)]
    assert not Hybrid(strict, (0, 1), 0.5).privacy["tcm"].satisfies(strict[0].requirement("add-remove"))
    assert FullLM(strict, (0, 1)).privacy["tcm"].satisfies(strict[0].requirement("replace"))


def test_noise_calibration_and_sensitivities():
    h = Hybrid(G, (0, 2), 0.5)  # [0, m] with m = 2
    assert h.n == 300 and h.c == pytest.approx(0.1)
    assert h.s_T2 == pytest.approx(2 * (2 / (30 * 1.0)) ** 2)  # Lap(m/(c n eps_T))
    assert h.s_L2 == pytest.approx(2 * (2 / 0.5) ** 2)  # Lap(m/eps_L)
    f = FullLM(G, (0, 2))
    assert f.s_LT2 == pytest.approx(2 * (2 / 1.0) ** 2)  # TCM users' local noise at their own epsilon
    # general bounds: TCM mean sensitivity from the relation, local sensitivity the width
    h = Hybrid(G, (-1, 3), 0.5)
    assert h.tcm_sensitivity == pytest.approx(3 / 30) and h.local_sensitivity == 4
    assert Hybrid(G, (-1, 3), 0.5, relation="replace").tcm_sensitivity == pytest.approx(4 / 30)


def test_weights():
    est = Hybrid(G, (0, 1), "kvh", sigma2=0.04)
    n, c, sT, sL = est.n, est.c, est.s_T2, est.s_L2
    assert est.w == pytest.approx(c * (0.04 + sL) / (0.04 + c * (n * sT * (1 - c) + sL)))
    assert Hybrid(G, (0, 1), "kvh", sigma2=FittedVariance()).w == pytest.approx(est.w)
    assert Hybrid(G, (0, 1), "pwh").w == pytest.approx(sL / (sL + (1 - c) * n * sT))
    assert Hybrid(G, (0, 1), "naive").w == pytest.approx(c)
    assert Hybrid(G, (0, 1), 0.25).w == 0.25
    het = Hybrid(G, (0, 1), "kvh-heterogeneous", sigma_T2=0.01, sigma_L2=0.05, mu_T=0.3, mu_L=0.6)
    mu = c * 0.3 + (1 - c) * 0.6
    expected = c * (sL + c * 0.05 + (1 - c) * (n * (0.6 - mu) * (0.6 - 0.3) + 0.01)) / (
        c * sL + (1 - c) * c * n * ((0.6 - 0.3) ** 2 + sT) + c * 0.05 + (1 - c) * 0.01
    )
    assert het.w == pytest.approx(expected)
    post = StandInPosterior(0.42)
    b = Hybrid(G, (0, 1), "bayes", posterior=post)
    assert b.w == 0.42 and post.calls == [(n, c, sT, sL)]
    assert b.label == "hybrid-bayes" and Hybrid(G, (0, 1), 0.25).label == "hybrid-w=0.25"


def test_shapes_determinism_and_public_groups():
    rng = rng_for(1)
    x = [rng.random((5, 30)), rng.random((5, 270))]
    est = Hybrid(G, (0, 1), "pwh")
    a = est.estimate(x, np.random.default_rng(3))
    assert a.shape == (5,) and np.array_equal(a, est.estimate(x, np.random.default_rng(3)))
    assert isinstance(est.estimate([x[0][0], x[1][0]], np.random.default_rng(3)), float)
    # a public TCM group gets no noise: TCMOnly is its exact mean
    pub = [Group("public", 30, math.inf), Group("local", 270, 1.0)]
    assert np.allclose(TCMOnly(pub, (0, 1)).estimate(x, rng), x[0].mean(axis=1))
    assert Hybrid(pub, (0, 1), "pwh").w == 1.0  # no TCM noise: all weight on the TCM mean


def test_lemma_4_2_and_5_4_by_monte_carlo_homogeneous():
    """KVH (Gaussian, analytic) and PWH (Laplace) on Beta(2, 2) records: MSE vs the empirical mean."""
    trials = 12_000
    for key, (make, noise_kw) in enumerate(
        [
            (lambda g: Hybrid(g, (0, 1), "kvh", sigma2=0.05, noise="gaussian", delta=1e-5), kvh_mse),
            (lambda g: Hybrid(g, (0, 1), "pwh"), pwh_mse),
        ]
    ):
        g = [Group("t", 20, 0.8), Group("l", 140, 0.8)]
        est = make(g)
        rng = rng_for(10 + key)
        x = [rng.beta(2, 2, (trials, 20)), rng.beta(2, 2, (trials, 140))]  # variance 1/20
        sq = (est.estimate(x, rng) - np.concatenate(x, axis=1).mean(axis=1)) ** 2
        exact = noise_kw(est.n, est.c, 0.05, est.s_T2, est.s_L2)
        se = sq.std(ddof=1) / math.sqrt(trials)
        assert abs(sq.mean() - exact) < 4 * se, (sq.mean(), exact, se)


class _PerUserGenerator(np.random.Generator):
    """A generator subclass: the estimators then draw every user's local noise itself (as with a release's
    OpenDP adapter), the brute-force law the simulation's one draw per trial must match."""


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize("make", [lambda g, **kw: LMOnly(g, (0, 1), **kw), lambda g, **kw: FullLM(g, (0, 1), **kw),
                                  lambda g, **kw: Hybrid(g, (0, 1), "pwh", **kw)], ids=["lm-only", "full-lm", "pwh"])
def test_simulated_local_noise_sums_have_the_per_user_law(make, noise):
    """In simulation the LM users' local noise enters as one draw of its sum per trial; the estimates must
    have the law they have when every user's noise is drawn (two-sample KS at 100,000 trials each; the
    variances within 4 SE of each other, and a 5% difference is about 8 SE here)."""
    kw = {} if noise == "laplace" else {"noise": "gaussian", "delta": 1e-6}
    est = make([Group("t", 12, 0.9), Group("l", 60, 0.6)], **kw)
    trials = 100_000
    x = [np.broadcast_to(np.linspace(0.1, 0.9, 12), (trials, 12)), np.broadcast_to(np.linspace(0.0, 1.0, 60), (trials, 60))]
    fast = est.estimate(x, np.random.default_rng(np.random.SeedSequence([0xE57, 90])))
    brute = est.estimate(x, _PerUserGenerator(np.random.PCG64(np.random.SeedSequence([0xE57, 91]))))
    assert stats.ks_2samp(fast, brute).pvalue > 1e-3
    v_fast, v_brute = fast.var(ddof=1), brute.var(ddof=1)
    se = math.sqrt(2.0 / trials) * math.sqrt(v_fast**2 + v_brute**2)
    assert abs(v_fast - v_brute) < 4.0 * se, (v_fast, v_brute, se)
    # the fixed dataset's rows (broadcast, stride 0) are summed once: the same numbers as a copy of them
    copied = [np.array(a) for a in x]
    assert np.allclose(est.estimate(copied, np.random.default_rng(5)), est.estimate(x, np.random.default_rng(5)),
                       rtol=1e-14, atol=0)


@pytest.mark.parametrize("make", [lambda g: LMOnly(g, (0, 1)), lambda g: FullLM(g, (0, 1)),
                                  lambda g: Hybrid(g, (0, 1), "pwh")], ids=["lm-only", "full-lm", "pwh"])
def test_each_trial_sums_its_own_rows(make):
    """Rows that differ (trial i's records all equal to i / 50, almost no noise at epsilon 1e6): every trial's estimate
    is its own rows' mean, so no shortcut may sum one row for all (the stride-0 one is only for identical rows)."""
    est = make([Group("t", 7, 1e6), Group("l", 11, 1e6)])
    level = np.arange(50) / 50.0
    x = [np.repeat(level[:, None], 7, axis=1), np.repeat(level[:, None], 11, axis=1)]
    out = est.estimate(x, np.random.default_rng(6))
    np.testing.assert_allclose(out, level, atol=1e-4)


def test_a_quick_audit_passes():
    g = [Group("t", 10, 1.0), Group("l", 10, 2.0)]
    est = Hybrid(g, (-1, 1), "kvh", sigma2=1 / 3)
    reports = audit_estimator(est, [np.zeros(10), np.zeros(10)], samples=20_000, seed=5)
    assert set(reports) == {"t", "l"} and all(r.passed for r in reports.values())


class NotAPosterior:
    pass


@pytest.mark.parametrize(
    "make,err,match",
    [
        (lambda: Hybrid(G + [Group("x", 3, 1.0)], (0, 1), 0.5), ValueError, "exactly two groups"),
        (lambda: Hybrid(G, (0, 1), 0.5, noise="cauchy"), ValueError, "noise must be one of"),
        (lambda: Hybrid(G, (0, 1), 0.5, delta=1e-5), ValueError, "delta is only used"),
        (lambda: Hybrid(G, (0, 1), 0.5, noise="gaussian"), ValueError, "delta .* must be in \\(0, 1\\)"),
        (lambda: Hybrid(G, (0, 1), 0.5, noise="gaussian", delta=1e-5, calibration="classic"), ValueError, "epsilon < 1"),
        (lambda: Hybrid(G, (0, 1), 0.5, calibration="exact"), ValueError, "calibration must be"),
        (lambda: Hybrid(G, (0, 1), 0.5, relation="swap"), ValueError, "relation must be one of"),
        (lambda: Hybrid(G, (0, 1), "best"), ValueError, "weight must be one of"),
        (lambda: Hybrid(G, (0, 1), 1.5), ValueError, r"weight must be in \[0, 1\], got 1.5"),
        (lambda: Hybrid(G, (0, 1), True), TypeError, "weight must be"),
        (lambda: Hybrid(G, (0, 1), "kvh"), ValueError, "needs sigma2"),
        (lambda: Hybrid(G, (0, 1), "kvh", sigma2=-1.0), ValueError, "sigma2 must be finite and >= 0"),
        (lambda: Hybrid(G, (0, 1), "pwh", sigma2=0.1), ValueError, r"\['sigma2'\] are not used by weight='pwh'"),
        (lambda: Hybrid(G, (0, 1), "kvh-heterogeneous", sigma_T2=0.1), ValueError, "needs sigma_T2 and sigma_L2"),
        (lambda: Hybrid(G, (0, 1), "bayes"), ValueError, "needs posterior"),
        (lambda: Hybrid(G, (0, 1), "bayes", posterior=NotAPosterior()), TypeError, "bayes_weight"),
        (lambda: Hybrid(G, (0, 1), "bayes", posterior=StandInPosterior(2.0)), ValueError, "must be a number in"),
        (lambda: Hybrid(G, (0, 1), "bayes", posterior=StandInPosterior(float("nan"))), ValueError, "must be a number in"),
        # extreme epsilon / bounds: the noise variance over- or underflows (was a bare OverflowError, or 0)
        (
            lambda: Hybrid([Group("t", 10, 1e-300), Group("l", 90, 1e-300)], (0, 1), weight="pwh"),
            ValueError,
            r"group 't': .* variance inf .* epsilon=1e-300 with bounds \(0, 1\)",
        ),
        (
            lambda: Hybrid([Group("t", 10, 1.0), Group("l", 90, 1e-300)], (0, 1), weight="pwh"),
            ValueError,
            r"group 'l': the laplace noise on the local report .* epsilon=1e-300",
        ),
        (
            lambda: Hybrid([Group("t", 10, 1.0), Group("l", 90, 1e-10)], (0, 1e150), weight="pwh"),
            ValueError,
            r"variance inf .* epsilon=1e-10 with bounds \(0, 1e\+150\)",
        ),
        (  # finite, but a noise scale of 1e13 times the data range: refused as by every grouped estimator
            lambda: Hybrid([Group("t", 10, 1.0), Group("l", 90, 1e-13)], (0, 1), weight="pwh"),
            ValueError,
            r"group 'l': epsilon=1e-13 \(the noise on the local report\) gives a noise scale of 1e\+13",
        ),
        (
            lambda: Hybrid([Group("t", 10, 1e300), Group("l", 90, 1e300)], (0, 1), weight="pwh"),
            ValueError,
            r"variance 0 .* epsilon=1e\+300",
        ),
        (
            lambda: FullLM([Group("t", 10, 1e-300), Group("l", 90, 1.0)], (0, 1), noise="gaussian", delta=1e-5,
                           calibration="classic"),
            ValueError,
            r"group 't': the gaussian noise .* epsilon=1e-300",
        ),
    ],
)
def test_bad_input(make, err, match):
    with pytest.raises(err, match=match):
        make()


def test_public_group_still_gets_zero_noise_next_to_the_finiteness_check():
    est = Hybrid([Group("t", 10, math.inf), Group("l", 90, 1.0)], (0, 1), weight="pwh")
    assert est.s_T2 == 0.0 and est.s_L2 == pytest.approx(2.0) and est.w == 1.0


def test_bad_data():
    est = TCMOnly(G, (0, 1))
    with pytest.raises(ValueError, match="outside bounds"):
        est.estimate([np.full(30, 2.0), np.zeros(270)], rng_for(0))
    with pytest.raises(ValueError, match="270 records"):
        est.estimate([np.zeros(30), np.zeros(10)], rng_for(0))


def test_the_accountant_charges_each_group_its_promise():
    from hybridpriv.accounting import Accountant, BudgetExceededError

    groups = [Group("tcm", 30, 1.0), Group("lm", 270, 0.5, trust="local")]
    acc = Accountant.for_groups(groups)
    acc.spend_guarantee(TCMOnly(groups, (0, 1)).privacy, label="tcm-only")  # the LM group is never read: 0
    assert acc.spent_epsilon() == {"tcm": 1.0, "lm": 0.0}
    acc = Accountant.for_groups(groups)
    acc.spend_guarantee(Hybrid(groups, (0, 1), "pwh").privacy, label="hybrid")
    assert acc.spent_epsilon() == {"tcm": 1.0, "lm": 0.5}
    with pytest.raises(BudgetExceededError, match="group 'lm'"):  # w = 0: only the LM users' budget is charged
        acc.spend_guarantee(Hybrid(groups, (0, 1), 0.0).privacy, label="again")
    assert acc.spent_epsilon() == {"tcm": 1.0, "lm": 0.5}  # refused before anything was recorded


@pytest.mark.parametrize("relation", ["add-remove", "replace"])
def test_the_summed_local_noise_passes_its_audit_with_bounds_away_from_zero_and_a_broken_one_fails(relation):
    """The simulation's one-draw sum of the LM users' noise (a plain NumPy generator) audited for every group under
    both relations the TCM group may promise, on bounds (20, 80) that exclude 0; the LM noise at half its scale
    (twice the promised epsilon) is caught."""
    g = [Group("t", 2, 1.0), Group("l", 2, 2.0)]  # two users a group: one user's report is half the estimate
    base = [np.full(2, 20.0), np.full(2, 20.0)]
    for est in (LMOnly(g, (20.0, 80.0), relation=relation), FullLM(g, (20.0, 80.0), relation=relation)):
        reports = audit_estimator(est, base, samples=20_000, seed=11)
        assert all(r.passed for r in reports.values()), (type(est).__name__, reports)

    class HalfScale(LMOnly):
        def _noisy_sum(self, values, scale, rng):
            return super()._noisy_sum(values, scale / 2, rng)

    rep = audit_estimator(HalfScale(g, (20.0, 80.0), relation=relation), base, samples=20_000, seed=12)["l"]
    assert rep.verdict == "violation" and rep.epsilon_lower_bound > 2.0
