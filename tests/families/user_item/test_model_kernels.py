"""Tests of the compiled core for user-item matrices (``hybridpriv.families.user_item.model_*``: feasibility,
realize, chains, mixing).

Everything is checked against brute force: existence of matrices (Gale-Ryser), counts of sorted
row sums (dynamic programme), matrices with given margins (Curveball uniformity), and every
``(n, sorted r)`` state of the Metropolis-Hastings chain over row-sum histograms.  Sampler
checks are chi-square goodness-of-fit tests at p > 1e-3 with fixed seeds, each paired with a
deliberately broken variant that must fail (p < 1e-6).  Run with ``-s`` to see timings.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter

from _support.bad_input import time_limit
import numpy as np
import pytest
from scipy import stats

from hybridpriv.families.user_item.model_chains import _curveball_kernel, _h_chain, _randint, curveball, h_chain
from hybridpriv.families.user_item.model_checks import csr_margins
from hybridpriv.families.user_item import model_feasibility as feasibility
from hybridpriv.families.user_item.model_feasibility import (
    _c_prefix,
    gale_ryser_violation,
    histogram_feasible,
    log_count_cost,
    log_count_row_sums,
    start_histogram,
)
from hybridpriv.families.user_item.model_step import initial_histogram
from hybridpriv.families.user_item.model_mixing import mixing_check
from hybridpriv.families.user_item.model_realize import realize_greedy, realize_networkx
from _support.matrices import all_matrices


# ----------------------------------------------------------------------------------------------
# brute-force helpers
# ----------------------------------------------------------------------------------------------
def sorted_row_sums(c, n):
    """Every m >= r_1 >= ... >= r_n >= 1 with sum(c) that some binary matrix realizes with c.

    Existence uses :func:`gale_ryser_violation` (checked against exhaustive search of matrices
    in ``test_gale_ryser_matches_exhaustive_search``); enumerating all matrices is too slow here."""
    m, total = len(c), sum(c)
    out = []
    for r in itertools.combinations_with_replacement(range(m, 0, -1), n):
        if sum(r) == total and gale_ryser_violation(r, c) == -1:
            out.append(r)
    return out


def hist_of(r, m):
    return tuple(np.bincount(np.asarray(r, dtype=int), minlength=m + 1)[1:].tolist())


def chisq_p(counts: Counter, expected: dict) -> float:
    keys = list(expected)
    assert set(counts) <= set(keys), set(counts) - set(keys)
    total = sum(counts.values())
    obs = np.array([counts.get(k, 0) for k in keys], dtype=float)
    exp = np.array([expected[k] for k in keys], dtype=float)
    return float(stats.chisquare(obs, exp / exp.sum() * total).pvalue)


def csr_from_rows(rows):
    indptr = np.concatenate(([0], np.cumsum([len(x) for x in rows]))).astype(np.int64)
    indices = np.array([j for row in rows for j in row], dtype=np.int64)
    return indptr, indices


def rows_of(indptr, indices):
    return tuple(tuple(indices[indptr[i] : indptr[i + 1]].tolist()) for i in range(indptr.size - 1))


def random_matrix(rng, n, m, mean_items, zipf=1.0):
    """Users pick 1 + Poisson(mean_items - 1) items (capped at m) with Zipf-like popularity."""
    w = 1.0 / np.arange(1, m + 1) ** zipf
    w /= w.sum()
    r = np.minimum(1 + rng.poisson(mean_items - 1, size=n), m)
    rows = [tuple(sorted(rng.choice(m, size=k, replace=False, p=w).tolist())) for k in r]
    return csr_from_rows(rows)


# ----------------------------------------------------------------------------------------------
# 1-2. Gale-Ryser
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n,m", [(1, 3), (2, 2), (3, 3), (4, 2), (2, 4)])
def test_gale_ryser_matches_exhaustive_search(n, m):
    feasible = set()
    for bits in itertools.product((0, 1), repeat=n * m):
        a = np.array(bits).reshape(n, m)
        feasible.add((tuple(a.sum(1)), tuple(a.sum(0))))
    for r in itertools.product(range(m + 2), repeat=n):
        for c in itertools.product(range(n + 2), repeat=m):
            v = gale_ryser_violation(r, c)
            if sum(r) != sum(c):
                assert v == 0
                continue
            assert (v == -1) == ((r, c) in feasible), (r, c, v)
            if v > 0:  # the first violated p, computed directly
                cs = sorted(c, reverse=True)
                bad = [p for p in range(1, m + 1) if sum(min(x, p) for x in r) < sum(cs[:p])]
                assert v == bad[0]
            if min(r) >= 1 and max(r) <= m:
                assert histogram_feasible(hist_of(r, m), c) == (v == -1)


def test_gale_ryser_validation_messages():
    with pytest.raises(ValueError, match=r"r must have entries >= 0, got \[1, -1\]"):
        gale_ryser_violation([1, -1], [0])
    with pytest.raises(ValueError, match="c must be a 1-D array of integers, got"):
        gale_ryser_violation([1], [0.5])
    with pytest.raises(ValueError, match="h must have length len"):
        histogram_feasible([1, 0], [1, 0, 0])
    assert histogram_feasible([0, 0, 1], [1, 1, 1])
    assert histogram_feasible([3, 0, 0], [3, 0, 0])  # 3 users with item 0 only
    assert histogram_feasible([1, 1], [2, 1])  # r = (1, 2): item 0 in both rows
    assert histogram_feasible([0, 2, 0], [2, 1, 1])  # r = (2, 2): rows {0, 1}, {0, 2}
    assert not histogram_feasible([0, 0, 1], [2, 1, 0])  # one user cannot hold item 0 twice
    assert gale_ryser_violation([3], [1, 1]) == 0  # sums differ
    assert gale_ryser_violation([2, 0], [1, 1]) == -1
    assert gale_ryser_violation([0, 2], [2, 0]) == 1  # one non-empty row cannot fill c_1 = 2


# ----------------------------------------------------------------------------------------------
# 3. counting sorted row sums
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "c", [[4, 2, 2, 1], [3, 3, 2], [2, 2, 2, 1, 1], [5, 1, 1], [1, 1, 1, 1], [3, 0, 2], [6, 4, 3, 2, 2, 1]]
)
def test_log_count_matches_enumeration(c):
    total = sum(c)
    ns = np.arange(0, total + 2)
    got = log_count_row_sums(c, ns)
    for n, lg in zip(ns, got, strict=True):
        count = len(sorted_row_sums(c, int(n))) if n > 0 else 0
        if count == 0:
            assert lg == -np.inf, (c, n, lg)
        else:
            assert math.isclose(math.exp(lg), count, rel_tol=1e-9), (c, n, math.exp(lg), count)
    # n_values in any order, repeated
    assert np.array_equal(log_count_row_sums(c, ns[::-1]), got[::-1])


def test_log_count_cost_and_timing():
    # m = 100 items, sum(c) ~ 1000, every n up to 300
    c = np.maximum(1, np.round(300 / np.arange(1, 101) ** 0.6)).astype(np.int64)
    c = c * 1000 // c.sum()
    c = np.maximum(c, 1)
    ns = np.arange(int(c.max()), 301)
    cost = log_count_cost(c, 300)
    log_count_row_sums(c, ns[:2])  # compile
    t0 = time.perf_counter()
    lg = log_count_row_sums(c, ns)
    dt = time.perf_counter() - t0
    print(f"\nlog_count_row_sums: m={c.size}, sum(c)={c.sum()}, n in [{ns[0]}, {ns[-1]}]: "
          f"{dt * 1e3:.1f} ms, {cost:.3g} cells, log count(300) = {lg[-1]:.1f}")
    assert np.all(np.isfinite(lg)) and np.all(lg > 0)
    assert dt < 5.0
    assert log_count_cost([4, 2, 2, 1], 9) > 0


def log_count_cost_loop(c, n_max):
    """The reference: ``log_count_cost`` before issue 23, one NumPy sweep of ``N = sum(c)`` per ``p``."""
    cc = np.asarray(c, dtype=np.int64)
    Cpref = _c_prefix(cc)
    m, N = cc.size, int(Cpref[-1])
    cost = 0
    for p in range(2, m + 1):
        xp = min(n_max, N // p)
        S = np.arange(int(Cpref[p]), N + 1, dtype=np.int64)
        cost += int(np.minimum(xp, S // p).sum()) + S.size
    return cost + max(m, 1) * (n_max + 1)


@pytest.mark.parametrize("path", ["int64", "int64-small-blocks", "python-ints"])
def test_log_count_cost_closed_form_matches_the_loop(path, monkeypatch):
    """Random small cases (zeros, ties, n_max below, at and above sum(c)): the closed form equals the
    cell-by-cell loop; with a ``limit`` it returns the exact count up to the limit, else a number above
    the limit and at most the count.  Each arithmetic path of the closed form is checked."""
    if path == "int64-small-blocks":
        monkeypatch.setattr(feasibility, "_COST_BLOCK", 3)
    if path == "python-ints":
        monkeypatch.setattr(feasibility, "_COST_INT64_SUMS", 0)
    rng = np.random.default_rng(23)
    for _ in range(400):
        m = int(rng.integers(0, 14))
        c = rng.integers(0, int(rng.integers(1, 40)), m)
        total = int(c.sum())
        n_max = int(rng.choice([0, 1, total, max(total // 3, 0), int(rng.integers(0, 3 * total + 3)), 10**12]))
        want = log_count_cost_loop(c, n_max)
        assert log_count_cost(c, n_max) == want, (c.tolist(), n_max)
        assert log_count_cost(list(c), np.int64(min(n_max, 2**62))) == log_count_cost_loop(c, min(n_max, 2**62))
        limit = int(rng.integers(0, want + 2))
        got = log_count_cost(c, n_max, limit=limit)
        assert got == want if want <= limit else limit < got <= want, (c.tolist(), n_max, limit, got, want)
    # the docstring's example of the timing test, and where it starts
    assert log_count_cost([4, 2, 2, 1], 9) == log_count_cost_loop([4, 2, 2, 1], 9)
    assert log_count_cost([], 5) == 6 and log_count_cost([7], 3) == 4


def test_log_count_cost_of_huge_sums_is_exact():
    """Sums near and above 2**31 (int64 path vs Python integers) agree; sums beyond int64 still count.
    (``limit=None`` is passed explicitly: the cell-by-cell loop before issue 23 would allocate 16 GB
    here; it fails on the unknown argument instead.)"""
    rng = np.random.default_rng(5)
    for _ in range(200):
        m = int(rng.integers(2, 40))
        c = np.floor(rng.dirichlet(np.full(m, rng.uniform(0.05, 3))) * (2**31 - 1)).astype(np.int64)
        n_max = int(rng.choice([int(c.sum()), int(c.sum()) // 3, 2**62]))
        fast = log_count_cost(c, n_max, limit=None)
        feasibility._COST_INT64_SUMS, old = 0, feasibility._COST_INT64_SUMS
        try:
            assert log_count_cost(c, n_max) == fast, (c.tolist(), n_max)
        finally:
            feasibility._COST_INT64_SUMS = old
    # the sum overflows int64 (Python integers): 3 x 11 for the last sweep; p = 2: S in [2**63, 2**63 + 5],
    # min(10, S // 2) = 10, so 6 x 11; p = 3: S = N only, 11
    assert log_count_cost([2**62, 2**62, 5], 10, limit=None) == 33 + 66 + 11


def test_log_count_cost_is_fast_for_a_million_items():
    """Issue 23: the size guard itself looped over every item and every count (p = 2..m, arrays of
    sum(c)); m = 1,000,000 items hung for minutes.  A hang guard only (generous CPU bound; the
    measured time is printed with ``-s``)."""
    c = np.ones(1_000_000, dtype=np.int64)
    t0 = time.process_time()
    with time_limit(120.0):
        bounded = log_count_cost(c, c.size, limit=200_000_000)
        big = log_count_cost(np.full(100_000, 10_000), 10**9, limit=200_000_000)
        exact = log_count_cost(c, c.size)
    dt = time.process_time() - t0
    print(f"\nlog_count_cost, m = 1e6: {dt * 1e3:.1f} ms CPU")
    assert exact > c.size * (c.size + 1)  # the last sweep alone (the closed form is checked above)
    assert 200_000_000 < bounded <= exact and big > 200_000_000
    assert dt < 30.0


def test_start_histogram_matches_initial_histogram():
    """The closed form of the sampler's start (conjugate of c, then rows split off the largest) gives
    the same histogram as ``model_step.initial_histogram``'s loop, on random margins, every n."""
    rng = np.random.default_rng(11)
    cases = [[4, 2, 2, 1], [1], [3], [5, 1, 1], [0, 3, 0, 2], [1, 1, 1, 1]]
    cases += [rng.integers(0, int(rng.integers(1, 25)), int(rng.integers(1, 12))).tolist() for _ in range(300)]
    for c in cases:
        c = np.asarray(c, dtype=np.int64)
        if c.sum() == 0:
            with pytest.raises(ValueError, match="c must hold a positive column sum"):
                start_histogram(c, 1)
            continue
        for n in sorted({int(c.max()), int(c.sum()), int(rng.integers(c.max(), c.sum() + 1)), int(c.max()) - 1}):
            got = start_histogram(c, n)
            assert got.dtype == np.int64 and np.array_equal(got, initial_histogram(c, n)), (c.tolist(), n)
            if n >= c.max():
                assert got.sum() == n and (got * np.arange(1, c.size + 1)).sum() == c.sum()
                assert histogram_feasible(got, c)
        with pytest.raises(ValueError, match="n must be <= sum"):
            start_histogram(c, int(c.sum()) + 1)


def test_start_histogram_is_fast_for_many_users():
    """``initial_histogram`` sorts its list once per user split off (quadratic: minutes at n = 1e5,
    hours at 1e6); the closed form is O(m log m), whatever max(c).  A hang guard only."""
    t0 = time.process_time()
    with time_limit(120.0):
        h = start_histogram(np.ones(1_000_000, dtype=np.int64), 1_000_000)
        h2 = start_histogram(np.full(100_000, 100), 5_000_000)
        h3 = start_histogram([10**15, 1], 10**15)  # one huge column: no array of max(c)
    dt = time.process_time() - t0
    print(f"\nstart_histogram, n = 1e6 and 5e6: {dt * 1e3:.1f} ms CPU")
    assert h[0] == 1_000_000 and h[1:].sum() == 0
    assert h2.sum() == 5_000_000 and (h2 * np.arange(1, h2.size + 1)).sum() == 10_000_000
    assert histogram_feasible(h2, np.full(100_000, 100))
    assert h3.tolist() == [10**15 - 1, 1]
    assert dt < 30.0


# ----------------------------------------------------------------------------------------------
# 4. realizations
# ----------------------------------------------------------------------------------------------
def test_realizations_exact_margins_and_feasibility():
    rng = np.random.default_rng(4)
    n_feasible = 0
    for trial in range(300):
        n, m = int(rng.integers(1, 8)), int(rng.integers(1, 7))
        if trial % 2:  # margins of a random matrix: feasible
            a = rng.random((n, m)) < rng.random()
            r, c = a.sum(1), a.sum(0)
        else:  # random margins with equal sums: often infeasible
            r = rng.integers(0, m + 2, size=n)
            c = rng.multinomial(int(r.sum()), np.ones(m) / m)
        ok = gale_ryser_violation(r, c) == -1
        if not ok:
            for fn in (realize_greedy, realize_networkx):
                with pytest.raises(ValueError, match="r must satisfy the Gale-Ryser condition"):
                    fn(r, c)
            continue
        n_feasible += 1
        for fn in (realize_greedy, realize_networkx):
            indptr, indices = fn(r, c)
            assert indptr.dtype == np.int64 and indices.dtype == np.int64
            rr, cc = csr_margins(indptr, indices, m)
            assert np.array_equal(rr, r) and np.array_equal(cc, c)
            assert all(np.all(np.diff(x) > 0) for x in np.split(indices, indptr[1:-1]))
    assert n_feasible > 160
    with pytest.raises(ValueError, match=r"sum\(r\) must equal sum\(c\) = 3, got 2"):
        realize_greedy([1, 1], [2, 1])


def test_realize_greedy_rule():
    # row 0 takes the two largest capacities (2 at item 1, then 1 at items 0 and 2: tie -> 0)
    indptr, indices = realize_greedy([2, 1, 1], [1, 2, 1])
    assert rows_of(indptr, indices) == ((0, 1), (1,), (2,))
    # larger case with rows in a given order: exact
    rng = np.random.default_rng(1)
    ip, ix = random_matrix(rng, 3000, 100, 3.0)
    r, c = csr_margins(ip, ix, 100)
    ip2, ix2 = realize_greedy(r[::-1], c)
    assert np.array_equal(csr_margins(ip2, ix2, 100)[1], c)


# ----------------------------------------------------------------------------------------------
# 5. Curveball
# ----------------------------------------------------------------------------------------------
def curveball_frequencies(r, c, samples, thin, seed, shuffle=True):
    rng = np.random.default_rng(seed)
    indptr, indices = realize_greedy(r, c)
    counts: Counter = Counter()
    for _ in range(samples):
        if shuffle:
            curveball(indptr, indices, thin, rng)
        else:
            _curveball_kernel(indptr, indices, thin, rng, False)
        counts[rows_of(indptr, indices)] += 1
    return counts


@pytest.mark.parametrize(
    "r,c,seed", [([2, 2, 1, 1], [2, 2, 1, 1], 11), ([3, 2, 2, 1, 1], [3, 3, 2, 1], 12), ([1, 2, 2, 3], [3, 2, 2, 1], 13)]
)
def test_curveball_uniform_over_all_matrices(r, c, seed):
    mats = all_matrices(r, c)
    assert len(mats) > 5
    uniform = {mat: 1.0 for mat in mats}
    counts = curveball_frequencies(r, c, 20000, 20, seed)
    p = chisq_p(counts, uniform)
    assert p > 1e-3, p
    broken = curveball_frequencies(r, c, 20000, 20, seed, shuffle=False)
    assert chisq_p(broken, uniform) < 1e-6


def test_curveball_keeps_margins_and_sorted_rows():
    rng = np.random.default_rng(3)
    indptr, indices = random_matrix(rng, 400, 25, 4.0)
    r0, c0 = csr_margins(indptr, indices, 25)
    before = indices.copy()
    curveball(indptr, indices, 20000, rng)
    assert not np.array_equal(before, indices)
    r1, c1 = csr_margins(indptr, indices, 25)
    assert np.array_equal(r0, r1) and np.array_equal(c0, c1)
    assert all(np.all(np.diff(x) > 0) for x in np.split(indices, indptr[1:-1]))
    with pytest.raises(ValueError, match="indices must be strictly increasing within each row"):
        curveball(np.array([0, 2], dtype=np.int64), np.array([3, 1], dtype=np.int64), 1, rng)
    with pytest.raises(ValueError, match="indices must be a 1-D numpy int64 array"):
        curveball(indptr, indices.astype(np.int32), 1, rng)
    with pytest.raises(ValueError, match="n_trades must be >= 0, got -1"):
        curveball(indptr, indices, -1, rng)
    with pytest.raises(ValueError, match="rng must be a numpy.random.Generator"):
        curveball(indptr, indices, 1, 7)


def test_curveball_speed_n2000_m100():
    rng = np.random.default_rng(5)
    indptr, indices = random_matrix(rng, 2000, 100, 3.0)
    curveball(indptr, indices, 1000, rng)  # warm
    trades = 2_000_000
    t0 = time.perf_counter()
    curveball(indptr, indices, trades, rng)
    dt = time.perf_counter() - t0
    print(f"\ncurveball: n=2000, m=100, {indices.size} ones: {trades / dt / 1e6:.2f} M trades/s")
    assert trades / dt > 2e5


# ----------------------------------------------------------------------------------------------
# 6. the chain over (n, h)
# ----------------------------------------------------------------------------------------------
def exact_target(c, n_lo, n_hi, log_target_n, log_f=None):
    """Exact distribution over (n, h) by enumeration of sorted row sums."""
    m = len(c)
    target = {}
    for n in range(n_lo, n_hi + 1):
        for r in sorted_row_sums(c, n):
            h = hist_of(r, m)
            lp = log_target_n[n - n_lo]
            if log_f is not None:
                lp += math.lgamma(n + 1) + sum(hk * log_f[k] - math.lgamma(hk + 1) for k, hk in enumerate(h) if hk)
            target[(n, h)] = math.exp(lp)
    return target


def chain_frequencies(c, h0, n0, n_lo, n_hi, log_target_n, log_f, samples, thin, seed, hastings=True):
    rng = np.random.default_rng(seed)
    h, n = np.asarray(h0, dtype=np.int64), n0
    counts: Counter = Counter()
    acc = 0
    for _ in range(samples):
        h, n, a = _h_chain(h, n, c, log_target_n, log_f, thin, rng, n_lo, n_hi, hastings)
        acc += a
        counts[(n, tuple(h.tolist()))] += 1
    return counts, acc / (samples * thin)


C4 = [4, 2, 2, 1]


def test_h_chain_uniform_n_unknown_matches_enumeration():
    n_lo, n_hi = max(C4), sum(C4)
    lc = log_count_row_sums(C4, np.arange(n_lo, n_hi + 1))
    assert np.all(np.isfinite(lc))
    lt = -lc  # uniform prior on n, uniform sorted r given n
    target = exact_target(C4, n_lo, n_hi, lt)
    assert len(target) == 15
    p_n = Counter()
    for (n, _), w in target.items():
        p_n[n] += w
    assert np.allclose(list(p_n.values()), 1.0)  # P(n) uniform before normalising
    counts, rate = chain_frequencies(C4, [9, 0, 0, 0], 9, n_lo, n_hi, lt, None, 10000, 300, 21)
    p = chisq_p(counts, target)
    assert p > 1e-3, (p, rate)
    # the public wrapper gives the same results as the private one
    h, n, _ = h_chain(np.array([9, 0, 0, 0]), 9, C4, lt, None, 500, np.random.default_rng(21), n_lo, n_hi)
    h2, n2, _ = _h_chain(np.array([9, 0, 0, 0]), 9, C4, lt, None, 500, np.random.default_rng(21), n_lo, n_hi, True)
    assert n == n2 and np.array_equal(h, h2)
    # without the Hastings correction the chain samples labelled row sums instead: wrong
    broken, _ = chain_frequencies(C4, [9, 0, 0, 0], 9, n_lo, n_hi, lt, None, 10000, 300, 21, hastings=False)
    assert chisq_p(broken, target) < 1e-6


def test_h_chain_parametric_prior_matches_enumeration():
    c = [5, 3, 2, 2, 1]
    n_lo, n_hi = 5, 13
    theta = 0.45
    log_f = np.log(theta * (1 - theta) ** np.arange(len(c)))  # geometric on 1..m, unnormalised there
    ns = np.arange(n_lo, n_hi + 1)
    lt = stats.poisson(8).logpmf(ns)  # a prior on n
    target = exact_target(c, n_lo, n_hi, lt, log_f)
    assert len(target) > 20
    counts, rate = chain_frequencies(c, [13, 0, 0, 0, 0], 13, n_lo, n_hi, lt, log_f, 10000, 200, 31)
    p = chisq_p(counts, target)
    assert p > 1e-3, (p, rate)
    broken, _ = chain_frequencies(c, [13, 0, 0, 0, 0], 13, n_lo, n_hi, lt, log_f, 10000, 200, 31, hastings=False)
    assert chisq_p(broken, target) < 1e-6


def test_h_chain_fixed_n_matches_enumeration():
    c, n = [3, 3, 2, 2, 1, 1], 5
    target = exact_target(c, n, n, [0.0])
    assert len(target) > 5
    (r0,) = [r for r in sorted_row_sums(c, n)][:1]
    h0 = hist_of(r0, len(c))
    counts, rate = chain_frequencies(c, h0, n, n, n, np.zeros(1), None, 10000, 200, 41)
    assert {k[0] for k in counts} == {n}
    p = chisq_p(counts, target)
    assert p > 1e-3, (p, rate)
    broken, _ = chain_frequencies(c, h0, n, n, n, np.zeros(1), None, 10000, 200, 41, hastings=False)
    assert chisq_p(broken, target) < 1e-6


def test_h_chain_validation():
    rng = np.random.default_rng(0)
    lt = np.zeros(6)
    h = np.array([9, 0, 0, 0])
    with pytest.raises(ValueError, match=r"n must lie in \[n_lo, n_hi\] = \[4, 9\], got 3"):
        h_chain(h, 3, C4, lt, None, 1, rng, 4, 9)
    with pytest.raises(ValueError, match="h must sum to n = 8, got sum 9"):
        h_chain(h, 8, C4, lt, None, 1, rng, 4, 9)
    with pytest.raises(ValueError, match=r"h must be feasible with c \(the Gale-Ryser condition fails at p = 1\)"):
        h_chain(np.array([0, 0, 1]), 1, [2, 1, 0], np.zeros(1), None, 1, rng, 1, 1)
    with pytest.raises(ValueError, match="log_target_n must be a 1-D float array of length n_hi - n_lo"):
        h_chain(h, 9, C4, np.zeros(5), None, 1, rng, 4, 9)
    with pytest.raises(ValueError, match="log_f must be None or a 1-D float array of length m = 4"):
        h_chain(h, 9, C4, lt, np.zeros(3), 1, rng, 4, 9)
    with pytest.raises(ValueError, match="log_target_n must be finite at the current n = 9"):
        h_chain(h, 9, C4, np.r_[np.zeros(5), -np.inf], None, 1, rng, 4, 9)
    h2, n2, acc = h_chain(h, 9, C4, lt, np.empty(0), 0, rng, 4, 9)  # empty log_f = uniform
    assert n2 == 9 and np.array_equal(h2, h) and acc == 0 and h2 is not h


# ----------------------------------------------------------------------------------------------
# 7. mixing check
# ----------------------------------------------------------------------------------------------
def test_mixing_check_5n_trades_mix_and_0_do_not():
    rng = np.random.default_rng(7)
    indptr, indices = random_matrix(rng, 300, 30, 4.0)
    n = indptr.size - 1
    good = mixing_check(indptr, indices, 5 * n, np.random.default_rng(8), chains=4, samples=200)
    print(f"\nmixing_check n=300, m=30, 5n trades: R-hat {good['rhat']:.4f}, ESS {good['ess']:.0f}; "
          f"starts {good['starts']}")
    assert good["draws"].shape == (4, 200)
    assert good["rhat"] < 1.05 and good["ess"] > 200
    assert np.unique(good["draws"][:, 0]).size > 1  # the starting matrices differ
    stuck = mixing_check(indptr, indices, 0, np.random.default_rng(8))
    assert stuck["rhat"] == math.inf
    slow = mixing_check(indptr, indices, 2, np.random.default_rng(8))
    assert slow["rhat"] > 1.2, slow["rhat"]
    six = mixing_check(indptr, indices, 5 * n, np.random.default_rng(9), chains=6, samples=50)
    assert six["draws"].shape == (6, 50) and len(six["starts"]) == 6
    with pytest.raises(ValueError, match="chains must be >= 2, got 1"):
        mixing_check(indptr, indices, 10, rng, chains=1)


def test_randint_exactly_uniform():
    rng = np.random.default_rng(0)
    for k in (1, 2, 3, 7):
        draws = np.array([_randint(rng, k) for _ in range(20000)])
        assert draws.min() >= 0 and draws.max() <= k - 1
        if k > 1:
            assert stats.chisquare(np.bincount(draws, minlength=k)).pvalue > 1e-3
