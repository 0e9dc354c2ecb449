"""Bad input to the noise mechanisms, the Gaussian calibration, the exponential mechanism and Smith's quantile."""

from _support.bad_input import *  # noqa: F403  (settings, checks, strategies)
from _support.bad_input import _CURRENT, _names  # noqa: F401


# ----------------------------------------------------------------------------------------
# Mechanisms
# ----------------------------------------------------------------------------------------

bad_scale = st.one_of(
    st.floats(max_value=-1e-300), st.sampled_from([NAN, INF, -INF]), not_a_number.filter(lambda v: not isinstance(v, (bool, list)) and not (isinstance(v, np.ndarray)))
)
bad_values = st.one_of(
    st.just(NAN),
    st.lists(st.floats(-5, 5), min_size=1, max_size=4).map(lambda v: v + [NAN]),
    st.text(min_size=1, max_size=3),
    st.just(["1", "2"]),
    st.just([1 + 2j]),
    st.builds(lambda: [object()]),
    st.just([[1.0, 2.0], [3.0]]),
)


@cfg(190)
@given(mech=st.sampled_from(["laplace", "gaussian"]), scale=bad_scale, values=st.floats(-10, 10))
@counted("mechanisms")
def test_noise_rejects_bad_scale(mech, scale, values):
    fn, name = (laplace, "scale") if mech == "laplace" else (gaussian, "sigma")
    rng = np.random.default_rng(0)
    rejects(lambda: fn(values, scale, rng), name)


@cfg(130)
@given(mech=st.sampled_from([laplace, gaussian]), values=bad_values)
@counted("mechanisms")
def test_noise_rejects_bad_values(mech, values):
    rejects(lambda: mech(values, 1.0, np.random.default_rng(0)), "values")


@cfg(100)
@given(
    mech=st.sampled_from([laplace, gaussian]),
    values=hnp.arrays(np.float64, hnp.array_shapes(max_dims=2, max_side=4), elements=st.floats(-1e6, 1e6)),
    scale=st.floats(0, 1e3),
    rng=st.sampled_from([None, 0, np.random.RandomState(0), "rng"]),
)
@counted("mechanisms")
def test_noise_good_values_and_bad_rng(mech, values, scale, rng):
    out = accepts(lambda: mech(values, scale, np.random.default_rng(1)))
    assert out.shape == values.shape
    finite(out)
    rejects(lambda: mech(values, scale, rng), "rng")


@cfg(190)
@given(
    which=st.sampled_from(["epsilon", "delta", "sensitivity", "method"]),
    data=st.data(),
)
@counted("mechanisms")
def test_gaussian_sigma_rejects(which, data):
    args = {"epsilon": 0.5, "delta": 1e-5, "sensitivity": 1.0}
    bad = {
        "epsilon": bad_finite_epsilon,
        "delta": bad_probability,
        "sensitivity": bad_positive,
        "method": st.one_of(unknown_word, st.none()),
    }[which]
    value = data.draw(bad)
    if which == "method":
        rejects(lambda: gaussian_sigma(**args, method=value), "method")
    else:
        args[which] = value
        rejects(lambda: gaussian_sigma(**args), which)


@cfg(130)
@given(
    epsilon=st.floats(1e-3, 50),
    delta=st.floats(1e-12, 0.5),
    sensitivity=st.floats(1e-100, 1e100),
)
@counted("mechanisms")
def test_gaussian_sigma_good(epsilon, delta, sensitivity):
    s = accepts(lambda: gaussian_sigma(epsilon, delta, sensitivity))
    finite(s)
    assert s > 0


@cfg(160)
@given(
    which=st.sampled_from(["epsilon", "sensitivity", "scores", "log_base_measure"]),
    data=st.data(),
)
@counted("mechanisms")
def test_exponential_mechanism_rejects(which, data):
    args = {"scores": np.zeros(3), "epsilon": 1.0, "sensitivity": 1.0}
    bad = {
        "epsilon": bad_epsilon,
        "sensitivity": bad_positive,
        "scores": st.sampled_from(
            [np.array([]), np.array([1.0, NAN]), np.array(["a", "b"]), np.array([INF, 0.0]), np.float64(1.0), [[1], [2, 3]]]
        ),
        "log_base_measure": st.sampled_from([np.zeros(2), np.array([NAN, 0, 0]), np.array(["a"] * 3), np.array([INF, 0, 0])]),
    }[which]
    value = data.draw(bad)
    rng = np.random.default_rng(0)
    if which == "log_base_measure":
        rejects(lambda: exponential_mechanism(**args, rng=rng, log_base_measure=value), which)
    else:
        args[which] = value
        rejects(lambda: exponential_mechanism(**args, rng=rng), which)


@cfg(160)
@given(
    which=st.sampled_from(["q", "epsilon", "bounds", "data"]),
    data=st.data(),
)
@counted("mechanisms")
def test_smith_quantile_rejects(which, data):
    args = {"data": np.array([0.2, 0.5, 0.9]), "q": 0.5, "epsilon": 1.0, "bounds": (0.0, 1.0)}
    bad = {
        "q": bad_probability.filter(lambda v: not (isinstance(v, float) and v == 1.0)).filter(
            lambda v: not (isinstance(v, float) and v == 0.0)
        ),
        "epsilon": bad_epsilon,
        "bounds": st.one_of(bad_bounds_pair(), bad_bounds_shape),
        "data": st.sampled_from(
            [np.array([]), np.array([0.5, NAN]), np.array([0.5, 2.0]), np.array([-INF]), np.array(["a"]), [[0.5], [0.5, 0.6]]]
        ),
    }[which]
    args[which] = data.draw(bad)
    rejects(lambda: smith_quantile(rng=np.random.default_rng(0), **args), which)


@cfg(100)
@given(
    data=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=6), elements=st.floats(0, 1)),
    q=st.floats(0, 1),
    epsilon=epsilon_or_public,
)
@counted("mechanisms")
def test_smith_quantile_good(data, q, epsilon):
    out = accepts(lambda: smith_quantile(data, q, epsilon, (0.0, 1.0), np.random.default_rng(0)))
    finite(out)
    assert ((np.asarray(out) >= 0) & (np.asarray(out) <= 1)).all()


@cfg(160)
@given(which=st.sampled_from(["labels", "k", "epsilon", "rng"]), data=st.data())
@counted("mechanisms")
def test_randomized_response_rejects(which, data):
    from hybridpriv.mechanisms import randomized_response

    args = {"labels": np.array([0, 1, 2]), "k": 3, "epsilon": 1.0, "rng": np.random.default_rng(0)}
    args[which] = data.draw({
        "labels": st.sampled_from([np.array([0.5, 1.0]), np.array([0, 3]), np.array([-1]), np.array(["a"])]),
        "k": st.one_of(st.integers(max_value=0), not_int),
        "epsilon": bad_epsilon,
        "rng": st.sampled_from([None, 0, np.random.RandomState(0), "rng"]),
    }[which])
    rejects(lambda: randomized_response(**args), which)


@cfg(100)
@given(
    labels=hnp.arrays(np.int64, hnp.array_shapes(min_dims=1, max_dims=2, max_side=6), elements=st.integers(0, 3)),
    epsilon=epsilon_or_public,
)
@counted("mechanisms")
def test_randomized_response_good(labels, epsilon):
    from hybridpriv.mechanisms import randomized_response, rr_debias_counts

    out = accepts(lambda: randomized_response(labels, 4, epsilon, np.random.default_rng(0)))
    assert out.shape == labels.shape and ((out >= 0) & (out < 4)).all()
    counts = np.bincount(out.ravel(), minlength=4).astype(float)
    finite(accepts(lambda: rr_debias_counts(counts, out.size, epsilon, 4)))
