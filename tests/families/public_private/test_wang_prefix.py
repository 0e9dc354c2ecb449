"""Nearest points in every prefix of a public order from one pass (hybridpriv.families.public_private.wang.prefix),
checked against a fresh search of each prefix (the KD-tree and the blocked search)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hybridpriv.families.public_private.wang import Algorithm1, Algorithm2, HybridDesign, LogisticContrast, algorithm2
from hybridpriv.families.public_private.wang.algorithm2 import counts_function, prepare_criterion, run_algorithm2
from hybridpriv.families.public_private.wang.prefix import ScanPrefix, prefix_nearest
from hybridpriv.families.public_private.wang.weights import nearest_search


def _check_every_prefix(P, E, order):
    rec = prefix_nearest(P, E, order)
    for k in range(1, len(order) + 1):
        pos, dist = rec.query(k)
        for method in ("chunked", "kdtree"):
            best, d = nearest_search(P, E[order[:k]], method)
            np.testing.assert_array_equal(pos, best, err_msg=f"prefix {k}, {method}")
            np.testing.assert_allclose(dist, d, rtol=1e-12, atol=1e-12)
    return rec


def _check_scan(P, E, order, sizes):
    """ScanPrefix, asked ``sizes`` in the given sequence, against a fresh KD-tree search of each prefix:
    the same positions and bit for bit the same distances."""
    scan = ScanPrefix(P, E, order)
    for k in sizes:
        pos, dist = scan.query(k)
        best, d = nearest_search(P, E[order[:k]], "kdtree")
        np.testing.assert_array_equal(pos, best, err_msg=f"prefix {k}")
        np.testing.assert_array_equal(dist, d, err_msg=f"prefix {k}")
    return scan


@pytest.mark.parametrize("p, grid", [(1, None), (2, None), (3, None), (4, None), (7, None), (12, None), (3, 4), (2, 2),
                                     (5, 3)])
def test_the_scan_matches_a_fresh_kdtree_search_bit_for_bit(p, grid):
    """Every size asked in increasing order (the scan extended each time), then every size again out of
    order (answered from the records kept), on random points and on coarse grids (many exact ties)."""
    rng = np.random.default_rng(10 + p)
    P, E = rng.random((150, p)), rng.random((110, p))
    if grid:
        P, E = np.round(P * grid) / grid, np.round(E * grid) / grid
    order = rng.permutation(110)
    sizes = list(range(1, 111))
    _check_scan(P, E, order, sizes + list(rng.permutation(sizes)))
    _check_scan(P, E, order, [110, 3, 57])  # the largest first: one scan answers the rest


def test_the_scan_widens_when_a_row_has_more_records_than_it_keeps():
    """Distances decreasing along the order: a record at every position (more than the 16 first kept)."""
    P = np.zeros((3, 2))
    P[1] = [10.0, 10.0]
    E = np.c_[np.linspace(5, 0.1, 100), np.zeros(100)]
    scan = _check_scan(P, E, np.arange(100), [10, 40, 100, 7])
    assert scan.count[0] == 100 and scan.cap >= 100


def test_the_scan_ties_within_the_tolerance_go_to_the_earliest():
    P = np.zeros((1, 2))
    E = np.array([[1 + 1e-10, 0.0], [1.0, 0.0], [0.0, 1 - 1e-13], [3.0, 0.0]])
    scan = _check_scan(P, E, np.arange(4), [1, 2, 3, 4])
    assert scan.query(3)[0][0] == 0


def test_the_scan_reads_the_order_no_further_than_the_largest_size_asked():
    rng = np.random.default_rng(1)
    scan = ScanPrefix(rng.random((20, 3)), rng.random((500, 3)), rng.permutation(500))
    scan.query(40)
    scan.query(25)
    assert scan.done == 40
    with pytest.raises(ValueError, match="size must be at most the order's length 500, got 501"):
        scan.query(501)
    with pytest.raises(ValueError, match="size"):
        scan.query(0)


@pytest.mark.parametrize("p, grid", [(1, None), (2, None), (3, 4), (2, 2), (15, None)])
def test_every_prefix_matches_a_fresh_search(p, grid):
    rng = np.random.default_rng(p)
    P, E = rng.random((120, p)), rng.random((90, p))
    if grid:  # many exact ties: points on a coarse grid
        P, E = np.round(P * grid) / grid, np.round(E * grid) / grid
    _check_every_prefix(P, E, rng.permutation(90))


def test_ties_within_the_tolerance_go_to_the_earliest():
    P = np.zeros((1, 2))
    E = np.array([[1 + 1e-10, 0.0], [1.0, 0.0], [0.0, 1 - 1e-13], [3.0, 0.0]])
    rec = _check_every_prefix(P, E, np.arange(4))
    assert rec.query(2)[0][0] == 0 and rec.query(3)[0][0] == 0  # all three tied: the first wins


def test_an_order_with_a_record_at_every_position():
    """Distances decreasing along the order: more records than the first pass keeps (32)."""
    P = np.zeros((3, 2))
    P[1] = [10.0, 10.0]
    E = np.c_[np.linspace(5, 0.1, 100), np.zeros(100)]
    rec = _check_every_prefix(P, E, np.arange(100))
    assert rec.start[1] - rec.start[0] == 100


def test_random_order_keeps_about_log_n_records():
    rng = np.random.default_rng(0)
    P, E = rng.random((400, 3)), rng.random((2000, 3))
    rec = prefix_nearest(P, E, rng.permutation(2000))
    # expected number of records of a random order: H_2000 = 8.18 per row
    assert 7.5 < rec.row.size / 400 < 9.0


def test_query_refuses_a_bad_size():
    rec = prefix_nearest(np.zeros((2, 1)), np.arange(5.0)[:, None], np.arange(5))
    with pytest.raises(ValueError, match="size must be at most the order's length 5, got 6"):
        rec.query(6)
    with pytest.raises(ValueError, match="size"):
        rec.query(0)


@pytest.mark.parametrize("p", [14, 2])
def test_design_and_mechanisms_read_the_same_subsets_on_either_path(p):
    """The design answers prefixes from an order's records (one pass above 12 columns, the scan below);
    its counts, Algorithm 1's release and Algorithm 2's run equal those of a fresh search of every subset
    (same draws)."""
    rng = np.random.default_rng(3)
    X, Z = rng.normal(size=(300, p)), rng.normal(0.3, 1.2, size=(200, p))
    D = np.c_[X, (X[:, 0] + rng.normal(size=300) > 0)]
    E = np.c_[Z, (Z[:, 0] + rng.normal(size=200) > 0)]
    order = rng.permutation(200)
    design = HybridDesign(D, E, orders={"o": order})
    fresh = HybridDesign(D, E, orders={"o": order})
    for n in (5, 40, 200):
        a = design.nearest_prefix(order, n)
        b = fresh.nearest(order[:n], "chunked")
        np.testing.assert_array_equal(a[0], b[0])
        assert design.nearest_prefix(order, n, "kdtree")[0].tolist() == a[0].tolist()
        c = LogisticContrast()
        r1 = Algorithm1(c, 1.0, n, order="o").release(design, np.random.default_rng(9), trials=3)
        w_counts = np.bincount(b[0], minlength=n).astype(float)
        from hybridpriv.families.public_private.wang import weights_from_counts
        from hybridpriv.families.public_private.wang.mestimation import fit_rows
        w = weights_from_counts(w_counts, 300, 1.0, np.random.default_rng(9), True, size=3)
        np.testing.assert_array_equal(r1, fit_rows(E[order[:n]], w, c, "uniform")[0])
    # Algorithm 2 (three trials, their own noisy orders) against counts from a fresh KD-tree search of each subset
    c = LogisticContrast()
    crit, sens, _ = prepare_criterion(c, D, E, "brier", None, None)
    p01, e01, _ = fresh.rescaled()

    def brute(order, n):
        if order is None:
            return np.bincount(nearest_search(p01, e01, "kdtree")[0], minlength=200).astype(float)
        return np.bincount(nearest_search(p01, e01[order[:n]], "kdtree")[0], minlength=n).astype(float)

    args = (D, E, c, (0.5, 0.5, 0.5), np.array([10, 50, 200]))
    tail = (3, crit, sens, "noisy_min", True, "uniform")
    ours = run_algorithm2(*args, np.random.default_rng(4), *tail, counts_function(design))
    ref = run_algorithm2(*args, np.random.default_rng(4), *tail, brute)
    np.testing.assert_array_equal(ours["order"], ref["order"])
    np.testing.assert_array_equal(ours["theta"], ref["theta"])
    np.testing.assert_array_equal(ours["chosen"], ref["chosen"])
    one = algorithm2(D, E, c, (0.5, 0.5, 0.5), [10, 50, 200], np.random.default_rng(4), criterion="brier")
    mech = Algorithm2(c, (0.5, 0.5, 0.5), [10, 50, 200], criterion="brier")
    assert mech.run(design, np.random.default_rng(4)).chosen_size == one.chosen_size


def test_algorithm2_keeps_its_noisy_orders_to_itself():
    """Each run draws its own noisy orders: the dataset must not keep their searches (memory grows with runs)."""
    rng = np.random.default_rng(5)
    X, Z = rng.normal(size=(200, 14)), rng.normal(size=(150, 14))
    design = HybridDesign(np.c_[X, X[:, 0] > 0], np.c_[Z, Z[:, 0] > 0])
    mech = Algorithm2(LogisticContrast(), (0.5, 0.5, 0.5), [10, 50, 150], criterion="brier")
    mech.release(design, np.random.default_rng(0), trials=2)
    kept = len(design._cache)
    for seed in range(1, 4):
        mech.release(design, np.random.default_rng(seed), trials=2)
    assert len(design._cache) == kept


def test_algorithm2_reads_categorical_columns_given_as_an_array_and_checks_them_before_spending():
    from hybridpriv.accounting import Accountant

    rng = np.random.default_rng(6)
    D = np.c_[rng.integers(0, 40, 300), rng.normal(size=300), rng.integers(0, 2, 300)].astype(float)
    E = np.c_[rng.integers(0, 40, 200), rng.normal(size=200), rng.integers(0, 2, 200)].astype(float)
    args = (D, E, "logistic", (0.5, 0.5, 0.5), [20, 200])
    a = algorithm2(*args, np.random.default_rng(1), categorical=np.array([0]), criterion="brier")
    b = algorithm2(*args, np.random.default_rng(1), categorical=[0], criterion="brier")
    np.testing.assert_array_equal(a.theta, b.theta)
    acc = Accountant({"private": (math.inf, 0.0)})
    with pytest.raises(ValueError, match="categorical column index"):
        algorithm2(*args, np.random.default_rng(1), categorical=np.array([0, 7]), criterion="brier", accountant=acc)
    assert acc.spent_epsilon()["private"] == 0
