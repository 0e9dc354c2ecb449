"""Item counts from a binary user-item matrix with contribution bounding (Zeber & Lopatka).

A curator holds a private binary users x items matrix ``M`` (``M_ij = 1``: user ``i``
reported item ``j``) and releases DP item counts.  :class:`ContributionBoundedCounts` keeps
``min(k, r_i)`` of user ``i``'s ``r_i`` items uniformly at random (without replacement),
counts per item and adds ``Lap(k/epsilon)`` to every count.  Adding or removing one user
changes the kept count vector by at most ``k`` in L1 norm, so the release is user-level
``epsilon``-DP under add/remove-one-user neighbours.  ``k`` trades bias (items dropped)
against noise.

:class:`ItemCounts` is the task that scores such releases in :func:`hybridpriv.engine.evaluate.evaluate`:
the truth of a matrix (a few named scalars), the loss of released counts against the true column
counts, and, for the squared loss, the exact risk given the matrix
(:func:`hybridpriv.theory.user_item_risk`, derivation in ``docs/theory-user-item.md``) for every
``ContributionBoundedCounts`` candidate at once.  :func:`monte_carlo_user_item_loss` is the Monte
Carlo path on one matrix, for checking the exact risk and for losses without a closed form.

Everything is vectorised over trials: the items a user keeps are those with the ``k``
smallest random keys among the user's entries, found for every user and trial at once by
sorting composite ``(user, key)`` integers; there is no Python loop over users.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from scipy import sparse

from ...core.mechanism import Mechanism
from ...core.privacy import Guarantee, check_epsilon
from ...core.tasks import Task
from ...core.validation import check_contribution_bounds, check_rng, check_trials, check_user_item_matrix
from ...noise import laplace
from ...theory.useritem import user_item_risk

__all__ = [
    "ContributionBoundedCounts",
    "ItemCounts",
    "MonteCarloLoss",
    "USER_ITEM_LOSSES",
    "bounded_counts",
    "monte_carlo_user_item_loss",
    "sample_kept_entries",
]

#: Losses of released item counts (:class:`ItemCounts`): ``"squared"`` (total squared error over
#: items; exact risk given the matrix), ``"max"`` (largest absolute error over items), ``"top10"``
#: (total squared error over the 10 items with the largest true counts; ties broken by the lower
#: item index).
USER_ITEM_LOSSES = ("squared", "max", "top10")

#: Largest number of random keys drawn at once (trials x sampled entries); bounds memory.
_MAX_KEYS_PER_CHUNK = 4_000_000


def _check_k(k: object, m: int | None = None) -> int:
    ks, scalar = check_contribution_bounds(k, m)
    if not scalar:
        raise TypeError(f"k must be an integer, got {k!r}")
    return int(ks[0])


def _kept_chunks(
    csr: sparse.csr_array, k: int, rng: np.random.Generator, trials: int
) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
    """Yield ``(start, size, always, kept)`` per chunk of trials.

    ``always``: the entries (positions in ``csr.indices``) of users with ``r_i <= k``, kept in
    every trial.  ``kept``: ``(size, k * #users with r_i > k)`` positions of the entries kept
    among the other users, per trial.  Each such user keeps the ``k`` entries with the smallest
    of independent uniform keys, so every ``k``-subset of the user's items is equally likely
    and users are independent.
    """
    n = csr.shape[0]
    indptr = csr.indptr.astype(np.int64)
    r = np.diff(indptr)
    over = r > k
    row = np.repeat(np.arange(n), r)
    over_entry = over[row]
    always = np.flatnonzero(~over_entry)
    sub = np.flatnonzero(over_entry)  # entries of users who must drop items; grouped by user
    if sub.size == 0:
        for start in range(0, trials, _MAX_KEYS_PER_CHUNK):
            yield start, min(_MAX_KEYS_PER_CHUNK, trials - start), always, np.empty((0, 0), dtype=np.int64)
        return
    over_r = r[over]
    n_over = over_r.size
    # position of each sampled entry within its user's segment of ``sub``
    seg_start = np.repeat(np.cumsum(over_r) - over_r, over_r)
    keep_slot = (np.arange(sub.size) - seg_start) < k  # after sorting: the first k of each user
    # composite integer key: (user rank among those who drop) in the high bits, random bits low
    bits = 62 - int(n_over).bit_length()
    high = np.repeat(np.arange(n_over, dtype=np.int64), over_r) << bits
    chunk = max(1, _MAX_KEYS_PER_CHUNK // sub.size)
    for start in range(0, trials, chunk):
        size = min(chunk, trials - start)
        keys = rng.integers(0, 1 << bits, size=(size, sub.size), dtype=np.int64)
        keys |= high
        order = np.argsort(keys, axis=1)
        yield start, size, always, sub[order[:, keep_slot]]


def sample_kept_entries(matrix: object, k: int, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
    """Which stored entries are kept: a boolean ``(trials, nnz)`` mask.

    The mask is over the entries of ``check_user_item_matrix(matrix)`` (canonical CSR order:
    by user, then by item), so ``np.add.reduceat`` over its ``indptr`` gives the number each
    user keeps (``min(k, r_i)``).  For checking the sampling; the mechanism itself only needs
    the counts (:func:`bounded_counts`).
    """
    csr = check_user_item_matrix(matrix)
    k = _check_k(k, csr.shape[1])
    check_rng(rng)
    trials = check_trials(trials)
    mask = np.zeros((trials, csr.nnz), dtype=bool)
    for start, size, always, kept in _kept_chunks(csr, k, rng, trials):
        mask[start : start + size, always] = True
        if kept.size:
            rows = np.arange(start, start + size)[:, None]
            mask[rows, kept] = True
    return mask


def _bounded_counts(csr: sparse.csr_array, k: int, rng: np.random.Generator, trials: int) -> np.ndarray:
    m = csr.shape[1]
    indices = csr.indices
    counts = np.empty((trials, m))
    for start, size, always, kept in _kept_chunks(csr, k, rng, trials):
        base = np.bincount(indices[always], minlength=m)
        if kept.size:
            flat = indices[kept] + (np.arange(size, dtype=np.int64) * m)[:, None]
            counts[start : start + size] = np.bincount(flat.ravel(), minlength=size * m).reshape(size, m) + base
        else:
            counts[start : start + size] = base
    return counts


def bounded_counts(matrix: object, k: int, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
    """Item counts after keeping ``min(k, r_i)`` random items per user, before noise: ``(trials, m)``."""
    csr = check_user_item_matrix(matrix)
    k = _check_k(k, csr.shape[1])
    check_rng(rng)
    return _bounded_counts(csr, k, rng, check_trials(trials))


class ContributionBoundedCounts(Mechanism):
    """Keep at most ``k`` random items per user, count per item, add ``Lap(k/epsilon)`` to each count.

    Parameters
    ----------
    k
        Contribution bound: the most items kept per user (an integer >= 1; at release time
        also <= m, the number of items).
    epsilon
        Privacy parameter (finite, > 0).

    Attributes
    ----------
    privacy
        ``{"users": Guarantee(epsilon, 0.0, "add-remove")}``: user-level ``epsilon``-DP, neighbours
        being matrices with one user (row) more or less.
    sensitivity
        ``k``, the L1 sensitivity of the kept count vector under that relation.
    label
        ``"k=<k>"``.

    Examples
    --------
    >>> mech = ContributionBoundedCounts(2, 1.0)
    >>> mech.release(np.array([[1, 1, 1], [0, 1, 0]]), np.random.default_rng(0), trials=4).shape
    (4, 3)
    """

    data_kind = "user-item"

    def __init__(self, k: int, epsilon: float) -> None:
        self.k = _check_k(k)
        self.epsilon = check_epsilon(epsilon, allow_inf=False)
        self.sensitivity = self.k
        self.scale = self.k / self.epsilon
        self.label = f"k={self.k}"

    @property
    def privacy(self) -> dict[str, Guarantee]:
        """``{"users": Guarantee(epsilon, 0, "add-remove")}``: every user, add/remove one user."""
        return {"users": Guarantee(self.epsilon, 0.0, "add-remove")}

    @property
    def privacy_events(self) -> dict[str, Any]:
        """``{"users": Laplace(k / epsilon) on counts of L1 sensitivity k}``."""
        from ...core import events

        return {"users": events.laplace(self.scale, self.sensitivity)}

    def __repr__(self) -> str:
        return f"ContributionBoundedCounts(k={self.k}, epsilon={self.epsilon:g})"

    def bounded_counts(self, matrix: object, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
        """The counts of kept items before noise, ``(trials, m)`` (see :func:`bounded_counts`)."""
        return bounded_counts(matrix, self.k, rng, trials)

    def release(self, data: object, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
        """Release the noisy item counts ``trials`` times: shape ``(trials, m)``.

        ``data``: the binary users x items matrix, :mod:`scipy.sparse` (CSR preferred) or dense
        0/1 (:func:`hybridpriv.core.validation.check_user_item_matrix`).  Raises ``ValueError`` when
        ``k`` exceeds the number of items.
        """
        csr = check_user_item_matrix(data)
        _check_k(self.k, csr.shape[1])
        check_rng(rng)
        counts = _bounded_counts(csr, self.k, rng, check_trials(trials))
        return laplace(counts, self.scale, rng)


def _check_loss(loss: object) -> str:
    if not isinstance(loss, str) or loss not in USER_ITEM_LOSSES:
        raise ValueError(f"loss must be one of {USER_ITEM_LOSSES}, got {loss!r}")
    return loss


def _losses(errors: np.ndarray, loss: str, true_counts: np.ndarray) -> np.ndarray:
    """Per-release loss of ``errors = releases - true counts`` (``(trials, m)``)."""
    if loss == "squared":
        return np.sum(errors**2, axis=1)
    if loss == "max":
        return np.max(np.abs(errors), axis=1)
    top = np.argsort(-true_counts, kind="stable")[:10]
    return np.sum(errors[:, top] ** 2, axis=1)


class ItemCounts(Task):
    """The task of releasing item counts from a users x items matrix (scored against its column sums).

    Parameters
    ----------
    loss
        One of :data:`USER_ITEM_LOSSES`: ``"squared"`` (total squared error over items; candidates
        that are exactly :class:`ContributionBoundedCounts` are scored by their exact risk given the
        matrix, all ``k`` of one ``epsilon`` in one :func:`~hybridpriv.theory.user_item_risk` call, and
        never released), ``"max"`` (largest absolute error over items) or ``"top10"`` (squared error
        over the 10 most reported items); the last two run the mechanisms (Monte Carlo).

    Notes
    -----
    ``truth(matrix)``: ``n_users``, ``reports`` (stored entries), ``share_one_item`` (share of
    users reporting exactly one item) and ``max_items`` (the most items one user reports).
    Subclasses of :class:`ContributionBoundedCounts` are released, not given the exact risk (they may
    change the mechanism).

    Examples
    --------
    >>> task = ItemCounts("squared")
    >>> matrix = np.array([[1, 1], [1, 0]])
    >>> task.truth(matrix)
    {'n_users': 2.0, 'reports': 3.0, 'share_one_item': 0.5, 'max_items': 2.0}
    >>> task.exact_risk([ContributionBoundedCounts(1, 1.0)], matrix, task.truth(matrix))
    array([5.])
    """

    data_kind = "user-item"

    def __init__(self, loss: str = "squared") -> None:
        self.loss_kind = _check_loss(loss)
        self.loss_name = {"squared": "total squared error over items", "max": "largest absolute error over items",
                          "top10": "squared error over the 10 most reported items"}[loss]

    def truth(self, data: Any) -> dict[str, float]:
        csr = check_user_item_matrix(data)
        r = np.diff(csr.indptr)
        n = csr.shape[0]
        return {"n_users": float(n), "reports": float(csr.nnz), "share_one_item": float(np.mean(r == 1)),
                "max_items": float(r.max())}

    def loss(self, mechanism: Any, releases: np.ndarray, data: Any, truth: Mapping[str, float]) -> np.ndarray:
        csr = check_user_item_matrix(data)
        true_counts = np.asarray(csr.sum(axis=0), dtype=float).ravel()
        rel = np.asarray(releases, dtype=float)
        if rel.ndim != 2 or rel.shape[1] != true_counts.size:
            raise ValueError(f"releases must have shape (trials, {true_counts.size}) (one count per item), "
                             f"got {rel.shape}")
        return _losses(rel - true_counts, self.loss_kind, true_counts)

    def exact_risk(self, mechanisms: Sequence[Any], data: Any, truth: Mapping[str, float]) -> np.ndarray | None:
        """The exact expected squared error of every :class:`ContributionBoundedCounts` given the
        matrix (NaN for other candidates); ``None`` for the Monte Carlo losses."""
        if self.loss_kind != "squared":
            return None
        out = np.full(len(mechanisms), np.nan)
        by_epsilon: dict[float, list[int]] = {}
        for i, mech in enumerate(mechanisms):
            if type(mech) is ContributionBoundedCounts:
                by_epsilon.setdefault(mech.epsilon, []).append(i)
        if by_epsilon:
            csr = check_user_item_matrix(data)
            for eps, idx in by_epsilon.items():
                out[idx] = user_item_risk(csr, np.array([mechanisms[i].k for i in idx]), eps)
        return out


class MonteCarloLoss(NamedTuple):
    """Mean loss over trials and its standard error (floats, or arrays with one entry per ``k``)."""

    mean: float | np.ndarray
    se: float | np.ndarray


def monte_carlo_user_item_loss(
    matrix: object,
    k: object,
    epsilon: float,
    rng: np.random.Generator,
    trials: int,
    loss: str = "squared",
) -> MonteCarloLoss:
    """Monte Carlo estimate of the expected loss of :class:`ContributionBoundedCounts` given one matrix.

    The releases are scored by :class:`ItemCounts` (``loss``); over many matrices, use
    :func:`hybridpriv.engine.evaluate.evaluate` with ``ItemCounts(loss)``.

    Parameters
    ----------
    matrix, epsilon
        As for the mechanism.
    k
        An integer in ``[1, m]`` or a 1-D sequence of them (then ``mean`` and ``se`` are arrays).
    rng
        The random generator; the ``k`` values are run one after another on it.
    trials
        Mechanism runs per ``k`` (>= 2, for the standard error).
    loss
        One of :data:`USER_ITEM_LOSSES`.  ``"squared"`` estimates
        :func:`hybridpriv.theory.user_item_risk`.

    Returns
    -------
    MonteCarloLoss
        ``mean`` and ``se = std(ddof=1) / sqrt(trials)`` of the per-trial losses.
    """
    csr = check_user_item_matrix(matrix)
    m = csr.shape[1]
    ks, scalar = check_contribution_bounds(k, m)
    eps = check_epsilon(epsilon, allow_inf=False)
    check_rng(rng)
    trials = check_trials(trials, minimum=2)
    loss = _check_loss(loss)
    true_counts = np.asarray(csr.sum(axis=0), dtype=float).ravel()
    chunk = max(1, _MAX_KEYS_PER_CHUNK // (4 * m))
    means = np.empty(ks.size)
    ses = np.empty(ks.size)
    for a, kk in enumerate(ks):
        mech = ContributionBoundedCounts(int(kk), eps)
        losses = np.empty(trials)
        for start in range(0, trials, chunk):
            size = min(chunk, trials - start)
            losses[start : start + size] = _losses(mech.release(csr, rng, size) - true_counts, loss, true_counts)
        means[a] = losses.mean()
        ses[a] = losses.std(ddof=1) / math.sqrt(trials)
    if scalar:
        return MonteCarloLoss(float(means[0]), float(ses[0]))
    return MonteCarloLoss(means, ses)
