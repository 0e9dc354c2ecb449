"""Bad input to the closed forms of Ferrando et al. and Jorgensen et al."""

from _support.bad_input import *  # noqa: F403  (settings, checks, strategies)
from _support.bad_input import _CURRENT, _names  # noqa: F401


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
