"""The user-item family's held-out truths and budget-spending features (the calibration study).

Synthetic truths: row sums from a two-component ``mixture`` (light and heavy users), a
``heavy-tailed`` discrete Pareto or a ``geometric`` law (:data:`ROW_LAWS`), crossed with item
popularity ``zipf``, ``tiers`` (a popular block) or ``communities`` (users prefer their community's
items: items are correlated) (:data:`POPULARITY`).  Real truths (:data:`REAL_USER_ITEM`):
``insteval``, ``flights-ua``, ``verbagg``.  The budget-spending selector buys a Laplace histogram of
the items per user (:func:`pythia_user_item`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ...heldout import Truth, read_example

__all__ = ["POPULARITY", "REAL_USER_ITEM", "ROW_LAWS", "dp_items_histogram", "pythia_user_item",
           "real_user_item_truth", "user_item_truth"]

ROW_LAWS = ("mixture", "heavy-tailed", "geometric")
POPULARITY = ("zipf", "tiers", "communities")
#: Real user-item datasets (users with at least one item).
REAL_USER_ITEM = ("insteval", "flights-ua", "verbagg")


def _matrix(items: list[np.ndarray], m: int) -> sp.csr_matrix:
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in items])])
    indices = np.concatenate(items).astype(np.int64)
    return sp.csr_matrix((np.ones(indices.size, dtype=np.int64), indices, indptr), shape=(len(items), m))


def _user_item_spec(matrix: sp.csr_matrix, epsilon: float, k_max: int) -> dict[str, Any]:
    c = np.asarray(matrix.sum(axis=0)).ravel().astype(int)
    return {"kind": "user-item", "column_sums": c.tolist(), "n": int(matrix.shape[0]), "epsilon": float(epsilon),
            "k": [1, int(min(k_max, c.size))], "loss": "squared"}


def user_item_truth(i: int, rng: np.random.Generator, quick: bool = False, k_max: int = 20) -> Truth:
    """Synthetic user-item truth number ``i``: row law ``ROW_LAWS[i % 3]``, popularity ``POPULARITY[(i // 3) % 3]``.

    ``n`` users in 300-2,000 (100-300 at ``quick``), ``m`` items in 20-100 (10-30 at ``quick``),
    every user with at least one item; epsilon 1.
    """
    law, pop = ROW_LAWS[i % len(ROW_LAWS)], POPULARITY[(i // len(ROW_LAWS)) % len(POPULARITY)]
    n = int(rng.integers(100, 301) if quick else rng.integers(300, 2001))
    m = int(rng.integers(10, 31) if quick else rng.integers(20, 101))
    if law == "mixture":
        heavy = rng.random(n) < rng.uniform(0.05, 0.3)
        r = 1 + np.where(heavy, rng.poisson(rng.uniform(6, 20), n), rng.poisson(rng.uniform(0.3, 1.5), n))
    elif law == "heavy-tailed":
        r = np.ceil(rng.pareto(rng.uniform(1.1, 2.5), n) + 1e-9).astype(int)
    else:
        r = rng.geometric(1.0 / rng.uniform(1.5, 6.0), n)
    r = np.clip(r, 1, m)
    base = np.arange(1, m + 1, dtype=float) ** -rng.uniform(0.5, 1.5)
    if pop == "tiers":
        base = np.where(rng.permutation(m) < max(1, m // 10), rng.uniform(5, 30), 1.0)
    community = rng.integers(0, int(rng.integers(2, 6)), n)
    blocks = rng.permutation(m) % (community.max() + 1)
    boost = rng.uniform(5, 20)
    items = []
    for u in range(n):
        w = base * (np.where(blocks == community[u], boost, 1.0) if pop == "communities" else 1.0)
        items.append(np.sort(rng.choice(m, r[u], replace=False, p=w / w.sum())))
    return Truth("user-item", "synthetic", f"{law}+{pop}", _user_item_spec(_matrix(items, m), 1.0, k_max),
                 _matrix(items, m))


def real_user_item_truth(name: str, k_max: int = 20) -> Truth:
    """Real user-item truth ``name`` (:data:`REAL_USER_ITEM`) at epsilon 1."""
    if name not in REAL_USER_ITEM:
        raise ValueError(f"name must be one of {list(REAL_USER_ITEM)}, got {name!r}")
    rows = [r for r in read_example("calibration-user-item.csv") if r["dataset"] == name]
    items = [np.array(sorted(int(x) for x in r["items"].split()), dtype=np.int64) for r in rows]
    matrix = _matrix(items, int(max(int(r.max()) for r in items)) + 1)
    return Truth("user-item", "real", name, _user_item_spec(matrix, 1.0, k_max), matrix)
def dp_items_histogram(matrix: Any, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """The number of users with ``k = 1..m`` items, each count plus Laplace(1 / epsilon) noise:
    epsilon-DP under adding or removing a user (who adds 1 to one count).  Simulation noise
    (NumPy), for the calibration study, not for a release."""
    from ...noise import laplace

    m = matrix.shape[1]
    counts = np.bincount(np.diff(matrix.indptr), minlength=m + 1)[1 : m + 1]
    return laplace(counts.astype(float), 1.0 / epsilon, rng)


def pythia_user_item(raw: dict[str, Any], matrix: Any, share: float,
                     rng: np.random.Generator) -> tuple[dict[str, Any], Any]:
    """A budget-spending selector for user-item counts: ``share`` of epsilon buys a Laplace histogram of
    the items per user (each user adds 1 to one bin: sensitivity 1 under add-remove), whose
    clipped, smoothed shape (+0.5 per bin) becomes a fixed prior on items per user
    (:class:`hybridpriv.families.user_item.model.FixedItems`); the candidates get ``(1 - share) epsilon``.
    Returns the SPEC and the prior."""
    from .model import FixedItems

    if not 0.0 < share < 1.0:
        raise ValueError(f"share must be in (0, 1), got {share!r}")
    noisy = dp_items_histogram(matrix, share * raw["epsilon"], rng)
    prior = FixedItems(np.log(np.maximum(noisy, 0.0) + 0.5))
    return {**raw, "epsilon": raw["epsilon"] * (1.0 - share)}, prior
