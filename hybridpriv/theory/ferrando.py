"""Ferrando et al. (mixed public/private means) and Jorgensen et al. (PDP Sample): closed forms.

Pure NumPy/SciPy functions; the derivations are in ``docs/theory.md`` and every formula is
checked against Monte Carlo of the estimators in ``tests/test_theory.py``.

Notation: group ``i`` has ``n_i`` records, privacy parameter ``epsilon_i`` (``inf`` for
public records), the records have variance ``sigma2`` and the per-group sum has
sensitivity ``Delta`` (``r = max(|a|, |b|)`` in Ferrando et al.).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral, Real

import numpy as np
from scipy import optimize, signal, special, stats

from ..core.privacy import check_epsilon, check_positive, check_real_array

__all__ = [
    "MAX_PMF_RECORDS",
    "PDP_DENOMINATORS",
    "group_mean_variances",
    "mixed_mean_variance",
    "mixed_mean_weights",
    "pdp_count_pmf",
    "pdp_keep_probabilities",
    "pdp_optimal_threshold",
    "pdp_replace_loss",
    "pdp_sample_variance",
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


#: ``log`` of the largest and of the smallest normal double: results outside are refused, not rounded.
_LOG_MAX = math.log(np.finfo(float).max)
_LOG_TINY = math.log(np.finfo(float).tiny)
#: Most records :func:`pdp_count_pmf` convolves (its result has one entry per possible count).
MAX_PMF_RECORDS = 10**7


def _checked_exp(log_value: np.ndarray | float, what: str, inputs: str) -> np.ndarray:
    """``exp(log_value)`` after checking every entry is a normal double (no overflow to inf, no underflow to 0).

    The quantities computed here are positive and finite in exact arithmetic; when one is beyond
    the range of doubles the error names the inputs (``inputs``) that put it there.
    """
    lv = np.asarray(log_value, dtype=float)
    if (lv > _LOG_MAX).any() or (lv < _LOG_TINY).any():
        k = int(np.argmax((lv > _LOG_MAX) | (lv < _LOG_TINY)))
        x = float(lv.flat[k])
        direction = "overflows" if x > 0 else "underflows"
        where = f"[{k}]" if lv.ndim else ""
        raise ValueError(
            f"{what}{where} = e^{x:.6g} {direction} floating point with {inputs}: the inputs are too extreme"
        )
    return np.exp(lv)


def _log_noise(sensitivity: float, epsilon: np.ndarray | float) -> np.ndarray:
    """``log(2 Delta^2 / epsilon^2)`` (``-inf`` for ``epsilon = inf``), without forming ``Delta / epsilon``."""
    e = np.asarray(epsilon, dtype=float)
    public = np.isinf(e)
    return np.where(public, -np.inf, math.log(2.0) + 2.0 * (math.log(sensitivity) - np.log(np.where(public, 1.0, e))))


def _log_group_variances(n: np.ndarray, e: np.ndarray, s2: float, d: float) -> np.ndarray:
    """``log Var_i = log(n_i sigma2 + 2 Delta^2/epsilon_i^2) - 2 log n_i``, in log space (never overflows)."""
    return np.logaddexp(np.log(n) + math.log(s2), _log_noise(d, e)) - 2.0 * np.log(n)


def _inputs(**kw: object) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kw.items())


def group_mean_variances(
    sizes: Sequence[int], epsilons: Sequence[float], sigma2: float, sensitivity: float
) -> np.ndarray:
    """Variance of each group's noisy mean ``(Sigma_i + z_i)/n_i``, ``z_i ~ Lap(Delta/epsilon_i)``.

    ``Var_i = (n_i sigma2 + 2 Delta^2 / epsilon_i^2) / n_i^2``; for a public group the noise
    term vanishes (``epsilon_i = inf``).  Computed in log space; a variance beyond the range of
    doubles (e.g. ``epsilon_i = 1e-300`` with ``sensitivity = 1e150``, or ``sigma2 = 1e-300`` with
    ``n_i = 1e12``) raises ``ValueError`` naming the inputs instead of returning ``inf`` or ``0``.

    Raises
    ------
    ValueError
        Bad input, or a variance that overflows or underflows floating point.
    """
    n, e = _check_sizes_epsilons(sizes, epsilons)
    s2 = check_positive(sigma2, "sigma2")
    d = check_positive(sensitivity, "sensitivity")
    lv = _log_group_variances(n, e, s2, d)
    return _checked_exp(
        lv, "group_mean_variances: Var", _inputs(sizes=n.tolist(), epsilons=e.tolist(), sigma2=s2, sensitivity=d)
    )


def mixed_mean_weights(
    sizes: Sequence[int], epsilons: Sequence[float], sigma2: float, sensitivity: float
) -> np.ndarray:
    """Inverse-variance weights of the mixed mean (Ferrando et al., Section 2).

    ``beta_i ∝ 1 / Var_i = n_i^2 / (n_i sigma2 + 2 Delta^2/epsilon_i^2)``, normalised to sum to 1.
    Public groups (``epsilon_i = math.inf``) get ``beta_i ∝ n_i / sigma2``.  Computed as a
    softmax of ``-log Var_i`` (log space), so the weights are finite and right for any
    valid input: a group whose variance is beyond the range of doubles gets a weight that is
    exactly or nearly 0, as it should.

    Examples
    --------
    >>> mixed_mean_weights([100, 100], [math.inf, math.inf], 1.0, 1.0)
    array([0.5, 0.5])
    """
    n, e = _check_sizes_epsilons(sizes, epsilons)
    s2 = check_positive(sigma2, "sigma2")
    d = check_positive(sensitivity, "sensitivity")
    neg = -_log_group_variances(n, e, s2, d)
    w = np.exp(neg - neg.max())
    return w / w.sum()


def mixed_mean_variance(
    sizes: Sequence[int],
    epsilons: Sequence[float],
    sigma2: float,
    sensitivity: float,
    weights: Sequence[float] | None = None,
) -> float:
    """Variance ``sum_i beta_i^2 Var_i`` of the mixed mean (optimal weights when ``weights`` is None).

    With the optimal weights this equals ``1 / sum_i (1/Var_i)``.  Computed in log space; a
    variance beyond the range of doubles raises ``ValueError`` naming the inputs (all weights 0
    give 0).
    """
    n, e = _check_sizes_epsilons(sizes, epsilons)
    s2 = check_positive(sigma2, "sigma2")
    d = check_positive(sensitivity, "sensitivity")
    lv = _log_group_variances(n, e, s2, d)
    inputs = _inputs(sizes=n.tolist(), epsilons=e.tolist(), sigma2=s2, sensitivity=d)
    if weights is None:
        return float(_checked_exp(-special.logsumexp(-lv), "mixed_mean_variance: the variance", inputs))
    w = check_real_array(weights, "weights")
    if w.shape != lv.shape:
        raise ValueError(f"weights must have one entry per group ({lv.size}), got {w.size}")
    if not np.isfinite(w).all():
        raise ValueError(f"weights must be finite, got {w.tolist()!r}")
    if not w.any():
        return 0.0
    with np.errstate(divide="ignore"):
        log_w2 = 2.0 * np.log(np.abs(w))
    return float(_checked_exp(special.logsumexp(log_w2 + lv), "mixed_mean_variance: the variance", f"{inputs}, weights={w.tolist()!r}"))


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
    nf = _check_sizes(sizes, minimum=0)
    if nf.sum() > MAX_PMF_RECORDS:
        raise ValueError(
            f"sizes add up to {nf.sum():.6g} records: the exact count distribution would need one entry per "
            f"possible count, more than MAX_PMF_RECORDS = {MAX_PMF_RECORDS:.0e}"
        )
    ns = nf.astype(int)
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


class _NothingKept(ValueError):
    """The threshold keeps no record (in expectation, or with probability 1)."""


def _pdp_log_variance(
    n: np.ndarray, e: np.ndarray, t: float, s2: float, d: float, denominator: str, m2: float
) -> float:
    """``log V(t)`` of :func:`pdp_sample_variance` (inputs already checked), in log space throughout.

    ``2 Delta^2 / t^2`` is carried as ``log 2 + 2 (log Delta - log t)`` and every sum as a
    log-sum-exp, so no intermediate overflows (``Delta = 1e150``, ``t = 1e-300``) or vanishes;
    raises :class:`_NothingKept` when the threshold keeps nothing.
    """
    p = pdp_keep_probabilities(e, t)
    log_noise = float(_log_noise(d, t))
    if denominator == "expected":
        em = float(np.sum(n * p))
        if not em > 0:
            raise _NothingKept(
                f"threshold = {t!r} keeps no record in expectation (E[M] = 0); lower the threshold"
            )
        spread = float(np.sum(n * p * (1.0 - p)))
        with np.errstate(divide="ignore"):  # m2 = 0 or spread = 0: that term is absent (log 0 = -inf)
            log_m2_term = math.log(m2) + math.log(spread) if m2 > 0 and spread > 0 else -math.inf
        log_num = special.logsumexp([math.log(s2) + math.log(em), log_m2_term, log_noise])
        return float(log_num - 2.0 * math.log(em))
    pmf = pdp_count_pmf(n, p)
    w = pmf[1:]
    if not (w > 0).any():
        raise _NothingKept(f"threshold = {t!r} keeps no record with probability 1 (every p_i underflows to 0)")
    log_m = np.log(np.arange(1, pmf.size, dtype=float))
    with np.errstate(divide="ignore"):
        log_w = np.log(w)
    terms = log_w + np.logaddexp(math.log(s2) - log_m, log_noise - 2.0 * log_m)
    return float(special.logsumexp(terms[w > 0]))


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
    ``pdp_count_pmf(...)[0]``.  A threshold at which every keep probability underflows to 0
    (nothing is ever kept) raises ``ValueError``.

    ``denominator="expected"``: the release is ``c + (sum_kept (x - c) + Lap(Delta/t)) / E[M]``
    with the public constant ``E[M] = sum_i n_i p_i`` and ``c`` the midpoint of the bounds
    (``Delta`` is then the sensitivity of the sum of offsets ``x - c``); it is unbiased and,
    since each kept record contributes ``p (sigma2 + (mu - c)^2) - p^2 (mu - c)^2`` to the
    variance of the sum,

    ``V(t) = (sigma2 E[M] + mean_square * sum_i n_i p_i (1 - p_i) + 2 Delta^2/t^2) / E[M]^2``

    with ``mean_square = (mu - c)^2`` (or its posterior mean: ``V`` is linear in it).

    Both forms are evaluated in log space; a ``V`` beyond the range of doubles (e.g.
    ``sensitivity = 1e150`` with ``threshold = 1e-300``) raises ``ValueError`` naming the inputs
    instead of returning ``inf`` (or raising ``OverflowError``).
    """
    n, e = _check_sizes_epsilons(sizes, epsilons)
    t = check_epsilon(threshold, "threshold", allow_inf=False)
    s2 = check_positive(sigma2, "sigma2")
    d = check_positive(sensitivity, "sensitivity")
    m2 = check_positive(mean_square, "mean_square", allow_zero=True)
    if denominator not in PDP_DENOMINATORS:
        raise ValueError(f"denominator must be one of {PDP_DENOMINATORS}, got {denominator!r}")
    try:
        log_v = _pdp_log_variance(n, e, t, s2, d, denominator, m2)
    except _NothingKept as exc:
        raise ValueError(str(exc)) from None
    inputs = _inputs(threshold=t, sigma2=s2, sensitivity=d, mean_square=m2, sizes=n.tolist(), epsilons=e.tolist())
    return float(_checked_exp(log_v, "pdp_sample_variance: V(threshold)", inputs))


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
    lo = float(finite.min())
    hi = float(finite.max()) + math.log(float(n.sum())) + 5.0

    s2, d, m2 = float(sigma2), float(sensitivity), float(mean_square)
    if denominator == "kept" and n.sum() > MAX_PMF_RECORDS:
        raise ValueError(
            f"sizes add up to {n.sum():.6g} records: the kept-count distribution of denominator='kept' "
            f"is exact and needs at most MAX_PMF_RECORDS = {MAX_PMF_RECORDS:.0e}; use denominator='expected'"
        )

    def objective(t: float) -> float:
        # log V(t), minimised in log space (same minimiser, no overflow); excluded thresholds: inf.
        # P(M = 0) = prod_i (1 - p_i)^n_i; only the true-count form has that event
        p = pdp_keep_probabilities(e, t)
        with np.errstate(divide="ignore"):
            log_empty = float(np.sum(n * np.log1p(-np.minimum(p, 1.0))))
        if denominator == "kept" and log_empty > math.log(max_empty):
            return math.inf
        try:
            return _pdp_log_variance(n, e, t, s2, d, denominator, m2)
        except _NothingKept:
            return math.inf

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
