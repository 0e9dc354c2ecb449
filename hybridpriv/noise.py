"""Basic DP mechanisms, vectorised over a leading trial axis, with a numpy Generator passed in.

Every function takes ``rng`` (a :class:`numpy.random.Generator`) and never touches global
random state.  Guarantees (for the stated sensitivity, under the neighbouring relation the
caller's sensitivity was computed for):

* :func:`laplace` -- ``epsilon``-DP when ``scale = sensitivity / epsilon`` (L1 sensitivity).
* :func:`laplace_sum` -- the sum of ``count`` independent Laplace draws in one draw (simulating many
  users' local noise when only its sum is used; not a mechanism of its own).
* :func:`gaussian` -- ``(epsilon, delta)``-DP when ``sigma = gaussian_sigma(epsilon, delta, sensitivity)``
  (L2 sensitivity; the analytic calibration of Balle & Wang 2018 by default).
* :func:`exponential_mechanism` -- ``epsilon``-DP for scores of sensitivity ``sensitivity``:
  ``P(k) ∝ base_k * exp(epsilon * score_k / (2 * sensitivity))``, sampled exactly in log space.
* :func:`smith_quantile` -- ``epsilon``-DP quantile over a continuous range (Smith 2011),
  exact sampling by intervals between sorted records.
* :func:`randomized_response` -- ``epsilon``-local DP K-ary randomized response (one report per
  user, any two labels neighbours); :func:`rr_probabilities` gives its report probabilities and
  :func:`rr_debias_counts` / :func:`rr_debias_sums` invert it on aggregated reports.

Floating-point caveat: NumPy's Laplace and Gaussian samplers are fine for simulation and
research but not hardened against floating-point attacks (Mironov 2012); see
``docs/limitations.md``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from .core.privacy import Bounds, check_epsilon, check_integer, check_positive, check_real_array
from .core.validation import check_rng

__all__ = [
    "MAX_NOISE_SCALE",
    "check_rng",
    "exponential_mechanism",
    "gaussian",
    "gaussian_sigma",
    "interval_exponential_mechanism",
    "laplace",
    "laplace_sum",
    "poisson_subsample_sums",
    "randomized_response",
    "rr_debias_counts",
    "rr_debias_sums",
    "rr_probabilities",
    "sample_log_weights",
    "smith_quantile",
]


#: Largest noise scale (Laplace ``scale``, Gaussian ``sigma``) :func:`laplace` and :func:`gaussian` accept:
#: the largest double over 64.  A standard Laplace draw from NumPy is below 37 in absolute value
#: (``-log`` of a 53-bit uniform) and a standard normal draw is, in practice, far below 64, so
#: ``scale * draw`` cannot overflow below this limit; above it (``1e308``, say) the noise itself
#: would be ``inf``.  The output is checked to be finite as well (``values`` near the largest double).
MAX_NOISE_SCALE = float(np.finfo(float).max) / 64.0


def _add_noise(values, scale, name: str, rng: np.random.Generator, draw) -> np.ndarray:
    """``values + scale * draw(shape)`` after checking ``scale`` (finite, >= 0, at most
    :data:`MAX_NOISE_SCALE`; 0 adds nothing), ``values`` (finite) and the result (finite)."""
    check_rng(rng)
    v = check_real_array(values, "values")
    if np.isnan(v).any():
        raise ValueError("values contain NaN")
    if np.isinf(v).any():
        raise ValueError(f"values must be finite, got {float(v[np.isinf(v)].flat[0])!r}")
    s = check_real_array(scale, name)
    if np.isnan(s).any() or (s < 0).any() or np.isinf(s).any():
        raise ValueError(f"{name} must be finite and >= 0, got {scale!r}")
    if (s > MAX_NOISE_SCALE).any():
        raise ValueError(
            f"{name} must be at most {MAX_NOISE_SCALE:.4g} (MAX_NOISE_SCALE, above which the noise overflows "
            f"to inf), got {float(s.max())!r}"
        )
    try:
        shape = np.broadcast_shapes(v.shape, s.shape)
    except ValueError:
        raise ValueError(f"{name} must broadcast against values, got shapes {s.shape} and {v.shape}") from None
    with np.errstate(over="ignore", invalid="ignore"):
        out = v + s * draw(shape)
    if not np.isfinite(out).all():
        raise ValueError(
            f"the noisy values overflow floating point: values up to {float(np.abs(v).max()):.4g} with "
            f"{name} up to {float(s.max())!r}; rescale the values or lower {name}"
        )
    return out


def laplace(values: np.ndarray | float, scale: np.ndarray | float, rng: np.random.Generator) -> np.ndarray:
    """Add Laplace(0, ``scale``) noise to every entry of ``values``.

    ``scale`` broadcasts against ``values``; a scale of 0 adds nothing (public data).
    ``epsilon``-DP when ``scale = sensitivity / epsilon``.  The largest workable scale is
    :data:`MAX_NOISE_SCALE` (about ``2.8e306``); a larger one, or noisy values that overflow,
    raise ``ValueError`` naming ``scale`` (never an ``inf`` release).
    """
    return _add_noise(values, scale, "scale", rng, lambda shape: rng.laplace(0.0, 1.0, size=shape))


def laplace_sum(values: np.ndarray | float, scale: np.ndarray | float, count: int,
                rng: np.random.Generator) -> np.ndarray:
    """Add to every entry of ``values`` the sum of ``count`` independent Laplace(0, ``scale``) draws.

    Exact in distribution, in one draw per entry instead of ``count``: a Laplace(0, b) draw is the
    difference of two independent Exponential(b) draws, so the sum of ``count`` of them is
    ``b * (G1 - G2)`` with ``G1``, ``G2`` independent Gamma(``count``, 1).  For simulating a group's
    local noise where an estimator uses only its sum (the mean of ``count`` users' noisy reports);
    the privacy guarantee is each user's own Laplace draw, which this only stands in for.  ``count``
    0 adds nothing; ``scale`` is checked as in :func:`laplace`.
    """
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
        raise ValueError(f"count must be an integer >= 0 (the number of draws summed), got {count!r}")
    if count == 0:
        return _add_noise(values, scale, "scale", rng, lambda shape: np.zeros(shape))
    k = float(count)
    return _add_noise(values, scale, "scale", rng,
                      lambda shape: rng.standard_gamma(k, size=shape) - rng.standard_gamma(k, size=shape))


def gaussian_sigma(epsilon: float, delta: float, sensitivity: float, method: str = "analytic") -> float:
    """Noise standard deviation for the ``(epsilon, delta)`` Gaussian mechanism.

    Parameters
    ----------
    epsilon, delta
        Target guarantee (``epsilon > 0``, ``0 < delta < 1``).
    sensitivity
        L2 sensitivity.
    method
        ``"analytic"`` (default): the smallest sigma satisfying the exact condition of
        Balle & Wang (2018, Theorem 8),
        ``Phi(D/(2s) - e s/D) - exp(e) Phi(-D/(2s) - e s/D) <= delta``, valid for every epsilon.
        ``"classic"``: ``sigma = D sqrt(2 ln(1.25/delta)) / epsilon`` (Dwork & Roth, proven for epsilon < 1).
    """
    eps = check_epsilon(epsilon, allow_inf=False)
    if not (isinstance(delta, (int, float)) and 0 < float(delta) < 1):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    sens = check_positive(sensitivity, "sensitivity")
    if method == "classic":
        if eps >= 1:
            raise ValueError(f"the classic Gaussian calibration needs epsilon < 1, got {epsilon!r}; use method='analytic'")
        sigma = sens * math.sqrt(2 * (math.log(1.25) - math.log(delta))) / eps
        if not sigma <= MAX_NOISE_SCALE:
            raise ValueError(
                f"sensitivity={sensitivity!r} over epsilon={epsilon!r} is too extreme: the classic Gaussian sigma "
                f"({sigma:.4g}) exceeds MAX_NOISE_SCALE = {MAX_NOISE_SCALE:.4g}"
            )
        return sigma
    if method != "analytic":
        raise ValueError(f"method must be 'analytic' or 'classic', got {method!r}")

    # the condition depends on sigma / sensitivity only: solve for the ratio, then scale
    def excess(log_r: float) -> float:
        r = math.exp(log_r)
        a, b = 1.0 / (2 * r), eps * r
        # log of exp(eps) * Phi(-a - b), kept in log space against overflow
        log_second = eps + special.log_ndtr(-a - b)
        second = math.exp(log_second) if log_second < 700 else math.inf
        return special.ndtr(a - b) - second - delta

    if not excess(-20.0) > 0 > excess(20.0):
        raise ValueError(
            f"epsilon={epsilon!r} and delta={delta!r} are outside the range the analytic calibration "
            "can solve (sigma / sensitivity must lie in [e^-20, e^20])"
        )
    sigma = sens * math.exp(optimize.brentq(excess, -20.0, 20.0, xtol=1e-12))
    if not sigma <= MAX_NOISE_SCALE:
        raise ValueError(
            f"sensitivity={sensitivity!r} is too large: the Gaussian sigma ({sigma:.4g}) exceeds "
            f"MAX_NOISE_SCALE = {MAX_NOISE_SCALE:.4g}"
        )
    return sigma


def gaussian(values: np.ndarray | float, sigma: np.ndarray | float, rng: np.random.Generator) -> np.ndarray:
    """Add Normal(0, ``sigma``^2) noise to every entry of ``values`` (see :func:`gaussian_sigma`).

    The largest workable ``sigma`` is :data:`MAX_NOISE_SCALE` (about ``2.8e306``); a larger one, or
    noisy values that overflow, raise ``ValueError`` naming ``sigma`` (never an ``inf`` release).
    """
    return _add_noise(values, sigma, "sigma", rng, lambda shape: rng.standard_normal(size=shape))


def sample_log_weights(log_weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Sample one index per row with probability ``∝ exp(log_weights)`` (Gumbel-max, exact).

    Works for log-weights of any magnitude (no exponentiation, so no underflow or overflow);
    ``-inf`` marks impossible outcomes.  ``log_weights`` has shape ``(..., K)``; the result
    has shape ``(...)``.
    """
    check_rng(rng)
    lw = check_real_array(log_weights, "log_weights")
    if lw.ndim == 0 or lw.shape[-1] == 0:
        raise ValueError("log_weights must have at least one outcome on its last axis")
    if np.isnan(lw).any() or (lw == np.inf).any():
        raise ValueError("log_weights must not contain NaN or +inf")
    if (np.isneginf(lw).all(axis=-1)).any():
        raise ValueError("every outcome has weight zero (all log_weights are -inf) in some row")
    gumbel = rng.gumbel(size=lw.shape)
    return np.argmax(lw + gumbel, axis=-1)


def exponential_mechanism(
    scores: np.ndarray,
    epsilon: float,
    sensitivity: float,
    rng: np.random.Generator,
    log_base_measure: np.ndarray | None = None,
) -> np.ndarray:
    """The exponential mechanism over a finite set of outcomes (McSherry & Talwar 2007).

    ``P(k) ∝ base_k exp(epsilon * score_k / (2 sensitivity))`` along the last axis of
    ``scores`` (leading axes are trials).  Sampled exactly in log space.

    Guarantee: ``epsilon``-DP when every score changes by at most ``sensitivity`` between
    neighbouring datasets (and the base measure does not depend on the data).
    """
    eps = check_epsilon(epsilon)
    sens = check_positive(sensitivity, "sensitivity")
    s = check_real_array(scores, "scores")
    if np.isnan(s).any():
        raise ValueError("scores must not contain NaN")
    if s.ndim == 0 or s.shape[-1] == 0:
        raise ValueError(f"scores must have at least one outcome on its last axis, got shape {s.shape}")
    if math.isinf(eps):
        # epsilon = inf: uniform over the maximisers (weighted by the base measure)
        best = s == s.max(axis=-1, keepdims=True)
        lw = np.where(best, 0.0, -np.inf)
    else:
        if (s == np.inf).any():
            raise ValueError("scores must not contain +inf with a finite epsilon")
        # shifted by each row's best score (the distribution is unchanged): the best outcome has
        # log-weight 0 and the others <= 0, so a huge epsilon * score / sensitivity can only
        # underflow to -inf (probability 0, right to double precision), never overflow to +inf
        top = s.max(axis=-1, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)  # a row of -inf scores: refused below
        with np.errstate(over="ignore"):
            lw = eps * ((s - top) / (2.0 * sens))
    if log_base_measure is not None:
        base = check_real_array(log_base_measure, "log_base_measure")
        if np.isnan(base).any() or (base == np.inf).any():
            raise ValueError("log_base_measure must not contain NaN or +inf")
        try:
            lw = lw + base
        except ValueError:
            raise ValueError(
                f"log_base_measure must broadcast against scores, got shapes {base.shape} and {s.shape}"
            ) from None
    return sample_log_weights(lw, rng)


def interval_exponential_mechanism(
    edges: np.ndarray, log_weights: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Sample a point from a piecewise-constant density over intervals, exactly.

    Parameters
    ----------
    edges
        Shape ``(..., K + 1)``, non-decreasing along the last axis: interval ``k`` is
        ``[edges[k], edges[k+1]]``.
    log_weights
        Shape ``(..., K)``: the log density on interval ``k`` (e.g. ``epsilon * u_k / 2``).
    rng
        Random generator.

    Returns
    -------
    Points of the leading shape of ``edges`` and ``log_weights`` broadcast together (``(...)``;
    e.g. one row of edges for many trials): an interval is chosen with probability
    ``∝ length_k * exp(log_weights_k)`` (Gumbel-max in log space), then a point uniformly in it.
    """
    e = check_real_array(edges, "edges")
    lw = check_real_array(log_weights, "log_weights")
    if e.ndim == 0 or lw.ndim == 0:
        raise ValueError(f"edges and log_weights must have a last axis, got shapes {e.shape} and {lw.shape}")
    if not np.isfinite(e).all():
        raise ValueError("edges must be finite")
    try:
        lead = np.broadcast_shapes(e.shape[:-1], lw.shape[:-1])
    except ValueError:
        lead = None
    if lead is None or e.shape[-1] != lw.shape[-1] + 1:
        raise ValueError(f"edges must have one more entry than log_weights on the last axis, got {e.shape} and {lw.shape}")
    lengths = np.diff(e, axis=-1)
    if (lengths < 0).any():
        raise ValueError("edges must be non-decreasing along the last axis")
    with np.errstate(divide="ignore"):
        total = np.broadcast_to(np.log(lengths) + lw, lead + lw.shape[-1:])
    k = sample_log_weights(total, rng)
    left = np.take_along_axis(np.broadcast_to(e, lead + e.shape[-1:]), k[..., None], axis=-1)[..., 0]
    width = np.take_along_axis(np.broadcast_to(lengths, lead + lw.shape[-1:]), k[..., None], axis=-1)[..., 0]
    return left + width * rng.random(size=k.shape)


def smith_quantile(
    data: np.ndarray, q: float, epsilon: float, bounds: Bounds, rng: np.random.Generator, trials: int | None = None
) -> np.ndarray:
    """The ``epsilon``-DP ``q``-quantile of Smith (2011), exact by intervals.

    Sort the ``n`` records of each trial, add the bounds as ``x_0 = a`` and ``x_{n+1} = b``,
    choose interval ``j`` (``j`` records below it) with probability
    ``∝ (x_{j+1} - x_j) exp(-epsilon |j - q n| / 2)`` and return a uniform point in it.
    The utility ``-|j - q n|`` has sensitivity 1 under add/remove and replace-one neighbours.

    Parameters
    ----------
    data
        Shape ``(trials, n)`` or ``(n,)``, inside ``bounds``.
    q
        Quantile in ``[0, 1]`` (0.5: the median).
    epsilon
        Privacy parameter (``inf``: uniform over the maximising intervals).
    bounds
        The declared range.
    rng
        Random generator.
    trials
        With one dataset (``data`` of shape ``(n,)`` or ``(1, n)``): this many independent
        releases on it, shape ``(trials,)``, the dataset sorted once (the same draws as the
        dataset repeated ``trials`` times).  ``data`` of shape ``(trials, n)`` is also accepted.
    """
    check_rng(rng)
    if isinstance(q, bool) or not (isinstance(q, (int, float)) and 0.0 <= float(q) <= 1.0):
        raise ValueError(f"q must be in [0, 1], got {q!r}")
    eps = check_epsilon(epsilon)
    bounds = Bounds.from_pair(bounds)
    x = check_real_array(data, "data")
    squeeze = x.ndim == 1 and trials is None
    x = np.atleast_2d(x)
    if trials is not None:
        trials = check_integer(trials, "trials", 1)
        if x.ndim != 2 or x.shape[0] not in (1, trials):
            raise ValueError(f"data must have shape (n,), (1, n) or (trials, n) = ({trials}, n), got {x.shape}")
    if x.shape[-1] == 0:
        raise ValueError("data must hold at least one record")
    x = bounds.check(x)
    n = x.shape[-1]
    srt = np.sort(x, axis=-1)
    lo = np.full(srt.shape[:-1] + (1,), bounds.lower)
    hi = np.full(srt.shape[:-1] + (1,), bounds.upper)
    edges = np.concatenate([lo, srt, hi], axis=-1)
    lead = edges.shape[:-1] if trials is None else (trials,)
    utility = -np.abs(np.arange(n + 1) - q * n)
    if math.isinf(eps):
        edges = np.broadcast_to(edges, lead + (n + 2,))
        best = utility == utility.max()
        lw = np.where(best, 0.0, -np.inf)
        # every maximising interval empty (tied records): the quantile is that record itself
        tied = ~((np.diff(edges, axis=-1) > 0) & best).any(axis=-1)
        if tied.any():
            out = np.take(edges, int(np.argmax(best)), axis=-1).copy()
            if (~tied).any():
                rows = edges[~tied]
                out[~tied] = interval_exponential_mechanism(rows, np.broadcast_to(lw, (rows.shape[0], n + 1)), rng)
            return out[0] if squeeze else out
    else:
        lw = eps * utility / 2.0
    out = interval_exponential_mechanism(edges, np.broadcast_to(lw, lead + (n + 1,)), rng)
    return out[0] if squeeze else out


# -- Poisson subsampling ---------------------------------------------------------------------------
#: :func:`poisson_subsample_sums` skips between selected records when the selection probability
#: (of kept records, or of dropped ones for ``p`` near 1) is at most this; above it, one uniform per
#: record is cheaper.
SKIP_BELOW = 0.25
#: Most geometric gaps drawn at once by :func:`poisson_subsample_sums` (bounds its memory).
_SKIP_BLOCK = 1 << 20


def poisson_subsample_sums(
    values: np.ndarray, p: float, trials: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Sum and count of a Poisson subsample (every record kept independently with probability ``p``).

    Parameters
    ----------
    values
        Shape ``(rows, n)`` with ``rows`` 1 (one set of records, subsampled afresh in every trial)
        or ``trials`` (trial ``i`` subsamples row ``i``); or ``(n,)``.
    p
        Keep probability in ``[0, 1]``.
    trials
        Number of independent subsamples.
    rng
        Random generator.

    Returns
    -------
    sums, counts
        Shape ``(trials,)`` each: the kept records' sum and their number.

    Notes
    -----
    With ``q = min(p, 1 - p)`` at most :data:`SKIP_BELOW`, the selected records (the kept ones, or
    the dropped ones when ``p > 1/2``: ``sum = total - dropped``) are found by skipping: the gaps
    between successive selected records of an independent Bernoulli(``q``) sequence are independent
    Geometric(``q``) variables (drawn as ``floor(log(1 - U) / log(1 - q)) + 1``, ``U`` uniform: only
    ``rng.random``, which the release backend serves from OS entropy),
    so drawing the gaps gives exactly the same joint law of the selection at about ``n q`` draws per
    trial instead of ``n``.  Otherwise one uniform per record and trial,
    ``rng.random((trials, n)) < p`` (for ``p = 1``: everything, no draws).
    """
    check_rng(rng)
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)):
        raise TypeError(f"p must be a probability in [0, 1], got {p!r}")
    if not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"p must be a probability in [0, 1], got {p!r}")
    p = float(p)
    trials = check_integer(trials, "trials", 1)
    x = check_real_array(values, "values")
    x = x[np.newaxis, :] if x.ndim == 1 else x
    if x.ndim != 2 or x.shape[0] not in (1, trials):
        raise ValueError(f"values must have shape (n,), (1, n) or (trials, n) = ({trials}, n), got {x.shape}")
    rows, n = x.shape
    if p >= 1.0:
        return np.broadcast_to(x.sum(axis=1), (trials,)).copy(), np.full(trials, float(n))
    q = min(p, 1.0 - p)
    if q > SKIP_BELOW or n == 0:
        keep = rng.random((trials, n)) < p
        return np.where(keep, x, 0.0).sum(axis=1), keep.sum(axis=1).astype(float)
    sums, counts = np.zeros(trials), np.zeros(trials)
    if q > 0.0:
        padded = np.concatenate([x, np.zeros((rows, 1))], axis=1)  # index n: past the end, adds 0
        m = n * q
        width = max(int(math.ceil(m + 3.0 * math.sqrt(m) + 2.0)), 1)  # covers the group in one block mostly
        rate = -math.log1p(-q)  # floor(E / rate) + 1, E = -log(1 - U) ~ Exp(1): Geometric(q) on {1, 2, ...}
        position = np.zeros(trials, dtype=np.int64)  # records passed so far (1-based end of the last gap)
        active = np.arange(trials)
        step = max(_SKIP_BLOCK // width, 1)
        while active.size:
            for start in range(0, active.size, step):
                rows_ = active[start:start + step]
                gaps = rng.random((rows_.size, width))  # uniforms, not rng.exponential: a release's
                np.log1p(-gaps, out=gaps)  # OpenDPGenerator serves selection from rng.random only
                gaps /= -rate
                np.minimum(gaps, n, out=gaps)  # a gap past the group ends it, however long (no int overflow)
                ends = position[rows_, None] + np.cumsum(gaps.astype(np.int64) + 1, axis=1)
                picked = np.minimum(ends - 1, n)  # 0-based index of each selected record; n: beyond the group
                if rows > 1:
                    sums[rows_] += np.take_along_axis(padded[rows_], picked, axis=1).sum(axis=1)
                else:
                    sums[rows_] += np.take(padded[0], picked).sum(axis=1)
                counts[rows_] += (ends <= n).sum(axis=1)
                position[rows_] = ends[:, -1]
            active = active[position[active] < n]
    if p > 0.5:  # the selection was of dropped records
        return x.sum(axis=1) - sums, n - counts
    return sums, counts


# -- K-ary randomized response ---------------------------------------------------------------------
def rr_probabilities(epsilon: float, k: int) -> tuple[float, float]:
    """Report probabilities ``(q, r)`` of K-ary randomized response at ``epsilon``.

    The true label is kept with probability ``p = (e^eps - 1)/(K + e^eps - 1)``, otherwise a
    uniform label (possibly the true one) is reported, so the true label is reported with
    ``q = p + (1 - p)/K = e^eps/(K + e^eps - 1)`` and each other label with
    ``r = 1/(K + e^eps - 1)``; ``q/r = e^eps``.  ``epsilon = inf`` or ``k = 1``: ``(1, 0)``.

    Examples
    --------
    >>> q, r = rr_probabilities(math.log(3.0), 2)
    >>> round(q, 12), round(r, 12)
    (0.75, 0.25)
    """
    eps = check_epsilon(epsilon)
    k = check_integer(k, "k", 1)
    if k == 1:
        return 1.0, 0.0
    em1 = math.expm1(eps) if eps < 700 else math.inf
    r = 1.0 / (k + em1)
    return 1.0 - (k - 1) * r, r


def randomized_response(labels: np.ndarray, k: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """K-ary randomized response: one independent report per label (vectorised, any shape).

    Keeps each label with probability ``(e^eps - 1)/(K + e^eps - 1)`` and replaces it by a
    uniform label in ``0..K-1`` otherwise: ``epsilon``-local DP for each label, any two labels
    being neighbours (see :func:`rr_probabilities`).

    Floating-point caveat: once ``epsilon`` exceeds about 37, ``r`` is below the spacing of doubles
    near 1 and every label is kept (``docs/limitations.md``).
    """
    check_rng(rng)
    k = check_integer(k, "k", 1)
    eps = check_epsilon(epsilon)
    lab = np.asarray(labels)
    if lab.dtype.kind not in "iu":
        raise TypeError(f"labels must be integers, got dtype {lab.dtype}")
    if lab.size and (lab.min() < 0 or lab.max() >= k):
        raise ValueError(f"labels must lie in 0..{k - 1}, got values in {lab.min()}..{lab.max()}")
    q, r = rr_probabilities(eps, k)
    keep_p = 1.0 - k * r  # = (e^eps - 1)/(K + e^eps - 1)
    # one uniform per label: u < keep_p keeps it; otherwise (u - keep_p)/(1 - keep_p) is uniform
    # on [0, 1) given u >= keep_p and picks the uniform label
    u = rng.random(lab.shape)
    if keep_p >= 1.0:
        return lab.astype(np.intp, copy=True)
    other = np.minimum(((u - keep_p) / (1.0 - keep_p) * k).astype(np.intp), k - 1)
    return np.where(u < keep_p, lab, other)


def _rr_gap(epsilon: float, k: int) -> tuple[float, float]:
    """``(r, q - r)`` of :func:`rr_probabilities`, with ``q - r = (e^eps - 1) r`` computed without cancellation."""
    q, r = rr_probabilities(epsilon, k)
    eps = check_epsilon(epsilon)
    if r == 0.0:
        return r, q
    gap = (math.expm1(eps) if eps < 700 else math.inf) * r
    gap = q - r if not math.isfinite(gap) else gap
    if q == r or not gap > 0:  # reports carry no information distinguishable in double precision
        raise ValueError(f"epsilon={epsilon!r} is too small to invert randomized response over k={k} labels (q == r)")
    return r, gap


def _rr_checked(out: np.ndarray, epsilon: float, k: int) -> np.ndarray:
    if not np.isfinite(out).all():
        raise ValueError(
            f"epsilon={epsilon!r} is too small to invert randomized response over k={k} labels: the debiased "
            "estimates overflow floating point"
        )
    return out


def rr_debias_counts(reported: np.ndarray, n: float, epsilon: float, k: int) -> np.ndarray:
    """Unbiased label counts from the counts of randomized-response reports (last axis: labels).

    ``E[N_k] = q n_k + r (n - n_k)`` for ``n`` reports, so ``(N_k - r n)/(q - r)`` is unbiased
    for the true count ``n_k``.  Post-processing: no privacy cost.
    """
    r, gap = _rr_gap(epsilon, k)
    with np.errstate(over="ignore", invalid="ignore"):
        out = (check_real_array(reported, "reported") - r * float(n)) / gap
    return _rr_checked(out, epsilon, k)


def rr_debias_sums(reported: np.ndarray, total: np.ndarray, epsilon: float, k: int) -> np.ndarray:
    """Unbiased per-label sums of values ``(..., K, d)`` from sums over the users who *reported* each label.

    Given the values, ``E[S_k^reported] = q S_k + r (S - S_k)`` with ``S`` (``total``, shape
    ``(..., d)``) the sum over all users, so ``(S_k^reported - r S)/(q - r)`` is unbiased for ``S_k``.
    """
    r, gap = _rr_gap(epsilon, k)
    tot = check_real_array(total, "total")
    with np.errstate(over="ignore", invalid="ignore"):
        out = (check_real_array(reported, "reported") - r * tot[..., None, :]) / gap
    return _rr_checked(out, epsilon, k)
