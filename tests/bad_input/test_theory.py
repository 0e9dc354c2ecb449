"""Bad input to the closed forms of Ferrando et al. and Jorgensen et al."""

import pytest
from _support.bad_input import *  # noqa: F403  (settings, checks, strategies)
from _support.bad_input import _CURRENT, _names  # noqa: F401

pytestmark = pytest.mark.slow  # end-to-end runs (minutes on 2 cores)


# ----------------------------------------------------------------------------------------
# Theory
# ----------------------------------------------------------------------------------------

THEORY = {
    "group_mean_variances": theory.group_mean_variances,
    "mixed_mean_weights": theory.mixed_mean_weights,
    "mixed_mean_variance": theory.mixed_mean_variance,
    "pdp_sample_variance": lambda n, e, s2, d: theory.pdp_sample_variance(n, e, 1.0, s2, d),
    "pdp_sample_variance-expected": lambda n, e, s2, d: theory.pdp_sample_variance(n, e, 1.0, s2, d, "expected", 1.0),
    "pdp_optimal_threshold": theory.pdp_optimal_threshold,
}
theory_fn = st.sampled_from(sorted(THEORY))


@cfg(160)
@given(fn=theory_fn, sizes=st.lists(st.integers(1, 50), min_size=1, max_size=4), extra=st.integers(1, 3), data=st.data())
@counted("theory")
def test_theory_rejects_mismatched_lengths(fn, sizes, extra, data):
    k = data.draw(st.sampled_from([len(sizes) + extra, max(len(sizes) - extra, 0)]))
    assume(k != len(sizes))
    epsilons = [1.0] * k
    rejects(lambda: THEORY[fn](sizes, epsilons, 1.0, 1.0), "sizes", "epsilons")


@cfg(240)
@given(fn=theory_fn, sizes=st.lists(st.integers(1, 50), min_size=1, max_size=4), data=st.data())
@counted("theory")
def test_theory_rejects_bad_epsilons(fn, sizes, data):
    eps = [1.0] * len(sizes)
    eps[data.draw(st.integers(0, len(sizes) - 1))] = data.draw(
        st.one_of(st.floats(max_value=0.0), st.sampled_from([NAN, -INF, None, "a", "1", 1j, object()]))
    )
    rejects(lambda: THEORY[fn](sizes, eps, 1.0, 1.0), "epsilons")


bad_size_entry = st.one_of(
    st.integers(max_value=0),
    st.floats(0.01, 1e6).filter(lambda v: v != round(v)),
    st.sampled_from([NAN, INF, -INF, None, "a", "3", True, 2 + 0j, object(), 10**30]),
)


@cfg(240)
@given(fn=theory_fn, sizes=st.lists(st.integers(1, 50), min_size=1, max_size=4), data=st.data())
@counted("theory")
def test_theory_rejects_bad_sizes(fn, sizes, data):
    sizes = list(sizes)
    sizes[data.draw(st.integers(0, len(sizes) - 1))] = data.draw(bad_size_entry)
    rejects(lambda: THEORY[fn](sizes, [1.0] * len(sizes), 1.0, 1.0), "sizes")


@cfg(60)
@given(fn=theory_fn, shape=st.sampled_from(["empty", "scalar", "2d"]))
@counted("theory")
def test_theory_rejects_bad_shapes(fn, shape):
    sizes, eps = {"empty": ([], []), "scalar": (5, 1.0), "2d": ([[5, 5]], [[1.0, 1.0]])}[shape]
    rejects(lambda: THEORY[fn](sizes, eps, 1.0, 1.0), "sizes")


@cfg(240)
@given(fn=theory_fn, which=st.sampled_from(["sigma2", "sensitivity"]), value=bad_positive)
@counted("theory")
def test_theory_rejects_bad_sigma2_and_sensitivity(fn, which, value):
    args = {"sigma2": 1.0, "sensitivity": 1.0, which: value}
    rejects(lambda: THEORY[fn]([10, 20], [1.0, 2.0], args["sigma2"], args["sensitivity"]), which)


@cfg(160)
@given(
    groups=st.lists(st.tuples(st.integers(1, 200), epsilon_or_public), min_size=1, max_size=4),
    sigma2=st.floats(1e-3, 1e3),
    sensitivity=st.floats(1e-3, 1e3),
)
@counted("theory")
def test_theory_good_inputs_give_finite_answers(groups, sigma2, sensitivity):
    sizes, eps = [n for n, _ in groups], [e for _, e in groups]
    var = accepts(lambda: theory.group_mean_variances(sizes, eps, sigma2, sensitivity))
    finite(var)
    w = accepts(lambda: theory.mixed_mean_weights(sizes, eps, sigma2, sensitivity))
    finite(w)
    assert (w >= 0).all() and math.isclose(w.sum(), 1.0, rel_tol=1e-9)
    v = accepts(lambda: theory.mixed_mean_variance(sizes, eps, sigma2, sensitivity))
    assert 0 < v <= var.min() * (1 + 1e-9)
    p = accepts(lambda: theory.pdp_keep_probabilities(eps, 1.0))
    assert ((p > 0) & (p <= 1)).all()
    pmf = accepts(lambda: theory.pdp_count_pmf(sizes, p))
    assert pmf.size == sum(sizes) + 1 and math.isclose(pmf.sum(), 1.0)
    for den in ("kept", "expected"):
        finite(accepts(lambda: theory.pdp_sample_variance(sizes, eps, 1.0, sigma2, sensitivity, den, 1.0)))
    try:
        t = theory.pdp_optimal_threshold(sizes, eps, sigma2, sensitivity)
    except ValueError as exc:  # legitimately: tiny private groups keep nothing at any threshold
        assert "no threshold keeps at least one record" in str(exc)
    else:
        finite(t)
        assert t > 0


@cfg(190)
@given(
    which=st.sampled_from(["weights", "threshold", "denominator", "mean_square", "grid_size", "max_empty", "probabilities", "count sizes"]),
    data=st.data(),
)
@counted("theory")
def test_theory_rejects_other_arguments(which, data):
    n, e = [10, 20], [1.0, INF]
    if which == "weights":
        w = data.draw(st.sampled_from([[NAN, 1.0], [INF, 0.0], ["a", 1.0], [1.0], [1.0, 2.0, 3.0], [None, 1.0]]))
        rejects(lambda: theory.mixed_mean_variance(n, e, 1.0, 1.0, weights=w), "weights")
    elif which == "threshold":
        t = data.draw(bad_finite_epsilon)
        fn = data.draw(st.sampled_from(["keep", "variance"]))
        if fn == "keep":
            rejects(lambda: theory.pdp_keep_probabilities(e, t), "threshold")
        else:
            rejects(lambda: theory.pdp_sample_variance(n, e, t, 1.0, 1.0), "threshold")
    elif which == "denominator":
        d = data.draw(st.one_of(unknown_word, st.none(), st.integers()))
        fn = data.draw(st.sampled_from([theory.pdp_sample_variance, theory.pdp_optimal_threshold]))
        if fn is theory.pdp_sample_variance:
            rejects(lambda: fn(n, e, 1.0, 1.0, 1.0, d), "denominator")
        else:
            rejects(lambda: fn(n, e, 1.0, 1.0, d), "denominator")
    elif which == "mean_square":
        m2 = data.draw(st.one_of(st.floats(max_value=-1e-300), st.sampled_from([NAN, INF]), not_a_number))
        rejects(lambda: theory.pdp_sample_variance(n, e, 1.0, 1.0, 1.0, "expected", m2), "mean_square")
        rejects(lambda: theory.pdp_optimal_threshold(n, [1.0, 2.0], 1.0, 1.0, "expected", m2), "mean_square")
    elif which == "grid_size":
        g = data.draw(st.one_of(st.integers(max_value=1), st.floats(), st.text(max_size=2), st.none(), st.booleans()))
        rejects(lambda: theory.pdp_optimal_threshold(n, e, 1.0, 1.0, grid_size=g), "grid_size")
    elif which == "max_empty":
        m = data.draw(bad_probability)
        rejects(lambda: theory.pdp_optimal_threshold(n, e, 1.0, 1.0, max_empty=m), "max_empty")
    elif which == "probabilities":
        p = data.draw(st.sampled_from([[NAN, 0.5], [1.5, 0.5], [-0.1, 0.5], ["a", 0.5], [0.5]]))
        rejects(lambda: theory.pdp_count_pmf(n, p), "probabilities")
    else:
        s = data.draw(st.sampled_from([[-1, 3], [2.5, 3], [NAN, 3], ["a", 3], [True, 3], [[1, 2]]]))
        rejects(lambda: theory.pdp_count_pmf(s, [0.5] * len(s)), "sizes")


@cfg(60)
@given(t=st.floats(760.0, 1.7e308), n=st.integers(1, 1000), eps=st.floats(1e-3, 10.0), n_pub=st.integers(1, 50))
@counted("theory")
def test_pdp_threshold_that_keeps_nothing_is_an_error(t, n, eps, n_pub):
    rejects(lambda: theory.pdp_sample_variance([n], [eps], t, 1.0, 1.0, "expected"), "threshold")
    rejects(lambda: PDPSample([Group("a", n, eps)], (0, 1), t, denominator="expected"), "threshold")
    # with a public group something is always kept, and a huge t does not overflow t^2
    for den in ("kept", "expected"):
        finite(accepts(lambda: theory.pdp_sample_variance([n, n_pub], [eps, INF], t, 1.0, 1.0, den)))


# ----------------------------------------------------------------------------------------
# Extreme but valid inputs: a finite, right answer or a ValueError naming the inputs (issue 15, item 6)
# ----------------------------------------------------------------------------------------

def finite_or_rejects(fn, *names):
    """``fn()`` returns finite numbers, or raises ValueError from hybridpriv naming one of ``names``.

    Never ``inf``/``NaN``, never ``OverflowError``/``ZeroDivisionError`` (they propagate and fail).
    """
    try:
        with time_limit():
            out = fn()
    except ValueError:
        rejects(fn, *names, exc=ValueError)  # the same call again: message and origin checked
        return None
    finite(out)
    return out


extreme_epsilon = st.one_of(
    st.floats(1e-300, 1e300), st.sampled_from([1e-300, 1e-200, 1e-20, 1.0, 30.0, 710.0, 1e5, 1e300, INF])
)
extreme_positive = st.one_of(st.floats(1e-300, 1e150), st.sampled_from([1e-300, 1e-150, 1.0, 1e150]))
extreme_size = st.one_of(st.integers(1, 10**12), st.sampled_from([1, 10**12]))
small_size = st.integers(1, 40)
EXTREME_NAMES = ("epsilons", "sizes", "sigma2", "sensitivity", "threshold", "mean_square")


@cfg(100)
@given(
    groups=st.lists(st.tuples(extreme_size, extreme_epsilon), min_size=1, max_size=3),
    sigma2=extreme_positive,
    sensitivity=extreme_positive,
    threshold=extreme_epsilon.filter(math.isfinite),
    mean_square=st.one_of(st.just(0.0), extreme_positive),
)
@counted("theory")
def test_ferrando_extreme_inputs_finite_or_named_error(groups, sigma2, sensitivity, threshold, mean_square):
    sizes, eps = [n for n, _ in groups], [e for _, e in groups]
    var = finite_or_rejects(lambda: theory.group_mean_variances(sizes, eps, sigma2, sensitivity), *EXTREME_NAMES)
    if var is not None:
        assert (var > 0).all()
    w = finite_or_rejects(lambda: theory.mixed_mean_weights(sizes, eps, sigma2, sensitivity), *EXTREME_NAMES)
    assert w is not None and (w >= 0).all() and math.isclose(w.sum(), 1.0, rel_tol=1e-9)  # weights always exist
    v = finite_or_rejects(lambda: theory.mixed_mean_variance(sizes, eps, sigma2, sensitivity), *EXTREME_NAMES)
    if v is not None:
        assert v > 0
    p = finite_or_rejects(lambda: theory.pdp_keep_probabilities(eps, threshold), "threshold")
    assert p is not None and ((p >= 0) & (p <= 1)).all()
    v = finite_or_rejects(
        lambda: theory.pdp_sample_variance(sizes, eps, threshold, sigma2, sensitivity, "expected", mean_square),
        *EXTREME_NAMES,
    )
    if v is not None:
        assert v > 0
    t = finite_or_rejects(
        lambda: theory.pdp_optimal_threshold(sizes, eps, sigma2, sensitivity, "expected", mean_square), *EXTREME_NAMES
    )
    if t is not None:
        assert t > 0


@cfg(120)
@given(
    groups=st.lists(st.tuples(small_size, extreme_epsilon), min_size=1, max_size=3),
    sigma2=extreme_positive,
    sensitivity=extreme_positive,
    threshold=extreme_epsilon.filter(math.isfinite),
)
@counted("theory")
def test_pdp_kept_extreme_inputs_finite_or_named_error(groups, sigma2, sensitivity, threshold):
    # the true-count form: today's code raised a bare OverflowError from (Delta / t) ** 2
    sizes, eps = [n for n, _ in groups], [e for _, e in groups]
    names = (*EXTREME_NAMES, "max_empty")
    v = finite_or_rejects(lambda: theory.pdp_sample_variance(sizes, eps, threshold, sigma2, sensitivity), *names)
    if v is not None:
        assert v > 0
    t = finite_or_rejects(lambda: theory.pdp_optimal_threshold(sizes, eps, sigma2, sensitivity), *names)
    if t is not None:
        assert t > 0


@cfg(40)
@given(eps=st.floats(1e-300, 1e-100), sensitivity=st.floats(1e100, 1e150), n=st.integers(1, 30))
@counted("theory")
def test_pdp_optimal_threshold_no_overflow_error(eps, sensitivity, n):
    # the optimal threshold is a finite number even when every variance it compares overflows:
    # it is searched in log space (today's code: OverflowError)
    for den in ("kept", "expected"):
        t = accepts(lambda: theory.pdp_optimal_threshold([n, 5], [eps, INF], 1.0, sensitivity, den, 1.0))
        finite(t)
        assert t > 0
    # and PDPSample("opt") with no public group: a clean error naming the threshold (its noise is absurd)
    rejects(lambda: PDPSample([Group("a", n, eps)], (0.0, 1e150), "opt", sigma2=1.0), "threshold")


@cfg(150)
@given(
    groups=st.lists(st.tuples(st.integers(1, 40), st.one_of(st.floats(0.05, 20.0), st.just(INF))), min_size=1, max_size=4),
    sigma2=st.floats(1e-2, 1e2),
    sensitivity=st.floats(1e-2, 1e2),
    threshold=st.floats(0.05, 20.0),
    mean_square=st.floats(0.0, 10.0),
)
@counted("theory")
def test_log_space_forms_match_the_direct_formulas(groups, sigma2, sensitivity, threshold, mean_square):
    """Independent check of the log-space rewrites against the old direct formulas on moderate inputs."""
    sizes, eps = [n for n, _ in groups], [e for _, e in groups]
    n = np.array(sizes, dtype=float)
    noise = np.array([0.0 if math.isinf(e) else 2.0 * sensitivity**2 / e**2 for e in eps])
    var = (n * sigma2 + noise) / n**2
    np.testing.assert_allclose(theory.group_mean_variances(sizes, eps, sigma2, sensitivity), var, rtol=1e-12)
    np.testing.assert_allclose(theory.mixed_mean_weights(sizes, eps, sigma2, sensitivity), (1 / var) / np.sum(1 / var), rtol=1e-12)
    assert math.isclose(theory.mixed_mean_variance(sizes, eps, sigma2, sensitivity), 1.0 / np.sum(1.0 / var), rel_tol=1e-12)
    w = np.arange(1.0, n.size + 1)
    assert math.isclose(
        theory.mixed_mean_variance(sizes, eps, sigma2, sensitivity, weights=w), float(np.sum(w**2 * var)), rel_tol=1e-12
    )
    p = np.array([1.0 if math.isinf(e) else min(1.0, math.expm1(e) / math.expm1(threshold)) for e in eps])
    tn = 2.0 * sensitivity**2 / threshold**2
    em = float(np.sum(n * p))
    direct_expected = (sigma2 * em + mean_square * float(np.sum(n * p * (1 - p))) + tn) / em**2
    got = theory.pdp_sample_variance(sizes, eps, threshold, sigma2, sensitivity, "expected", mean_square)
    assert math.isclose(got, direct_expected, rel_tol=1e-10)
    # the kept-count form: P(M = m) by brute-force convolution of binomial pmfs (math.comb)
    pmf = np.ones(1)
    for ni, pi in zip(sizes, p):
        pmf = np.convolve(pmf, [math.comb(ni, j) * pi**j * (1 - pi) ** (ni - j) for j in range(ni + 1)])
    m = np.arange(1, pmf.size)
    if pmf[1:].sum() > 0:
        direct_kept = float(np.sum(pmf[1:] * (sigma2 / m + tn / m**2)))
        got = theory.pdp_sample_variance(sizes, eps, threshold, sigma2, sensitivity)
        assert math.isclose(got, direct_kept, rel_tol=1e-8)


@cfg(60)
@given(n=st.integers(10**7 + 1, 10**12), eps=st.floats(0.1, 10.0))
@counted("theory")
def test_pdp_count_pmf_refuses_too_many_records(n, eps):
    # one entry per possible count: 10**12 records would be a MemoryError (or hours), refused up front
    rejects(lambda: theory.pdp_count_pmf([n], [0.5]), "sizes")
    rejects(lambda: theory.pdp_sample_variance([n], [eps], 1.0, 1.0, 1.0), "sizes")
    finite(accepts(lambda: theory.pdp_sample_variance([n], [eps], 1.0, 1.0, 1.0, "expected")))


@cfg(80)
@given(
    epsilon=st.floats(1e-300, 1e300),
    k=st.integers(1, 3),
    data=st.data(),
)
@counted("theory")
def test_user_item_risk_extreme_epsilon(epsilon, k, data):
    m = data.draw(hnp.arrays(np.int8, (4, 3), elements=st.integers(0, 1)))
    m[:, 0] = 1
    r = finite_or_rejects(lambda: theory.user_item_risk(m, min(k, 3), epsilon), "epsilon")
    if r is not None:
        assert r >= 0


@cfg(10)
@given(scale=st.floats(1.0, 1e3))
@counted("theory")
def test_user_item_risk_tiny_epsilon_is_an_error(scale):
    # today's code returned inf (2 k^2 / epsilon^2 overflows)
    rejects(lambda: theory.user_item_risk(np.array([[1, 1], [1, 0]]), 1, 1e-200 * scale), "epsilon")
    rejects(lambda: theory.user_item_risk_terms(np.array([[1, 1], [1, 0]]), [1, 2], 1e-160 * scale), "epsilon")


extreme_var = st.one_of(st.floats(0.0, 1e300), st.sampled_from([0.0, 1e-300, 1.0, 1e300]))
AVENT_FORMULAS = {
    "tcm_only_mse": (lambda a: theory.tcm_only_mse(a["n"], a["c"], a["v1"], a["s1"], a["v2"], a["mu"], 0.0), ("n", "sigma_T2", "sigma_L2", "s_T2", "mu_T")),
    "full_lm_mse": (lambda a: theory.full_lm_mse(a["n"], a["c"], a["v1"], a["v2"], a["s2"], benchmark="population"), ("sigma_T2", "sigma_L2", "s_L2")),
    "lm_only_mse": (lambda a: theory.lm_only_mse(a["n"], a["c"], a["v2"], a["s2"], a["v1"], 0.0, a["mu"]), ("n", "sigma_L2", "sigma_T2", "s_L2", "mu_L")),
    "hybrid_mse": (lambda a: theory.hybrid_mse(a["w"], a["n"], a["c"], a["v1"], a["v2"], a["s1"], a["s2"], a["mu"]), ("n", "sigma_T2", "sigma_L2", "s_T2", "s_L2", "mu_T")),
    "kvh_mse": (lambda a: theory.kvh_mse(a["n"], a["c"], a["v1"], a["s1"], a["s2"]), ("n", "sigma2", "s_T2", "s_L2")),
    "pwh_mse": (lambda a: theory.pwh_mse(a["n"], a["c"], a["v1"], a["s1"], a["s2"]), ("n", "sigma2", "s_T2", "s_L2")),
    "mixture_variance": (lambda a: theory.mixture_variance(a["c"], a["v1"], a["v2"], a["mu"]), ("sigma_T2", "sigma_L2", "mu_T")),
    "kvh_weight": (lambda a: theory.kvh_weight(a["n"], a["c"], a["v1"], a["s1"], a["s2"]), ("n", "sigma2", "s_T2", "s_L2")),
    "kvh_weight_heterogeneous": (lambda a: theory.kvh_weight_heterogeneous(a["n"], a["c"], a["v1"], a["v2"], a["s1"], a["s2"], a["mu"]), ("n", "sigma_T2", "sigma_L2", "s_T2", "s_L2", "mu_T")),
    "pwh_weight": (lambda a: theory.pwh_weight(a["n"], a["c"], a["s1"], a["s2"]), ("n", "s_T2", "s_L2")),
    "c_crit": (lambda a: theory.c_crit(a["v1"], a["v2"], a["s2"] or 1.0), ("sigma_T2", "sigma_L2", "s_L2")),
    "c_crit_laplace": (lambda a: theory.c_crit_laplace(a["eps"], a["m"], a["v1"]), ("epsilon", "m", "sigma2")),
    "relative_improvement": (lambda a: theory.relative_improvement(1.0, a["n"], a["c"], a["v1"], a["v2"], a["s1"], a["s2"], a["mu"]), ("n", "sigma_T2", "sigma_L2", "s_T2", "s_L2", "mu_T")),
    "kvh_improvement_limit": (lambda a: theory.kvh_improvement_limit(a["c"], a["eps"], a["m"], a["v1"]), ("epsilon", "m", "sigma2")),
    "gaussian_delta": (lambda a: theory.gaussian_delta(a["eps"], a["m"]), ("epsilon", "ratio")),
    "laplace_amplified_epsilon": (lambda a: theory.laplace_amplified_epsilon(a["w"], a["n"], a["c"], a["m"], a["eps"], a["f"]), ("n", "c", "m", "epsilon")),
    "noise_variances": (lambda a: theory.noise_variances("laplace", a["eps"], a["m"], a["n"], a["c"]), ("epsilon", "m")),
}


@cfg(200)
@given(
    fn=st.sampled_from(sorted(AVENT_FORMULAS)),
    a=st.fixed_dictionaries({
        "n": st.one_of(st.floats(1.0, 1e12), st.just(1e12)),
        "c": st.one_of(st.floats(1e-12, 1 - 1e-12), st.sampled_from([1e-12, 1 - 1e-12])),
        "eps": st.one_of(st.floats(1e-300, 1e300), st.sampled_from([1e-300, 1e300])),
        "m": st.one_of(st.floats(1e-150, 1e150), st.sampled_from([1e-150, 1e150])),
        "v1": extreme_var, "v2": extreme_var, "s1": extreme_var, "s2": extreme_var,
        "w": st.floats(0.0, 1.0), "f": st.floats(0.0, 1.0), "mu": st.floats(-1e150, 1e150),
    }),
)
@counted("theory")
def test_avent_extreme_inputs_finite_or_named_error(fn, a):
    call, names = AVENT_FORMULAS[fn]
    finite_or_rejects(lambda: call(a), *names)


@cfg(10)
@given(scale=st.floats(1.0, 1e3))
@counted("theory")
def test_avent_overflow_was_silent_before(scale):
    # today's code: inf (or NaN) from each of these
    rejects(lambda: theory.kvh_mse(1e12, 0.5, 1e300, 1e300 / scale, 1e300), "sigma2", "s_T2")
    rejects(lambda: theory.tcm_only_mse(1e3, 0.5, 1.0, 1.0, mu_T=1e160 * scale, mu_L=-1e160), "mu_T")
    # right answers where the direct formula overflows: c_crit -> 1 as epsilon^2 sigma2 / m^2 -> inf
    assert theory.c_crit_laplace(1e300, 1.0, 1.0) == 1.0
    assert theory.c_crit_laplace(1e-300, 1e150, 1.0) == 0.0
    for eps, m, v in [(1.0, 1.0, 0.25), (0.1, 3.0, 2.0), (7.0, 0.5, 1e-3)]:
        assert math.isclose(theory.c_crit_laplace(eps, m, v), eps**2 * v / (2 * m**2 + eps**2 * v), rel_tol=1e-13)
