"""Jorgensen et al.'s baselines: the Sample mechanism (PDPSample) and the PE median."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from hybridpriv.core.privacy import Group, Guarantee
from hybridpriv.estimators import PDPSample, PEMedian, pe_median_costs
from hybridpriv.theory import pdp_sample_variance

ROOT_SEED = 0x70E6


def make_rng(key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([ROOT_SEED, key]))


# --------------------------------------------------------------------------------------
# PE median costs by brute force
# --------------------------------------------------------------------------------------


def brute_force_costs(eps_sorted: list[float]) -> list[float]:
    """For each interval j (a point o with exactly j records below it), the smallest total
    epsilon of a set of records that, changed to suitable values, makes o the median
    (the ceil(n/2)-th smallest).  Every subset is enumerated; for each subset every split of
    the changed records into 'below o', 'at o', 'above o' is tried and the resulting dataset
    is sorted.  Only the order relative to o matters, so o = 0, below = -1, above = +1."""
    n = len(eps_sorted)
    m = math.ceil(n / 2)
    out = []
    for j in range(n + 1):
        best = math.inf
        for mask in range(1 << n):
            changed = [i for i in range(n) if mask >> i & 1]
            cost = sum(eps_sorted[i] for i in changed)
            if not cost < best:  # also skips subsets with public records (cost inf)
                continue
            kept = [(-1.0 if i < j else 1.0) for i in range(n) if not mask >> i & 1]
            k = len(changed)
            feasible = any(
                sorted(kept + [-1.0] * a + [0.0] * b + [1.0] * (k - a - b))[m - 1] == 0.0
                for a in range(k + 1)
                for b in range(k + 1 - a)
            )
            if feasible:
                best = cost
        out.append(best)
    return out


def test_pe_costs_brute_force_random_small_datasets():
    rng = make_rng(1)
    levels = np.array([0.3, 0.7, 1.5, math.inf])
    checked = 0
    for n in range(3, 10):
        for _ in range(8):
            eps = rng.choice(levels, size=n, p=[0.3, 0.3, 0.2, 0.2])
            got = pe_median_costs(eps[None, :])
            assert got.shape == (1, n + 1)
            np.testing.assert_allclose(got[0], brute_force_costs(list(eps)), rtol=1e-12, err_msg=f"eps={eps.tolist()}")
            checked += 1
    assert checked == 56


def test_pe_costs_batched_rows_and_special_cases():
    rng = make_rng(2)
    rows = np.array([rng.permutation([0.2, 0.2, 1.0, 3.0, math.inf, 0.5]) for _ in range(8)])
    got = pe_median_costs(rows)
    for r, g in zip(rows, got):
        np.testing.assert_allclose(g, brute_force_costs(list(r)), rtol=1e-12)
    # all public: nothing can change, every cost infinite
    assert np.isinf(pe_median_costs(np.full((2, 4), math.inf))).all()
    # uniform epsilon: cost = eps * (distance in ranks to the median interval + 1)
    n, e = 5, 0.5
    expected = [e * (max(3 - j, 0) + max(j - 3 + 1, 0)) for j in range(n + 1)]
    np.testing.assert_allclose(pe_median_costs(np.full((1, n), e))[0], expected)


def pe_interval_probs(values: np.ndarray, eps: np.ndarray, lo: float, hi: float) -> np.ndarray:
    order = np.argsort(values, kind="stable")
    xs = values[order]
    costs = brute_force_costs(list(eps[order]))
    edges = np.concatenate([[lo], xs, [hi]])
    w = np.array([(edges[j + 1] - edges[j]) * (0.0 if math.isinf(c) else math.exp(-c / 2)) for j, c in enumerate(costs)])
    return w / w.sum()


def test_pe_median_output_distribution_chi_square():
    groups = [Group("pub", 2, math.inf), Group("lo", 3, 0.4), Group("hi", 2, 1.5)]
    lo, hi = 0.0, 10.0
    data = [np.array([2.0, 7.5]), np.array([1.0, 4.0, 9.0]), np.array([3.0, 5.5])]
    values = np.concatenate(data)
    eps = np.repeat([math.inf, 0.4, 1.5], [2, 3, 2])
    probs = pe_interval_probs(values, eps, lo, hi)
    est = PEMedian(groups, (lo, hi))
    trials = 40000
    out = est.estimate([np.broadcast_to(x, (trials, x.size)) for x in data], make_rng(3))
    assert out.shape == (trials,)
    assert ((out >= lo) & (out <= hi)).all()
    j = np.searchsorted(np.sort(values), out)
    counts = np.bincount(j, minlength=probs.size)
    assert counts[probs == 0].sum() == 0
    keep = probs > 0
    p = stats.chisquare(counts[keep], probs[keep] * trials).pvalue
    assert p > 1e-3, (counts, np.round(probs * trials, 1))
    # power: exp(-cost) instead of exp(-cost/2) is rejected
    order = np.argsort(values)
    costs = np.array(brute_force_costs(list(eps[order])))
    edges = np.concatenate([[lo], values[order], [hi]])
    wrong = np.diff(edges) * np.exp(-costs)
    wrong /= wrong.sum()
    assert stats.chisquare(counts[keep], wrong[keep] * trials).pvalue < 1e-6


def test_pe_median_public_only_and_guarantee():
    groups = [Group("p1", 3, math.inf), Group("p2", 2, math.inf)]
    est = PEMedian(groups, (0, 10))
    assert est.estimate([np.array([1.0, 9.0, 4.0]), np.array([2.0, 8.0])], make_rng(4)) == 4.0
    mixed = PEMedian([Group("a", 2, 0.5), Group("p", 1, math.inf)], (0, 1))
    assert mixed.privacy == {"a": Guarantee(0.5, 0.0, "replace"), "p": Guarantee(math.inf, 0.0, "replace")}


def test_pe_median_fresh_data_and_determinism():
    groups = [Group("pub", 5, math.inf), Group("a", 6, 0.5)]
    data = [make_rng(5).uniform(-1, 1, (200, g.size)) for g in groups]
    est = PEMedian(groups, (-1, 1))
    a = est.estimate(data, make_rng(6))
    np.testing.assert_array_equal(a, est.estimate(data, make_rng(6)))
    assert not np.array_equal(a, est.estimate(data, make_rng(7)))
    assert ((a >= -1) & (a <= 1)).all()


# --------------------------------------------------------------------------------------
# PDPSample
# --------------------------------------------------------------------------------------

PAPER_EPS = [10.0, 0.05, 0.1, 0.01, 0.25, 0.15]
PAPER_GROUPS = [Group(f"g{k}", n, e) for k, (n, e) in enumerate(zip([1000, 100, 500, 1000, 5000, 10000], PAPER_EPS))]


def test_pdp_threshold_rules_match_paper_figure_1():
    # Figure 1 caption of Ferrando et al.: t_min = 0.01, t_average = 1.76, t_max = 10.0
    assert PDPSample(PAPER_GROUPS, (-20, 20), "min").threshold == 0.01
    assert PDPSample(PAPER_GROUPS, (-20, 20), "avg").threshold == pytest.approx(1.76, abs=0.005)
    assert PDPSample(PAPER_GROUPS, (-20, 20), "max").threshold == 10.0
    assert PDPSample(PAPER_GROUPS, (-20, 20), 0.7).threshold == 0.7
    assert PDPSample(PAPER_GROUPS, (-20, 20), "min").label == "pdp-min"
    # public groups do not enter the rules
    groups = [Group("pub", 5, math.inf), Group("a", 5, 0.5), Group("b", 5, 1.5)]
    assert PDPSample(groups, (0, 1), "avg").threshold == 1.0
    assert PDPSample(groups, (0, 1), "max").threshold == 1.5


def test_pdp_keep_probabilities_and_guarantee_identity():
    groups = [Group("pub", 5, math.inf), Group("a", 5, 0.05), Group("b", 5, 0.8), Group("c", 5, 3.0)]
    for t in [0.05, 0.5, 1.0, 2.9, 3.0, 7.0]:
        est = PDPSample(groups, (-1, 1), t, denominator="expected")
        p_direct = [1.0] + [min(1.0, math.expm1(e) / math.expm1(t)) for e in (0.05, 0.8, 3.0)]
        np.testing.assert_allclose(est.keep_probabilities, p_direct, rtol=1e-10)
        # promised epsilon: ln(1 + p (e^t - 1)) (Jorgensen's sampling theorem), which must
        # equal min(eps_i, t) -- both computed here, independently of the estimator
        for g, p in zip(groups, p_direct):
            promised = est.privacy[g.name]
            assert promised.epsilon == pytest.approx(math.log1p(p * math.expm1(t)), rel=1e-10)
            assert promised.epsilon == pytest.approx(min(g.epsilon, t), rel=1e-10)
            assert promised.relation == "add-remove"
        # the seed's form (true kept count) only promises t (b - a) / Delta under replace-one
        seed_form = PDPSample(groups, (-1, 1), t)
        for g in groups:
            assert seed_form.privacy[g.name].epsilon == pytest.approx(2 * t)
            assert seed_form.privacy[g.name].relation == "replace"


def test_pdp_guarantee_is_finite_for_huge_thresholds():
    groups = [Group("a", 5, 1e6), Group("b", 5, 0.5)]
    for t in (1000.0, "avg", "max"):
        g = PDPSample(groups, (0, 1), t, denominator="expected").privacy
        assert g["a"].epsilon == pytest.approx(min(1e6, PDPSample(groups, (0, 1), t).threshold))
        assert g["b"].epsilon == 0.5


def test_pdp_expected_denominator_variance_monte_carlo():
    # release c + (sum_kept (x - c) + Lap(D/t))/E[M], c = midpoint, D = (b - a)/2 under add/remove:
    # V = (s2 E[M] + (mu - c)^2 sum n p (1-p) + 2 D^2/t^2) / E[M]^2, checked by MC with records whose
    # mean is off the midpoint so the count-variance term matters
    groups = [Group("pub", 10, math.inf), Group("a", 30, 0.2), Group("b", 20, 1.0)]
    lo, hi, t = 0.0, 4.0, 0.6
    est = PDPSample(groups, (lo, hi), t, denominator="expected")
    rng = np.random.default_rng(np.random.SeedSequence(77))
    trials = 40_000
    data = [rng.uniform(0.0, 3.0, size=(trials, g.size)) for g in groups]  # mu = 1.5, sigma2 = 9/12
    out = est.estimate(data, rng)
    p = np.array([1.0] + [min(1.0, math.expm1(e) / math.expm1(t)) for e in (0.2, 1.0)])
    n = np.array([10, 30, 20])
    em = float((n * p).sum())
    offset2, half_width = (1.5 - 2.0) ** 2, 2.0
    exact = (9 / 12 * em + offset2 * float((n * p * (1 - p)).sum()) + 2 * half_width**2 / t**2) / em**2
    assert abs(out.mean() - 1.5) < 4 * math.sqrt(exact / trials)
    centred = out - out.mean()
    se = math.sqrt((np.mean(centred**4) - out.var() ** 2) / trials)
    assert abs(out.var() - exact) < 4 * se, (out.var(), exact, se)
    assert pdp_sample_variance([10, 30, 20], [math.inf, 0.2, 1.0], t, 9 / 12, half_width, "expected", offset2) == (
        pytest.approx(exact))


def _mixture_log_ratio_sup(p: float, scale: float, u: np.ndarray, v: np.ndarray) -> float:
    """Brute force: sup over outputs y and atoms (u, v) of ln f_u(y) / f_v(y), f_u = (1-p) L(y) + p L(y - u)."""
    y = np.linspace(-60 * scale, 60 * scale, 24_001)[:, None, None]
    uu, vv = u[None, :, None], v[None, None, :]

    def log_f(a):
        return np.logaddexp(np.log1p(-p) - np.abs(y) / scale, np.log(p) - np.abs(y - a) / scale)

    return float((log_f(uu) - log_f(vv)).max())


@pytest.mark.parametrize("bounds", [(10.0, 20.0), (-20.0, -10.0), (-1.0, 1.0), (-1.0, 5.0), (0.0, 3.0)])
@pytest.mark.parametrize("relation", ["replace", "add-remove"])
def test_pdp_expected_guarantee_equals_the_exact_loss_for_any_bounds(bounds, relation):
    # The exact pure-DP loss of one record of a group kept with probability p, the rest of the sample
    # fixed (the worst case), by brute force over outputs and over the record's possible values:
    # offsets x - c in [-(b-a)/2, (b-a)/2], and 0 for a record not kept (add/remove: absent).
    # Before 2026-11-23 the raw records were summed, and at bounds [10, 20], t = 2 the loss of the group
    # promised 0.5 was 1.363 (the number, reproduced below with raw atoms).
    t = 2.0
    groups = [Group("pub", 3, math.inf), Group("strict", 4, 0.5), Group("loose", 4, 1.5), Group("top", 2, 3.0)]
    est = PDPSample(groups, bounds, t, denominator="expected", relation=relation)
    a, b = bounds
    half = (b - a) / 2
    offsets = np.linspace(-half, half, 9)
    scale = est.sensitivity / t
    for g, p in zip(groups, est.keep_probabilities):
        promised = est.privacy[g.name]
        assert promised.relation == relation
        assert promised.epsilon <= min(g.epsilon, t) * (1 + 1e-12)
        if p >= 1.0:
            continue  # public (or fully kept) records: no sampling to amplify
        if relation == "replace":
            exact = _mixture_log_ratio_sup(p, scale, offsets, offsets)
        else:  # add/remove: with the record (kept with p) vs without it
            y = np.linspace(-60 * scale, 60 * scale, 24_001)[:, None]
            with_r = np.logaddexp(np.log1p(-p) - np.abs(y) / scale, np.log(p) - np.abs(y - offsets) / scale)
            without = -np.abs(y) / scale
            exact = float(np.abs(with_r - without).max())
        assert promised.epsilon == pytest.approx(exact, rel=1e-3, abs=1e-6), (g.name, promised.epsilon, exact)
    if bounds == (10.0, 20.0) and relation == "replace":
        # the old mechanism: raw records (atoms 10..20 and 0 for "not kept"), noise (b - a)/t
        p = est.keep_probabilities[1]
        old = _mixture_log_ratio_sup(p, (b - a) / t, np.linspace(a, b, 9), np.linspace(a, b, 9))
        assert old == pytest.approx(1.363, abs=1e-3)


def test_pdp_expected_replace_passes_a_black_box_audit_with_bounds_that_exclude_zero():
    from hybridpriv.testing import assert_passes, audit_estimator

    groups = [Group("pub", 3, math.inf), Group("strict", 2, 0.5), Group("loose", 2, 1.5)]
    est = PDPSample(groups, (10.0, 20.0), 2.0, denominator="expected", relation="replace")
    data = [np.full(g.size, 15.0) for g in groups]  # others at the midpoint: they add no randomness
    assert_passes(audit_estimator(est, data, samples=50_000, confidence=0.99, seed=3))


def test_pdp_opt_threshold_needs_sigma2_and_is_in_range():
    groups = [Group("pub", 20, math.inf), Group("a", 50, 0.1), Group("b", 30, 1.0), Group("c", 10, 4.0)]
    est = PDPSample(groups, (-1, 1), "opt", sigma2=0.3)
    assert 0.1 <= est.threshold <= 4.0
    assert est.label == "pdp-opt"


def test_pdp_nothing_kept_returns_midpoint():
    # p = (e^0.01 - 1)/(e^10 - 1) ~ 4.6e-7: in 2000 trials nothing is kept (P ~ 2e-3 otherwise)
    est = PDPSample([Group("a", 2, 0.01)], (2.0, 6.0), 10.0)
    out = est.estimate([np.full((2000, 2), 2.5)], make_rng(8))
    assert (out == 4.0).all()


def test_pdp_public_only_mean_and_kept_count():
    """All records kept (t <= every epsilon): release is (sum + Lap(r/t)) / N; with constant data
    the variance is 2 (r/t)^2 / N^2 exactly."""
    groups = [Group("pub", 3, math.inf), Group("a", 7, 2.0)]
    est = PDPSample(groups, (-1.0, 3.0), 0.5)
    trials = 100000
    out = est.estimate([np.ones((trials, 3)), np.ones((trials, 7))], make_rng(9))
    exact = 2 * (3.0 / 0.5) ** 2 / 100
    c = out - out.mean()
    se = math.sqrt((np.mean(c**4) - np.var(c) ** 2) / trials)
    assert abs(np.var(out, ddof=1) - exact) < 4 * se
    assert abs(out.mean() - 1.0) < 4 * math.sqrt(exact / trials)


def test_pdp_determinism():
    groups = [Group("pub", 3, math.inf), Group("a", 7, 0.3)]
    est = PDPSample(groups, (0, 1), 1.0)
    data = [make_rng(10).random((100, 3)), make_rng(11).random((100, 7))]
    a = est.estimate(data, make_rng(12))
    np.testing.assert_array_equal(a, est.estimate(data, make_rng(12)))
    assert not np.array_equal(a, est.estimate(data, make_rng(13)))


def test_pdp_bad_input():
    groups = [Group("pub", 3, math.inf), Group("a", 7, 0.3)]
    with pytest.raises(ValueError, match=r"threshold='opt' needs sigma2.*got None"):
        PDPSample(groups, (0, 1), "opt")
    with pytest.raises(ValueError, match=r"threshold must be one of .* or a number > 0, got 'median'"):
        PDPSample(groups, (0, 1), "median")
    with pytest.raises(ValueError, match=r"threshold must be > 0, got -1"):
        PDPSample(groups, (0, 1), -1)
    with pytest.raises(ValueError, match=r"threshold must be > 0, got 0"):
        PDPSample(groups, (0, 1), 0)
    with pytest.raises(ValueError, match=r"threshold must be > 0, got nan"):
        PDPSample(groups, (0, 1), float("nan"))
    with pytest.raises(ValueError, match=r"threshold must be finite, got inf"):
        PDPSample(groups, (0, 1), math.inf)
    with pytest.raises(TypeError, match=r"threshold must be one of .*got None"):
        PDPSample(groups, (0, 1), None)
    with pytest.raises(TypeError, match=r"threshold must be one of .*got True"):
        PDPSample(groups, (0, 1), True)
    with pytest.raises(ValueError, match=r"sigma2 must be > 0, got 0"):
        PDPSample(groups, (0, 1), "opt", sigma2=0)
    with pytest.raises(ValueError, match=r"relation must be one of .*got 'x'"):
        PDPSample(groups, (0, 1), 1.0, relation="x")
    with pytest.raises(ValueError, match=r"lower < upper, got \[1, 0\]"):
        PDPSample(groups, (1, 0), 1.0)
    est = PDPSample(groups, (0, 1), 1.0)
    rng = make_rng(14)
    with pytest.raises(ValueError, match=r"data for group 'a' must have 7 records \(its declared size\), got 6"):
        est.estimate([np.zeros(3), np.zeros(6)], rng)
    with pytest.raises(ValueError, match=r"data for group 'pub' contains NaN"):
        est.estimate([np.array([0.0, np.nan, 0.0]), np.zeros(7)], rng)
    with pytest.raises(ValueError, match=r"outside bounds \[0, 1\] \(first: -0.5\)"):
        est.estimate([np.full(3, -0.5), np.zeros(7)], rng)
    with pytest.raises(ValueError, match=r"expected 2, got 3"):
        est.estimate([np.zeros(3), np.zeros(7), np.zeros(1)], rng)
    with pytest.raises(TypeError, match=r"rng must be a numpy.random.Generator"):
        est.estimate([np.zeros(3), np.zeros(7)], "seed")
    # clamp=True clips instead
    clamped = PDPSample(groups, (0, 1), 1.0, clamp=True)
    a = clamped.estimate([np.full(3, -0.5), np.full(7, 2.0)], make_rng(15))
    b = est.estimate([np.zeros(3), np.ones(7)], make_rng(15))
    assert a == b


def test_pe_median_bad_input():
    groups = [Group("pub", 2, math.inf), Group("a", 3, 0.5)]
    with pytest.raises(ValueError, match=r"lower < upper, got \[2, 2\]"):
        PEMedian(groups, (2, 2))
    with pytest.raises(ValueError, match=r"group names must be unique"):
        PEMedian([Group("a", 1, 1.0), Group("a", 2, 1.0)], (0, 1))
    est = PEMedian(groups, (0, 1))
    rng = make_rng(16)
    with pytest.raises(ValueError, match=r"data for group 'a' has 1 value\(s\) outside bounds \[0, 1\] \(first: 1.5\)"):
        est.estimate([np.zeros(2), np.array([0.1, 1.5, 0.2])], rng)
    with pytest.raises(ValueError, match=r"data for group 'a' contains NaN"):
        est.estimate([np.zeros(2), np.array([0.1, np.nan, 0.2])], rng)
    with pytest.raises(ValueError, match=r"expected 2, got 1"):
        est.estimate([np.zeros(2)], rng)
    with pytest.raises(TypeError, match=r"rng must be a numpy.random.Generator"):
        est.estimate([np.zeros(2), np.zeros(3)], None)


def test_pe_median_with_ties_that_empty_every_feasible_interval():
    # 20 public records all equal to 3.0 beside one private record: every output other than 3.0
    # needs public records to move (impossible), so the mechanism is a point mass at 3.0
    groups = [Group("pub", 20, math.inf), Group("priv", 1, 1.0)]
    est = PEMedian(groups, (0.0, 10.0))
    rng = np.random.default_rng(5)
    out = est.estimate([np.full((50, 20), 3.0), rng.uniform(0, 10, size=(50, 1))], rng)
    np.testing.assert_array_equal(out, 3.0)
