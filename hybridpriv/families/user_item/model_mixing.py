"""Does the Curveball chain mix?  Split R-hat and ESS of parallel chains from different starts.

:func:`mixing_check` runs Curveball chains over the matrices with the margins of one matrix,
started from different realizations, and reports R-hat and ESS (``arviz_stats``) of a matrix
statistic.  :meth:`hybridpriv.models.UserItemPosterior.mixing_check` runs it on a posterior draw.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from .model_chains import _curveball_kernel
from .model_checks import _check_csr, _check_rng, _int_scalar, csr_margins
from .model_realize import realize_greedy, realize_networkx

__all__ = ["mixing_check"]


@njit(cache=True)
def _statistic(indptr, indices, j1, j2):  # pragma: no cover - compiled
    total = 0
    for i in range(indptr.shape[0] - 1):
        h1 = False
        h2 = False
        for p in range(indptr[i], indptr[i + 1]):
            if indices[p] == j1:
                h1 = True
            elif indices[p] == j2:
                h2 = True
        if h1:
            total += indptr[i + 1] - indptr[i]
            if h2:
                total += 1
    return total


def _run_chain(indptr, indices, trades_between, samples, rng, j1, j2) -> np.ndarray:
    """``samples`` values of the statistic, ``trades_between`` trades apart (the loop is in
    Python on purpose: a compiled caller of a kernel in another file could be cached stale)."""
    out = np.empty(samples, np.float64)
    for s in range(samples):
        _curveball_kernel(indptr, indices, trades_between, rng, True)
        out[s] = _statistic(indptr, indices, j1, j2)
    return out


@njit(cache=True)
def _sort_rows(indptr, indices):  # pragma: no cover - compiled
    for i in range(indptr.shape[0] - 1):
        indices[indptr[i] : indptr[i + 1]] = np.sort(indices[indptr[i] : indptr[i + 1]])


def _permuted_start(
    r: np.ndarray, c: np.ndarray, row_perm: np.ndarray, col_perm: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy realization with rows processed in ``row_perm`` order and items relabelled by
    ``col_perm`` (item ``col_perm[j]`` plays the role of greedy item ``j``)."""
    ip, ix = realize_greedy(r[row_perm], c[col_perm])
    ix = col_perm[ix]
    indptr = np.concatenate(([0], np.cumsum(r))).astype(np.int64)
    indices = np.empty_like(ix)
    for k, i in enumerate(row_perm):  # k-th greedy row is user i
        indices[indptr[i] : indptr[i + 1]] = ix[ip[k] : ip[k + 1]]
    _sort_rows(indptr, indices)
    return indptr, indices


def mixing_check(
    indptr: np.ndarray,
    indices: np.ndarray,
    trades_between: int,
    rng: np.random.Generator,
    chains: int = 4,
    samples: int = 200,
    n_items: int | None = None,
) -> dict[str, Any]:
    """Split R-hat and ESS of parallel Curveball chains from different starting matrices.

    ``chains`` chains over the matrices with the margins of ``(indptr, indices)`` start from
    different realizations, in this order: greedy (rows in order), greedy (rows reversed),
    networkx Havel-Hakimi, greedy (items reversed), the given matrix, then greedy with random
    row and item orders.  Every ``trades_between`` trades each chain records
    ``T(M) = sum_i r_i M[i, j1] + #{i: M[i, j1] = M[i, j2] = 1}``, with ``j1, j2`` the two most
    popular items; rank-normalised split R-hat and bulk ESS (:mod:`arviz_stats`) of ``T``
    over the ``(chains, samples)`` draws tell whether ``trades_between`` trades between kept
    samples mix (R-hat < 1.01-1.05).

    Parameters
    ----------
    indptr, indices
        A matrix (CSR); not modified.
    trades_between
        Trades between recorded samples (>= 0; 0 records the starting points).
    rng
        The source of randomness.
    chains
        Number of chains (>= 2).
    samples
        Samples per chain (>= 4).
    n_items
        Number of items ``m``; default: largest index + 1.

    Returns
    -------
    dict
        ``rhat`` (float; ``inf`` if chains are constant but differ, ``1.0`` if ``T`` is the same
        everywhere, e.g. a unique matrix), ``ess`` (float), ``draws`` (``(chains, samples)``
        array of ``T``), ``trades_between``, ``starts`` (names of the starting points).
    """
    n = _check_csr(indptr, indices, writeable=False)
    trades_between = _int_scalar(trades_between, "trades_between", 0)
    chains = _int_scalar(chains, "chains", 2)
    samples = _int_scalar(samples, "samples", 4)
    _check_rng(rng)
    m_default = int(indices.max()) + 1 if indices.size else 0
    m = m_default if n_items is None else _int_scalar(n_items, "n_items", m_default)
    r, c = csr_margins(indptr, indices, m)
    order = np.argsort(-c, kind="stable")
    j1 = int(order[0]) if m > 0 else -1
    j2 = int(order[1]) if m > 1 else -1

    ident_r, ident_c = np.arange(n), np.arange(m)
    starts: list[tuple[str, tuple[np.ndarray, np.ndarray]]] = []
    for k in range(chains):
        if k == 0:
            name, start = "greedy", _permuted_start(r, c, ident_r, ident_c)
        elif k == 1:
            name, start = "greedy rows reversed", _permuted_start(r, c, ident_r[::-1].copy(), ident_c)
        elif k == 2:
            name, start = "networkx", realize_networkx(r, c)
        elif k == 3:
            name, start = "greedy items reversed", _permuted_start(r, c, ident_r, ident_c[::-1].copy())
        elif k == 4:
            name, start = "given", (indptr.copy(), indices.copy())
        else:
            name = "greedy random orders"
            start = _permuted_start(r, c, rng.permutation(n), rng.permutation(m))
        starts.append((name, start))

    draws = np.empty((chains, samples))
    for k, (_, (ip, ix)) in enumerate(starts):
        draws[k] = _run_chain(ip, ix, trades_between, samples, rng, j1, j2)

    if np.all(draws == draws.flat[0]):
        rhat, ess = 1.0, float(draws.size)
    elif np.all(draws.var(axis=1) == 0):
        rhat, ess = math.inf, float(chains)
    else:
        import arviz_stats

        rhat = float(arviz_stats.rhat(draws, method="rank"))
        ess = float(arviz_stats.ess(draws, method="bulk"))
    return {
        "rhat": rhat,
        "ess": ess,
        "draws": draws,
        "trades_between": trades_between,
        "starts": [name for name, _ in starts],
    }
