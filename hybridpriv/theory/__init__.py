"""Closed-form variances, optimal weights and thresholds.

Pure NumPy/SciPy functions; the derivations are in ``docs/theory.md`` and every formula
is checked against Monte Carlo of the estimators in ``tests/test_theory.py``.

Notation: group ``i`` has ``n_i`` records, privacy parameter ``epsilon_i`` (``inf`` for
public records), the records have variance ``sigma2`` and the per-group sum has
sensitivity ``Delta`` (``r = max(|a|, |b|)`` in Ferrando et al.).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral, Real

import numpy as np
from scipy import optimize, signal, stats

from ..privacy import check_epsilon, check_positive, check_real_array

__all__ = [
    "group_mean_variances",
    "mixed_mean_variance",
    "mixed_mean_weights",
    "PDP_DENOMINATORS",
    "pdp_count_pmf",
    "pdp_keep_probabilities",
    "pdp_optimal_threshold",
    "pdp_replace_loss",
    "pdp_sample_variance",
    "UserItemRiskTerms",
    "check_contribution_bounds",
    "check_user_item_matrix",
    "user_item_risk",
    "user_item_risk_terms",
]


def _has_bool(values: object) -> bool:
    """True when a sequence holds booleans (numpy turns ``[True, 3]`` into integers)."""
    if isinstance(values, np.ndarray):
        return values.dtype == bool
    try:
        return any(isinstance(v, (bool, np.bool_)) for v in np.asarray(values, dtype=object).ravel())
    except (TypeError, ValueError):
        return False


def _check_sizes(sizes: object, name: str = "sizes", minimum: int = 1) -> np.ndarray:
    """``sizes`` as a 1-D float array of whole numbers >= ``minimum`` (booleans refused)."""
    try:
        n = np.asarray(sizes)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 1-D sequence of whole numbers: {exc}") from None
    if n.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of whole numbers, got shape {n.shape}")
    if n.dtype.kind not in "iuf" or _has_bool(sizes):
        raise ValueError(f"{name} must be whole numbers, got {sizes!r}")
    f = n.astype(float)
    if not np.isfinite(f).all() or (f != np.round(f)).any():
        raise ValueError(f"{name} must be whole numbers, got {n.tolist()!r}")
    if (f < minimum).any():
        raise ValueError(f"{name} must be >= {minimum}, got {n.tolist()!r}")
    return f


def _check_epsilons(epsilons: object, name: str = "epsilons") -> np.ndarray:
    e = check_real_array(epsilons, name)
    for k, eps in enumerate(e.ravel()):
        check_epsilon(float(eps), f"{name}[{k}]")
    return e


def _check_sizes_epsilons(sizes: Sequence[int], epsilons: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    try:
        n = np.asarray(sizes)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"sizes must be a 1-D sequence of whole numbers: {exc}") from None
    e = check_real_array(epsilons, "epsilons")
    if n.ndim != 1 or e.ndim != 1:
        raise ValueError("sizes and epsilons must be 1-D sequences")
    if n.shape != e.shape:
        raise ValueError(f"sizes and epsilons must have the same length, got {n.size} and {e.size}")
    if n.size == 0:
        raise ValueError("sizes must hold at least one group, got an empty sequence")
    whole = n.dtype.kind in "iuf" and not _has_bool(sizes)
    if not whole or not np.isfinite(n.astype(float)).all() or (n != np.round(n)).any():
        raise ValueError(f"sizes must be whole numbers, got {list(sizes)!r}")
    if (n < 1).any():
        raise ValueError(f"sizes must be >= 1 (no empty groups), got {list(sizes)!r}")
    for k, eps in enumerate(e):
        check_epsilon(float(eps), f"epsilons[{k}]")
    return n.astype(float), e


def group_mean_variances(
    sizes: Sequence[int], epsilons: Sequence[float], sigma2: float, sensitivity: float
) -> np.ndarray:
    """Variance of each group's noisy mean ``(Sigma_i + z_i)/n_i``, ``z_i ~ Lap(Delta/epsilon_i)``.

    ``Var_i = (n_i sigma2 + 2 Delta^2 / epsilon_i^2) / n_i^2``; for a public group the noise
    term vanishes (``epsilon_i = inf``).
    """
    n, e = _check_sizes_epsilons(sizes, epsilons)
    s2 = np.float64(check_positive(sigma2, "sigma2"))
    d = np.float64(check_positive(sensitivity, "sensitivity"))
    with np.errstate(over="ignore"):  # an overflow gives an infinite variance (weight 0), not an error
        noise = np.where(np.isinf(e), 0.0, 2.0 * (d / np.where(np.isinf(e), 1.0, e)) ** 2)
        return (n * s2 + noise) / n**2


def mixed_mean_weights(
    sizes: Sequence[int], epsilons: Sequence[float], sigma2: float, sensitivity: float
) -> np.ndarray:
    """Inverse-variance weights of the mixed mean (Ferrando et al., Section 2).

    ``beta_i ∝ 1 / Var_i = n_i^2 / (n_i sigma2 + 2 Delta^2/epsilon_i^2)``, normalised to sum to 1.
    Public groups (``epsilon_i = math.inf``) get ``beta_i ∝ n_i / sigma2``.

    Examples
    --------
    >>> mixed_mean_weights([100, 100], [math.inf, math.inf], 1.0, 1.0)
    array([0.5, 0.5])
    """
    var = group_mean_variances(sizes, epsilons, sigma2, sensitivity)
    with np.errstate(divide="ignore", over="ignore"):
        inv = 1.0 / var
    if not np.isfinite(inv).all() or not np.isfinite(var).all() or inv.sum() <= 0 or not np.isfinite(inv.sum()):
        raise ValueError(
            "mixed_mean_weights: group variances overflow or vanish in floating point "
            f"(sizes={list(sizes)!r}, epsilons={list(epsilons)!r}, sigma2={sigma2!r}, sensitivity={sensitivity!r})"
        )
    return inv / inv.sum()


def mixed_mean_variance(
    sizes: Sequence[int],
    epsilons: Sequence[float],
    sigma2: float,
    sensitivity: float,
    weights: Sequence[float] | None = None,
) -> float:
    """Variance ``sum_i beta_i^2 Var_i`` of the mixed mean (optimal weights when ``weights`` is None).

    With the optimal weights this equals ``1 / sum_i (1/Var_i)``.
    """
    var = group_mean_variances(sizes, epsilons, sigma2, sensitivity)
    if weights is None:
        return float(1.0 / np.sum(1.0 / var))
    w = check_real_array(weights, "weights")
    if w.shape != var.shape:
        raise ValueError(f"weights must have one entry per group ({var.size}), got {w.size}")
    if not np.isfinite(w).all():
        raise ValueError(f"weights must be finite, got {w.tolist()!r}")
    return float(np.sum(w**2 * var))


def pdp_keep_probabilities(epsilons: Sequence[float], threshold: float) -> np.ndarray:
    """Jorgensen et al.'s Sample mechanism: ``p_i = min(1, (e^{epsilon_i} - 1)/(e^t - 1))``.

    Public records (``epsilon_i = inf``) are always kept.  Computed with ``expm1`` in log
    space so large thresholds do not overflow.
    """
    e = _check_epsilons(epsilons)
    t = check_epsilon(threshold, "threshold", allow_inf=False)
    # np.where evaluates both branches: silence the warnings of the branch not taken
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        # log(e^eps - 1) - log(e^t - 1), stable for small and large arguments
        def log_expm1(x: np.ndarray) -> np.ndarray:
            x = np.asarray(x, dtype=float)
            return np.where(x > 30, x + np.log1p(-np.exp(-np.minimum(x, 700))), np.log(np.expm1(np.minimum(x, 30))))

        finite = np.where(np.isinf(e), t, e)
        logp = log_expm1(finite) - log_expm1(np.asarray(t))
    p = np.minimum(1.0, np.exp(np.minimum(logp, 0.0)))
    return np.where(np.isinf(e), 1.0, p)


def pdp_replace_loss(probability: float, threshold: float) -> float:
    """Exact privacy loss of PDP Sample with the expected-count denominator under replace-one.

    A record kept with probability ``p`` adds its offset from the bounds' midpoint, ``u`` in
    ``[-(b-a)/2, (b-a)/2]``, to a sum released with ``Lap((b - a)/t)``; a record not kept adds 0.
    With the rest of the sample at ``R``, the output density is ``(1-p) L(y - R) + p L(y - R - u)``;
    for ``y`` beyond every atom the two neighbours' densities differ by exactly the factor below,
    and nowhere by more (the ratio of two such mixtures is monotone between the atoms), so

    ``ln((1 - p + p e^{t/2}) / (1 - p + p e^{-t/2}))``

    (``t`` for ``p = 1``; below ``ln(1 + p (e^t - 1))``, the add/remove loss).  Computed in log
    space so large thresholds do not overflow.
    """
    p = float(probability)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"probability must be in [0, 1], got {probability!r}")
    t = check_epsilon(threshold, "threshold", allow_inf=False)
    if p == 0.0:
        return 0.0
    if p == 1.0:
        return t
    lq, lp = math.log1p(-p), math.log(p)
    return float(np.logaddexp(lq, lp + t / 2.0) - np.logaddexp(lq, lp - t / 2.0))


def pdp_count_pmf(sizes: Sequence[int], probabilities: Sequence[float]) -> np.ndarray:
    """Exact distribution of the number of kept records ``M = sum_i Binomial(n_i, p_i)``.

    Returns ``pmf[m] = P(M = m)`` for ``m = 0..sum(n_i)`` (Poisson-binomial by convolution).
    """
    ns = _check_sizes(sizes, minimum=0).astype(int)
    ps = check_real_array(probabilities, "probabilities")
    if ns.ndim != 1 or ns.shape != ps.shape:
        raise ValueError(f"sizes and probabilities must be 1-D of the same length, got {ns.size} and {ps.size}")
    if np.isnan(ps).any() or (ps < 0).any() or (ps > 1).any():
        raise ValueError(f"probabilities must be in [0, 1], got {list(probabilities)!r}")
    pmf = np.ones(1)
    for n, p in zip(ns, ps):
        if p >= 1.0:
            pmf = np.concatenate([np.zeros(n), pmf])
        elif p <= 0.0:
            pmf = np.concatenate([pmf, np.zeros(n)])  # nothing kept: M unchanged, support still 0..sum(n_i)
        else:
            # via logpmf: scipy's pmf raises OverflowError for some subnormal p (e.g. 1e-308)
            pmf = signal.fftconvolve(pmf, np.exp(stats.binom.logpmf(np.arange(n + 1), n, p)))
            pmf = np.clip(pmf, 0.0, None)
    return pmf / pmf.sum()


#: How PDP Sample's mean divides the noisy sum of kept records.
PDP_DENOMINATORS = ("kept", "expected")


def pdp_sample_variance(
    sizes: Sequence[int],
    epsilons: Sequence[float],
    threshold: float,
    sigma2: float,
    sensitivity: float,
    denominator: str = "kept",
    mean_square: float = 0.0,
) -> float:
    """Variance of the Sample mechanism's mean about the population mean ``mu``.

    Records of group ``i`` are kept independently with probability ``p_i``
    (:func:`pdp_keep_probabilities`), whatever their values.

    ``denominator="kept"`` (the seed's form): the release is ``(S_kept + Lap(Delta/t)) / M``,
    ``M`` the number kept.  Given ``M = m >= 1`` it is unbiased with variance
    ``sigma2/m + 2 Delta^2/(t^2 m^2)``, so

    ``V(t) = sum_{m >= 1} P(M = m) (sigma2/m + 2 Delta^2/(t^2 m^2))``.

    The event ``M = 0`` (release = midpoint of the bounds) is excluded; its probability is
    ``pdp_count_pmf(...)[0]``.

    ``denominator="expected"``: the release is ``c + (sum_kept (x - c) + Lap(Delta/t)) / E[M]``
    with the public constant ``E[M] = sum_i n_i p_i`` and ``c`` the midpoint of the bounds
    (``Delta`` is then the sensitivity of the sum of offsets ``x - c``); it is unbiased and,
    since each kept record contributes ``p (sigma2 + (mu - c)^2) - p^2 (mu - c)^2`` to the
    variance of the sum,

    ``V(t) = (sigma2 E[M] + mean_square * sum_i n_i p_i (1 - p_i) + 2 Delta^2/t^2) / E[M]^2``

    with ``mean_square = (mu - c)^2`` (or its posterior mean: ``V`` is linear in it).
    """
    n, e = _check_sizes_epsilons(sizes, epsilons)
    t = check_epsilon(threshold, "threshold", allow_inf=False)
    s2 = check_positive(sigma2, "sigma2")
    d = check_positive(sensitivity, "sensitivity")
    m2 = check_positive(mean_square, "mean_square", allow_zero=True)
    if denominator not in PDP_DENOMINATORS:
        raise ValueError(f"denominator must be one of {PDP_DENOMINATORS}, got {denominator!r}")
    p = pdp_keep_probabilities(e, t)
    noise = 2.0 * (d / t) ** 2  # 2 Delta^2 / t^2, without overflowing t^2
    if denominator == "expected":
        em = float(np.sum(n * p))
        if not em > 0:
            raise ValueError(
                f"threshold = {threshold!r} keeps no record in expectation (E[M] = 0); lower the threshold"
            )
        return float((s2 * em + m2 * np.sum(n * p * (1.0 - p)) + noise) / em**2)
    pmf = pdp_count_pmf(n.astype(int), p)
    m = np.arange(1, pmf.size)
    w = pmf[1:]
    return float(np.sum(w * (s2 / m + noise / m**2)))


def pdp_optimal_threshold(
    sizes: Sequence[int],
    epsilons: Sequence[float],
    sigma2: float,
    sensitivity: float,
    denominator: str = "kept",
    mean_square: float = 0.0,
    grid_size: int = 96,
    max_empty: float = 1e-9,
) -> float:
    """The threshold ``t`` minimising :func:`pdp_sample_variance` (same ``denominator`` and ``mean_square``).

    The search runs over ``[min eps, max finite eps + ln N + 5]`` (``N`` all records): above
    the largest finite epsilon every private group is subsampled, and at the upper end the
    expected number of kept private records is below ``e^-5``, so with a public group the
    mechanism there is essentially the public mean.  Thresholds at which nothing is kept with
    probability above ``max_empty`` are excluded, since :func:`pdp_sample_variance` leaves
    that event out and would not be the risk.

    ``V(t)`` has kinks at the group epsilons, so the search evaluates a log-spaced grid plus
    every group epsilon, then refines the best point with a bounded scalar minimisation
    between its grid neighbours.  With only public groups nothing is subsampled and the
    threshold only scales noise on public data; 1.0 is returned.
    """
    n, e = _check_sizes_epsilons(sizes, epsilons)
    check_positive(sigma2, "sigma2")
    check_positive(sensitivity, "sensitivity")
    check_positive(mean_square, "mean_square", allow_zero=True)
    if denominator not in PDP_DENOMINATORS:
        raise ValueError(f"denominator must be one of {PDP_DENOMINATORS}, got {denominator!r}")
    if isinstance(grid_size, bool) or not isinstance(grid_size, Integral) or grid_size < 2:
        raise ValueError(f"grid_size must be an integer >= 2, got {grid_size!r}")
    if isinstance(max_empty, bool) or not isinstance(max_empty, Real) or not 0.0 < float(max_empty) < 1.0:
        raise ValueError(f"max_empty must be a number in (0, 1), got {max_empty!r}")
    finite = e[np.isfinite(e)]
    if finite.size == 0:
        return 1.0
    sizes_int = n.astype(int)
    lo = float(finite.min())
    hi = float(finite.max()) + math.log(float(n.sum())) + 5.0

    def objective(t: float) -> float:
        # P(M = 0) = prod_i (1 - p_i)^n_i; only the true-count form has that event
        p = pdp_keep_probabilities(e, t)
        with np.errstate(divide="ignore"):
            log_empty = float(np.sum(n * np.log1p(-np.minimum(p, 1.0))))
        if denominator == "kept" and log_empty > math.log(max_empty):
            return math.inf
        return pdp_sample_variance(sizes_int, e, t, sigma2, sensitivity, denominator, mean_square)

    grid = np.unique(np.concatenate([np.geomspace(lo, hi, grid_size), finite]))
    vals = np.array([objective(float(t)) for t in grid])
    if not np.isfinite(vals).any():
        raise ValueError(
            f"no threshold keeps at least one record with probability 1 - {max_empty:g}; the groups are too small"
        )
    k = int(np.argmin(vals))
    a, b = grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]
    if b > a:
        with np.errstate(invalid="ignore"):  # Brent's parabola step meets the excluded (inf) thresholds
            res = optimize.minimize_scalar(
                lambda lt: objective(math.exp(lt)),
                bounds=(math.log(a), math.log(b)),
                method="bounded",
                options={"xatol": 1e-6},
            )
        if res.success and res.fun < vals[k]:
            return float(math.exp(res.x))
    return float(grid[k])


# -- User-item counts with contribution bounding (Zeber & Lopatka) --------------------------
#
# A binary users x items matrix M (M_ij = 1: user i reported item j) is released as item
# counts after keeping at most k random items per user and adding Lap(k/epsilon) to every
# count.  The derivation of the risk is in ``docs/theory-user-item.md``; the checks are in
# ``tests/estimators/test_useritem.py``.

from typing import NamedTuple  # noqa: E402

from scipy import sparse  # noqa: E402


def check_user_item_matrix(matrix: object, name: str = "matrix") -> sparse.csr_array:
    """Return a binary users x items matrix as a canonical CSR array with float ones as data.

    ``matrix`` is a :mod:`scipy.sparse` matrix/array (any format) or a dense 0/1 array-like
    (booleans accepted).  Users with no items are allowed (they contribute nothing).  Raises
    ``TypeError`` for non-numeric input and ``ValueError`` for a shape other than 2-D, no
    user or no item, NaN, or a value other than 0 and 1 (duplicate sparse entries are summed
    first, so a duplicated entry counts as 2).  The result shares its index arrays with the
    input when the input already is a canonical CSR matrix; the input is never modified.
    """
    if sparse.issparse(matrix):
        if matrix.ndim != 2:  # type: ignore[union-attr]
            raise ValueError(
                f"{name} must be 2-D (users x items), got {matrix.ndim}-D with shape {matrix.shape}"  # type: ignore[union-attr]
            )
        csr = sparse.csr_array(matrix)  # a view of the arrays when already CSR
        if not csr.has_canonical_format:
            csr = csr.copy()
            csr.sum_duplicates()
    else:
        if matrix is None or isinstance(matrix, (str, bytes)):
            raise TypeError(f"{name} must be a scipy.sparse matrix or a 2-D 0/1 array, got {matrix!r}")
        try:
            arr = np.asarray(matrix)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be a scipy.sparse matrix or a 2-D 0/1 array: {exc}") from None
        if not (arr.dtype == bool or np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
            raise TypeError(f"{name} must hold numbers 0 and 1, got dtype {arr.dtype}")
        if arr.ndim != 2:
            raise ValueError(f"{name} must be 2-D (users x items), got {arr.ndim}-D with shape {arr.shape}")
        csr = sparse.csr_array(arr)
    data = csr.data
    if not (data.dtype == bool or np.issubdtype(data.dtype, np.integer) or np.issubdtype(data.dtype, np.floating)):
        raise TypeError(f"{name} must hold numbers 0 and 1, got dtype {data.dtype}")
    n, m = csr.shape
    if n == 0 or m == 0:
        raise ValueError(f"{name} must have at least one user and one item, got shape {csr.shape}")
    if data.dtype != bool:
        if np.isnan(data).any():
            raise ValueError(f"{name} contains NaN; it must be a binary (0/1) matrix")
        bad = (data != 0) & (data != 1)
        if bad.any():
            raise ValueError(
                f"{name} must be binary (0/1), got {int(bad.sum())} other value(s) (first: {data[bad][0].item()!r})"
            )
    if not data.all():  # explicit zeros
        csr = csr.copy()
        csr.eliminate_zeros()
    return sparse.csr_array((np.ones(csr.nnz), csr.indices, csr.indptr), shape=(n, m), copy=False)


def check_contribution_bounds(k: object, m: int | None = None, name: str = "k") -> tuple[np.ndarray, bool]:
    """Validate a contribution bound: an integer or a 1-D sequence of integers, each in ``[1, m]``.

    Returns the bounds as an int64 array and whether ``k`` was a scalar.  ``m`` (the number
    of items) is the upper limit when given: keeping more than ``m`` items per user is the
    same as keeping ``m``, with more noise.
    """
    if np.ndim(k) == 0:  # type: ignore[arg-type]
        value = k.item() if isinstance(k, np.ndarray) else k
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral):
            raise TypeError(f"{name} must be an integer, got {k!r}")
        if m is not None and value > m:
            raise ValueError(f"{name} must be <= m (the number of items), got {name}={int(value)} with m={m}")
        if not -(2**63) < value < 2**63:
            raise ValueError(f"{name} must be an integer in [1, 2**63), got {int(value)}")
        ks = np.array([int(value)], dtype=np.int64)
        scalar = True
    else:
        if isinstance(k, (str, bytes)):
            raise TypeError(f"{name} must be an integer or a 1-D sequence of integers, got {k!r}")
        arr = np.asarray(k)
        if arr.ndim != 1:
            raise ValueError(f"{name} must be an integer or a 1-D sequence of integers, got shape {arr.shape}")
        if arr.size == 0:
            raise ValueError(f"{name} must hold at least one value, got an empty sequence")
        if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"{name} must hold integers, got dtype {arr.dtype} ({arr.tolist()!r})")
        ks = arr.astype(np.int64)
        scalar = False
    if (ks < 1).any():
        bad = int(ks[ks < 1][0])
        raise ValueError(f"{name} must be >= 1, got {bad}")
    if m is not None and (ks > m).any():
        bad = int(ks[ks > m][0])
        raise ValueError(f"{name} must be <= m (the number of items), got {name}={bad} with m={m}")
    return ks, scalar


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
    noise = m * 2.0 * ks.astype(float) ** 2 / eps**2
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


# Avent et al. (hybrid trust model): its own module, re-exported here.
from . import avent as _avent  # noqa: E402
from .avent import *  # noqa: E402,F401,F403

__all__ += _avent.__all__
