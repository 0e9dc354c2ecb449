"""The continuing matrix chain of UserItemModel (issue 13): row-sum moves, bit-row trades, blocks.

Invariants of :class:`hybridpriv.families.user_item.model_block.BlockChain` tested here: a matrix is a
function of (seed, chain, draw) and the posterior whatever the call order, chunking or process;
block starts are the fresh-start (``block=1``) matrices; every matrix has exactly its draw's row
sums and the column sums; and the matrices of later draws in a block, each reached by a row-sum
move (several items at once, the number of users changing) then the trades, are uniform given
their margins (brute force over the 36 matrices of one margin pair).
"""

from __future__ import annotations

import pickle
import zlib
from collections import Counter

import numpy as np
import pytest
import xarray as xr
from _support.matrices import all_matrices
from hybridpriv.engine import Engine
from hybridpriv.models import BLOCK, UserItemModel, UserItemPosterior
from hybridpriv.families.user_item.model_bits import bits_from_csr, csr_from_bits, curveball_bits, move_row_sums
from hybridpriv.families.user_item.model_block import draw_streams
from hybridpriv.families.user_item.model_checks import csr_margins
from scipy import stats

from hybridpriv.core.random import rng as stream

C = [4, 2, 2, 1]
R_A = (3, 2, 2, 1, 1)  # the measured margins: 36 matrices
# the draws between two R_A draws: each move to R_A changes 1-2 items, some change the number of users
OTHERS = [(4, 3, 1, 1), (2, 2, 2, 1, 1, 1), (4, 2, 1, 1, 1), (2, 2, 2, 2, 1), (3, 3, 1, 1, 1), (3, 2, 1, 1, 1, 1)]


def hist(r, m=len(C)):
    return np.bincount(r, minlength=m + 1)[1:]


def posterior_of(rows_per_draw, c=C, block=BLOCK, chains=1, n=None):
    """A UserItemPosterior whose draws have the given row sums (every chain the same)."""
    m = len(c)
    lens = [len(r) for r in rows_per_draw]
    model = UserItemModel(c, (min(lens), max(lens)) if n is None else n, block=block)
    h = np.array([[hist(r, m) for r in rows_per_draw]] * chains)
    ds = xr.Dataset({"h": (("chain", "draw", "items"), h)})
    return UserItemPosterior(model, {"posterior": ds}, seed=0)


def key_of(mat, n_rows):
    return tuple(tuple(mat.indices[mat.indptr[i] : mat.indptr[i + 1]].tolist()) for i in range(n_rows))


def check_margins(mat, r, c):
    rr, cc = csr_margins(mat.indptr.astype(np.int64), mat.indices.astype(np.int64), len(c))
    assert tuple(rr) == tuple(r) and tuple(cc) == tuple(c)


# ----------------------------------------------------------------------------------------------
# uniformity of the continuing chain
# ----------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_continuing_chain_after_row_sum_moves_is_uniform_given_margins():
    # R_A at even draws, one of OTHERS at odd draws: every R_A draw that is not a block start was
    # reached by a row-sum move from another margin pair (1-2 items moved at once, n changing in
    # 3 of 6) and then the trades.  40,000 such draws over 36 matrices: a chi-square test at level
    # 1e-3 sees a bias of +-5% on half of the matrices (noncentrality 40,000 x 0.05^2 = 100) with
    # power > 0.999 (asserted below); the sampler must pass it.
    target = 40_000
    block = 50
    per_block = block // 2 - 1  # R_A draws per block that are not its start
    blocks = -(-target // per_block)
    seq = [R_A if d % 2 == 0 else OTHERS[(d // 2) % len(OTHERS)] for d in range(blocks * block)]
    post = posterior_of(seq, block=block)
    counts: Counter = Counter()
    for d in range(len(seq)):
        mat = post.generate(0, d, stream(11, "dataset", 0, d))
        if d % 2 == 0 and d % block != 0:
            counts[key_of(mat, len(R_A))] += 1
        if d < 200:
            check_margins(mat, seq[d], C)
    mats = all_matrices(R_A, C)
    assert len(mats) == 36 and set(counts) <= set(mats)
    obs = np.array([counts.get(m, 0) for m in mats], dtype=float)
    exp = np.full(obs.size, obs.sum() / obs.size)
    p = float(stats.chisquare(obs, exp).pvalue)
    crit = stats.chi2.ppf(1 - 1e-3, obs.size - 1)
    power = 1 - stats.ncx2.cdf(crit, obs.size - 1, obs.sum() * 0.05**2)
    print(f"\n{int(obs.sum()):,} continued draws, 36 matrices: p = {p:.3g}, largest deviation "
          f"{np.max(np.abs(obs / exp - 1)):.1%}; power against a +-5% bias {power:.4f}; "
          f"augmenting paths {post._chain.exchanges}, fallbacks {post._chain.fallbacks}")
    assert obs.sum() >= target and power > 0.999
    assert p > 1e-3, p
    assert post._chain.fallbacks == 0


# ----------------------------------------------------------------------------------------------
# determinism: seed, chain, draw; not call order, chunks or processes
# ----------------------------------------------------------------------------------------------
SEQ = [R_A, (4, 3, 1, 1), R_A, (2, 2, 2, 1, 1, 1), (3, 2, 1, 1, 1, 1), R_A, (2, 2, 2, 2, 1)] * 4


def _all(post, order, seed=5):
    return {(c, d): post.generate(c, d, stream(seed, "dataset", c, d)) for c, d in order}


def same(a, b):
    return a.shape == b.shape and (a != b).nnz == 0


def test_matrix_depends_on_seed_chain_and_draw_not_on_call_order_chunks_or_process():
    post = posterior_of(SEQ, block=5, chains=2)
    order = [(c, d) for c in range(2) for d in range(len(SEQ))]
    ref = _all(post, order)
    shuffled = order[:]
    np.random.default_rng(0).shuffle(shuffled)
    for other in (
        _all(pickle.loads(pickle.dumps(post)), shuffled),  # a worker's copy, any order
        _all(pickle.loads(pickle.dumps(post)), order[::-1]),
        _all(post, shuffled),  # the same object, its cache holding another draw
    ):
        assert all(same(ref[k], other[k]) for k in order)
    # chunks of any size, each on a fresh copy (a resume or another worker)
    for size in (1, 3, 7, 100):
        got = {}
        for s in range(0, len(order), size):
            got.update(_all(pickle.loads(pickle.dumps(post)), order[s : s + size]))
        assert all(same(ref[k], got[k]) for k in order)
    # another seed gives other matrices; the chains differ
    other_seed = _all(post, order, seed=6)
    assert sum(not same(ref[k], other_seed[k]) for k in order) > len(order) // 2
    assert sum(not same(ref[0, d], ref[1, d]) for d in range(len(SEQ))) > len(SEQ) // 2
    for (c, d), mat in ref.items():
        check_margins(mat, SEQ[d], C)


def test_engine_results_do_not_depend_on_chunk_size():
    from hybridpriv.engine.evaluate import evaluate
    from hybridpriv.estimators import ContributionBoundedCounts, ItemCounts

    post = posterior_of(SEQ, block=4, chains=2)
    runs = [evaluate({k: ContributionBoundedCounts(k, 1.0) for k in (1, 2)}, post, ItemCounts(), dim="k", seed=3,
                     engine=Engine(chunk_size=size))["risk"].values for size in (1, 5, 56)]
    assert all(np.array_equal(runs[0], r) for r in runs[1:])


def test_block_starts_are_the_fresh_start_matrices_and_block_1_is_the_old_sampler():
    post = posterior_of(SEQ, block=5)
    old = posterior_of(SEQ, block=1)
    for d in range(len(SEQ)):
        g = stream(8, "dataset", 0, d)
        fresh = old.model.matrix_for(hist(SEQ[d]), stream(8, "dataset", 0, d))
        assert same(old.generate(0, d, g), fresh)
        if d % 5 == 0:
            assert same(post.generate(0, d, stream(8, "dataset", 0, d)), fresh)
    assert UserItemModel(C, 5).block == BLOCK


def test_other_generators_get_a_fresh_start_made_with_them():
    post = posterior_of(SEQ, block=5)
    for d in (0, 3, 9):
        got = post.generate(0, d, np.random.default_rng(d))
        assert same(got, post.model.matrix_for(hist(SEQ[d]), np.random.default_rng(d)))
    # a stream keyed by another draw (e.g. a thinned source's index) is not continued either
    assert draw_streams(stream(1, "dataset", 0, 4), 0, 7) is None
    assert draw_streams(stream(1, "dataset", 0, 4), 0, 4) is not None
    assert draw_streams(np.random.default_rng(3), 0, 0) is None


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "10", None])
def test_bad_block_is_refused_naming_it(bad):
    with pytest.raises(ValueError, match=rf"block must be an integer >= 1, got {bad!r}"):
        UserItemModel(C, 5, block=bad)


# ----------------------------------------------------------------------------------------------
# the row-sum move
# ----------------------------------------------------------------------------------------------
def bits_of(rows, m):
    indptr = np.concatenate(([0], np.cumsum([len(r) for r in rows]))).astype(np.int64)
    indices = np.array([j for r in rows for j in sorted(r)], dtype=np.int64)
    return bits_from_csr(indptr, indices, m)


def rows_of(bits):
    ip, ix = csr_from_bits(bits)
    return [set(ix[ip[i] : ip[i + 1]].tolist()) for i in range(ip.size - 1)]


def margins_of(bits, m):
    ip, ix = csr_from_bits(bits)
    return csr_margins(ip, ix.astype(np.int64), m)


@pytest.mark.parametrize("m", [4, 70, 130])  # one, two and three words per row
@pytest.mark.parametrize("case", ["same n", "several items to one user", "n grows", "n shrinks", "many at once"])
def test_row_sum_move_keeps_column_sums_and_gives_exactly_the_new_row_sums(m, case):
    rng = np.random.default_rng([m, zlib.crc32(case.encode())])
    changes = []
    for rep in range(30):
        n = int(rng.integers(6, 30))
        dense = rng.random((n, m)) < rng.uniform(0.1, 0.5)
        dense[dense.sum(axis=1) == 0, rng.integers(m)] = True
        ip = np.concatenate(([0], np.cumsum(dense.sum(axis=1)))).astype(np.int64)
        ix = np.nonzero(dense)[1].astype(np.int64)
        bits = bits_from_csr(ip, ix, m)
        r_old, c = dense.sum(axis=1), dense.sum(axis=0)
        # a feasible target: a random matrix with the same column sums and the wanted shape of change
        other = dense.copy()
        if case == "same n":
            perm = rng.permuted(other, axis=0)  # keeps column sums, reshuffles rows
            other = perm
        elif case == "several items to one user":
            i = int(np.argmin(other.sum(axis=1)))
            for j in np.flatnonzero(~other[i])[:3]:
                donors = np.flatnonzero(other[:, j] & (np.arange(n) != i))
                if donors.size:
                    other[donors[0], j] = False
                    other[i, j] = True
        elif case == "n grows":
            extra = np.zeros((3, m), bool)
            for k in range(3):
                i = int(np.argmax(other.sum(axis=1)))
                j = int(np.flatnonzero(other[i])[0])
                other[i, j] = False
                extra[k, j] = True
            other = np.vstack([other, extra])
        elif case == "n shrinks":
            last = np.flatnonzero(other[-1])
            other = other[:-1]
            if any(other[:, j].all() for j in last):
                continue  # every other user holds one of its items: no such target
            for j in last:
                recv = np.flatnonzero(~other[:, j])
                other[recv[int(rng.integers(recv.size))], j] = True
        else:
            other = rng.permuted(other.T, axis=1).T  # every column keeps its sum, rows change a lot
            other = np.vstack([other, np.zeros((2, m), bool)])
        r_new = other.sum(axis=1)
        assert np.array_equal(other.sum(axis=0), c)
        before = bits.copy()
        moved, ex = move_row_sums(bits, r_new, m, rng)
        assert np.array_equal(bits, before)  # input untouched
        rr, cc = margins_of(moved, m)
        assert np.array_equal(rr, r_new) and np.array_equal(cc, c), (case, rep)
        changes.append(int(np.abs(np.pad(r_new, (0, max(0, n - len(r_new))))
                                  - np.pad(r_old, (0, max(0, len(r_new) - n)))).sum()))
    assert max(changes) >= (20 if case == "many at once" else 2)  # several items moved at once


@pytest.mark.parametrize("r", [[2, 2], [2, 2, 0], [4, 0, 0, 0][:2]])
def test_row_sums_infeasible_with_the_column_sums_are_refused_naming_r(r):
    bits = bits_of([{0}, {0}, {0, 1}], 3)  # item 0 is held by 3 users: 2 users cannot hold it
    match = r"r must (be feasible with the column sums \(Gale-Ryser\), got r = |have entries <= n_items)"
    with pytest.raises(ValueError, match=match):
        move_row_sums(bits, r, 3, np.random.default_rng(0))


def test_row_sum_move_uses_an_augmenting_path_when_the_receiver_holds_every_pooled_item():
    # user 0 = {0, 1} gains one item; user 1 = {0} gives its only item, item 0, which user 0 has;
    # user 2 = {2} hands item 2 to user 0 and takes item 0
    bits = bits_of([{0, 1}, {0}, {2}], 3)
    moved, ex = move_row_sums(bits, [3, 0, 1], 3, np.random.default_rng(0))
    assert ex == 1
    assert rows_of(moved) == [{0, 1, 2}, set(), {0}]


def test_row_sum_move_to_equal_row_sums_changes_nothing():
    bits = bits_of([{0, 1}, {0}, {2}], 3)
    moved, ex = move_row_sums(bits, [2, 1, 1], 3, np.random.default_rng(0))
    assert ex == 0 and np.array_equal(moved, bits)


@pytest.mark.parametrize("r,match", [
    ([2, 1], r"r must sum to the matrix's number of ones 4, got sum 3"),
    ([2, 1, 1, 1], r"r must sum to the matrix's number of ones 4, got sum 5"),
    ([4, 0, 0], r"r must have entries <= n_items = 3, got"),
    ([2, -1, 3], r"r must have entries >= 0, got"),
    ([[2, 2]], r"r must be a 1-D array of integers, got"),
    ([2.5, 1.5], r"r must be a 1-D array of integers, got"),
])
def test_infeasible_or_malformed_row_sums_are_refused_naming_r(r, match):
    bits = bits_of([{0, 1}, {0}, {2}], 3)  # column sums (2, 1, 1), 4 ones
    with pytest.raises(ValueError, match=match):
        move_row_sums(bits, r, 3, np.random.default_rng(0))


@pytest.mark.parametrize("what,match", [
    ("bits", r"bits must be a writeable C-contiguous 2-D uint64 array, got"),
    ("n_items", r"n_items must be in \(0, 64\] for bits of 1 words per row, got 65"),
    ("rng", r"rng must be a numpy.random.Generator, got"),
])
def test_move_refuses_bad_arguments_naming_them(what, match):
    bits = bits_of([{0, 1}, {0}, {2}], 3)
    args = {"bits": bits, "r": [2, 1, 1], "n_items": 3, "rng": np.random.default_rng(0)}
    args[what] = {"bits": bits.astype(np.int64), "n_items": 65, "rng": 3}[what]
    with pytest.raises(ValueError, match=match):
        move_row_sums(args["bits"], args["r"], args["n_items"], args["rng"])


# ----------------------------------------------------------------------------------------------
# the bit-row Curveball kernel
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("m", [4, 100, 130])
def test_bit_curveball_keeps_margins_and_moves(m):
    rng = np.random.default_rng(m)
    dense = rng.random((40, m)) < 0.3
    ip = np.concatenate(([0], np.cumsum(dense.sum(axis=1)))).astype(np.int64)
    ix = np.nonzero(dense)[1].astype(np.int64)
    bits = bits_from_csr(ip, ix, m)
    ip2, ix2 = csr_from_bits(bits)
    assert np.array_equal(ip2, ip) and np.array_equal(ix2, ix)
    start = bits.copy()
    curveball_bits(bits, 2000, rng)
    rr, cc = margins_of(bits, m)
    assert np.array_equal(rr, dense.sum(axis=1)) and np.array_equal(cc, dense.sum(axis=0))
    assert not np.array_equal(bits, start)
    with pytest.raises(ValueError, match="n_trades must be >= 0, got -1"):
        curveball_bits(bits, -1, rng)


def test_bit_curveball_alone_is_uniform_given_margins():
    # one chain, 20,000 matrices 40 trades apart, from a fixed start: uniform over the 36
    r, c = np.array(R_A), np.array(C)
    mats = all_matrices(R_A, C)
    bits = bits_of([set(x) for x in mats[0]], 4)
    rng = np.random.default_rng(4)
    counts: Counter = Counter()
    for _ in range(20_000):
        curveball_bits(bits, 40, rng)
        counts[tuple(tuple(sorted(x)) for x in rows_of(bits))] += 1
    obs = np.array([counts.get(m, 0) for m in mats], dtype=float)
    assert obs.sum() == 20_000 and r.sum() == c.sum()
    assert stats.chisquare(obs).pvalue > 1e-3


def test_row_sum_move_never_gets_stuck_between_feasible_margins():
    # from every matrix of every margin pair below (n changing too), 5 moves each to every other
    margins = [R_A, *OTHERS]
    rng = np.random.default_rng(9)
    paths = 0
    for a in margins:
        for mat in all_matrices(a, C):
            for b in margins:
                for _ in range(5 if a != b else 1):
                    moved, ex = move_row_sums(bits_of([set(x) for x in mat], 4), list(b), 4, rng)
                    rr, cc = margins_of(moved, 4)
                    assert tuple(rr) == b and tuple(cc) == tuple(C)
                    paths += ex
    assert paths > 0  # the augmenting paths were exercised


def test_the_spec_default_block_is_the_models_and_reaches_the_model(tmp_path):
    from hybridpriv.families.user_item import spec as spec_useritem
    from hybridpriv.spec import load_spec

    assert spec_useritem.BLOCK == BLOCK
    assert next(k for k in spec_useritem.TOP.keys if k.name == "block").default == BLOCK
    body = 'kind = "user-item"\ncolumn_sums = [4, 2, 2, 1]\nn = 6\nepsilon = 1.0\n'
    (tmp_path / "a.toml").write_text(body + "block = 1\n")
    assert load_spec(tmp_path / "a.toml").values.block == 1
    (tmp_path / "b.toml").write_text(body + "block = 0\n")
    with pytest.raises(ValueError, match="block"):
        load_spec(tmp_path / "b.toml")
