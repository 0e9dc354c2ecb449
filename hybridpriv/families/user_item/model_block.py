"""The continuing matrix chain of :class:`hybridpriv.models.UserItemModel` (issue 13): blocks of
posterior draws, the streams of their draws, replay and cache (:class:`BlockChain`).  The compiled
kernels it runs (bit rows, Curveball trades, the row-sum move) are in :mod:`.model_bits`.
"""

from __future__ import annotations

import threading

import numpy as np

from .model_bits import (
    _bits_from_csr_kernel,
    _csr_from_bits_kernel,
    _curveball_bits_kernel,
    _move_kernel,
    state_of,
)

__all__ = ["BlockChain", "draw_generator", "draw_sequence", "draw_streams"]


def draw_streams(rng: np.random.Generator, chain: int, draw: int) -> tuple | None:
    """The key of the family of streams ``rng`` belongs to, if it is the stream of ``(chain, draw)``.

    ``rng`` qualifies when its bit generator was seeded with a :class:`numpy.random.SeedSequence`
    whose spawn key ends with ``(chain, draw)``, as the engine's ``stream(seed, "dataset", chain,
    draw)`` does.  The key (bit generator type, entropy, spawn-key prefix up to the chain, pool
    size) names the stream of any other draw of the same chain: :func:`draw_generator`.  Any other
    generator (``default_rng(0)``, a stream keyed by something else): ``None``.
    """
    ss = getattr(rng.bit_generator, "seed_seq", None)
    if not isinstance(ss, np.random.SeedSequence):
        return None
    sk = tuple(int(k) for k in ss.spawn_key)
    if len(sk) < 2 or sk[-2:] != (chain, draw):
        return None
    ent = ss.entropy
    ent = tuple(int(x) for x in np.atleast_1d(ent)) if not isinstance(ent, int) else ent
    return (type(rng.bit_generator), ent, sk[:-1], int(ss.pool_size))


def draw_sequence(key: tuple, draw: int) -> np.random.SeedSequence:
    """The ``SeedSequence`` of ``draw`` in the family ``key`` (:func:`draw_streams`)."""
    _, ent, prefix, pool = key
    entropy = list(ent) if isinstance(ent, tuple) else ent
    return np.random.SeedSequence(entropy, spawn_key=(*prefix, draw), pool_size=pool)


def draw_generator(key: tuple, draw: int) -> np.random.Generator:
    """A fresh generator on the stream of ``draw`` in the family ``key``: the engine's generator of that draw."""
    return np.random.Generator(key[0](draw_sequence(key, draw)))


class BlockChain:
    """The continuing Curveball chain behind :meth:`UserItemPosterior.generate` (``block > 1``).

    Draws of a chain are grouped in fixed blocks ``[b B, (b + 1) B)`` of ``B = model.block`` draws.
    Invariants (tested in ``tests/families/user_item/test_model_block.py``):

    * **A function of the draw's stream.**  The matrix of ``(chain, draw)`` depends only on the
      posterior's row sums of the block's draws up to ``draw`` and on the streams of those draws
      (``key``: the family of the generator passed for ``draw``, see :func:`draw_streams`), never on
      the order of calls, the chunk or the worker: a request out of order replays the block from
      its first draw (at most ``B - 1`` extra steps), a request for the next draw continues from the
      cached one.
    * **Block starts are the fresh-start sampler.**  The first draw ``d0`` of a block is
      ``model.matrix_for(h[d0], generator of d0)``: the matrix ``block=1`` (the sampler before
      issue 13) gives for that draw.
    * **Each later draw continues the chain.**  Draw ``d`` takes the matrix of ``d - 1``, moves
      items between users to the row sums of ``d`` (the kernel of
      :func:`~.model_bits.move_row_sums`; rows paired by position, both sorted by decreasing
      row sum; nothing when they are equal), then runs ``model.trades_per_row * n`` Curveball
      trades (the kernel of :func:`~.model_bits.curveball_bits`), both drawing from one
      xoshiro256** state seeded by the ``SeedSequence`` of ``d``'s stream
      (:func:`~.model_bits.state_of`).  Column sums are kept exactly; row sums are the draw's
      exactly (the move's augmenting paths always exist on the posterior's feasible row sums;
      were one missing, the draw would start fresh from ``matrix_for`` with the same generator
      and ``fallbacks`` count it).

    The cache holds one matrix (the last draw made), guarded by a lock for threaded workers; it
    is not pickled.
    """

    def __init__(self, model, histogram) -> None:
        self.model = model
        self.histogram = histogram  # (chain, draw) -> h
        self.block = int(model.block)
        self._lock = threading.Lock()
        self._last: tuple | None = None  # (chain, key, draw, bits, r)
        self.fallbacks = 0
        self.exchanges = 0
        self.steps = 0

    def _rows(self, h: np.ndarray) -> np.ndarray:
        return np.repeat(np.arange(self.model.m, 0, -1), np.asarray(h, dtype=np.int64)[::-1]).astype(np.int64)

    def _fresh(self, h: np.ndarray, gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        mat = self.model.matrix_for(h, gen)
        bits = _bits_from_csr_kernel(mat.indptr.astype(np.int64), mat.indices.astype(np.int64),
                                     (self.model.m + 63) // 64)
        return bits, self._rows(h)

    def _step(self, bits: np.ndarray, r_old: np.ndarray, h: np.ndarray,
              key: tuple, draw: int) -> tuple[np.ndarray, np.ndarray]:
        r_new = self._rows(h)
        ss = draw_sequence(key, draw)
        state = state_of(ss)
        if not np.array_equal(r_old, r_new):
            size = max(r_old.size, r_new.size)
            if r_old.size == r_new.size:  # n unchanged: in place (the cache no longer holds bits)
                work, ro, rn = bits, r_old, r_new
            else:  # users beyond the old or new n hold no items
                work = np.zeros((size, bits.shape[1]), np.uint64)
                work[: r_old.size] = bits
                ro = np.zeros(size, np.int64)
                ro[: r_old.size] = r_old
                rn = np.zeros(size, np.int64)
                rn[: r_new.size] = r_new
            ex = int(_move_kernel(work, ro, rn, self.model.m, state))
            if ex < 0:  # pragma: no cover - not seen on feasible margins
                self.fallbacks += 1
                return self._fresh(h, np.random.Generator(key[0](ss)))
            self.exchanges += ex
            bits = work if size == r_new.size else np.ascontiguousarray(work[: r_new.size])
        _curveball_bits_kernel(bits, self.model.trades_per_row * r_new.size, state)
        self.steps += 1
        return bits, r_new

    def matrix(self, chain: int, draw: int, key: tuple) -> tuple[np.ndarray, np.ndarray]:
        """``(indptr, indices)`` of the matrix of ``(chain, draw)`` (caller's item order)."""
        d0 = draw - draw % self.block
        with self._lock:
            last = self._last
            if last is not None and last[0] == chain and last[1] == key and d0 <= last[2] <= draw:
                d, bits, r = last[2], last[3], last[4]
            else:
                d = d0
                bits, r = self._fresh(self.histogram(chain, d0), draw_generator(key, d0))
            self._last = None  # the cached bits change in place below
            while d < draw:
                d += 1
                bits, r = self._step(bits, r, self.histogram(chain, d), key, d)
            self._last = (chain, key, draw, bits, r)
            return _csr_from_bits_kernel(bits)
