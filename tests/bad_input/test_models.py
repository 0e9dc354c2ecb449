"""Bad input to the grouped PyMC model's knowledge arguments (no sampling)."""

from _support.bad_input import *  # noqa: F403  (settings, checks, strategies)
from _support.bad_input import _CURRENT, _names  # noqa: F401


# ----------------------------------------------------------------------------------------
# PyMC models: constructor validation only (no sampling)
# ----------------------------------------------------------------------------------------

bad_model_args = {
    "groups": bad_groups,
    "bounds": bad_bounds,
    "family": st.one_of(unknown_word, st.none(), st.integers(), st.just(NormalFamily), st.just(NormalFamily(bounds=(0, 1)))),
    "clamp": not_bool,
    "known_variance": bad_positive.filter(lambda v: v is not None),
    "public_data": st.one_of(
        st.just([1.0]),
        st.just({"priv": np.ones(8)}),
        st.just({"nobody": np.ones(5)}),
        st.just({"pub": np.ones(4)}),
        st.just({"pub": np.ones((1, 5))}),
        st.just({"pub": None}),
        st.just({"pub": [NAN] * 5}),
        st.just({"pub": ["1"] * 5}),
        st.just({"pub": [object()] * 5}),
        st.just({"pub": [1 + 1j] * 5}),
        st.floats(10.001, 1e9).map(lambda v: {"pub": [v] * 5}),
        st.sampled_from([INF, -INF]).map(lambda v: {"pub": [v] * 5}),
    ),
    "released_means": st.one_of(
        st.just([1.0]),
        st.just(1.0),
        st.just("x"),
        st.none(),
        st.floats(1e3, 1e9).map(lambda v: [ReleasedMean(v, 1.0)]),
        st.just([ReleasedMean(1.0, 1.0, "nobody")]),
    ),
}


@cfg(400)
@given(which=st.sampled_from(sorted(bad_model_args)), data=st.data())
@counted("models")
def test_grouped_data_model_rejects(which, data):
    args = dict(groups=G2, bounds=B2)
    args[which] = data.draw(bad_model_args[which])
    names = {"groups": ("groups", "group"), "family": ("family",), "released_means": ("released_means",)}.get(which, (which,))
    rejects(lambda: GroupedDataModel(**args), *names)


@cfg(320)
@given(
    which=st.sampled_from(["mu", "sigma_scale", "mean", "concentration", "bounds", "value", "noise_scale", "group",
                           "priors", "dist", "mc_samples", "mc_seed", "beta-known_variance"]),
    data=st.data(),
)
@counted("models")
def test_families_and_released_means_reject(which, data):
    pair = st.one_of(
        st.tuples(st.floats(0.1, 5), bad_positive),
        st.tuples(st.sampled_from([NAN, INF, -INF, "a", None]), st.floats(0.1, 5)),
        st.none(),
        st.floats(),
        st.text(max_size=2),
        st.just((1.0,)),
        st.just((1.0, 2.0, 3.0)),
    )
    if which == "mu":
        rejects(lambda: NormalFamily(mu=data.draw(pair.filter(lambda p: p is not None))), "mu")
    elif which == "sigma_scale":
        rejects(lambda: NormalFamily(sigma_scale=data.draw(bad_positive.filter(lambda v: v is not None))), "sigma_scale")
    elif which in ("mean", "concentration"):
        value = data.draw(st.one_of(pair, st.tuples(non_positive, st.floats(0.1, 5))))
        rejects(lambda: BetaFamily(**{which: value}), which)
    elif which == "bounds":
        cls = data.draw(st.sampled_from([NormalFamily, BetaFamily]))
        b = data.draw(bad_bounds.filter(lambda v: v is not None))
        rejects(lambda: cls(bounds=b), "bounds")
    elif which == "value":
        rejects(lambda: ReleasedMean(data.draw(st.one_of(st.sampled_from([NAN, INF, -INF]), not_a_number)), 1.0), "value")
    elif which == "noise_scale":
        rejects(lambda: ReleasedMean(1.0, data.draw(bad_positive)), "noise_scale")
    elif which == "group":
        rejects(lambda: ReleasedMean(1.0, 1.0, data.draw(st.one_of(st.integers(), st.floats(), st.just(["a"])))), "group")
    elif which in ("priors", "dist"):
        args = {"priors": lambda: {}, "dist": lambda **kw: None, which: data.draw(st.one_of(st.none(), st.integers(), st.text(max_size=2)))}
        rejects(lambda: CustomFamily(**args), which)
    elif which == "mc_samples":
        rejects(lambda: CustomFamily(lambda: {}, lambda **kw: None, mc_samples=data.draw(st.one_of(st.integers(max_value=1), not_int))), which)
    elif which == "mc_seed":
        rejects(lambda: CustomFamily(lambda: {}, lambda **kw: None, mc_seed=data.draw(st.one_of(st.integers(max_value=-1), not_int.filter(lambda v: v is not None)))), which)
    else:
        rejects(lambda: GroupedDataModel(G2, B2, family="beta", known_variance=data.draw(st.floats(0.1, 10))), "known_variance")


@cfg(100)
@given(
    bounds=bounds_st(),
    family=st.sampled_from(["normal", "beta"]),
    data=st.data(),
)
@counted("models")
def test_grouped_data_model_accepts_good_knowledge(bounds, family, data):
    public = data.draw(hnp.arrays(np.float64, 5, elements=st.floats(bounds.lower, bounds.upper)))
    rel = ReleasedMean(data.draw(st.floats(bounds.lower, bounds.upper)), data.draw(st.floats(1e-3, 1e3)),
                       data.draw(st.sampled_from([None, "pub", "priv"])))
    kv = data.draw(st.floats(1e-3, 1e3)) if family == "normal" else None
    model = accepts(lambda: GroupedDataModel(G2, bounds, family, public_data={"pub": public}, known_variance=kv,
                                             released_means=[rel]))
    np.testing.assert_array_equal(model.public_data["pub"], public)
    assert model.family.bounds == bounds
    fam = NormalFamily(mu=(data.draw(st.floats(-10, 10)), data.draw(st.floats(0.1, 10))), sigma_scale=data.draw(st.floats(0.1, 10)))
    assert accepts(lambda: fam.with_bounds(bounds)).is_bound
    beta = BetaFamily(mean=(data.draw(st.floats(0.1, 5)), 1.0), concentration=(2.0, data.draw(st.floats(0.01, 1))))
    assert accepts(lambda: beta.with_bounds(bounds)).is_bound
