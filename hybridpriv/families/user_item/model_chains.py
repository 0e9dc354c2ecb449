"""The two compiled Markov chains of the user-item model, sharing one uniform-integer draw.

* :func:`curveball`: Curveball trades (Strona et al. 2014) over binary matrices with fixed
  margins, whose stationary distribution is uniform over those matrices (level 3 of the model);
* :func:`h_chain`: a Metropolis-Hastings kernel over ``(n, h)``, the number of users and their
  row-sum histogram (levels 1-2, run by :class:`hybridpriv.models.RowSumStep`).

Both draw integers with ``_randint`` (inlined into both kernels).  They live in one file on
purpose: numba's ``cache=True`` invalidates a cached kernel only when *its own* file changes, so
a kernel that inlines a function from another file could keep running stale code after an edit.

Randomness comes only from the :class:`numpy.random.Generator` passed in (numba draws from it
directly, advancing its state).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from .model_checks import (
    ArrayLike,
    _check_csr,
    _check_rng,
    _fmt,
    _int_scalar,
    _int_vector,
)
from .model_feasibility import (
    _c_prefix,
    _gr_counts_violation,
    _gr_violation,
    _hist_violation,
)
from .model_realize import _csr_rows

__all__ = ["curveball", "h_chain", "random_start"]


# ----------------------------------------------------------------------------------------------
# Curveball
# ----------------------------------------------------------------------------------------------
_TWO53 = 9007199254740992.0  # 2**53


@njit(cache=True, inline="always")
def _randint(rng, k):  # pragma: no cover - compiled
    """Exactly uniform integer in [0, k) from ``rng.random()`` (``j / 2**53``, ``j`` uniform on
    53 bits) by rejection; ~10x faster than ``rng.integers`` inside numba."""
    limit = 9007199254740992 - 9007199254740992 % k
    while True:
        x = np.int64(rng.random() * _TWO53)
        if x < limit:
            return x % k


@njit(cache=True)
def _curveball_kernel(indptr, indices, n_trades, rng, shuffle):  # pragma: no cover - compiled
    n = indptr.shape[0] - 1
    if n < 2:
        return
    maxr = 0
    for i in range(n):
        maxr = max(maxr, indptr[i + 1] - indptr[i])
    common = np.empty(maxr, np.int64)
    pool = np.empty(2 * maxr, np.int64)
    slot = np.empty(2 * maxr, np.int64)
    to_a = np.zeros(2 * maxr, np.bool_)
    for _ in range(n_trades):
        i = _randint(rng, n)
        j = _randint(rng, n - 1)
        if j >= i:
            j += 1
        a0 = indptr[i]
        a1 = indptr[i + 1]
        b0 = indptr[j]
        b1 = indptr[j + 1]
        p = a0
        q = b0
        nc = 0
        ns = 0
        na = 0
        while p < a1 and q < b1:
            x = indices[p]
            y = indices[q]
            if x == y:
                common[nc] = x
                nc += 1
                p += 1
                q += 1
            elif x < y:
                pool[ns] = x
                ns += 1
                na += 1
                p += 1
            else:
                pool[ns] = y
                ns += 1
                q += 1
        while p < a1:
            pool[ns] = indices[p]
            ns += 1
            na += 1
            p += 1
        while q < b1:
            pool[ns] = indices[q]
            ns += 1
            q += 1
        if na == 0 or na == ns:
            continue
        # A keeps a uniformly random na-subset of the (sorted) pool: partial Fisher-Yates.
        if shuffle:
            for s in range(ns):
                slot[s] = s
            for s in range(na):
                u = s + _randint(rng, ns - s)
                t = slot[s]
                slot[s] = slot[u]
                slot[u] = t
                to_a[slot[s]] = True
        else:  # deliberately broken variant (tests only): A takes the na smallest items
            for s in range(na):
                to_a[s] = True
        # rewrite both rows as sorted merges of the common items and their share of the pool
        for side in range(2):
            w = a0 if side == 0 else b0
            want = side == 0
            cpos = 0
            s = 0
            while True:
                while s < ns and to_a[s] != want:
                    s += 1
                if cpos < nc and (s >= ns or common[cpos] < pool[s]):
                    indices[w] = common[cpos]
                    cpos += 1
                elif s < ns:
                    indices[w] = pool[s]
                    s += 1
                else:
                    break
                w += 1
        for s in range(ns):
            to_a[s] = False


def curveball(indptr: np.ndarray, indices: np.ndarray, n_trades: int, rng: np.random.Generator) -> None:
    """Run ``n_trades`` Curveball trades on a binary matrix, in place.

    Each trade (Strona et al. 2014) picks two distinct users uniformly; the items held by
    exactly one of them are pooled and redistributed uniformly at random, each user keeping
    its number of items.  Row and column sums are preserved, rows stay sorted, and the
    chain's stationary distribution is uniform over all binary matrices with these margins
    (the trade kernel is symmetric and the chain is irreducible).

    Parameters
    ----------
    indptr, indices
        The matrix (CSR, ``int64``, C-contiguous, writeable, rows strictly increasing);
        ``indices`` is modified in place.
    n_trades
        Number of trades (>= 0).
    rng
        The source of randomness (its state advances).
    """
    _check_csr(indptr, indices, writeable=True)
    n_trades = _int_scalar(n_trades, "n_trades", 0)
    _check_rng(rng)
    _curveball_kernel(indptr, indices, n_trades, rng, True)


@njit(cache=True)
def _random_start_kernel(r, c, rng):  # pragma: no cover - compiled
    n = r.shape[0]
    m = c.shape[0]
    indptr, indices = _csr_rows(r)
    cap = c.copy()
    cnt = np.zeros(m + 2, np.int64)  # row sums of the rows not yet filled: cnt[k] = #{r_i = k}
    for v in r:
        cnt[min(v, m + 1)] += 1
    left = n
    w = np.empty(m, np.int64)
    res = np.empty(m, np.int64)
    take = np.zeros(m, np.bool_)
    for i in range(n):
        k = r[i]
        if k == 1:  # the rows of one item (all that remain): a uniformly random pairing with what is left
            stubs = np.empty(indptr[n] - indptr[i], np.int64)
            s = 0
            for j in range(m):
                for _ in range(cap[j]):
                    stubs[s] = j
                    s += 1
            for s in range(stubs.shape[0] - 1, 0, -1):
                u = _randint(rng, s + 1)
                t = stubs[s]
                stubs[s] = stubs[u]
                stubs[u] = t
            indices[indptr[i] :] = stubs
            break
        cnt[min(k, m + 1)] -= 1
        left -= 1
        if k == 0:
            continue
        # k distinct items, drawn one by one with probability proportional to their capacity
        tot = 0
        for j in range(m):
            w[j] = cap[j]
            tot += cap[j]
        for _ in range(k):
            x = _randint(rng, tot)
            j = 0
            while x >= w[j]:
                x -= w[j]
                j += 1
            take[j] = True
            tot -= w[j]
            w[j] = 0
        ok = True
        if k > 1 and left > 0:  # Gale-Ryser on what remains (rows come by decreasing sum)
            for j in range(m):
                res[j] = cap[j] - (1 if take[j] else 0)
            res.sort()
            ok = _gr_counts_violation(cnt, left, res[::-1]) == -1
        if not ok:  # the greedy row (the k largest capacities) keeps the rest feasible
            for j in range(m):
                take[j] = False
            order = np.argsort(-cap, kind="mergesort")
            for t in range(k):
                take[order[t]] = True
        w0 = indptr[i]
        for j in range(m):
            if take[j]:
                indices[w0] = j
                w0 += 1
                cap[j] -= 1
                take[j] = False
    return indptr, indices


def random_start(r: np.ndarray, c: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A random binary matrix with row sums ``r`` (non-increasing) and column sums ``c``.

    Rows are filled in order; each takes its ``r_i`` distinct items one by one with probability
    proportional to their remaining capacity, unless what remains would then violate the
    Gale-Ryser condition, in which case the row takes the items of largest capacity (the greedy
    rule, which keeps feasible margins feasible).  Rows of one item always keep the draw: given
    the rows above them they are then exactly uniform.  Not uniform overall (a sequential
    importance-sampling proposal, Chen et al. 2005), but random and close to uniform, so a
    Curveball chain started here needs far fewer trades than one started from the one greedy
    realization of the margins (``benchmarks/user_item_thinning.py`` measures both).

    ``r``, ``c``: feasible margins, ``r`` sorted in non-increasing order (checked).
    """
    _check_rng(rng)
    rr = _int_vector(r, "r")
    cc = _int_vector(c, "c")
    if np.any(np.diff(rr) > 0):
        raise ValueError(f"r must be sorted in non-increasing order, got {_fmt(rr)}")
    if rr.sum() != cc.sum() or _gr_violation(rr, np.sort(cc)[::-1].copy()) != -1:
        raise ValueError(f"r and c must be feasible margins (Gale-Ryser), got r = {_fmt(rr)}, c = {_fmt(cc)}")
    return _random_start_kernel(rr, cc, rng)


# ----------------------------------------------------------------------------------------------
# Metropolis-Hastings over (n, h)
# ----------------------------------------------------------------------------------------------
# The kernel keeps, besides h:
#
# * ``bits``: the set of occupied levels as a bitset (``_occ_bits``), and ``occ``, its size ``L(h)``;
#   move (c) reads the idx-th occupied level with ``_kth_occupied`` (popcounts and a broadword select);
# * ``slack[p] = sum_{q <= p} #{r_i >= q} - C_p``, ``p = 1..m``: Gale-Ryser holds iff every entry is
#   >= 0 (``sum_k k h_k = N`` is preserved by every move).  A move changes ``sum_{q <= p} #{r_i >= q}``
#   by -1 or +1 on one range of ``p`` (``_slack_range``) and leaves the rest alone, so from a feasible
#   ``h`` (the kernel's invariant) it stays feasible iff the entries of the range it lowers are >= 1:
#
#   - (a), (c): a user ``a -> a - 1`` and another ``b -> b + 1``: ``-[p >= a] + [p >= b + 1]``,
#     i.e. -1 on ``[a, b]`` (if ``a <= b``), +1 on ``[b + 1, a - 1]`` (if ``b + 1 < a``);
#   - birth (``a -> a - 1``, a new user at 1): ``+1 - [p >= a]``: +1 on ``[1, a - 1]``, never fails;
#   - death (a user at 1 leaves, ``b -> b + 1``): ``-1 + [p >= b + 1]``: -1 on ``[1, b]``.
#
#   ``tests/families/user_item/test_model_rowsum.py`` checks this against the full Gale-Ryser check on
#   every move of every feasible histogram of small margins.
#
# Without ``log_f`` and with the Hastings ratio, the within-``n`` moves decide acceptance without
# logarithms: ``log_alpha >= 0`` iff the proposal ratio (of integers below 2**44) is >= 1, and otherwise the
# uniform ``u`` is compared with the ratio itself; only when ``u`` is within a relative 1e-9 of it
# (about once in 10^9 comparisons) is ``math.log(u) < log_alpha`` evaluated as written.  The errors of
# the logarithms (< 1 ulp each, |log| < 37 for ``u >= 2**-53``) are below 1e-13, so both give the
# same decision (``_ratio_verdict``), and the chain consumes the same uniforms: the same draws.
#
# The hot loop calls no function with array arguments but small leaf functions (``_level_of``,
# ``_kth_occupied``; ``_log_g`` with ``log_f``): numba increfs an array passed to an inlined helper
# and decrefs it after, atomic operations that cost more than a move; the inlined helpers take scalars.
_TIE = 1e-9
_WORD = 63  # levels per word of the occupied-level bitset (bit 63 unused: words stay >= 0)


@intrinsic
def _popcount(typingctx, x):  # pragma: no cover - compiled
    """Number of set bits of an integer (LLVM ``ctpop``)."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return x(x), codegen


@njit(cache=True)
def _occ_bits(h):  # pragma: no cover - compiled
    """The bitset of occupied levels: bit ``(k - 1) % 63`` of word ``(k - 1) // 63`` is set iff
    ``h[k - 1] > 0``."""
    bits = np.zeros(max((h.shape[0] + _WORD - 1) // _WORD, 1), np.int64)
    for k in range(h.shape[0]):
        if h[k] > 0:
            bits[k // _WORD] |= np.int64(1) << (k % _WORD)
    return bits


def _select8_table() -> np.ndarray:
    t = np.zeros(256 * 8, np.int64)  # t[8 v + j] = position of the j-th (0-based) set bit of byte v
    for v in range(256):
        j = 0
        for b in range(8):
            if v >> b & 1:
                t[8 * v + j] = b
                j += 1
    return t


_SELECT8 = _select8_table()
_L8 = np.uint64(0x0101010101010101)
_H8 = np.uint64(0x8080808080808080)
_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)


@njit(cache=True, inline="always")
def _select64(w, idx):  # pragma: no cover - compiled
    """Position of the idx-th (0-based) set bit of ``w`` (``0 <= w < 2**63``, ``idx < popcount(w)``),
    without branches: byte popcounts, their prefix sums by one multiplication, the byte whose prefix
    sum first exceeds ``idx``, then a table for the bit within it."""
    u = np.uint64(w)
    x = u - ((u >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4  # set bits per byte
    cum = x * _L8  # byte i: set bits in bytes 0..i (<= 63: no carries)
    iu = np.uint64(idx)
    below = (((iu * _L8) | _H8) - cum) & _H8  # top bit of byte i: cum_i <= idx
    nb = np.uint64(_popcount(below))  # the byte holding the bit (<= 7)
    sh = np.uint64(8) * nb
    before = ((cum << np.uint64(8)) >> sh) & np.uint64(0xFF)
    byte = (u >> sh) & np.uint64(0xFF)
    return np.int64(sh) + _SELECT8[np.int64(byte) * 8 + (idx - np.int64(before))]


@njit(cache=True)
def _kth_occupied(bits, idx):  # pragma: no cover - compiled
    """The level (1-based) of the idx-th (0-based) occupied level, in increasing order."""
    wi = 0
    while True:
        c = _popcount(bits[wi])
        if idx < c:
            break
        idx -= c
        wi += 1
    return wi * _WORD + _select64(bits[wi], idx) + 1


@njit(cache=True)
def _level_of(h, u):  # pragma: no cover - compiled
    """Level (1-based) of the u-th user when users are listed by level."""
    acc = 0
    for k in range(h.shape[0]):
        acc += h[k]
        if u < acc:
            return k + 1
    return -1


@njit(cache=True)
def _slack_init(h, n, Cpref):  # pragma: no cover - compiled
    """``slack[p] = sum_{q <= p} #{r_i >= q} - C_p`` for ``p = 1..m`` (``slack[0] = 0``)."""
    m = h.shape[0]
    slack = np.zeros(m + 1, np.int64)
    rstar = n
    lhs = 0
    for p in range(1, m + 1):
        lhs += rstar
        slack[p] = lhs - Cpref[p]
        rstar -= h[p - 1]
    return slack


@njit(cache=True)
def _slack_range(kind, a, b):  # pragma: no cover - compiled
    """The range ``[lo, hi]`` of ``p`` where a move changes ``sum_{q <= p} #{r_i >= q}``, and by how
    much (-1 or +1; ``hi < lo`` if nowhere): ``kind`` 0 = a user ``a -> a - 1`` and another
    ``b -> b + 1``, 1 = birth (``a -> a - 1``, a new user at 1), 2 = death (a user at 1 leaves,
    ``b -> b + 1``).  The move keeps a feasible h feasible iff ``d = +1`` or ``slack[lo..hi] >= 1``."""
    if kind == 0:
        if a <= b:
            return a, b, -1
        return b + 1, a - 1, 1
    if kind == 1:
        return 1, a - 1, 1
    return 1, b, -1


@njit(cache=True, inline="always")
def _keeps_feasible(slack, lo, hi, d):  # pragma: no cover - compiled
    """Whether a move of :func:`_slack_range` ``(lo, hi, d)`` keeps a feasible h feasible: ``d = +1``, or
    ``slack[lo..hi] >= 1``."""
    if d > 0:
        return True
    for p in range(lo, hi + 1):
        if slack[p] < 1:
            return False
    return True


@njit(cache=True, inline="always")
def _occupied4(x0, x1, x2, x3, i0, i1, i2, i3):  # pragma: no cover - compiled
    """Number of occupied levels among the distinct indices ``i0..i3`` (values ``x0..x3``)."""
    s = 1 if x0 > 0 else 0
    if i1 != i0 and x1 > 0:
        s += 1
    if i2 != i0 and i2 != i1 and x2 > 0:
        s += 1
    if i3 != i0 and i3 != i1 and i3 != i2 and x3 > 0:
        s += 1
    return s


@njit(cache=True, inline="always")
def _ratio_verdict(u, ratio):  # pragma: no cover - compiled
    """``math.log(u) < log_alpha`` decided from ``ratio``, ``exp(log_alpha)`` to a relative 1e-12:
    1 (true), 0 (false) or -1 (``u`` within a relative ``_TIE`` of ``ratio``: evaluate it)."""
    if u < ratio * (1.0 - _TIE):
        return 1
    if u > ratio * (1.0 + _TIE):
        return 0
    return -1


@njit(cache=True, inline="always")
def _dg4(x0, x1, x2, x3, y0, y1, y2, y3, i0, i1, i2, i3, log_f):  # pragma: no cover - compiled
    """The change of :func:`_log_g` (``n`` fixed) when the levels ``i0..i3`` (possibly repeated) go from the
    counts ``x`` to ``y``: ``sum over the distinct indices of (y - x) log_f - lgamma(y + 1) + lgamma(x + 1)``.
    O(1) per move instead of :func:`_log_g`'s O(m)."""
    v = (y0 - x0) * log_f[i0] - math.lgamma(y0 + 1.0) + math.lgamma(x0 + 1.0)
    if i1 != i0:
        v += (y1 - x1) * log_f[i1] - math.lgamma(y1 + 1.0) + math.lgamma(x1 + 1.0)
    if i2 != i0 and i2 != i1:
        v += (y2 - x2) * log_f[i2] - math.lgamma(y2 + 1.0) + math.lgamma(x2 + 1.0)
    if i3 != i0 and i3 != i1 and i3 != i2:
        v += (y3 - x3) * log_f[i3] - math.lgamma(y3 + 1.0) + math.lgamma(x3 + 1.0)
    return v


@njit(cache=True)
def _log_g(h, n, log_f, use_f):  # pragma: no cover - compiled
    if not use_f:
        return 0.0
    v = math.lgamma(n + 1.0)
    for k in range(h.shape[0]):
        if h[k] > 0:
            v += h[k] * log_f[k] - math.lgamma(h[k] + 1.0)
    return v


@njit(cache=True)
def _h_chain_kernel(  # pragma: no cover - compiled
    h, n, Cpref, log_target_n, log_f, use_f, steps, rng, n_lo, n_hi, hastings
):
    m = h.shape[0]
    g = _log_g(h, n, log_f, use_f)
    vary = n_lo < n_hi
    # within-n acceptance from integer ratios (see above); the proposal ratios are below n**2 < 2**44,
    # where logarithms of distinct integers differ by far more than their rounding errors
    fast = hastings and not use_f and n_hi < 2**22
    slack = _slack_init(h, n, Cpref)
    bits = _occ_bits(h)  # occupied levels
    occ = 0
    for k in range(m):
        if h[k] > 0:
            occ += 1
    logk = np.empty(m + 3)  # log of small integers (numbers of occupied levels), as math.log gives them
    for k in range(m + 3):
        logk[k] = math.log(k) if k > 0 else -np.inf
    accepted = 0
    for _ in range(steps):
        u = rng.random() if vary else 0.5 * rng.random()
        if u < 0.5:
            # within n: a user a -> a - 1 and another b -> b + 1
            if n < 2:
                continue
            by_levels = u < 0.25
            if by_levels:
                # (c) by levels: donor and receiver levels uniform among the occupied levels
                # (moves the rare large rows far more often than picking users does)
                a = _kth_occupied(bits, _randint(rng, occ))
                b = _kth_occupied(bits, _randint(rng, occ))
                if a < 2 or b >= m or b == a - 1 or (a == b and h[a - 1] < 2):
                    continue
            else:
                # (a) by users: a donor at level a, a distinct receiver at level b
                a = _level_of(h, _randint(rng, n))
                h[a - 1] -= 1
                b = _level_of(h, _randint(rng, n - 1))
                h[a - 1] += 1
                if a < 2 or b >= m or b == a - 1:  # out of range, or the identity in h-space
                    continue
            lo, hi, d = _slack_range(0, a, b)
            if not _keeps_feasible(slack, lo, hi, d):
                continue
            x0, x1, x2, x3 = h[a - 1], h[a - 2], h[b - 1], h[b]
            q_fwd = x0 * (x2 - 1) if a == b else x0 * x2
            h[a - 1] -= 1
            h[a - 2] += 1
            h[b - 1] -= 1
            h[b] += 1
            y0, y1, y2, y3 = h[a - 1], h[a - 2], h[b - 1], h[b]
            occ_new = occ - _occupied4(x0, x1, x2, x3, a - 1, a - 2, b - 1, b) + _occupied4(
                y0, y1, y2, y3, a - 1, a - 2, b - 1, b
            )
            q_rev = y1 * (y1 - 1) if b + 1 == a - 1 else y3 * y1
            if fast:
                num = occ * occ if by_levels else q_rev
                den = occ_new * occ_new if by_levels else q_fwd
                if num >= den:
                    ok = True
                else:
                    x = rng.random()
                    v = _ratio_verdict(x, num / den)
                    if v >= 0:
                        ok = v == 1
                    elif by_levels:
                        ok = math.log(x) < 0.0 + 2.0 * (logk[occ] - logk[occ_new])
                    else:
                        ok = math.log(x) < 0.0 + (math.log(q_rev) - math.log(q_fwd))
                g_new = g
            else:
                dg = _dg4(x0, x1, x2, x3, y0, y1, y2, y3, a - 1, a - 2, b - 1, b, log_f) if use_f else 0.0
                g_new = g + dg
                log_alpha = dg
                if hastings:
                    if by_levels:
                        log_alpha += 2.0 * (logk[occ] - logk[occ_new])
                    else:
                        log_alpha += math.log(q_rev) - math.log(q_fwd)
                ok = log_alpha >= 0.0 or math.log(rng.random()) < log_alpha
            if not ok:
                h[b] -= 1
                h[b - 1] += 1
                h[a - 2] -= 1
                h[a - 1] += 1
                continue
            g = g_new
            i0, i1, i2, i3 = a - 1, a - 2, b - 1, b
        elif u < 0.75:
            # (b) birth: a user at level a >= 2 gives one item to a new user (level 1); never
            # breaks Gale-Ryser (see above)
            if n >= n_hi:
                continue
            a = _level_of(h, _randint(rng, n))
            if a < 2:
                continue
            q_fwd = 0.25 * h[a - 1] / n
            h[a - 1] -= 1
            h[a - 2] += 1
            h[0] += 1
            # reverse death from n + 1: the dying user is one of h'_1 at level 1, the receiver
            # one of the other n users at level a - 1
            q_rev = 0.25 * h[0] / (n + 1) * (h[a - 2] - (1 if a == 2 else 0)) / n
            g_new = _log_g(h, n + 1, log_f, use_f)
            log_alpha = log_target_n[n + 1 - n_lo] - log_target_n[n - n_lo] + g_new - g
            if hastings:
                log_alpha += math.log(q_rev) - math.log(q_fwd)
            if not (log_alpha >= 0.0 or math.log(rng.random()) < log_alpha):
                h[0] -= 1
                h[a - 2] -= 1
                h[a - 1] += 1
                continue
            g = g_new
            n += 1
            lo, hi, d = _slack_range(1, a, 0)
            i0, i1, i2, i3 = a - 1, a - 2, 0, 0
        else:
            # (b) death: a user at level 1 leaves, its item goes to another user (b -> b + 1)
            if n <= n_lo or n < 2:
                continue
            a = _level_of(h, _randint(rng, n))
            if a != 1:
                continue
            h[0] -= 1
            b = _level_of(h, _randint(rng, n - 1))
            h[0] += 1
            if b >= m:
                continue
            lo, hi, d = _slack_range(2, 0, b)
            if not _keeps_feasible(slack, lo, hi, d):
                continue
            q_fwd = 0.25 * h[0] / n * (h[b - 1] - (1 if b == 1 else 0)) / (n - 1)
            h[0] -= 1
            h[b - 1] -= 1
            h[b] += 1
            # reverse birth from n - 1: the donor is one of h''_{b+1} users at level b + 1
            q_rev = 0.25 * h[b] / (n - 1)
            g_new = _log_g(h, n - 1, log_f, use_f)
            log_alpha = log_target_n[n - 1 - n_lo] - log_target_n[n - n_lo] + g_new - g
            if hastings:
                log_alpha += math.log(q_rev) - math.log(q_fwd)
            if not (log_alpha >= 0.0 or math.log(rng.random()) < log_alpha):
                h[b] -= 1
                h[b - 1] += 1
                h[0] += 1
                continue
            g = g_new
            n -= 1
            i0, i1, i2, i3 = 0, b - 1, b, b
        # accepted: update slack on [lo, hi], and the occupied levels at indices i0..i3
        accepted += 1
        for p in range(lo, hi + 1):
            slack[p] += d
        for t in range(4):
            i = i0 if t == 0 else (i1 if t == 1 else (i2 if t == 2 else i3))
            bit = np.int64(1) << (i % _WORD)
            if h[i] > 0:
                bits[i // _WORD] |= bit
            else:
                bits[i // _WORD] &= ~bit
        occ = 0
        for w in range(bits.shape[0]):
            occ += _popcount(bits[w])
    return n, accepted


def h_chain(
    h: ArrayLike,
    n: int,
    c: ArrayLike,
    log_target_n: ArrayLike,
    log_f: ArrayLike | None,
    steps: int,
    rng: np.random.Generator,
    n_lo: int,
    n_hi: int,
) -> tuple[np.ndarray, int, int]:
    r"""Metropolis-Hastings steps over the number of users and their row-sum histogram.

    The target is

    .. math::

        \log \pi(n, h) = \mathrm{log\_target\_n}[n - n_{lo}] + g(h)

    on histograms ``h`` with ``sum_k h_k = n``, ``sum_k k h_k = sum(c)`` that satisfy the
    Gale-Ryser conditions with ``c``, and ``n_lo <= n <= n_hi``.  Without ``log_f``,
    ``g = 0``: uniform over sorted row sums given ``n`` (pass ``-log count(n)`` from
    :func:`log_count_row_sums` in ``log_target_n`` for a given prior on ``n``).  With ``log_f``,
    ``g(h) = log(n! / prod_k h_k!) + sum_k h_k log_f[k - 1]``: row sums iid with (unnormalised)
    pmf ``f``, conditioned on feasibility.

    Moves (a user is one of the ``n`` units of the histogram; "pick a user" means uniformly):

    (c) within ``n`` by levels (probability 1/2, or 1/4 when ``n_lo < n_hi``): donor level
        ``a`` and receiver level ``b`` uniform among the ``L(h)`` occupied levels (``a = b``
        needs ``h_a >= 2``); the same ``h'`` as in (a); ``q(h -> h') = 1/L(h)^2``,
        ``q(h' -> h) = 1/L(h')^2``.  Rare large rows move as often as common small ones.

    (a) within ``n`` (probability 1/2, or 1/4 when ``n_lo < n_hi``): pick a donor at level ``a``
        and a distinct receiver at level ``b``; propose ``a -> a - 1`` (needs ``a >= 2``) and
        ``b -> b + 1`` (needs ``b < m``), i.e. ``h' = h - e_a + e_{a-1} - e_b + e_{b+1}``.
        ``b = a - 1`` gives ``h' = h`` (stay).  Each other ``h'`` comes from one ``(a, b)``,
        and the reverse move is donor ``b + 1``, receiver ``a - 1``.  In histogram space
        (``n (n - 1)`` cancels)::

            q(h -> h')  ∝ h_a h_b               (a != b)     h_a (h_a - 1)         (a == b)
            q(h' -> h)  ∝ h'_{b+1} h'_{a-1}     (b+1 != a-1)  h'_{a-1} (h'_{a-1} - 1) (b == a-2)

    (b) birth (probability 1/4 when ``n_lo < n_hi``): pick a user at level ``a >= 2``; it goes
        to ``a - 1`` and a new user at level 1 appears: ``h' = h - e_a + e_{a-1} + e_1``,
        ``n' = n + 1`` (rejected if ``n = n_hi``)::

            q(h -> h')  = 1/4 * h_a / n
            q(h' -> h)  = 1/4 * h'_1 / (n + 1) * (h'_{a-1} - [a = 2]) / n     (a death)

    (c) death (probability 1/4): pick a user; if at level 1 (else stay) it leaves, and a
        distinct receiver at level ``b < m`` gains its item:
        ``h' = h - e_1 - e_b + e_{b+1}``, ``n' = n - 1`` (rejected if ``n = n_lo``)::

            q(h -> h')  = 1/4 * h_1 / n * (h_b - [b = 1]) / (n - 1)
            q(h' -> h)  = 1/4 * h'_{b+1} / (n - 1)                              (a birth)

    Every proposal is accepted with probability
    ``min(1, pi(n', h') q(h' -> h) / (pi(n, h) q(h -> h')))``; infeasible proposals (Gale-Ryser
    fails) are rejected, so ``log_target_n`` is never read at an ``n`` without a feasible
    histogram (entries there may be ``±inf``).

    Parameters
    ----------
    h
        Current histogram, length ``m = len(c)``, feasible; not modified.
    n
        Current number of users, ``sum(h)``.
    c
        Column sums (any order).
    log_target_n
        Log target of ``n`` (unnormalised), length ``n_hi - n_lo + 1``; finite at ``n``.
    log_f
        ``None`` (or empty) for uniform sorted row sums given ``n``, else ``log f(k)`` for
        ``k = 1..m`` (``-inf`` allowed).
    steps
        Number of proposals.
    rng
        The source of randomness.
    n_lo, n_hi
        Bounds on ``n`` (``n_lo == n_hi``: ``n`` fixed, only move (a)).

    Returns
    -------
    h : numpy.ndarray
        The new histogram (a new ``int64`` array).
    n : int
        The new number of users.
    accepted : int
        Number of accepted proposals.
    """
    return _h_chain(h, n, c, log_target_n, log_f, steps, rng, n_lo, n_hi, True)


def _h_chain_continue(
    h: np.ndarray, n: int, Cpref: np.ndarray, log_target_n: np.ndarray, steps: int, rng: np.random.Generator,
    n_lo: int, n_hi: int,
) -> tuple[np.ndarray, int, int]:
    """:func:`h_chain` without ``log_f``, continuing from a state ``(h, n)`` that :func:`h_chain` (or
    this function) returned for the same margins (``Cpref = _c_prefix(c)``), ``log_target_n``
    (``float64``, C-contiguous) and bounds: nothing is re-checked (the kernel keeps its states
    feasible).  :class:`RowSumStep` calls it once per draw, where the checks cost ~6% of a draw."""
    hh = np.array(h, dtype=np.int64)
    n_new, accepted = _h_chain_kernel(hh, n, Cpref, log_target_n, _NO_LOG_F, False, steps, rng, n_lo, n_hi, True)
    return hh, int(n_new), int(accepted)


_NO_LOG_F = np.zeros(0)


def _h_chain(h, n, c, log_target_n, log_f, steps, rng, n_lo, n_hi, hastings):  # type: ignore[no-untyped-def]
    cc = _int_vector(c, "c")
    m = cc.size
    hh = _int_vector(h, "h").copy()
    if hh.size != m:
        raise ValueError(f"h must have length len(c) = {m}, got length {hh.size}")
    n = _int_scalar(n, "n", 1)
    n_lo = _int_scalar(n_lo, "n_lo", 1)
    n_hi = _int_scalar(n_hi, "n_hi", n_lo)
    steps = _int_scalar(steps, "steps", 0)
    _check_rng(rng)
    if not n_lo <= n <= n_hi:
        raise ValueError(f"n must lie in [n_lo, n_hi] = [{n_lo}, {n_hi}], got {n}")
    if int(hh.sum()) != n:
        raise ValueError(f"h must sum to n = {n}, got sum {int(hh.sum())}")
    v = int(_hist_violation(hh, np.sort(cc)[::-1].copy()))
    if v != -1:
        what = "sum_k k h_k must equal sum(c)" if v == 0 else f"the Gale-Ryser condition fails at p = {v}"
        raise ValueError(f"h must be feasible with c ({what}), got {_fmt(hh)}")
    lt = np.ascontiguousarray(np.asarray(log_target_n, dtype=np.float64))
    if lt.ndim != 1 or lt.size != n_hi - n_lo + 1 or np.isnan(lt).any():
        raise ValueError(
            f"log_target_n must be a 1-D float array of length n_hi - n_lo + 1 = {n_hi - n_lo + 1} "
            f"without nan, got {_fmt(log_target_n)}"
        )
    if not np.isfinite(lt[n - n_lo]):
        raise ValueError(f"log_target_n must be finite at the current n = {n}, got {lt[n - n_lo]}")
    use_f = log_f is not None and np.asarray(log_f).size > 0
    if use_f:
        lf = np.ascontiguousarray(np.asarray(log_f, dtype=np.float64))
        if lf.ndim != 1 or lf.size != m or np.isnan(lf).any() or np.isposinf(lf).any():
            raise ValueError(
                f"log_f must be None or a 1-D float array of length m = {m} without nan or +inf, "
                f"got {_fmt(log_f)}"
            )
        if not np.isfinite(_log_g(hh, n, lf, True)):
            raise ValueError(f"log_f must be finite at every level that h occupies, got {_fmt(log_f)}")
    else:
        lf = np.zeros(0)
    Cpref = _c_prefix(cc)
    n_new, accepted = _h_chain_kernel(hh, n, Cpref, lt, lf, use_f, steps, rng, n_lo, n_hi, bool(hastings))
    return hh, int(n_new), int(accepted)
