"""Contribution-bounded user-item counts (Zeber & Lopatka) and their exact risk.

The closed form ``hybridpriv.theory.user_item_risk`` is checked two independent ways: by
brute-force enumeration of every subset each user may keep on a tiny matrix (exact, all
subsets equally likely, the Laplace variance added analytically), and by Monte Carlo of
:class:`ContributionBoundedCounts` (its ``release``) on random sparse matrices (within 4 standard errors).
The sampling itself is checked directly: each user keeps exactly ``min(k, r_i)`` of their own
items, uniformly over subsets (chi-square), and nothing else is ever counted.
Seeds are fixed (SeedSequence-derived).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import sparse, stats

from hybridpriv.core.privacy import Guarantee
from hybridpriv.estimators import (
    ContributionBoundedCounts,
    bounded_counts,
    monte_carlo_user_item_loss,
    sample_kept_entries,
)
from hybridpriv.theory import check_user_item_matrix, user_item_risk, user_item_risk_terms

ROOT_SEED = 0x05E_2_17E


def make_rng(key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([ROOT_SEED, key]))


def random_matrix(key: int, n: int, m: int, mean_items: float) -> sparse.csr_array:
    """A random binary matrix with Zipf-like item popularity, some empty users and an empty item."""
    rng = make_rng(1000 + key)
    pop = 1.0 / np.arange(1, m + 1) ** 0.7
    p = np.minimum(pop / pop.sum() * mean_items, 0.95)
    dense = rng.random((n, m)) < p
    dense[:, -1] = False  # an item nobody reported
    dense[rng.random(n) < 0.05] = False  # some users report nothing
    dense[0, :] = True  # one heavy user: r = m - 1
    return sparse.csr_array(dense.astype(np.int8))


# A tiny matrix for exact enumeration: users with r = 3, 3, 4, 1, 0 over m = 4 items.
TINY = np.array(
    [
        [1, 1, 1, 0],
        [1, 0, 1, 1],
        [1, 1, 1, 1],
        [0, 1, 0, 0],
        [0, 0, 0, 0],
    ]
)


def brute_force(matrix: np.ndarray, k: int, epsilon: float) -> tuple[float, float, float]:
    """(bias^2, sampling variance, noise) by enumerating every combination of kept subsets."""
    rows = [np.flatnonzero(row) for row in matrix]
    choices = [list(itertools.combinations(items, min(k, items.size))) for items in rows]
    truth = matrix.sum(axis=0).astype(float)
    counts = []
    for combo in itertools.product(*choices):  # every combination is equally likely
        c = np.zeros(matrix.shape[1])
        for subset in combo:
            c[list(subset)] += 1
        counts.append(c)
    counts = np.array(counts)
    mean = counts.mean(axis=0)
    bias2 = float(np.sum((mean - truth) ** 2))
    variance = float(np.sum(counts.var(axis=0)))
    noise = matrix.shape[1] * 2.0 * (k / epsilon) ** 2  # Var Lap(b) = 2 b^2 per item
    mse = float(np.mean(np.sum((counts - truth) ** 2, axis=1)))
    assert math.isclose(mse, bias2 + variance, rel_tol=1e-12)
    return bias2, variance, noise


# -- exact risk -----------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 3, 4])
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_risk_matches_brute_force_enumeration(k, epsilon):
    bias2, variance, noise = brute_force(TINY, k, epsilon)
    terms = user_item_risk_terms(sparse.csr_array(TINY), k, epsilon)
    assert terms.bias2 == pytest.approx(bias2, rel=1e-12, abs=1e-12)
    assert terms.variance == pytest.approx(variance, rel=1e-12, abs=1e-12)
    assert terms.noise == pytest.approx(noise, rel=1e-12)
    assert user_item_risk(TINY, k, epsilon) == pytest.approx(bias2 + variance + noise, rel=1e-12)


def test_risk_vectorised_over_k_matches_scalar_calls():
    m = random_matrix(0, 150, 20, 4.0)
    ks = np.arange(1, 11)
    vec = user_item_risk(m, ks, 1.3)
    assert isinstance(vec, np.ndarray) and vec.shape == (10,)
    scalar = [user_item_risk(m, int(k), 1.3) for k in ks]
    assert all(isinstance(s, float) for s in scalar)
    np.testing.assert_allclose(vec, scalar, rtol=1e-12)
    terms = user_item_risk_terms(m, list(ks), 1.3)
    np.testing.assert_allclose(terms.total, vec, rtol=1e-12)
    np.testing.assert_allclose(user_item_risk(m, [3], 1.3), [scalar[2]], rtol=1e-12)


def test_risk_no_bias_once_k_reaches_the_largest_row():
    m = random_matrix(1, 80, 12, 3.0)
    kmax = int(np.diff(m.indptr).max())
    terms = user_item_risk_terms(m, kmax, 0.7)
    assert terms.bias2 == 0.0 and terms.variance == 0.0
    assert terms.noise == pytest.approx(12 * 2 * (kmax / 0.7) ** 2)


@pytest.mark.parametrize(
    "key,shape,mean_items,ks,epsilon",
    [
        (1, (300, 25), 4.0, [1, 2, 4], 1.0),
        (2, (200, 40), 8.0, [1, 3, 6], 2.0),
        (3, (500, 15), 2.5, [1, 2, 5], 0.5),
    ],
)
def test_risk_matches_monte_carlo_of_the_mechanism(key, shape, mean_items, ks, epsilon):
    matrix = random_matrix(key, *shape, mean_items)
    truth = np.asarray(matrix.sum(axis=0), dtype=float).ravel()
    exact = user_item_risk(matrix, ks, epsilon)
    trials = 4000
    rng = make_rng(key)
    for k, want in zip(ks, exact):
        out = ContributionBoundedCounts(k, epsilon).release(matrix, rng, trials=trials)
        assert out.shape == (trials, shape[1])
        loss = np.sum((out - truth) ** 2, axis=1)
        se = loss.std(ddof=1) / math.sqrt(trials)
        assert abs(loss.mean() - want) < 4 * se, f"k={k}: MC {loss.mean():.6g} vs exact {want:.6g}, 4 SE = {4 * se:.3g}"


def test_bias_and_sampling_variance_match_monte_carlo_per_item():
    """The parts before noise: per item, E X_j = sum q_i and Var X_j = sum q_i (1 - q_i)."""
    matrix = random_matrix(4, 250, 20, 6.0)
    k, trials = 2, 20000
    r = np.diff(matrix.indptr)
    q = np.minimum(k, r) / np.maximum(r, 1)
    mean_j = matrix.T @ q
    var_j = matrix.T @ (q * (1 - q))
    x = bounded_counts(matrix, k, make_rng(5), trials)
    se_mean = np.sqrt(np.maximum(var_j, 1e-12) / trials)
    assert np.all(np.abs(x.mean(axis=0) - mean_j) < 4.5 * se_mean + 1e-12)
    # total sampling variance: sum_j Var X_j, with the delta-method SE of each sample variance
    c = x - x.mean(axis=0)
    s2 = (c**2).sum(axis=0) / (trials - 1)
    se_s2 = np.sqrt(np.maximum((c**4).mean(axis=0) - s2**2, 0.0) / trials)
    assert abs(s2.sum() - var_j.sum()) < 4 * math.sqrt(np.sum(se_s2**2))


# -- the Monte Carlo path -------------------------------------------------------------------


def test_monte_carlo_squared_loss_agrees_with_exact_risk():
    matrix = random_matrix(6, 300, 30, 5.0)
    ks = [1, 2, 3, 5]
    exact = user_item_risk(matrix, ks, 1.0)
    mc = monte_carlo_user_item_loss(matrix, ks, 1.0, make_rng(6), trials=3000)
    assert mc.mean.shape == (4,) and mc.se.shape == (4,)
    assert np.all(np.abs(mc.mean - exact) < 4 * mc.se)
    single = monte_carlo_user_item_loss(matrix, 2, 1.0, make_rng(7), trials=3000)
    assert isinstance(single.mean, float) and isinstance(single.se, float)
    assert abs(single.mean - exact[1]) < 4 * single.se


def test_monte_carlo_top10_loss_agrees_with_its_closed_form():
    """The per-item formula restricted to the 10 most counted items."""
    matrix = random_matrix(8, 300, 30, 5.0)
    k, epsilon = 2, 1.0
    truth = np.asarray(matrix.sum(axis=0)).ravel()
    top = np.argsort(-truth, kind="stable")[:10]
    r = np.diff(matrix.indptr)
    q = np.minimum(k, r) / np.maximum(r, 1)
    per_item = (matrix.T @ (q * (1 - q))) + (matrix.T @ (1 - q)) ** 2 + 2 * (k / epsilon) ** 2
    exact = per_item[top].sum()
    mc = monte_carlo_user_item_loss(matrix, k, epsilon, make_rng(8), trials=4000, loss="top10")
    assert abs(mc.mean - exact) < 4 * mc.se


def test_monte_carlo_max_loss_without_sampling_is_the_max_of_laplace_magnitudes():
    """With k >= every r_i nothing is dropped: max_j |Lap(b)| has mean b * H_m (max of m exponentials)."""
    matrix = random_matrix(9, 100, 12, 2.0)
    k = int(np.diff(matrix.indptr).max())
    epsilon = 3.0
    exact = (k / epsilon) * np.sum(1.0 / np.arange(1, 13))
    mc = monte_carlo_user_item_loss(matrix, k, epsilon, make_rng(9), trials=4000, loss="max")
    assert abs(mc.mean - exact) < 4 * mc.se


# -- the sampling of kept items -------------------------------------------------------------


def per_user_kept(mask: np.ndarray, indptr: np.ndarray) -> np.ndarray:
    cs = np.concatenate([np.zeros((mask.shape[0], 1), dtype=np.int64), np.cumsum(mask, axis=1)], axis=1)
    return cs[:, indptr[1:]] - cs[:, indptr[:-1]]


@pytest.mark.parametrize("k", [1, 2, 5])
def test_each_user_keeps_exactly_min_k_r_of_their_own_items(k):
    matrix = random_matrix(10, 120, 15, 5.0)
    csr = check_user_item_matrix(matrix)
    r = np.diff(csr.indptr)
    mask = sample_kept_entries(matrix, k, make_rng(10 + k), trials=200)
    assert mask.shape == (200, csr.nnz)
    np.testing.assert_array_equal(per_user_kept(mask, csr.indptr), np.broadcast_to(np.minimum(k, r), (200, r.size)))
    # same seed: the counts of the mechanism are the counts of these kept entries
    from_mask = np.stack([np.bincount(csr.indices[row], minlength=15) for row in mask])
    np.testing.assert_array_equal(bounded_counts(matrix, k, make_rng(10 + k), trials=200), from_mask)


def test_kept_subset_is_uniform_chi_square():
    """User with r = 4 among m = 6 items, k = 2: each of the 6 pairs with probability 1/6."""
    items = [0, 2, 3, 5]
    matrix = np.zeros((3, 6), dtype=int)
    matrix[0, items] = 1
    matrix[1, [1, 2, 4]] = 1  # other users share the run: independence does not break uniformity
    matrix[2, [0, 5]] = 1
    mech = ContributionBoundedCounts(2, 1.0)
    trials = 30000
    counts = mech.bounded_counts(matrix[:1], make_rng(11), trials)  # one user: the counts are the subset
    assert np.all(counts[:, [1, 4]] == 0)
    assert np.all(counts.sum(axis=1) == 2)
    pairs = list(itertools.combinations(items, 2))
    code = {p: a for a, p in enumerate(pairs)}
    kept = [code[tuple(np.flatnonzero(row))] for row in counts]
    observed = np.bincount(kept, minlength=6)
    assert stats.chisquare(observed).pvalue > 1e-4, observed
    # the same through the entry mask, with other users in the matrix
    mask = sample_kept_entries(matrix, 2, make_rng(12), trials)
    user0 = mask[:, :4]  # user 0's entries come first, in item order
    kept = [code[tuple(np.array(items)[row])] for row in user0]
    observed = np.bincount(kept, minlength=6)
    assert stats.chisquare(observed).pvalue > 1e-4, observed


def test_no_item_outside_a_users_items_is_ever_counted():
    matrix = random_matrix(13, 200, 20, 5.0)
    truth = np.asarray(matrix.sum(axis=0)).ravel()
    for k in (1, 3):
        x = bounded_counts(matrix, k, make_rng(13 + k), trials=500)
        assert np.all(x >= 0) and np.all(x <= truth)
        assert np.all(x[:, truth == 0] == 0)
        r = np.diff(matrix.indptr)
        assert np.all(x.sum(axis=1) == np.minimum(k, r).sum())
    kmax = int(np.diff(matrix.indptr).max())
    np.testing.assert_array_equal(bounded_counts(matrix, kmax, make_rng(15), trials=3), np.tile(truth, (3, 1)))


# -- inputs, determinism, guarantee ---------------------------------------------------------


def test_same_seed_same_release_and_input_formats_agree():
    matrix = random_matrix(16, 100, 10, 4.0)
    mech = ContributionBoundedCounts(2, 1.0)
    a = mech.release(matrix, make_rng(16), trials=5)
    np.testing.assert_array_equal(a, mech.release(matrix, make_rng(16), trials=5))
    assert not np.array_equal(a, mech.release(matrix, make_rng(17), trials=5))
    dense = matrix.toarray()
    for form in (dense, dense.astype(bool), dense.astype(float), sparse.csr_matrix(dense), sparse.coo_array(dense)):
        np.testing.assert_array_equal(mech.release(form, make_rng(16), trials=5), a)
    # a non-canonical CSR (unsorted indices) is sorted first, and the input is left alone
    coo = sparse.coo_array(dense)
    perm = make_rng(18).permutation(coo.nnz)
    shuffled = sparse.csr_array((coo.data[perm], (coo.row[perm], coo.col[perm])), shape=dense.shape)
    shuffled.has_sorted_indices = False
    before = shuffled.indices.copy()
    np.testing.assert_array_equal(mech.release(shuffled, make_rng(16), trials=5), a)
    np.testing.assert_array_equal(shuffled.indices, before)
    # explicit zeros are ignored
    with_zero = sparse.csr_array(dense)
    with_zero.data[0] = 0
    assert check_user_item_matrix(with_zero).nnz == matrix.nnz - 1


def test_guarantee_sensitivity_label_and_the_mechanism_protocol():
    from hybridpriv.core.mechanism import Mechanism

    mech = ContributionBoundedCounts(3, 0.5)
    assert isinstance(mech, Mechanism) and mech.data_kind == "user-item"
    assert mech.privacy == {"users": Guarantee(0.5, 0.0, "add-remove")}
    assert mech.describe_privacy().startswith("users: epsilon=0.5")
    assert mech.sensitivity == 3 and mech.label == "k=3"
    assert mech.scale == pytest.approx(6.0)
    assert mech.get_params() == {"k": 3, "epsilon": 0.5}
    twin = mech.clone()
    assert twin is not mech and twin.get_params() == mech.get_params() and twin.fingerprint() == mech.fingerprint()
    assert ContributionBoundedCounts(3, 0.6).fingerprint() != mech.fingerprint()
    assert ContributionBoundedCounts(np.int64(2), 1).k == 2
    assert not hasattr(mech, "estimate")  # one spelling: release


@pytest.mark.parametrize(
    "k,epsilon,exc,match",
    [
        (0, 1.0, ValueError, "k must be >= 1, got 0"),
        (-1, 1.0, ValueError, "k must be >= 1, got -1"),
        (1.5, 1.0, TypeError, "k must be an integer, got 1.5"),
        (True, 1.0, TypeError, "k must be an integer"),
        ("2", 1.0, TypeError, "k must be an integer"),
        (2, 0.0, ValueError, "epsilon must be > 0, got 0.0"),
        (2, -1.0, ValueError, "epsilon must be > 0"),
        (2, math.nan, ValueError, "epsilon must be > 0, got nan"),
        (2, math.inf, ValueError, "epsilon must be finite"),
        (2, "1", TypeError, "epsilon must be a real number"),
    ],
)
def test_bad_parameters_raise_naming_the_parameter(k, epsilon, exc, match):
    with pytest.raises(exc, match=match):
        ContributionBoundedCounts(k, epsilon)
    with pytest.raises(exc, match=match):
        user_item_risk(TINY, k, epsilon)


@pytest.mark.parametrize(
    "matrix,exc,match",
    [
        (np.array([[1, 2], [0, 1]]), ValueError, r"matrix must be binary \(0/1\).*first: 2"),
        (np.array([[1.0, math.nan], [0, 1]]), ValueError, "matrix contains NaN"),
        (np.array([[1, -1], [0, 1]]), ValueError, "matrix must be binary"),
        (np.ones((2, 2, 2)), ValueError, "matrix must be 2-D.*got 3-D"),
        (np.ones(4), ValueError, "matrix must be 2-D.*got 1-D"),
        (sparse.coo_array(np.ones((2, 2, 2))), ValueError, "matrix must be 2-D.*got 3-D"),
        (np.zeros((0, 3)), ValueError, "at least one user and one item"),
        (np.array([["a", "b"]]), TypeError, "matrix must hold numbers"),
        ("matrix", TypeError, "matrix must be a scipy.sparse matrix"),
        (sparse.csr_array(np.array([[1, 3], [0, 1]])), ValueError, "matrix must be binary"),
    ],
)
def test_bad_matrices_raise(matrix, exc, match):
    with pytest.raises(exc, match=match):
        ContributionBoundedCounts(1, 1.0).release(matrix, make_rng(0))
    with pytest.raises(exc, match=match):
        user_item_risk(matrix, 1, 1.0)


def test_k_larger_than_the_number_of_items_is_an_error():
    with pytest.raises(ValueError, match=r"k must be <= m \(the number of items\), got k=5 with m=4"):
        ContributionBoundedCounts(5, 1.0).release(TINY, make_rng(0))
    with pytest.raises(ValueError, match=r"k must be <= m \(the number of items\)"):
        user_item_risk(TINY, [1, 5], 1.0)
    ContributionBoundedCounts(4, 1.0).release(TINY, make_rng(0))  # k = m is fine


def test_bad_k_sequences_trials_rng_and_loss():
    with pytest.raises(TypeError, match="k must hold integers"):
        user_item_risk(TINY, [1.0, 2.0], 1.0)
    with pytest.raises(ValueError, match="k must be >= 1, got 0"):
        user_item_risk(TINY, [0, 1], 1.0)
    with pytest.raises(ValueError, match="k must be an integer or a 1-D sequence"):
        user_item_risk(TINY, [[1, 2]], 1.0)
    with pytest.raises(ValueError, match="k must hold at least one value"):
        user_item_risk(TINY, [], 1.0)
    mech = ContributionBoundedCounts(1, 1.0)
    with pytest.raises(ValueError, match="trials must be an integer >= 1, got 0"):
        mech.release(TINY, make_rng(0), trials=0)
    with pytest.raises(TypeError, match="trials must be an integer"):
        mech.release(TINY, make_rng(0), trials=2.0)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        mech.release(TINY, 0)
    with pytest.raises(ValueError, match="loss must be one of"):
        monte_carlo_user_item_loss(TINY, 1, 1.0, make_rng(0), 10, loss="mean")
    with pytest.raises(ValueError, match="trials must be an integer >= 2"):
        monte_carlo_user_item_loss(TINY, 1, 1.0, make_rng(0), 1)


def test_users_with_no_items_contribute_nothing():
    empty = np.zeros((3, 4), dtype=int)
    assert user_item_risk(empty, 2, 1.0) == pytest.approx(4 * 2 * 4.0)
    np.testing.assert_array_equal(bounded_counts(empty, 2, make_rng(0), 2), np.zeros((2, 4)))
    assert ContributionBoundedCounts(2, 1.0).release(empty, make_rng(0), 3).shape == (3, 4)
