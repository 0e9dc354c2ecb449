"""Binary matrices as rows of bits, Curveball trades on them and the row-sum move between margins:
the compiled core of the continuing matrix chain of :class:`hybridpriv.models.UserItemModel`
(issue 13; the chain itself, its blocks and streams: :mod:`.model_block`).

A *bit matrix* is a C-contiguous ``uint64`` array ``bits`` of shape ``(n, W)``, ``W = ceil(m / 64)``:
item ``j`` of user ``i`` is bit ``j % 64`` of ``bits[i, j // 64]`` (items in the caller's order, so a
row's items come out sorted).  Three compiled kernels act on it in place:

* :func:`curveball_bits`: Curveball trades (Strona et al. 2014), the same trade as
  :func:`hybridpriv.families.user_item.model_chains.curveball` (two distinct users uniformly; the items held
  by exactly one of them redistributed uniformly, each keeping its count), on words instead of
  sorted lists: the pool is ``a ^ b``, the kept items ``a & b``.  Its numbers differ from
  ``curveball``'s, not its law;
* :func:`move_row_sums`: from a matrix with row sums ``r_old`` to one with row sums ``r_new`` and
  the same column sums, by moving items between users (several at once);
* conversions from and to the CSR ``(indptr, indices)`` of the other kernels.

Like ``model_chains`` this file inlines only its own helpers (numba's ``cache=True`` tracks a
kernel's own file only).  The kernels draw from a xoshiro256** state (``uint64[4]``, Blackman &
Vigna 2018; about 1.5x faster than calling the ``Generator`` from numba, measured on the Curveball
trades) seeded with 256 bits of the :class:`numpy.random.Generator` passed to the wrappers, or of
a draw's ``SeedSequence`` (:func:`state_of`); uniform integers below ``k`` by Lemire's
multiply-shift with rejection (exactly uniform, no division on the common path).  Randomness comes
only from the generator or sequence given.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core.extending import intrinsic

from .model_checks import (
    _check_csr,
    _check_rng,
    _fmt,
    _int_scalar,
    _int_vector,
    csr_margins,
)
from .model_feasibility import _gr_violation

__all__ = ["bits_from_csr", "csr_from_bits", "curveball_bits", "move_row_sums", "state_of"]

@intrinsic
def _popcount(typingctx, x):
    """Number of set bits of a ``uint64`` (LLVM ``ctpop``)."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return types.uint64(types.uint64), codegen


@intrinsic
def _ctz(typingctx, x):
    """Index of the lowest set bit of a non-zero ``uint64`` (LLVM ``cttz``)."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return types.uint64(types.uint64), codegen


@njit(cache=True, inline="always")
def _rotl(x, k):  # pragma: no cover - compiled
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@njit(cache=True, inline="always")
def _next(s):  # pragma: no cover - compiled
    """xoshiro256** (Blackman & Vigna 2018): the next 64 bits of the state ``s`` (``uint64[4]``)."""
    result = _rotl(s[1] * np.uint64(5), 7) * np.uint64(9)
    t = s[1] << np.uint64(17)
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = _rotl(s[3], 45)
    return result


@njit(cache=True, inline="always")
def _randint(s, k):  # pragma: no cover - compiled
    """Exactly uniform integer in ``[0, k)``, ``1 <= k < 2**31``: the top 32 bits of ``_next(s)``
    times ``k``, the high half kept, rejected when the low half falls in the ``2**32 mod k``
    uneven values (Lemire 2019); the modulo is computed only on the rare near-boundary draws."""
    while True:
        prod = np.int64(_next(s) >> np.uint64(32)) * k
        low = prod & 0xFFFFFFFF
        if low >= k or low >= 4294967296 % k:
            return prod >> 32


def _state(rng: np.random.Generator) -> np.ndarray:
    """A xoshiro256** state: 256 bits drawn from ``rng`` (never all zero)."""
    s = rng.integers(0, 2**64, size=4, dtype=np.uint64, endpoint=False)
    if not s.any():  # pragma: no cover - probability 2**-256
        s[0] = 1
    return s


def state_of(seed_sequence: np.random.SeedSequence) -> np.ndarray:
    """A xoshiro256** state from a ``SeedSequence`` (its first 256 bits; never all zero)."""
    s = seed_sequence.generate_state(4, np.uint64)
    if not s.any():  # pragma: no cover - probability 2**-256
        s[0] = 1
    return s


@njit(cache=True, inline="always")
def _nth_bit(bits, i, t):  # pragma: no cover - compiled
    """Position of the ``t``-th (0-based) set bit of row ``i``."""
    for w in range(bits.shape[1]):
        x = bits[i, w]
        c = np.int64(_popcount(x))
        if t < c:
            for _ in range(t):
                x &= x - np.uint64(1)
            return w * 64 + np.int64(_ctz(x))
        t -= c
    return -1


@njit(cache=True, inline="always")
def _has(bits, i, j):  # pragma: no cover - compiled
    return ((bits[i, j >> 6] >> np.uint64(j & 63)) & np.uint64(1)) == np.uint64(1)


@njit(cache=True, inline="always")
def _flip(bits, i, j):  # pragma: no cover - compiled
    bits[i, j >> 6] ^= np.uint64(1) << np.uint64(j & 63)


@njit(cache=True)
def _curveball_bits_kernel(bits, n_trades, rng):  # rng: a xoshiro256** state  # pragma: no cover - compiled
    n, W = bits.shape
    if n < 2:
        return
    pos = np.empty(64 * W, np.int64)
    chosen = np.zeros(W, np.uint64)
    one = np.uint64(1)
    for _ in range(n_trades):
        i = _randint(rng, n)
        j = _randint(rng, n - 1)
        if j >= i:
            j += 1
        na = 0
        ns = 0
        for w in range(W):
            d = bits[i, w] ^ bits[j, w]
            na += np.int64(_popcount(bits[i, w] & d))
            ns += np.int64(_popcount(d))
        if na == 0 or na == ns:
            continue
        if ns == 2:  # one exclusive item each: swap them with probability 1/2
            if _randint(rng, 2) == 1:
                for w in range(W):
                    d = bits[i, w] ^ bits[j, w]
                    bits[i, w] ^= d
                    bits[j, w] ^= d
            continue
        # user i keeps a uniformly random na-subset of the pool (partial Fisher-Yates over its
        # positions, listed in increasing order); the other ns - na go to user j
        s = 0
        for w in range(W):
            d = bits[i, w] ^ bits[j, w]
            while d:
                pos[s] = w * 64 + np.int64(_ctz(d))
                s += 1
                d &= d - one
        for t in range(na):
            u = t + _randint(rng, ns - t)
            p = pos[u]
            pos[u] = pos[t]
            pos[t] = p
            chosen[p >> 6] |= one << np.uint64(p & 63)
        for w in range(W):
            d = bits[i, w] ^ bits[j, w]
            keep = bits[i, w] & bits[j, w]
            bits[i, w] = keep | chosen[w]
            bits[j, w] = keep | (d ^ chosen[w])
            chosen[w] = np.uint64(0)


@njit(cache=True)
def _bits_from_csr_kernel(indptr, indices, W):  # pragma: no cover - compiled
    n = indptr.shape[0] - 1
    bits = np.zeros((n, W), np.uint64)
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            _flip(bits, i, indices[p])
    return bits


@njit(cache=True)
def _csr_from_bits_kernel(bits):  # pragma: no cover - compiled
    n, W = bits.shape
    indptr = np.zeros(n + 1, np.int32)
    for i in range(n):
        c = 0
        for w in range(W):
            c += np.int64(_popcount(bits[i, w]))
        indptr[i + 1] = indptr[i] + c
    indices = np.empty(indptr[n], np.int32)
    one = np.uint64(1)
    for i in range(n):
        s = indptr[i]
        for w in range(W):
            x = bits[i, w]
            while x:
                indices[s] = w * 64 + np.int64(_ctz(x))
                s += 1
                x &= x - one
    return indptr, indices


@njit(cache=True)
def _take_pooled(bits, free, u, m, rng):  # pragma: no cover - compiled
    """User ``u`` takes one pooled item it lacks, drawn with probability proportional to the
    pool's copies ``free[j]`` (one ``_randint``); False, drawing nothing, when it lacks none."""
    tot = 0
    for j in range(m):
        if free[j] > 0 and not _has(bits, u, j):
            tot += free[j]
    if tot == 0:
        return False
    x = _randint(rng, tot)
    for j in range(m):
        if free[j] > 0 and not _has(bits, u, j):
            if x < free[j]:
                _flip(bits, u, j)
                free[j] -= 1
                return True
            x -= free[j]
    return True


@njit(cache=True)
def _move_kernel(bits, r_old, r_new, m, rng):  # pragma: no cover - compiled; rng: a xoshiro256** state
    """In place; returns the number of augmenting paths used (exchanges through other users), or
    -1 when none is left (infeasible margins; bits then undefined)."""
    n = bits.shape[0]
    free = np.zeros(m, np.int64)
    need = np.zeros(n, np.int64)
    W = bits.shape[1]
    one = np.uint64(1)
    # 1. direct gifts: each unit a user gains (users in row order) comes from a user who loses
    #    items (the first, from a random offset among them, holding an item the gainer lacks), as
    #    a uniformly random one of those items
    donors = np.empty(n, np.int64)
    nd = 0
    for i in range(n):
        if r_old[i] > r_new[i]:
            donors[nd] = i
            nd += 1
    surplus = r_old - r_new
    for i in range(n):
        for _ in range(r_new[i] - r_old[i]):
            d = -1
            off = _randint(rng, nd) if nd > 0 else 0
            for t in range(nd):
                v = donors[(off + t) % nd]
                if surplus[v] <= 0:
                    continue
                for w in range(W):
                    if bits[v, w] & ~bits[i, w]:
                        d = v
                        break
                if d >= 0:
                    break
            if d < 0:
                need[i] += 1
                continue
            nx = 0
            for w in range(W):
                nx += np.int64(_popcount(bits[d, w] & ~bits[i, w]))
            k = _randint(rng, nx)
            for w in range(W):
                x = bits[d, w] & ~bits[i, w]
                c = np.int64(_popcount(x))
                if k < c:
                    for _ in range(k):
                        x &= x - one
                    j = w * 64 + np.int64(_ctz(x))
                    _flip(bits, d, j)
                    _flip(bits, i, j)
                    break
                k -= c
            surplus[d] -= 1
    # 2. what donors still lose goes to a pool (a uniformly random subset of their items); users
    #    still short take items of the pool they lack, with probability proportional to copies
    for t in range(nd):
        i = donors[t]
        have = r_new[i] + surplus[i]
        for _ in range(surplus[i]):
            j = _nth_bit(bits, i, _randint(rng, have))
            _flip(bits, i, j)
            free[j] += 1
            have -= 1
    left = 0
    for i in range(n):
        for _ in range(need[i]):
            if _take_pooled(bits, free, i, m, rng):
                need[i] -= 1
            else:
                left += 1
    # 3. what is left goes through other users.  First a 3-user exchange: a user u (scanned from
    #    a random offset) holding an item x the short user i lacks and lacking a pooled item j
    #    hands x to i and takes j.  If there is none, an augmenting path (breadth first, users
    #    scanned from a random offset): pooled item j0 -> user u1 takes j0 and gives x1 -> user u2
    #    takes x1 and gives x2 -> ... -> a user still short of items takes the last one.  Every user
    #    on the path but the last keeps its count; by max-flow/min-cut such a path exists whenever
    #    the new row sums are feasible with the column sums (Gale-Ryser).
    paths = 0
    item_from = np.empty(m, np.int64)  # the user who gives item x on the path (-1: the pool)
    user_takes = np.empty(n, np.int64)  # the item user u takes on the path
    seen = np.empty(W, np.uint64)  # items reached
    front = np.empty(W, np.uint64)  # items reached in the last layer
    nxt = np.empty(W, np.uint64)
    pool = np.zeros(W, np.uint64)
    i = 0
    while left > 0:
        while need[i] == 0:
            i += 1
        for w in range(W):
            pool[w] = np.uint64(0)
        for j in range(m):
            if free[j] > 0:
                pool[j >> 6] |= one << np.uint64(j & 63)
        off = _randint(rng, n)
        u = -1
        for t in range(n):
            v = (off + t) % n
            if v == i:
                continue
            gives = False
            takes = False
            for w in range(W):
                if bits[v, w] & ~bits[i, w]:
                    gives = True
                if pool[w] & ~bits[v, w]:
                    takes = True
            if gives and takes:
                u = v
                break
        if u >= 0:
            nx = 0
            for w in range(W):
                nx += np.int64(_popcount(bits[u, w] & ~bits[i, w]))
            k = _randint(rng, nx)
            xi = -1
            for w in range(W):
                x = bits[u, w] & ~bits[i, w]
                c = np.int64(_popcount(x))
                if k < c:
                    for _ in range(k):
                        x &= x - one
                    xi = w * 64 + np.int64(_ctz(x))
                    break
                k -= c
            _take_pooled(bits, free, u, m, rng)  # u lacks a pooled item: it was chosen so
            _flip(bits, u, xi)
            _flip(bits, i, xi)
            need[i] -= 1
            left -= 1
            paths += 1
            continue
        user_takes[:] = -1
        for w in range(W):
            seen[w] = np.uint64(0)
        for j in range(m):
            if free[j] > 0:
                seen[j >> 6] |= one << np.uint64(j & 63)
                item_from[j] = -1
        for w in range(W):
            front[w] = seen[w]
        end = -1
        off = _randint(rng, n)
        more = True
        while more and end < 0:  # one layer: every user not yet on a path who lacks a frontier item
            more = False
            for w in range(W):
                nxt[w] = np.uint64(0)
            for t in range(n):
                u = (off + t) % n
                if user_takes[u] >= 0:
                    continue
                j = -1
                for w in range(W):
                    x = front[w] & ~bits[u, w]
                    if x:
                        j = w * 64 + np.int64(_ctz(x))
                        break
                if j < 0:
                    continue
                user_takes[u] = j
                if need[u] > 0:
                    end = u
                    break
                for w in range(W):
                    x = bits[u, w] & ~seen[w]
                    if x:
                        seen[w] |= x
                        nxt[w] |= x
                        more = True
                        while x:
                            item_from[w * 64 + np.int64(_ctz(x))] = u
                            x &= x - one
            for w in range(W):
                front[w] = nxt[w]
        if end < 0:
            return -1
        u = end
        need[u] -= 1
        left -= 1
        while True:
            j = user_takes[u]
            _flip(bits, u, j)
            v = item_from[j]
            if v == -1:
                free[j] -= 1
                break
            _flip(bits, v, j)
            u = v
        paths += 1
    return paths


def bits_from_csr(indptr: np.ndarray, indices: np.ndarray, n_items: int) -> np.ndarray:
    """The bit matrix (``(n, ceil(n_items / 64))`` ``uint64``) of a CSR matrix with ``n_items`` items."""
    _check_csr(indptr, indices, writeable=False)
    m = _int_scalar(n_items, "n_items", 1)
    if indices.size and int(indices.max()) >= m:
        raise ValueError(f"n_items must exceed every item index (largest {int(indices.max())}), got {m}")
    return _bits_from_csr_kernel(indptr, indices, (m + 63) // 64)


def csr_from_bits(bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(indptr, indices)`` (``int64``, ``int32``; each row's items increasing) of a bit matrix."""
    indptr, indices = _csr_from_bits_kernel(_check_bits(bits))
    return indptr.astype(np.int64), indices


def _check_bits(bits: object) -> np.ndarray:
    if not (isinstance(bits, np.ndarray) and bits.dtype == np.uint64 and bits.ndim == 2
            and bits.flags.c_contiguous and bits.flags.writeable):
        raise ValueError(f"bits must be a writeable C-contiguous 2-D uint64 array, got {_fmt(bits)}")
    return bits


def curveball_bits(bits: np.ndarray, n_trades: int, rng: np.random.Generator) -> None:
    """Run ``n_trades`` Curveball trades on a bit matrix, in place (margins kept; the chain's
    stationary law is uniform over the matrices with its margins, as for ``curveball``)."""
    _check_bits(bits)
    n_trades = _int_scalar(n_trades, "n_trades", 0)
    _check_rng(rng)
    if bits.shape[0] >= 2**31:
        raise ValueError(f"bits must have fewer than 2**31 rows, got {bits.shape[0]}")
    _curveball_bits_kernel(bits, n_trades, _state(rng))


def move_row_sums(bits: np.ndarray, r: np.ndarray, n_items: int, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Move items between users so that user ``i`` holds ``r[i]`` items; column sums unchanged.

    Users ``i < len(r)`` keep their place; users beyond the current ``n`` start with no items,
    users beyond ``len(r)`` must give all theirs away (``r`` may be shorter or longer than the
    matrix: the number of users changes).  Each user who loses ``s`` items gives up a uniformly
    random ``s`` of them; users who gain (in row order) take items of that pool they lack, each
    with probability proportional to its copies in the pool; a user who already holds every pooled
    item gets one through other users: an augmenting path (pooled item ``j0`` to a user who gives
    ``x1`` for it, ``x1`` to a user who gives ``x2``, ..., the last item to the user short of one),
    which exists whenever ``r`` is feasible with the column sums (max-flow/min-cut).

    Parameters
    ----------
    bits
        The bit matrix (``(n, W)`` ``uint64``); not modified.
    r
        The new row sums (``len(r)`` users, non-negative, ``<= n_items``, summing to the number of
        ones, feasible with the column sums by Gale-Ryser).
    n_items
        The number of items ``m`` (``64 * (W - 1) < m <= 64 W``).
    rng
        The source of randomness (its state advances).

    Returns
    -------
    bits : numpy.ndarray
        A new bit matrix ``(len(r), W)`` with row sums ``r`` and the column sums of the input.
    exchanges : int
        How many augmenting paths it took (0 when every gaining user found a pooled item it lacked).

    Raises
    ------
    ValueError
        For a malformed or infeasible ``r`` (naming it), bad ``bits``, ``n_items`` or ``rng``.
    RuntimeError
        If no augmenting path is left (cannot happen on the feasible margins checked here).
    """
    _check_bits(bits)
    _check_rng(rng)
    n, W = bits.shape
    m = _int_scalar(n_items, "n_items", 1)
    if not 64 * (W - 1) < m <= 64 * W:
        raise ValueError(f"n_items must be in ({64 * (W - 1)}, {64 * W}] for bits of {W} words per row, got {m}")
    rr = _int_vector(r, "r")
    ip, ix = csr_from_bits(bits)
    r_old = np.diff(ip)
    r_all, c = csr_margins(ip, ix.astype(np.int64), m)
    if ix.size and int(ix.max()) >= m:
        raise ValueError(f"n_items must exceed every item of bits (largest {int(ix.max())}), got {m}")
    if rr.size and int(rr.max()) > m:
        raise ValueError(f"r must have entries <= n_items = {m}, got {_fmt(rr)}")
    if int(rr.sum()) != int(r_old.sum()):
        raise ValueError(f"r must sum to the matrix's number of ones {int(r_old.sum())}, got sum {int(rr.sum())}: {_fmt(rr)}")
    if _gr_violation(np.sort(rr)[::-1].copy(), np.sort(c)[::-1].copy()) != -1:
        raise ValueError(f"r must be feasible with the column sums (Gale-Ryser), got r = {_fmt(rr)}, c = {_fmt(c)}")
    size = max(n, rr.size)
    work = np.zeros((size, W), np.uint64)
    work[:n] = bits
    ro = np.zeros(size, np.int64)
    ro[:n] = r_old
    rn = np.zeros(size, np.int64)
    rn[: rr.size] = rr
    ex = int(_move_kernel(work, ro, rn, m, _state(rng)))
    if ex < 0:
        raise RuntimeError(f"the row-sum move to r = {_fmt(rr)} found no augmenting path")  # pragma: no cover
    return np.ascontiguousarray(work[: rr.size]), ex
