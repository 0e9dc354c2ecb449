"""Brute force over small binary matrices, the independent check of the user-item samplers."""

from __future__ import annotations

import itertools


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
