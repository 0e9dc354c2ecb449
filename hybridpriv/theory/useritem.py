"""Zeber & Lopatka: the exact risk of contribution-bounded user-item counts, given the matrix.

A binary users x items matrix ``M`` (``M_ij = 1``: user ``i`` reported item ``j``) is released as
item counts after keeping at most ``k`` random items per user and adding ``Lap(k/epsilon)`` to
every count (:class:`hybridpriv.estimators.ContributionBoundedCounts`).  The derivation of the
risk is in ``docs/theory-user-item.md``; the checks are in ``tests/families/user_item/test_mechanisms.py``
(exact enumeration and Monte Carlo of the mechanism).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core.privacy import check_epsilon
from ..core.validation import check_contribution_bounds, check_user_item_matrix

__all__ = ["UserItemRiskTerms", "user_item_risk", "user_item_risk_terms"]


class UserItemRiskTerms(NamedTuple):
    """The three parts of :func:`user_item_risk`, each summed over items (floats, or arrays over k).

    ``bias2``: ``sum_j (sum_{i in j} (1 - q_i))^2``; ``variance``: ``sum_j sum_{i in j} q_i (1 - q_i)``
    (the sampling of kept items); ``noise``: ``m * 2 k^2 / epsilon^2`` (the Laplace noise).
    """

    bias2: float | np.ndarray
    variance: float | np.ndarray
    noise: float | np.ndarray

    @property
    def total(self) -> float | np.ndarray:
        """``bias2 + variance + noise``, the value of :func:`user_item_risk`."""
        return self.bias2 + self.variance + self.noise


def user_item_risk_terms(matrix: object, k: object, epsilon: float) -> UserItemRiskTerms:
    """Bias^2, sampling variance and noise variance of the contribution-bounded counts.

    See :func:`user_item_risk`; the three terms add up to it.  With ``k`` a sequence, each
    term is an array with one entry per ``k``; all are computed with one sparse product
    ``M^T A``, ``A`` the ``n x 2K`` matrix of ``1 - q_i(k)`` and ``q_i(k) (1 - q_i(k))``.
    """
    csr = check_user_item_matrix(matrix)
    n, m = csr.shape
    ks, scalar = check_contribution_bounds(k, m)
    eps = check_epsilon(epsilon, allow_inf=False)
    r = np.diff(csr.indptr).astype(float)[:, None]  # items per user, (n, 1)
    kept = np.minimum(ks[None, :].astype(float), r)  # min(k, r_i), (n, K)
    rs = np.maximum(r, 1.0)  # users with no items have no entries: any q will do
    drop = (r - kept) / rs  # 1 - q_i, exact for users who keep everything
    a = np.hstack([drop, (kept / rs) * drop])  # (n, 2K)
    s = np.asarray(csr.T @ a)  # (m, 2K): per item, sum over its users
    nk = ks.size
    bias2 = np.sum(s[:, :nk] ** 2, axis=0)
    variance = np.sum(s[:, nk:], axis=0)
    with np.errstate(over="ignore", under="ignore"):  # k/epsilon first: epsilon**2 alone underflows at 1e-300
        noise = m * 2.0 * (ks.astype(float) / eps) ** 2
    if not np.isfinite(noise).all():
        raise ValueError(
            f"epsilon={epsilon!r} is too small: the noise variance m * 2 k^2 / epsilon^2 overflows floating point "
            f"(m={m}, k up to {int(ks.max())})"
        )
    if scalar:
        return UserItemRiskTerms(float(bias2[0]), float(variance[0]), float(noise[0]))
    return UserItemRiskTerms(bias2, variance, noise)


def user_item_risk(matrix: object, k: object, epsilon: float) -> float | np.ndarray:
    """Expected total squared error over items of the contribution-bounded counts, given the matrix.

    The mechanism (:class:`hybridpriv.estimators.ContributionBoundedCounts`) keeps
    ``min(k, r_i)`` of user ``i``'s ``r_i`` items uniformly at random, counts per item and
    adds ``Lap(k/epsilon)`` to every count.  Each of user ``i``'s items is kept with
    probability ``q_i = min(k, r_i)/r_i``; a per-item loss involves one item per user and
    users sample independently, so the kept count of item ``j`` is a sum of independent
    Bernoulli(``q_i``) over its users and

    ``E sum_j (X_j + Z_j - c_j)^2 = sum_j [ sum_{i in j} q_i (1 - q_i) + (sum_{i in j} (1 - q_i))^2 + 2 k^2/epsilon^2 ]``.

    Parameters
    ----------
    matrix
        Binary users x items matrix (:mod:`scipy.sparse` or dense 0/1), see
        :func:`check_user_item_matrix`.
    k
        The contribution bound, an integer in ``[1, m]`` or a 1-D sequence of them.
    epsilon
        The privacy parameter (finite, > 0).

    Returns
    -------
    A float for an integer ``k``; an array with one risk per ``k`` otherwise.

    Examples
    --------
    >>> user_item_risk(np.array([[1, 1], [1, 0]]), 1, 1.0)  # q = (1/2, 1): 2 * 1/4 + 2 * 1/4 + 2 * 2
    5.0
    """
    terms = user_item_risk_terms(matrix, k, epsilon)
    return terms.total
