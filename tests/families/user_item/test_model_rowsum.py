"""The row-sum kernel (``_h_chain_kernel``) against the straightforward one it replaced.

The kernel keeps the Gale-Ryser slack, the occupied levels (a bitset with a broadword select) and
decides most acceptances without logarithms; none of that may change a draw.  Pinned here:

* the whole kernel against the straightforward kernel (kept below as ``_ref_h_chain_kernel``,
  verbatim but for the names): the same histograms, ``n``, acceptance counts and generator state,
  for n known and unknown, with and without a parametric prior and the Hastings ratio, on small
  margins and the favorite-sites margins (m = 100: two bitset words) and m = 130 (three);
* the local feasibility check (``_slack_range`` on the kept slack) against the full Gale-Ryser check
  (``_hist_violation``) on every move of every feasible histogram of small margins;
* the select (``_kth_occupied``, ``_select64``) against a scan, and the acceptance shortcut
  (``_ratio_verdict``) against ``math.log(u) < log_alpha`` at and next to every tie.

The chain's stationary distribution is checked against enumeration in ``test_model_kernels.py``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from numba import njit

from hybridpriv.families.user_item.model_chains import (
    _TIE,
    _h_chain_kernel,
    _kth_occupied,
    _occ_bits,
    _randint,
    _ratio_verdict,
    _select64,
    _slack_init,
    _slack_range,
)
from hybridpriv.families.user_item.model_feasibility import (
    _c_prefix,
    _hist_violation,
    gale_ryser_violation,
    log_count_row_sums,
)
from hybridpriv.spec import builtin_example_path, load_spec


def sorted_row_sums(c, n):
    """Every m >= r_1 >= ... >= r_n >= 1 with sum(c) that some binary matrix realizes with c (as in
    ``test_model_kernels.py``, where Gale-Ryser is checked against exhaustive search)."""
    m, total = len(c), sum(c)
    return [
        r
        for r in itertools.combinations_with_replacement(range(m, 0, -1), n)
        if sum(r) == total and gale_ryser_violation(r, c) == -1
    ]


def hist_of(r, m):
    return tuple(np.bincount(np.asarray(r, dtype=int), minlength=m + 1)[1:].tolist())


# ----------------------------------------------------------------------------------------------
# the straightforward kernel (before the incremental bookkeeping), verbatim but for the names
# ----------------------------------------------------------------------------------------------
@njit
def _ref_level_of(h, u):
    """Level (1-based) of the u-th user when users are listed by level."""
    acc = 0
    for k in range(h.shape[0]):
        acc += h[k]
        if u < acc:
            return k + 1
    return -1


@njit
def _ref_kth_occupied(h, idx):
    """The level (1-based) of the idx-th (0-based) occupied level of h."""
    seen = 0
    for k in range(h.shape[0]):
        if h[k] > 0:
            if seen == idx:
                return k + 1
            seen += 1
    return -1


@njit
def _ref_hist_ok(h, n, Cpref):
    # sum_k k h_k = N is preserved by every move; check sum_{q <= p} #{r_i >= q} >= C_p.
    rstar = n
    lhs = 0
    for p in range(1, h.shape[0] + 1):
        lhs += rstar
        if lhs < Cpref[p]:
            return False
        rstar -= h[p - 1]
    return True


@njit
def _ref_shift_ok(h, n, Cpref, a, b):
    """``_ref_hist_ok`` after a user moved from level ``a`` to ``a - 1`` and another from ``b`` to
    ``b + 1`` in a feasible ``h`` (the kernel's invariant): the prefix sums of ``#{r_i >= q}``
    change by ``-[p >= a] + [p >= b + 1]``, so nothing can fail when ``b + 1 <= a``, and otherwise
    only ``p`` in ``[a, b]`` can: the same answer as ``_ref_hist_ok``, without the levels above ``b``."""
    if b + 1 <= a:
        return True
    rstar = n
    lhs = 0
    for p in range(1, min(b, h.shape[0]) + 1):
        lhs += rstar
        if lhs < Cpref[p]:
            return False
        rstar -= h[p - 1]
    return True


@njit
def _ref_log_g(h, n, log_f, use_f):
    if not use_f:
        return 0.0
    v = math.lgamma(n + 1.0)
    for k in range(h.shape[0]):
        if h[k] > 0:
            v += h[k] * log_f[k] - math.lgamma(h[k] + 1.0)
    return v


@njit
def _ref_dg(before, after, order, log_f, use_f):
    """The change of log g over the levels ``order`` (a move's a-1, a-2, b-1, b; repeats counted once), in that
    order: how the kernel accumulates it since issue 25 (an O(1) update instead of recomputing g over all m
    levels; an exact 0 then stays 0, so a tie is accepted without drawing, as the uniform prior's is)."""
    if not use_f:
        return 0.0
    v = 0.0
    seen = []
    for i in order:
        if i in seen:
            continue
        seen.append(i)
        v += (after[i] - before[i]) * log_f[i] - math.lgamma(after[i] + 1.0) + math.lgamma(before[i] + 1.0)
    return v


@njit
def _ref_h_chain_kernel(
    h, n, Cpref, log_target_n, log_f, use_f, steps, rng, n_lo, n_hi, hastings
):
    m = h.shape[0]
    g = _ref_log_g(h, n, log_f, use_f)
    vary = n_lo < n_hi
    accepted = 0
    for _ in range(steps):
        u = rng.random() if vary else 0.5 * rng.random()
        if u < 0.25:
            # (c) within n, by levels: donor and receiver levels uniform among the occupied
            # levels (moves the rare large rows far more often than picking users does)
            if n < 2:
                continue
            occ = 0
            for k in range(m):
                if h[k] > 0:
                    occ += 1
            a = _ref_kth_occupied(h, _randint(rng, occ))
            b = _ref_kth_occupied(h, _randint(rng, occ))
            if a < 2 or b >= m or b == a - 1 or (a == b and h[a - 1] < 2):
                continue
            before = h.copy()
            h[a - 1] -= 1
            h[a - 2] += 1
            h[b - 1] -= 1
            h[b] += 1
            occ_new = 0
            for k in range(m):
                if h[k] > 0:
                    occ_new += 1
            if _ref_shift_ok(h, n, Cpref, a, b):
                dg = _ref_dg(before, h, (a - 1, a - 2, b - 1, b), log_f, use_f)
                g_new = g + dg
                log_alpha = dg
                if hastings:
                    log_alpha += 2.0 * (math.log(occ) - math.log(occ_new))
                if log_alpha >= 0.0 or math.log(rng.random()) < log_alpha:
                    g = g_new
                    accepted += 1
                    continue
            h[b] -= 1
            h[b - 1] += 1
            h[a - 2] -= 1
            h[a - 1] += 1
        elif u < 0.5:
            # (a) within n: donor level a -> a - 1, receiver level b -> b + 1
            if n < 2:
                continue
            a = _ref_level_of(h, _randint(rng, n))
            h[a - 1] -= 1
            b = _ref_level_of(h, _randint(rng, n - 1))
            h[a - 1] += 1
            if a < 2 or b >= m or b == a - 1:  # out of range, or the identity in h-space
                continue
            q_fwd = h[a - 1] * (h[b - 1] - 1) if a == b else h[a - 1] * h[b - 1]
            before = h.copy()
            h[a - 1] -= 1
            h[a - 2] += 1
            h[b - 1] -= 1
            h[b] += 1
            q_rev = h[a - 2] * (h[a - 2] - 1) if b + 1 == a - 1 else h[b] * h[a - 2]
            ok = _ref_shift_ok(h, n, Cpref, a, b)
            if ok:
                dg = _ref_dg(before, h, (a - 1, a - 2, b - 1, b), log_f, use_f)
                g_new = g + dg
                log_alpha = dg
                if hastings:
                    log_alpha += math.log(q_rev) - math.log(q_fwd)
                if log_alpha >= 0.0 or math.log(rng.random()) < log_alpha:
                    g = g_new
                    accepted += 1
                    continue
            h[b] -= 1
            h[b - 1] += 1
            h[a - 2] -= 1
            h[a - 1] += 1
        elif u < 0.75:
            # (b) birth: a user at level a >= 2 gives one item to a new user (level 1)
            if n >= n_hi:
                continue
            a = _ref_level_of(h, _randint(rng, n))
            if a < 2:
                continue
            q_fwd = 0.25 * h[a - 1] / n
            h[a - 1] -= 1
            h[a - 2] += 1
            h[0] += 1
            # reverse death from n + 1: the dying user is one of h'_1 at level 1, the receiver
            # one of the other n users at level a - 1
            q_rev = 0.25 * h[0] / (n + 1) * (h[a - 2] - (1 if a == 2 else 0)) / n
            if _ref_hist_ok(h, n + 1, Cpref):
                g_new = _ref_log_g(h, n + 1, log_f, use_f)
                log_alpha = log_target_n[n + 1 - n_lo] - log_target_n[n - n_lo] + g_new - g
                if hastings:
                    log_alpha += math.log(q_rev) - math.log(q_fwd)
                if log_alpha >= 0.0 or math.log(rng.random()) < log_alpha:
                    g = g_new
                    n += 1
                    accepted += 1
                    continue
            h[0] -= 1
            h[a - 2] -= 1
            h[a - 1] += 1
        else:
            # (b) death: a user at level 1 leaves, its item goes to another user (b -> b + 1)
            if n <= n_lo or n < 2:
                continue
            a = _ref_level_of(h, _randint(rng, n))
            if a != 1:
                continue
            h[0] -= 1
            b = _ref_level_of(h, _randint(rng, n - 1))
            h[0] += 1
            if b >= m:
                continue
            q_fwd = 0.25 * h[0] / n * (h[b - 1] - (1 if b == 1 else 0)) / (n - 1)
            h[0] -= 1
            h[b - 1] -= 1
            h[b] += 1
            # reverse birth from n - 1: the donor is one of h''_{b+1} users at level b + 1
            q_rev = 0.25 * h[b] / (n - 1)
            if _ref_hist_ok(h, n - 1, Cpref):
                g_new = _ref_log_g(h, n - 1, log_f, use_f)
                log_alpha = log_target_n[n - 1 - n_lo] - log_target_n[n - n_lo] + g_new - g
                if hastings:
                    log_alpha += math.log(q_rev) - math.log(q_fwd)
                if log_alpha >= 0.0 or math.log(rng.random()) < log_alpha:
                    g = g_new
                    n -= 1
                    accepted += 1
                    continue
            h[b] -= 1
            h[b - 1] += 1
            h[0] += 1
    return n, accepted




# ----------------------------------------------------------------------------------------------
# the whole kernel: identical draws
# ----------------------------------------------------------------------------------------------
def run_both(c, h0, n0, n_lo, n_hi, lt, log_f, steps, calls, seed, hastings=True):
    """Run both kernels ``calls`` times from the same state and seed; assert identical results."""
    Cpref = _c_prefix(np.asarray(c, dtype=np.int64))
    lf = np.zeros(0) if log_f is None else np.asarray(log_f, dtype=np.float64)
    use_f = log_f is not None
    lt = np.asarray(lt, dtype=np.float64)
    h1, h2 = np.array(h0, dtype=np.int64), np.array(h0, dtype=np.int64)
    n1 = n2 = n0
    r1, r2 = np.random.default_rng(seed), np.random.default_rng(seed)
    total = 0
    for _ in range(calls):
        n1, a1 = _h_chain_kernel(h1, n1, Cpref, lt, lf, use_f, steps, r1, n_lo, n_hi, hastings)
        n2, a2 = _ref_h_chain_kernel(h2, n2, Cpref, lt, lf, use_f, steps, r2, n_lo, n_hi, hastings)
        assert (n1, a1) == (n2, a2)
        assert np.array_equal(h1, h2)
        assert r1.bit_generator.state == r2.bit_generator.state
        total += a1
    return total


C4 = [4, 2, 2, 1]


@pytest.mark.parametrize("hastings", [True, False])
def test_kernel_identical_small_n_unknown(hastings):
    n_lo, n_hi = max(C4), sum(C4)
    lt = -log_count_row_sums(C4, np.arange(n_lo, n_hi + 1))
    acc = run_both(C4, [9, 0, 0, 0], 9, n_lo, n_hi, lt, None, 300, 200, 21, hastings)
    assert acc > 0


@pytest.mark.parametrize("hastings", [True, False])
def test_kernel_identical_parametric_prior(hastings):
    c = [5, 3, 2, 2, 1]
    log_f = np.log(0.45 * 0.55 ** np.arange(len(c)))
    lt = np.log(np.arange(1, 10, dtype=float))  # any finite log target of n = 5..13
    run_both(c, [13, 0, 0, 0, 0], 13, 5, 13, lt, log_f, 200, 200, 31, hastings)


def test_kernel_identical_n_fixed():
    c, n = [3, 3, 2, 2, 1, 1], 5
    h0 = hist_of(sorted_row_sums(c, n)[0], len(c))
    run_both(c, h0, n, n, n, np.zeros(1), None, 200, 200, 41)


def random_margins(rng, m, n):
    """Column sums of a random n x m binary matrix (every user with >= 1 item), and its row-sum
    histogram: a feasible state."""
    rows = [rng.choice(m, size=min(m, 1 + rng.poisson(2.0)), replace=False) for _ in range(n)]
    c = np.bincount(np.concatenate(rows), minlength=m).astype(np.int64)
    h = np.bincount([len(r) for r in rows], minlength=m + 1)[1:].astype(np.int64)
    return c, h


@pytest.mark.parametrize("m, n, seed", [(6, 8, 1), (12, 30, 2), (40, 60, 3), (70, 150, 4), (130, 300, 5)])
def test_kernel_identical_random_margins(m, n, seed):
    """Random margins, n known and unknown (m = 70 and 130 put levels in two and three bitset
    words; zero column sums included)."""
    rng = np.random.default_rng(seed)
    c, h = random_margins(rng, m, n)
    run_both(c, h, n, n, n, np.zeros(1), None, 40 * n, 20, seed)
    n_lo, n_hi = int(c.max()), int(c.sum())
    lt = -0.01 * (np.arange(n_lo, n_hi + 1) - n) ** 2 / n  # a prior on n around the start
    run_both(c, h, n, n_lo, n_hi, lt, None, 40 * n, 20, seed + 100)


@pytest.mark.parametrize("known", [True, False])
def test_kernel_identical_favorite_sites(known):
    """The benchmark's margins (m = 100, N = 6,222): 30 calls of 6,222 moves from the model's start."""
    from hybridpriv.models import UserItemModel
    from hybridpriv.families.user_item.model_step import initial_histogram

    c = load_spec(builtin_example_path("favorite-sites")).column_sums
    model = UserItemModel(c, 2000 if known else None)
    lo, hi = model.n_range
    h0 = initial_histogram(model._c_sorted, lo)
    acc = run_both(model._c_sorted, h0, lo, lo, hi, model._log_target_n, None, model.total, 30, 7)
    assert 0.2 < acc / (30 * model.total) < 0.7


# ----------------------------------------------------------------------------------------------
# the pieces
# ----------------------------------------------------------------------------------------------
def moves_of(h, m):
    """Every proposal of the kernel from h: (kind, a, b, h')."""
    out = []
    n = int(h.sum())
    for a in range(2, m + 1):  # within n: a -> a - 1, b -> b + 1
        for b in range(1, m):
            if b == a - 1 or h[a - 1] < 1 + (a == b) or h[b - 1] < 1:
                continue
            g = h.copy()
            g[a - 1] -= 1
            g[a - 2] += 1
            g[b - 1] -= 1
            g[b] += 1
            out.append((0, a, b, g, n))
    for a in range(2, m + 1):  # birth
        if h[a - 1] >= 1:
            g = h.copy()
            g[a - 1] -= 1
            g[a - 2] += 1
            g[0] += 1
            out.append((1, a, 0, g, n + 1))
    for b in range(1, m):  # death
        if h[0] >= 1 and h[b - 1] >= 1 + (b == 1):
            g = h.copy()
            g[0] -= 1
            g[b - 1] -= 1
            g[b] += 1
            out.append((2, 0, b, g, n - 1))
    return out


@pytest.mark.parametrize(
    "c", [[4, 2, 2, 1], [3, 3, 2, 2, 1, 1], [5, 3, 2, 2, 1], [4, 4, 3, 1, 1, 0], [3, 2, 2, 2, 1, 1], [4, 4, 3, 2, 1, 1]]
)
def test_local_feasibility_equals_gale_ryser(c):
    """On every move of every feasible histogram (every n): the check on the kept slack says what
    the full check says of the new histogram, and the slack updated on the move's range is the
    slack of the new histogram."""
    m = len(c)
    cc = np.asarray(c, dtype=np.int64)
    c_desc = np.sort(cc)[::-1].copy()
    Cpref = _c_prefix(cc)
    checked = infeasible = 0
    for n in range(max(max(c), 1), sum(c) + 1):
        for r in sorted_row_sums(c, n):
            h = np.array(hist_of(r, m), dtype=np.int64)
            slack = _slack_init(h, n, Cpref)
            assert slack[1:].min() >= 0 and slack[m] == 0
            for kind, a, b, g, n_new in moves_of(h, m):
                lo, hi, d = _slack_range(kind, a, b)
                local = d > 0 or bool(np.all(slack[lo : hi + 1] >= 1))
                full = _hist_violation(g, c_desc) == -1
                assert local == full, (c, h, kind, a, b)
                checked += 1
                infeasible += not full
                if full:
                    s2 = slack.copy()
                    s2[lo : hi + 1] += d
                    assert np.array_equal(s2, _slack_init(g, n_new, Cpref)), (c, h, kind, a, b)
    assert checked > 50 and infeasible > 0


@njit
def _select_all(bits, k):
    out = np.empty(k, np.int64)
    for i in range(k):
        out[i] = _kth_occupied(bits, i)
    return out


@njit
def _select64_one(w, idx):
    return _select64(w, idx)


def test_select_equals_scan():
    rng = np.random.default_rng(3)
    for m in (1, 5, 62, 63, 64, 100, 126, 127, 200):
        for t in range(60):
            p = [0.0, 1.0, 0.5, 0.05, 0.95][t % 5]
            h = (rng.random(m) < p).astype(np.int64) * rng.integers(1, 4, size=m)
            levels = np.flatnonzero(h) + 1
            bits = _occ_bits(h)
            assert np.array_equal(_select_all(bits, levels.size), levels)
    words = [(1 << 63) - 1, 1, 1 << 62, 0x5555555555555555 >> 1, 0xFF << 55, 0x8000000100000001 & ((1 << 63) - 1)]
    words += [int(x) for x in rng.integers(0, 2**63, size=200, dtype=np.int64)]
    for w in words:
        pos = [b for b in range(63) if w >> b & 1]
        assert [_select64_one(np.int64(w), i) for i in range(len(pos))] == pos


@njit
def _verdicts(u, num, den, log_alpha):
    """(shortcut verdict, or -1 on a near-tie; the log comparison) for each u."""
    out = np.empty((u.shape[0], 2), np.int64)
    for i in range(u.shape[0]):
        out[i, 0] = _ratio_verdict(u[i], num / den)
        out[i, 1] = 1 if math.log(u[i]) < log_alpha else 0
    return out


def test_ratio_verdict_agrees_with_log_comparison():
    """For proposal ratios of the kernel (integer quotients num / den < 1, as in moves (a) and (c)),
    the shortcut agrees with ``math.log(u) < log_alpha`` wherever it answers, including uniforms
    just outside the tie band, at and next to the ratio itself (answered -1: evaluated exactly)."""
    rng = np.random.default_rng(5)
    pairs = [(1, 2), (3, 4), (99, 100), (1, 4_000_000), (3_999_999, 4_000_000), (4, 9), (2500, 2601)]
    pairs += [tuple(sorted(rng.integers(1, 4_000_000, size=2).tolist())) for _ in range(200)]
    pairs = [(a, b) for a, b in pairs if a < b]
    answered = ties = 0
    for num, den in pairs:
        ratio = num / den
        log_alpha = 0.0 + (math.log(num) - math.log(den))
        us = [ratio, np.nextafter(ratio, 0), np.nextafter(ratio, 1), ratio * (1 - _TIE), ratio * (1 + _TIE),
              ratio * (1 - 2 * _TIE), ratio * (1 + 2 * _TIE), ratio * (1 - 1e-12), 0.0, 2.0**-53, 1 - 2.0**-53]
        us += list(rng.random(50)) + list(ratio * (1 + (rng.random(50) - 0.5) * 8 * _TIE))
        us = np.array([np.floor(u * 2.0**53) / 2.0**53 for u in us])  # what rng.random() can return
        with np.errstate(divide="ignore"):
            v = _verdicts(us, num, den, log_alpha)
        for (short, exact), u in zip(v, us):
            if short >= 0:
                assert short == exact, (num, den, u)
                answered += 1
            else:
                assert abs(u / ratio - 1) <= 1.01 * _TIE
                ties += 1
    assert answered > 10_000 and ties > 100


def test_randint_is_the_shared_draw():
    """The kernel draws through ``_randint`` (shared with Curveball); a fixed stream pins it."""

    @njit
    def draws(rng, k, t):
        out = np.empty(t, np.int64)
        for i in range(t):
            out[i] = _randint(rng, k)
        return out

    a = draws(np.random.default_rng(0), 7, 5)
    rng = np.random.default_rng(0)
    b = [int(rng.random() * 2.0**53) % 7 for _ in range(5)]
    assert a.tolist() == b


# ----------------------------------------------------------------------------------------------
# RowSumStep: skips h_chain's checks only when continuing from the kernel's own last state
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("known", [True, False])
def test_row_sum_step_draws_are_h_chains(known):
    """Consecutive steps give exactly the draws of h_chain on the same stream; a state that is not
    the one the kernel returned last goes through h_chain's checks again (an infeasible one is refused)."""
    from hybridpriv.models import RowSumStep, UserItemModel
    from hybridpriv.families.user_item.model_chains import h_chain
    from hybridpriv.families.user_item.model_step import initial_histogram

    c = [5, 3, 3, 2, 1, 1]
    model = UserItemModel(c, 7 if known else None)
    lo, hi = model.n_range
    pmm = model.build()
    with pmm:
        vars_ = [pmm["h"]] if known else [pmm["n"], pmm["h"]]
        step = RowSumStep(vars_, model._c_sorted, model.n_range, model._log_target_n, None, moves=50)
    step.rng = np.random.default_rng(9)
    rng = np.random.default_rng(9)
    h = initial_histogram(model._c_sorted, lo)
    n = lo
    point = {"h": h.copy(), "n": np.int64(n)}
    for _ in range(40):
        point, _stats = step.step(point)
        h, n, _ = h_chain(h, n, model._c_sorted, model._log_target_n, None, 50, rng, lo, hi)
        assert np.array_equal(point["h"], h) and int(point.get("n", lo)) == n
    bad = point["h"].copy()
    bad[0] += 1
    bad[1] -= 1  # sum_k k h_k changes: infeasible, and not the kernel's last state
    with pytest.raises(ValueError, match="h must"):
        step.step({**point, "h": bad})
