"""Bad input to the grouped estimators: constructors and estimates."""

import pytest
from _support.bad_input import *  # noqa: F403  (settings, checks, strategies)
from _support.bad_input import _CURRENT, _names  # noqa: F401


# ----------------------------------------------------------------------------------------
# Estimators: constructors
# ----------------------------------------------------------------------------------------



@cfg(320)
@given(
    name=st.sampled_from(sorted(ESTIMATORS)),
    which=st.sampled_from(["groups", "bounds", "clamp"]),
    groups=groups_st(public=True),
    data=st.data(),
)
@counted("estimators")
def test_estimator_constructors_reject_bad_setting(name, which, groups, data):
    args = {"groups": groups, "bounds": (0.0, 1.0), "clamp": False}
    args[which] = data.draw({"groups": bad_groups, "bounds": bad_bounds, "clamp": not_bool}[which])
    rejects(lambda: build(name, args["groups"], args["bounds"], clamp=args["clamp"]), which, *(["group"] if which == "groups" else []))


@cfg(240)
@given(which=st.sampled_from(["sigma2", "relation", "threshold", "denominator", "mean_square", "public"]), data=st.data())
@counted("estimators")
def test_estimator_constructors_reject_bad_parameters(which, data):
    g, b = (Group("pub", 5, INF), Group("a", 10, 1.0)), (0.0, 1.0)
    if which == "sigma2":
        s2 = data.draw(bad_positive.filter(lambda v: v is not None))
        cls = data.draw(st.sampled_from(["WeightedMean", "WeightedMedian", "PDPSample"]))
        if cls == "PDPSample":
            rejects(lambda: PDPSample(g, b, "opt", sigma2=s2), "sigma2")
        else:
            rejects(lambda: globals()[cls](g, b, s2), "sigma2")
    elif which == "relation":
        rel = data.draw(st.one_of(unknown_word, st.none(), st.integers(), st.just("Add-Remove")))
        cls = data.draw(st.sampled_from([WeightedMean, WeightedMedian, PDPSample, UniformMean, UniformMedian]))
        if cls in (WeightedMean, WeightedMedian):
            rejects(lambda: cls(g, b, 1.0, relation=rel), "relation")
        elif cls is PDPSample:
            rejects(lambda: cls(g, b, "min", relation=rel), "relation")
        else:
            rejects(lambda: cls(g, b, relation=rel), "relation")
    elif which == "threshold":
        t = data.draw(st.one_of(bad_finite_epsilon, unknown_word))
        rejects(lambda: PDPSample(g, b, t), "threshold")
    elif which == "denominator":
        d = data.draw(st.one_of(unknown_word, st.none(), st.integers()))
        rejects(lambda: PDPSample(g, b, "min", denominator=d), "denominator")
    elif which == "mean_square":
        m2 = data.draw(st.one_of(st.floats(max_value=-1e-300), st.sampled_from([NAN, INF, -INF]), not_a_number.filter(lambda v: v is not None)))
        rejects(lambda: PDPSample(g, b, "opt", sigma2=1.0, denominator="expected", mean_square=m2), "mean_square")
    else:
        private = data.draw(groups_st().filter(lambda gs: not any(x.is_public for x in gs)))
        cls = data.draw(st.sampled_from([PublicMean, PublicMedian]))
        rejects(lambda: cls(private, b), "public")


@cfg(190)
@given(which=st.sampled_from(["name", "statistic", "sigma2", "mean_square"]), groups=groups_st(public=True), data=st.data())
@counted("estimators")
def test_make_and_default_estimators_reject(which, groups, data):
    b = (0.0, 1.0)
    if which == "name":
        name = data.draw(st.one_of(text_not(*ESTIMATOR_NAMES), st.none(), st.integers()))
        rejects(lambda: make_estimator(name, groups, b, 1.0), "estimator")
    elif which == "statistic":
        stat = data.draw(st.one_of(text_not("mean", "median"), st.none(), st.integers()))
        rejects(lambda: default_estimators(groups, b, stat, 1.0), "statistic")
    elif which == "sigma2":
        name = data.draw(st.sampled_from(["weighted", "pdp-opt", "pdp-opt-expected", "weighted-median"]))
        s2 = data.draw(bad_positive)
        rejects(lambda: make_estimator(name, groups, b, s2, mean_square=1.0), "sigma2")
    else:
        m2 = data.draw(st.one_of(st.floats(max_value=-1e-300), st.sampled_from([NAN, INF]), not_a_number.filter(lambda v: v is not None)))
        rejects(lambda: make_estimator("pdp-opt-expected", groups, b, 1.0, mean_square=m2), "mean_square")


@cfg(100)
@given(
    groups=groups_st(max_n=200),
    bounds=bounds_st(),
    sigma2=st.floats(1e-3, 1e3),
    relation=st.sampled_from(["add-remove", "replace"]),
)
@counted("estimators")
def test_estimator_constructors_accept_good_settings(groups, bounds, sigma2, relation):
    for cls in (WeightedMean, WeightedMedian):
        est = accepts(lambda: cls(groups, bounds, sigma2, relation=relation))
        finite(est.weights)
    for rule in ("min", "avg", "max", "opt"):
        est = accepts(lambda: PDPSample(groups, bounds, rule, sigma2=sigma2, relation=relation))
        finite(est.threshold)
        finite(est.keep_probabilities)
    for est in (PEMedian(groups, bounds), UniformMean(groups, bounds), UniformMedian(groups, bounds)):
        assert set(est.privacy) == {g.name for g in groups}
        assert all(v.epsilon > 0 for v in est.privacy.values())


# ----------------------------------------------------------------------------------------
# Estimators: estimate
# ----------------------------------------------------------------------------------------

CORRUPTIONS = [
    "nan", "inf", "-inf", "outside", "wrong-length", "too-few-groups", "too-many-groups", "strings",
    "numeric-strings", "objects", "none", "complex", "3-d", "empty", "ragged", "mapping-missing",
    "mapping-extra", "ndarray", "string", "trial-mismatch", "mixed-ndim", "zero-trials", "rng",
]


@st.composite
def corrupted(draw, groups, bounds, valid):
    """``(data, rng, names)``: a corruption of ``valid`` data and the names its error must give."""
    kind = draw(st.sampled_from(CORRUPTIONS))
    data = [v.copy() for v in valid]
    k = draw(st.integers(0, len(groups) - 1))
    rng = np.random.default_rng(0)
    if kind in ("nan", "inf", "-inf", "outside"):
        i = draw(st.integers(0, groups[k].size - 1))
        if kind == "outside":
            step = draw(st.floats(1e-6, 1e6)) * max(1.0, bounds.width)
            value = bounds.upper + step if draw(st.booleans()) else bounds.lower - step
            assume(not bounds.lower <= value <= bounds.upper)
        else:
            value = {"nan": NAN, "inf": INF, "-inf": -INF}[kind]
        data[k][i] = value
    elif kind == "wrong-length":
        n = groups[k].size + draw(st.sampled_from([-1, 1, 2])) if groups[k].size > 1 else 2
        data[k] = np.full(n, bounds.midpoint)
    elif kind == "too-few-groups":
        data = data[:-1]
    elif kind == "too-many-groups":
        data = data + [data[0]]
    elif kind == "strings":
        data[k] = np.array(["x"] * groups[k].size)
    elif kind == "numeric-strings":
        data[k] = data[k].astype(str)
    elif kind == "objects":
        data[k] = np.array([object()] * groups[k].size)
    elif kind == "none":
        data[k] = None
    elif kind == "complex":
        data[k] = data[k] + 1j
    elif kind == "3-d":
        data[k] = data[k][None, None, :]
    elif kind == "empty":
        data[k] = np.array([])
    elif kind == "ragged":
        data[k] = [list(data[k]), list(data[k])[:-1] or [1.0, 2.0]]
    elif kind == "mapping-missing":
        data = {g.name: v for g, v in zip(groups, data) if g.name != groups[k].name}
    elif kind == "mapping-extra":
        data = {g.name: v for g, v in zip(groups, data)} | {"zz-extra": data[0]}
    elif kind == "ndarray":
        data = np.zeros((len(groups), 3))
    elif kind == "string":
        data = "data"
    elif kind == "trial-mismatch":
        assume(len(groups) > 1)
        data = [np.broadcast_to(v, (2 + j, v.size)) for j, v in enumerate(data)]
    elif kind == "mixed-ndim":
        assume(len(groups) > 1)
        data[k] = data[k][None, :]
    elif kind == "zero-trials":
        data = [np.zeros((0, v.size)) for v in data]
    else:
        rng = draw(st.sampled_from([None, 0, np.random.RandomState(0), "rng"]))
        return data, rng, ("rng",), kind
    return data, rng, ("data",), kind


@cfg(960)
@given(
    name=st.sampled_from(sorted(ESTIMATORS)),
    groups=groups_st(public=True),
    bounds=bounds_st(),
    data=st.data(),
)
@pytest.mark.slow
@counted("estimate")
def test_estimate_rejects_bad_data(name, groups, bounds, data):
    est = build(name, groups, bounds)
    valid = data.draw(data_for(groups, bounds))
    bad, rng, names, kind = data.draw(corrupted(groups, bounds, valid))
    rejects(lambda: est.estimate(bad, rng), *names)


@cfg(240)
@given(
    name=st.sampled_from(sorted(ESTIMATORS)),
    groups=groups_st(public=True),
    bounds=bounds_st(),
    trials=st.one_of(st.none(), st.integers(1, 4)),
    data=st.data(),
)
@counted("estimate")
def test_estimate_good_data_gives_finite_results(name, groups, bounds, trials, data):
    est = build(name, groups, bounds)
    valid = data.draw(data_for(groups, bounds, trials))
    out = accepts(lambda: est.estimate(valid, np.random.default_rng(data.draw(st.integers(0, 2**32)))))
    finite(out)
    if trials is None:
        assert isinstance(out, float)
    else:
        assert out.shape == (trials,)
    if est.statistic == "median":  # medians of records in the bounds stay in the bounds
        assert (np.asarray(out) >= bounds.lower - 1e-9 * bounds.width).all()
        assert (np.asarray(out) <= bounds.upper + 1e-9 * bounds.width).all()
    # a mapping by group name is the same data
    mapping = {g.name: v for g, v in zip(groups, valid)}
    again = est.estimate(mapping, np.random.default_rng(1))
    np.testing.assert_array_equal(again, est.estimate(valid, np.random.default_rng(1)))


@cfg(240)
@given(
    name=st.sampled_from(sorted(ESTIMATORS)),
    groups=groups_st(public=True),
    bounds=bounds_st(),
    data=st.data(),
    seed=st.integers(0, 2**32),
)
@counted("estimate")
def test_clamp_on_clips_and_clamp_off_rejects(name, groups, bounds, data, seed):
    raw = [
        data.draw(hnp.arrays(np.float64, g.size, elements=st.floats(bounds.lower - 1e6, bounds.upper + 1e6)))
        for g in groups
    ]
    k = data.draw(st.integers(0, len(groups) - 1))
    raw[k][0] = data.draw(st.sampled_from([bounds.upper + 1.0, bounds.lower - 1.0, INF, -INF]))
    clamped = build(name, groups, bounds, clamp=True)
    got = accepts(lambda: clamped.estimate(raw, np.random.default_rng(seed)))
    finite(got)
    clipped = [np.clip(x, bounds.lower, bounds.upper) for x in raw]
    want = build(name, groups, bounds).estimate(clipped, np.random.default_rng(seed))
    assert got == want
    rejects(lambda: build(name, groups, bounds).estimate(raw, np.random.default_rng(seed)), "data")
    with_nan = [x.copy() for x in raw]
    with_nan[k][0] = NAN
    rejects(lambda: clamped.estimate(with_nan, np.random.default_rng(seed)), "data")
