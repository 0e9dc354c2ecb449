"""hybridpriv.core.validation: the user-item validators shared by theory and the mechanisms."""

import numpy as np
import pytest
from scipy import sparse

from hybridpriv import theory
from hybridpriv.core import validation
from hybridpriv.core.validation import check_contribution_bounds, check_user_item_matrix


def test_the_validators_are_the_ones_theory_and_the_estimators_use():
    assert theory.check_user_item_matrix is check_user_item_matrix
    assert theory.check_contribution_bounds is check_contribution_bounds
    assert set(validation.__all__) == {"check_contribution_bounds", "check_rng", "check_seed", "check_trials",
                                       "check_user_item_matrix"}


def test_one_trials_seed_and_rng_validator_serves_every_module():
    from hybridpriv import noise as mechanisms
    from hybridpriv.core import random
    from hybridpriv.engine import evaluate
    from hybridpriv.families.grouped import estimator
    from hybridpriv.families.user_item import mechanisms as useritem

    assert random.check_seed is validation.check_seed and mechanisms.check_rng is validation.check_rng
    for module in (evaluate, estimator, useritem):
        assert module.check_trials is validation.check_trials, module.__name__


def test_trials_must_be_an_integer_at_least_the_minimum():
    assert validation.check_trials(np.int64(3)) == 3 and type(validation.check_trials(np.int64(3))) is int
    assert validation.check_trials(2, minimum=2) == 2
    for bad, error in ((True, TypeError), (2.0, TypeError), ("3", TypeError), (0, ValueError), (-5, ValueError)):
        with pytest.raises(error, match=r"^repeats must be an integer >= 1, got "):
            validation.check_trials(bad, "repeats")
    with pytest.raises(ValueError, match=r"trials must be an integer >= 2, got 1$"):
        validation.check_trials(1, minimum=2)


def test_a_matrix_becomes_canonical_csr_with_float_ones():
    dense = np.array([[1, 0, 1], [0, 0, 0], [True, True, False]])
    for form in (dense, dense.astype(bool), dense.astype(float), dense.tolist(), sparse.coo_array(dense),
                 sparse.csc_matrix(dense)):
        csr = check_user_item_matrix(form)
        assert isinstance(csr, sparse.csr_array) and csr.has_canonical_format
        assert csr.shape == (3, 3) and csr.dtype == float and csr.nnz == 4
        np.testing.assert_array_equal(csr.toarray(), dense.astype(float))
    # explicit zeros are dropped, duplicates summed (and then refused: a user reports an item once)
    with_zero = sparse.csr_array((np.array([1.0, 0.0]), np.array([0, 1]), np.array([0, 2])), shape=(1, 2))
    assert check_user_item_matrix(with_zero).nnz == 1
    dup = sparse.coo_array(([1, 1], ([0, 0], [1, 1])), shape=(1, 2))
    with pytest.raises(ValueError, match=r"matrix must be binary \(0/1\), got 1 other value\(s\) \(first: 2"):
        check_user_item_matrix(dup)
    with pytest.raises(ValueError, match="data must have at least one user and one item"):
        check_user_item_matrix(np.zeros((0, 2)), name="data")


@pytest.mark.parametrize(
    "k, m, expected, scalar",
    [(3, None, [3], True), (np.int64(2), 4, [2], True), ([1, 2, 4], 4, [1, 2, 4], False), (np.array([5]), None, [5], False)],
)
def test_contribution_bounds(k, m, expected, scalar):
    ks, is_scalar = check_contribution_bounds(k, m)
    assert ks.dtype == np.int64 and ks.tolist() == expected and is_scalar is scalar


@pytest.mark.parametrize(
    "k, m, exc, match",
    [
        (0, None, ValueError, "k must be >= 1, got 0"),
        (5, 4, ValueError, r"k must be <= m \(the number of items\), got k=5 with m=4"),
        ([1, 5], 4, ValueError, r"got k=5 with m=4"),
        (2.0, None, TypeError, "k must be an integer, got 2.0"),
        (True, None, TypeError, "k must be an integer, got True"),
        ([1.0], None, TypeError, "k must hold integers"),
        ([], None, ValueError, "k must hold at least one value"),
        ([[1]], None, ValueError, "k must be an integer or a 1-D sequence of integers, got shape"),
        ("3", None, TypeError, "k must be an integer"),
        (2**70, None, ValueError, r"k must be an integer in \[1, 2\*\*63\)"),
    ],
)
def test_bad_contribution_bounds_name_the_parameter(k, m, exc, match):
    with pytest.raises(exc, match=match):
        check_contribution_bounds(k, m)
