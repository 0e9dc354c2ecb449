"""Bad input to Group, Bounds, check_groups and Guarantee."""

from _support.bad_input import *  # noqa: F403  (settings, checks, strategies)
from _support.bad_input import _CURRENT, _names  # noqa: F401


# ----------------------------------------------------------------------------------------
# Group, Bounds, check_groups
# ----------------------------------------------------------------------------------------

bad_size = st.one_of(
    st.integers(max_value=0),
    st.integers(-(2**62), 0).map(np.int64),
    st.floats(),
    st.none(),
    st.booleans(),
    st.text(max_size=3),
    st.just([3]),
)


@cfg(190)
@given(name=names_ok, size=bad_size)
@counted("privacy")
def test_group_rejects_bad_size(name, size):
    rejects(lambda: Group(name, size, 1.0), "size")


@cfg(190)
@given(name=names_ok, epsilon=bad_epsilon)
@counted("privacy")
def test_group_rejects_bad_epsilon(name, epsilon):
    rejects(lambda: Group(name, 10, epsilon), "epsilon")


@cfg(130)
@given(name=names_ok, delta=st.one_of(st.floats(max_value=-1e-300), st.floats(min_value=1.0), st.just(NAN), not_a_number))
@counted("privacy")
def test_group_rejects_bad_delta(name, delta):
    rejects(lambda: Group(name, 10, 1.0, delta), "delta")


@cfg(60)
@given(name=st.one_of(st.just(""), st.text(" \t\n", min_size=1, max_size=3), st.none(), st.integers(), st.just(b"x")))
@counted("privacy")
def test_group_rejects_bad_name(name):
    rejects(lambda: Group(name, 10, 1.0), "name")


@cfg(160)
@given(
    name=names_ok,
    size=st.one_of(st.integers(1, 10**9), st.integers(1, 10**6).map(np.int64)),
    epsilon=st.one_of(st.floats(min_value=5e-324, allow_nan=False), st.integers(1, 100)),
    delta=st.floats(0.0, 1.0, exclude_max=True),
)
@counted("privacy")
def test_group_accepts_good_values(name, size, epsilon, delta):
    g = accepts(lambda: Group(name, size, epsilon, delta))
    assert g.size == int(size) and type(g.size) is int
    assert g.epsilon == float(epsilon) > 0 and g.is_public == math.isinf(epsilon)
    assert 0.0 <= g.delta < 1.0






@cfg(240)
@given(pair=st.one_of(bad_bounds_pair(), bad_bounds_shape))
@counted("privacy")
def test_bounds_rejects_bad_pairs(pair):
    rejects(lambda: Bounds.from_pair(pair), "bounds")
    if isinstance(pair, tuple) and len(pair) == 2:
        rejects(lambda: Bounds(*pair), "bounds")


@cfg(160)
@given(
    lower=finite_mod,
    width=st.floats(1e-6, 1e12),
    values=hnp.arrays(np.float64, st.integers(0, 20), elements=st.floats(allow_nan=False)),
)
@counted("privacy")
def test_bounds_clamp_and_check(lower, width, values):
    assume(lower < lower + width)
    b = accepts(lambda: Bounds.from_pair([lower, lower + width]))
    clipped = accepts(lambda: b.clamp(values))
    assert ((clipped >= b.lower) & (clipped <= b.upper)).all()
    assert np.array_equal(b.check(clipped, "x"), clipped)
    outside = (values < b.lower) | (values > b.upper)
    if outside.any():
        rejects(lambda: b.check(values, "records"), "records")
    with_nan = np.append(values, NAN)
    rejects(lambda: b.clamp(with_nan), "values")
    rejects(lambda: b.check(with_nan, "records"), "records")
    rejects(lambda: b.check(values.astype(str), "records"), "records")


@cfg(100)
@given(
    groups=st.one_of(
        st.just([]),
        st.just(()),
        st.lists(st.one_of(st.integers(), st.text(max_size=2), st.none()), min_size=1, max_size=3),
        groups_st(max_size=2).map(lambda g: list(g) + [g[0]]),
        st.text(max_size=3),
        st.none(),
        st.integers(),
    )
)
@counted("privacy")
def test_check_groups_rejects(groups):
    rejects(lambda: check_groups(groups), "groups", "group")


@cfg(160)
@given(which=st.sampled_from(["epsilon", "delta", "relation"]), data=st.data())
@counted("privacy")
def test_guarantee_rejects(which, data):
    args = {"epsilon": 1.0, "delta": 0.0, "relation": "add-remove"}
    args[which] = data.draw(
        {
            "epsilon": st.one_of(st.floats(max_value=-1e-300), st.just(NAN), st.just(-INF), not_a_number),
            "delta": st.one_of(st.floats(max_value=-1e-300), st.floats(min_value=1.0), st.just(NAN), not_a_number),
            "relation": st.one_of(unknown_word, st.none(), st.integers()),
        }[which]
    )
    rejects(lambda: Guarantee(**args), which)


@cfg(100)
@given(epsilon=st.one_of(st.floats(0, allow_nan=False), st.integers(0, 10)), delta=st.floats(0, 1, exclude_max=True),
       relation=st.sampled_from(["add-remove", "replace"]))
@counted("privacy")
def test_guarantee_accepts(epsilon, delta, relation):
    g = accepts(lambda: Guarantee(epsilon, delta, relation))
    assert g.epsilon == float(epsilon) and g.delta == delta and str(g)
