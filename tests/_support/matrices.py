"""Brute force over small binary matrices, the independent check of the user-item samplers."""

from __future__ import annotations

import itertools

import numpy as np
from scipy import stats


def all_matrices(r, c):
    """Every binary matrix with row sums r and column sums c, as tuples of row tuples."""
    m = len(c)
    out = []
    for rows in itertools.product(*(itertools.combinations(range(m), k) for k in r)):
        cols = [0] * m
        for row in rows:
            for j in row:
                cols[j] += 1
        if cols == list(c):
            out.append(rows)
    return out


def chisquare_counts(probs, counts, draws):
    """Chi-square p-value of sampled state ``counts`` (``draws`` in all) against the exact ``probs``, rare states
    pooled so that every expected count is >= 5; and the number of states.  Refuses states outside ``probs``."""
    keys = sorted(probs)
    extra = set(counts) - set(probs)
    assert not extra, f"sampler produced states outside the target: {sorted(extra)[:3]}"
    expected = np.array([probs[k] * draws for k in keys])
    observed = np.array([counts.get(k, 0) for k in keys])
    # pool rare states so every expected count is >= 5
    order = np.argsort(expected)
    e_sorted, o_sorted = expected[order], observed[order]
    pooled_e, pooled_o, acc_e, acc_o = [], [], 0.0, 0
    for e, o in zip(e_sorted, o_sorted):
        acc_e += e
        acc_o += o
        if acc_e >= 5:
            pooled_e.append(acc_e)
            pooled_o.append(acc_o)
            acc_e, acc_o = 0.0, 0
    if acc_e > 0:
        pooled_e[-1] += acc_e
        pooled_o[-1] += acc_o
    return stats.chisquare(pooled_o, pooled_e).pvalue, len(keys)


def labelled_row_sum_law(c, n, weight):
    """P(h) over row-sum histograms ``h`` (``h[k-1]`` users with k items) from every labelled vector ``r`` in
    ``{1..m}^n`` with ``sum(r) = sum(c)``, each weighted by ``weight(r)`` and kept when a binary matrix with margins
    ``(r, c)`` exists (brute force: :func:`all_matrices`); normalised."""
    m, law, feasible = len(c), {}, {}
    for r in itertools.product(range(1, m + 1), repeat=n):
        if sum(r) != sum(c):
            continue
        key = tuple(sorted(r, reverse=True))
        if key not in feasible:
            feasible[key] = bool(all_matrices(key, c))
        if feasible[key]:
            h = tuple(np.bincount(r, minlength=m + 1)[1:].tolist())
            law[h] = law.get(h, 0.0) + float(weight(r))
    z = sum(law.values())
    return {h: w / z for h, w in law.items()}
