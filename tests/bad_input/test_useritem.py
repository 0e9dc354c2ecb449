"""Bad input to the user-item family: risk, contribution-bounded counts, the ItemCounts task, the UserItemModel."""

import pytest
from _support.bad_input import *  # noqa: F403  (settings, checks, strategies)
from _support.bad_input import _CURRENT, _names  # noqa: F401

from hybridpriv.estimators import USER_ITEM_LOSSES, ItemCounts


binary_matrix = hnp.arrays(
    np.int8, st.tuples(st.integers(1, 8), st.integers(1, 8)), elements=st.integers(0, 1)
)


@st.composite
def bad_matrix(draw):
    kind = draw(st.sampled_from(["value", "nan", "inf", "1d", "3d", "empty", "str", "object", "complex", "ragged", "none", "sparse-dup"]))
    m = draw(binary_matrix)
    if kind == "value":
        m = m.astype(float)
        m.flat[draw(st.integers(0, m.size - 1))] = draw(
            st.one_of(st.integers(2, 100), st.integers(-100, -1), st.floats(0.01, 0.99))
        )
        return m
    if kind == "nan":
        m = m.astype(float)
        m.flat[0] = NAN
        return m
    if kind == "inf":
        m = m.astype(float)
        m.flat[0] = INF
        return m
    return {
        "1d": m.ravel(),
        "3d": m[None],
        "empty": np.zeros((0, m.shape[1])) if draw(st.booleans()) else np.zeros((m.shape[0], 0)),
        "str": m.astype(str),
        "object": np.array([[object()] * m.shape[1]] * m.shape[0]),
        "complex": m.astype(complex),
        "ragged": [[1, 0], [1]],
        "none": None,
        "sparse-dup": sp.coo_array(([1, 1], ([0, 0], [0, 0])), shape=(1, 2)),
    }[kind]


@cfg(240)
@given(
    which=st.sampled_from(["matrix", "k", "epsilon"]),
    matrix=binary_matrix,
    data=st.data(),
)
@counted("theory")
def test_user_item_risk_rejects(which, matrix, data):
    m = matrix.shape[1]
    k, eps = 1, 1.0
    if which == "matrix":
        bad = data.draw(bad_matrix())
        rejects(lambda: theory.user_item_risk(bad, k, eps), "matrix")
        return
    if which == "k":
        k = data.draw(
            st.one_of(
                st.integers(max_value=0),
                st.integers(m + 1, 10**40),
                st.lists(st.integers(max_value=0), min_size=1, max_size=3),
                st.lists(st.integers(m + 1, 10**6), min_size=1, max_size=3),
                st.just([]),
                st.floats(),
                st.sampled_from(["2", None, True, [1.0], [[1]], np.array(1.5)]),
            )
        )
        rejects(lambda: theory.user_item_risk(matrix, k, eps), "k")
    else:
        eps = data.draw(bad_finite_epsilon)
        rejects(lambda: theory.user_item_risk(matrix, k, eps), "epsilon")


@cfg(130)
@given(matrix=binary_matrix, data=st.data(), epsilon=st.floats(1e-2, 1e2))
@counted("theory")
def test_user_item_risk_good(matrix, data, epsilon):
    m = matrix.shape[1]
    k = data.draw(st.integers(1, m))
    risk = accepts(lambda: theory.user_item_risk(matrix, k, epsilon))
    finite(risk)
    terms = theory.user_item_risk_terms(sp.csr_array(matrix), k, epsilon)
    assert risk >= 0 and math.isclose(risk, terms.total)
    ks = np.arange(1, m + 1)
    finite(accepts(lambda: theory.user_item_risk(matrix, ks, epsilon)))



# ----------------------------------------------------------------------------------------
# Contribution-bounded counts
# ----------------------------------------------------------------------------------------

bad_k = st.one_of(
    st.integers(max_value=0),
    st.integers(2**63, 10**40),
    st.floats(),
    st.sampled_from(["2", None, True, [1, 2], np.float64(2.0), np.array([1, 2])]),
)


@cfg(240)
@given(which=st.sampled_from(["k", "epsilon"]), data=st.data())
@counted("useritem")
def test_contribution_bounded_counts_rejects_bad_parameters(which, data):
    if which == "k":
        k = data.draw(bad_k)
        rejects(lambda: ContributionBoundedCounts(k, 1.0), "k")
    else:
        eps = data.draw(bad_finite_epsilon)
        rejects(lambda: ContributionBoundedCounts(1, eps), "epsilon")


@cfg(240)
@given(which=st.sampled_from(["matrix", "k>m", "trials", "rng"]), matrix=binary_matrix, data=st.data())
@counted("useritem")
def test_contribution_bounded_counts_release_rejects(which, matrix, data):
    m = matrix.shape[1]
    rng = np.random.default_rng(0)
    if which == "matrix":
        bad = data.draw(bad_matrix())
        rejects(lambda: ContributionBoundedCounts(1, 1.0).release(bad, rng), "matrix")
    elif which == "k>m":
        k = data.draw(st.integers(m + 1, 10**6))
        mech = ContributionBoundedCounts(k, 1.0)
        rejects(lambda: mech.release(matrix, rng), "k")
        rejects(lambda: mech.bounded_counts(matrix, rng), "k")
    elif which == "trials":
        t = data.draw(st.one_of(st.integers(max_value=0), not_int))
        rejects(lambda: ContributionBoundedCounts(1, 1.0).release(matrix, rng, t), "trials")
    else:
        bad_rng = data.draw(st.sampled_from([None, 0, np.random.RandomState(0), "rng"]))
        rejects(lambda: ContributionBoundedCounts(1, 1.0).release(matrix, bad_rng), "rng")


@cfg(130)
@given(matrix=binary_matrix, data=st.data(), epsilon=st.floats(1e-2, 1e2), trials=st.integers(1, 5))
@counted("useritem")
def test_contribution_bounded_counts_good(matrix, data, epsilon, trials):
    k = data.draw(st.integers(1, matrix.shape[1]))
    fmt = data.draw(st.sampled_from(["dense", "bool", "csr", "coo", "list"]))
    mat = {
        "dense": matrix,
        "bool": matrix.astype(bool),
        "csr": sp.csr_array(matrix),
        "coo": sp.coo_matrix(matrix),
        "list": matrix.tolist(),
    }[fmt]
    mech = ContributionBoundedCounts(k, epsilon)
    out = accepts(lambda: mech.release(mat, np.random.default_rng(0), trials))
    assert out.shape == (trials, matrix.shape[1])
    finite(out)
    kept = mech.bounded_counts(mat, np.random.default_rng(0), trials)
    assert (kept <= matrix.sum(axis=0)).all() and (kept.sum(axis=1) <= np.minimum(matrix.sum(axis=1), k).sum()).all()


@cfg(100)
@given(which=st.sampled_from(["loss", "trials", "k", "epsilon", "releases"]), data=st.data())
@counted("useritem")
def test_user_item_loss_and_task_reject(which, data):
    mat = np.array([[1, 1, 0], [0, 1, 1]])
    rng = np.random.default_rng(0)
    if which == "loss":
        loss = data.draw(st.one_of(unknown_word, st.none(), st.just(["squared"])))
        rejects(lambda: monte_carlo_user_item_loss(mat, 1, 1.0, rng, 3, loss=loss), "loss")
        rejects(lambda: ItemCounts(loss), "loss")
    elif which == "trials":
        t = data.draw(st.one_of(st.integers(max_value=1), not_int))
        rejects(lambda: monte_carlo_user_item_loss(mat, 1, 1.0, rng, t), "trials")
    elif which == "k":
        k = data.draw(st.integers(4, 10**6))  # more than the m = 3 items: no exact risk, no release
        mech = ContributionBoundedCounts(k, 1.0)
        rejects(lambda: ItemCounts().exact_risk([mech], mat, {}), "k")
        rejects(lambda: monte_carlo_user_item_loss(mat, k, 1.0, rng, 3), "k")
    elif which == "epsilon":
        eps = data.draw(bad_finite_epsilon)
        rejects(lambda: monte_carlo_user_item_loss(mat, 1, eps, rng, 3), "epsilon")
    else:
        shape = data.draw(st.sampled_from([(2,), (2, 2), (2, 4), (1, 3, 1), (0, 2)]))
        releases = np.zeros(shape)
        rejects(lambda: ItemCounts(data.draw(st.sampled_from(USER_ITEM_LOSSES))).loss(
            ContributionBoundedCounts(1, 1.0), releases, mat, {}), "releases")



column_sums_st = st.lists(st.integers(0, 6), min_size=1, max_size=6).filter(lambda c: sum(c) > 0)


@st.composite
def bad_column_sums(draw):
    c = list(draw(column_sums_st))
    kind = draw(st.sampled_from(["negative", "fraction", "nan", "inf", "zeros", "empty", "strings", "bool", "2-d", "scalar", "none", "complex", "objects"]))
    j = draw(st.integers(0, len(c) - 1))
    if kind == "negative":
        c[j] = draw(st.integers(max_value=-1))
        return c
    if kind == "fraction":
        c = [float(x) for x in c]
        c[j] = draw(st.floats(0.01, 100).filter(lambda v: v != round(v)))
        return c
    if kind in ("nan", "inf"):
        c = [float(x) for x in c]
        c[j] = NAN if kind == "nan" else INF
        return c
    return {
        "zeros": [0] * len(c),
        "empty": [],
        "strings": [str(x) for x in c],
        "bool": [bool(x) for x in c],
        "2-d": [c],
        "scalar": c[0] or 1,
        "none": None,
        "complex": [complex(x) for x in c],
        "objects": [object()] * len(c),
    }[kind]


@cfg(400)
@given(which=st.sampled_from(["column_sums", "n", "n-infeasible", "trades_per_row", "items_prior", "n_prior"]),
       c=column_sums_st, data=st.data())
@counted("models")
def test_user_item_model_rejects(which, c, data):
    lo, hi = max(c), sum(c)
    if which == "column_sums":
        rejects(lambda: UserItemModel(data.draw(bad_column_sums())), "column_sums")
    elif which == "n":
        n = data.draw(st.one_of(st.floats(), st.text(max_size=2), st.booleans(), st.just((1,)), st.just((1, 2, 3)),
                                st.tuples(st.floats(), st.integers()), st.just((None, 3)), st.just((True, 3))))
        rejects(lambda: UserItemModel(c, n), "n", "n low", "n high")
    elif which == "n-infeasible":
        n = data.draw(
            st.one_of(
                st.integers(max_value=lo - 1),  # a column sum above n
                st.integers(hi + 1, 10**30),  # more users than reports
                st.tuples(st.integers(-10, hi), st.integers(-10, hi)).filter(lambda p: p[0] > p[1]),  # reversed
                st.integers(-(10**6), lo - 1).flatmap(lambda a: st.tuples(st.just(a), st.integers(a, lo - 1))),
                st.integers(hi + 1, 10**6).flatmap(lambda a: st.tuples(st.just(a), st.integers(a, 10**7))),
            )
        )
        rejects(lambda: UserItemModel(c, n), "n")
    elif which == "trades_per_row":
        t = data.draw(st.one_of(st.integers(max_value=0), not_int))
        rejects(lambda: UserItemModel(c, hi, trades_per_row=t), "trades_per_row")
    elif which == "items_prior":
        p = data.draw(st.one_of(unknown_word.filter(lambda s: s != "negative"), st.integers(), st.floats()))
        rejects(lambda: UserItemModel(c, items_prior=p), "items_prior")
    else:
        p = data.draw(st.one_of(st.integers(), st.floats(), st.text(max_size=2), st.just([1, 2])))
        rejects(lambda: UserItemModel(c, None if lo < hi else (lo, hi), n_prior=p), "n_prior")


@pytest.mark.slow
@cfg(160)
@given(c=column_sums_st, data=st.data())
@counted("models")
def test_user_item_model_accepts_feasible_knowledge(c, data):
    lo, hi = max(c), sum(c)
    n = data.draw(
        st.one_of(
            st.none(),
            st.integers(lo, hi),
            st.integers(lo, hi).map(np.int64),
            st.tuples(st.integers(-5, hi), st.integers(lo, hi + 5)).filter(lambda p: p[0] <= p[1]),
        )
    )
    model = accepts(lambda: UserItemModel(c, n, items_prior=data.draw(st.sampled_from([None, "negative-binomial"]))))
    a, b = model.n_range
    assert lo <= a <= b <= hi
    assert model.m == len(c) and model.total == hi
    finite(model._log_target_n)
    if a < b:
        assert accepts(lambda: UserItemModel(c, (a, b), n_prior=pm.Poisson.dist(max(a, 1)))).n_range == (a, b)
