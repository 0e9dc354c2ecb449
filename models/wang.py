"""A PyMC model of what is public about a private population, for Wang et al.'s hybrid M-estimators.

Algorithm 2 of Wang et al. (2018) spends ``epsilon_2 + epsilon_3`` of the budget only to choose how
many public points to release.  This module chooses that size from public information alone and so
leaves the whole budget for the representation weights:

1. :class:`PublishedSummaries` holds what was published about the private dataset ``D``: its size,
   and optionally the covariate means and variances and the outcome rate.
2. :class:`WangPrivateModel` encodes the public records ``E = (X_E, y_E)`` and those summaries in a
   PyMC model of the private population (see *Model* below); :meth:`WangPrivateModel.fit` samples it.
3. :meth:`WangPosterior.sample_datasets` draws plausible private datasets ``(X, y)``.
4. :func:`select_subset_size` orders the public points by their expected representation weight
   under the model, runs Algorithm 1 with the *whole* budget on the weights for every candidate
   subset size on every simulated private dataset (fresh Laplace noise each time), and returns the
   size with the lowest expected prediction error, with a Monte Carlo standard error per size.

Privacy: every input of :func:`select_subset_size` is public (the public records, published
summaries, the candidate sizes, the contrast and the budget); the private dataset is never read.
The choice (and the ordering) is therefore a function of public information only and costs no
privacy budget; the only release that touches ``D`` is the final Algorithm 1 run, at the full
``epsilon`` (parallel to Algorithm 2's ``epsilon_1 + epsilon_2 + epsilon_3``).

Model
-----
Work in the public standardised coordinates ``z = (x - mean_E) / sd_E`` (per column, ``ddof=1``).

* Covariates: a private record is ``z = shift + exp(log_scale) * U`` per column, where ``U`` is a
  *smoothed bootstrap* draw of a standardised public row: ``U = (Z_E[i] + h e) / sqrt(1 + h^2)``
  with ``i`` uniform, ``e ~ N(0, I)`` and Silverman's bandwidth
  ``h = (4 / (p + 2))^(1/(p+4)) n_E^(-1/(p+4))``.  ``U`` keeps the public covariates' shape and
  correlations, has mean 0 and variance ~1, and does not copy public points exactly (exact copies
  would make every private point sit on a public point and flatter the hybrid estimator).
  Priors: ``shift_j ~ N(0, shift_sd)``, ``log_scale_j ~ N(0, log_scale_sd)``.
* Published covariate means (of the ``n`` private records): ``m_j ~ N(shift_j, exp(log_scale_j) /
  sqrt(n))`` on the standardised scale (the sampling distribution of a mean of ``n`` records).
* Published covariate variances (sample variances): ``v_j / sd_E_j^2 ~ N(s_j^2, s_j^2 sqrt((kappa -
  (n - 3) / (n - 1)) / n))`` with ``s_j = exp(log_scale_j)`` and ``kappa`` the kurtosis of ``U``
  (exact for the smoothed bootstrap: ``(kappa_E + 6 h^2 + 3 h^4) / (1 + h^2)^2``).
* Outcome: ``P(y = 1 | z) = sigmoid(theta_0 + z . theta_{1:})`` with ``theta = theta_public +
  coef_sd * delta``, ``delta ~ N(0, I)``.  The public records enter through the Laplace
  approximation of their logistic likelihood: ``theta_hat_E ~ MvNormal(theta_public, Sigma_E)``
  (``theta_hat_E`` the public fit, ``Sigma_E`` its inverse Fisher information; prior
  ``theta_public ~ N(0, 10)``, the same weak prior is used as a ridge in the public fit).
* Published outcome rate: ``r ~ N(mean_k sigmoid(theta_0 + z_k . theta_{1:}), sqrt(r (1 - r)
  (1 / n + 1 / R)))``, the average over ``R`` fixed smoothed-bootstrap covariate draws ``z_k`` (a
  Monte Carlo version of the population rate, its error folded into the standard deviation).

Without summaries the posterior is the prior: private covariates are the public ones up to a
shift of about ``shift_sd`` public standard deviations and a scale factor of about
``exp(+-log_scale_sd)``, and the private coefficients differ from the public fit by about
``coef_sd``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import optimize, special

from hybridpriv.privacy import check_epsilon, check_integer, check_positive, check_real_array

from ._sampling import chain_seeds

__all__ = [
    "PUBLIC_FIT_PRIOR_SD",
    "PublishedSummaries",
    "SubsetChoice",
    "WangPosterior",
    "WangPrivateModel",
    "logistic_fit",
    "noisy_weights",
    "select_subset_size",
    "smoothing_bandwidth",
]

#: Standard deviation of the weak Normal prior on the public logistic coefficients (standardised
#: covariates); also the ridge of the public fit, so perfectly separable public data stay finite.
PUBLIC_FIT_PRIOR_SD = 10.0


def _check_matrix(values: object, name: str) -> np.ndarray:
    arr = check_real_array(values, name)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array (records x covariates), got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def _check_outcome(values: object, name: str, n: int) -> np.ndarray:
    arr = check_real_array(values, name).ravel() if np.ndim(values) else None
    if arr is None or arr.shape[0] != n:
        raise ValueError(f"{name} must be a 1-D array of {n} outcomes, got shape {np.shape(values)}")
    if not np.isin(arr, (0.0, 1.0)).all():
        bad = arr[~np.isin(arr, (0.0, 1.0))][0]
        raise ValueError(f"{name} must hold 0/1 outcomes, got {bad!r}")
    return arr


def smoothing_bandwidth(n: int, p: int) -> float:
    """Silverman's rule-of-thumb bandwidth (in standard deviations) for ``n`` records in ``p`` dimensions."""
    return float((4.0 / (p + 2)) ** (1.0 / (p + 4)) * n ** (-1.0 / (p + 4)))


def logistic_fit(Z: np.ndarray, y: np.ndarray, prior_sd: float = PUBLIC_FIT_PRIOR_SD) -> tuple[np.ndarray, np.ndarray]:
    """MAP logistic fit with intercept and a ``N(0, prior_sd^2)`` ridge; returns ``(theta, covariance)``.

    ``theta = (intercept, coefficients)``; ``covariance`` is the inverse of the Hessian of the
    negative log posterior at the fit (the Laplace approximation).  Minimised with SciPy (L-BFGS-B).
    """
    A = np.column_stack([np.ones(Z.shape[0]), Z])
    prec = 1.0 / prior_sd**2

    def f(t: np.ndarray) -> tuple[float, np.ndarray]:
        eta = A @ t
        nll = float(np.sum(np.logaddexp(0.0, eta) - y * eta)) + 0.5 * prec * float(t @ t)
        grad = A.T @ (special.expit(eta) - y) + prec * t
        return nll, grad

    res = optimize.minimize(f, np.zeros(A.shape[1]), jac=True, method="L-BFGS-B", options={"maxiter": 1000})
    theta = res.x
    mu = special.expit(A @ theta)
    hess = (A * (mu * (1 - mu))[:, None]).T @ A + prec * np.eye(A.shape[1])
    cov = np.linalg.inv(hess)
    return theta, 0.5 * (cov + cov.T)


@dataclass(frozen=True)
class PublishedSummaries:
    """What was published about the private dataset (all on the original covariate scale).

    Parameters
    ----------
    n
        Number of private records (an integer >= 2).
    covariate_mean
        Sample mean of every covariate, length ``p``; ``None`` if not published.
    covariate_variance
        Sample variance (``ddof=1``) of every covariate, each > 0; ``None`` if not published.
    outcome_rate
        Share of private records with ``y = 1``, strictly inside ``(0, 1)``; ``None`` if not published.
    """

    n: int
    covariate_mean: Sequence[float] | np.ndarray | None = None
    covariate_variance: Sequence[float] | np.ndarray | None = None
    outcome_rate: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", check_integer(self.n, "n", 2))
        if self.covariate_mean is not None:
            m = check_real_array(self.covariate_mean, "covariate_mean").ravel().copy()
            if m.size == 0 or not np.isfinite(m).all():
                raise ValueError(f"covariate_mean must be a non-empty array of finite numbers, got {m!r}")
            m.setflags(write=False)
            object.__setattr__(self, "covariate_mean", m)
        if self.covariate_variance is not None:
            v = check_real_array(self.covariate_variance, "covariate_variance").ravel().copy()
            if v.size == 0 or not np.isfinite(v).all() or (v <= 0).any():
                bad = v[~(np.isfinite(v) & (v > 0))][0] if v.size else v
                raise ValueError(f"covariate_variance must hold finite numbers > 0, got {bad!r}")
            v.setflags(write=False)
            object.__setattr__(self, "covariate_variance", v)
        if self.outcome_rate is not None:
            r = self.outcome_rate
            if isinstance(r, bool) or not isinstance(r, (int, float, np.integer, np.floating)):
                raise TypeError(f"outcome_rate must be a real number, got {r!r}")
            if not 0.0 < float(r) < 1.0:
                raise ValueError(
                    f"outcome_rate must be strictly between 0 and 1 (a rate of 0 or 1 leaves no logistic model), got {r!r}"
                )
            object.__setattr__(self, "outcome_rate", float(r))
        if self.covariate_mean is not None and self.covariate_variance is not None:
            if self.covariate_mean.size != self.covariate_variance.size:
                raise ValueError(
                    f"covariate_mean has {self.covariate_mean.size} entries but covariate_variance has "
                    f"{self.covariate_variance.size}"
                )

    @classmethod
    def from_data(cls, X: np.ndarray, y: np.ndarray | None = None) -> PublishedSummaries:
        """The summaries a data holder would publish about ``(X, y)`` (for simulations and tests)."""
        X = _check_matrix(X, "X")
        rate = None if y is None else float(np.mean(_check_outcome(y, "y", X.shape[0])))
        return cls(X.shape[0], X.mean(axis=0), X.var(axis=0, ddof=1), rate)


class WangPrivateModel:
    """A PyMC model of the private population from public records and published summaries.

    Parameters
    ----------
    public_X
        Public covariates, ``(n_E, p)`` (a 1-D array is one covariate).  Continuous covariates.
    public_y
        Public 0/1 outcomes, length ``n_E``.
    summaries
        :class:`PublishedSummaries` of the private dataset (its ``n`` is the size of the simulated
        private datasets).
    shift_sd
        Prior sd of the private covariate means, in public standard deviations from the public means.
    log_scale_sd
        Prior sd of the log ratio of private to public covariate standard deviations.
    coef_sd
        Prior sd of the difference between private and public logistic coefficients (standardised
        covariates, intercept included).
    rate_draws
        ``R``, the number of fixed smoothed-bootstrap covariate draws averaged for the model's
        outcome rate.
    seed
        Seed of those draws (the model is deterministic given it).

    Raises
    ------
    ValueError, TypeError
        Inconsistent or malformed knowledge, naming the argument: a summary of the wrong length, a
        constant public covariate, a public outcome that is all 0 or all 1, fewer than 3 public records.
    """

    def __init__(
        self,
        public_X: Any,
        public_y: Any,
        summaries: PublishedSummaries,
        *,
        shift_sd: float = 1.0,
        log_scale_sd: float = 0.5,
        coef_sd: float = 1.0,
        rate_draws: int = 1000,
        seed: int = 0,
    ) -> None:
        X = _check_matrix(public_X, "public_X")
        if X.shape[0] < 3:
            raise ValueError(f"public_X must have at least 3 records, got {X.shape[0]}")
        y = _check_outcome(public_y, "public_y", X.shape[0])
        if y.min() == y.max():
            raise ValueError(f"public_y must contain both outcomes 0 and 1, got only {y[0]:g}")
        if not isinstance(summaries, PublishedSummaries):
            raise TypeError(f"summaries must be a PublishedSummaries, got {summaries!r}")
        n_e, p = X.shape
        for name in ("covariate_mean", "covariate_variance"):
            v = getattr(summaries, name)
            if v is not None and v.size != p:
                raise ValueError(f"summaries.{name} has {v.size} entries but public_X has {p} covariates")
        self.shift_sd = check_positive(shift_sd, "shift_sd")
        self.log_scale_sd = check_positive(log_scale_sd, "log_scale_sd")
        self.coef_sd = check_positive(coef_sd, "coef_sd")
        self.rate_draws = check_integer(rate_draws, "rate_draws", 10)
        self.seed = check_integer(seed, "seed", 0)
        self.public_X, self.public_y, self.summaries = X, y, summaries
        self.p = p
        self.center = X.mean(axis=0)
        self.sd = X.std(axis=0, ddof=1)
        if (self.sd <= 0).any():
            j = int(np.argmax(self.sd <= 0))
            raise ValueError(f"public_X column {j} is constant; the model needs a public spread for every covariate")
        self.Z = (X - self.center) / self.sd
        self.bandwidth = smoothing_bandwidth(n_e, p)
        h2 = self.bandwidth**2
        kurt_e = np.mean(self.Z**4, axis=0) / np.mean(self.Z**2, axis=0) ** 2
        #: kurtosis of the smoothed bootstrap distribution U, per covariate
        self.kurtosis = (kurt_e + 6 * h2 + 3 * h2**2) / (1 + h2) ** 2
        self.theta_public_hat, self.theta_public_cov = logistic_fit(self.Z, y)
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, 7]))
        self.rate_U = self._smoothed(rng, self.rate_draws)

    def _smoothed(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` smoothed-bootstrap draws ``U`` (standardised public rows plus kernel noise)."""
        idx = rng.integers(0, self.Z.shape[0], size=size)
        noise = rng.standard_normal((size, self.p))
        return (self.Z[idx] + self.bandwidth * noise) / math.sqrt(1.0 + self.bandwidth**2)

    def build(self) -> pm.Model:
        """The PyMC model (free variables ``shift``, ``log_scale``, ``theta_public``, ``delta``)."""
        s = self.summaries
        n = s.n
        names = [f"x{j}" for j in range(self.p)]
        coords = {"covariate": names, "coef": ["intercept", *names]}
        with pm.Model(coords=coords) as model:
            shift = pm.Normal("shift", 0.0, self.shift_sd, dims="covariate")
            log_scale = pm.Normal("log_scale", 0.0, self.log_scale_sd, dims="covariate")
            scale = pt.exp(log_scale)
            if s.covariate_mean is not None:
                pm.Normal(
                    "published_mean",
                    mu=shift,
                    sigma=scale / math.sqrt(n),
                    observed=(s.covariate_mean - self.center) / self.sd,
                    dims="covariate",
                )
            if s.covariate_variance is not None:
                rel = np.sqrt(np.maximum(self.kurtosis - (n - 3) / (n - 1), 1e-6) / n)
                pm.Normal(
                    "published_variance",
                    mu=scale**2,
                    sigma=scale**2 * rel,
                    observed=s.covariate_variance / self.sd**2,
                    dims="covariate",
                )
            theta_public = pm.Normal("theta_public", 0.0, PUBLIC_FIT_PRIOR_SD, dims="coef")
            chol = np.linalg.cholesky(self.theta_public_cov)
            pm.MvNormal("public_fit", mu=theta_public, chol=chol, observed=self.theta_public_hat, dims="coef")
            delta = pm.Normal("delta", 0.0, 1.0, dims="coef")
            theta = pm.Deterministic("theta", theta_public + self.coef_sd * delta, dims="coef")
            if s.outcome_rate is not None:
                r = s.outcome_rate
                z = shift[None, :] + scale[None, :] * self.rate_U
                rate = pm.Deterministic("rate", pt.mean(pm.math.sigmoid(theta[0] + pt.dot(z, theta[1:]))))
                sd = math.sqrt(r * (1 - r) * (1.0 / n + 1.0 / self.rate_draws))
                pm.Normal("published_rate", mu=rate, sigma=sd, observed=r)
        return model

    def fit(
        self,
        draws: int = 500,
        tune: int = 500,
        chains: int = 2,
        seed: int = 0,
        progressbar: bool = False,
        **sample_kwargs: Any,
    ) -> WangPosterior:
        """Sample the posterior with ``pm.sample`` (NUTS); one seed per chain from ``SeedSequence(seed)``."""
        for name, v, lo in (("draws", draws, 1), ("tune", tune, 0), ("chains", chains, 1), ("seed", seed, 0)):
            check_integer(v, name, lo)
        random_seed = chain_seeds(seed, chains, sample_kwargs)
        model = self.build()
        sample_kwargs.setdefault("compute_convergence_checks", False)
        with model:
            idata = pm.sample(
                draws=int(draws), tune=int(tune), chains=int(chains), random_seed=random_seed,
                progressbar=progressbar, **sample_kwargs,
            )
        return WangPosterior(self, model, idata)


class WangPosterior:
    """A fitted :class:`WangPrivateModel`: draws plausible private datasets.

    Attributes
    ----------
    spec, model, idata
        The model specification, the ``pm.Model`` and the ``DataTree`` from ``pm.sample``.
    """

    def __init__(self, spec: WangPrivateModel, model: pm.Model, idata: Any) -> None:
        self.spec, self.model, self.idata = spec, model, idata
        post = idata["posterior"]
        stack = lambda name: np.asarray(post[name].transpose("chain", "draw", ...).values, dtype=float)  # noqa: E731
        c, d = int(post.sizes["chain"]), int(post.sizes["draw"])
        self.shape = (c, d)
        self.shift = stack("shift").reshape(c * d, -1)
        self.log_scale = stack("log_scale").reshape(c * d, -1)
        self.theta = stack("theta").reshape(c * d, -1)

    def __repr__(self) -> str:
        return f"WangPosterior(p={self.spec.p}, n={self.spec.summaries.n}, shape={self.shape})"

    @property
    def public(self) -> tuple[np.ndarray, np.ndarray]:
        """The public records ``(X_E, y_E)`` the model was built from."""
        return self.spec.public_X, self.spec.public_y

    def sample_datasets(self, count: int, seed: int = 0, size: int | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``count`` simulated private datasets ``(X, y)`` of ``size`` records (default: ``summaries.n``).

        Dataset ``k`` uses posterior draw number ``k * total // count`` (evenly spread over the
        chains and draws) and a generator from ``SeedSequence(seed).spawn(count)[k]``, so the same
        seed gives the same datasets.
        """
        count = check_integer(count, "count", 1)
        seed = check_integer(seed, "seed", 0)
        size = self.spec.summaries.n if size is None else check_integer(size, "size", 1)
        total = self.shift.shape[0]
        spec = self.spec
        for k, ss in enumerate(np.random.SeedSequence(seed).spawn(count)):
            i = k * total // count
            rng = np.random.default_rng(ss)
            z = self.shift[i] + np.exp(self.log_scale[i]) * spec._smoothed(rng, size)
            th = self.theta[i]
            y = (rng.random(size) < special.expit(th[0] + z @ th[1:])).astype(float)
            yield spec.center + spec.sd * z, y

    def predictive_summaries(self, count: int, seed: int = 0) -> dict[str, np.ndarray]:
        """Summaries of ``count`` simulated datasets: ``mean`` and ``variance`` ``(count, p)``, ``rate`` ``(count,)``."""
        means, variances, rates = [], [], []
        for X, y in self.sample_datasets(count, seed):
            means.append(X.mean(axis=0))
            variances.append(X.var(axis=0, ddof=1))
            rates.append(y.mean())
        return {"mean": np.array(means), "variance": np.array(variances), "rate": np.array(rates)}

    def summary(self, **kwargs: Any) -> Any:
        """ArviZ summary of ``shift``, ``log_scale`` and ``theta`` (``round_to='none'``)."""
        import arviz_stats

        kwargs.setdefault("round_to", "none")
        return arviz_stats.summary(self.idata, var_names=["shift", "log_scale", "theta"], **kwargs)


# --------------------------------------------------------------------------------------
# Budget-free subset selection
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SubsetChoice:
    """Result of :func:`select_subset_size`.

    Attributes
    ----------
    size
        The candidate size with the lowest expected prediction error.
    subset_sizes
        The candidate sizes, in the order given.
    expected_error, mcse
        Expected prediction error per size and its Monte Carlo standard error (over simulated
        datasets: the per-dataset means over noise draws are treated as independent replicates).
    order
        Indices of the public points, most representative first (by expected weight); the subset
        of size ``n`` is ``order[:n]``.
    expected_weight
        The expected noise-free representation weight of every public point under the model.
    errors
        Raw errors, ``(datasets, noise_draws, sizes)``.
    epsilon
        The budget assumed for the weights (all of it; the selection itself spends none).
    public_only_error, public_only_mcse
        Expected prediction error of the unweighted public fit (no budget at all) on the same
        simulated datasets, and its standard error: if it is not clearly above the best size's,
        releasing the public-only fit is the better deal.
    counts
        Noise-free counts of every evaluation dataset on every candidate subset (pass them back
        as ``counts=`` to re-run with another ``epsilon`` without the KD-tree queries).
    privacy_cost
        0: the selection reads public information only.
    """

    size: int
    subset_sizes: tuple[int, ...]
    expected_error: np.ndarray
    mcse: np.ndarray
    order: np.ndarray
    expected_weight: np.ndarray
    errors: np.ndarray
    epsilon: float
    public_only_error: float = float("nan")
    public_only_mcse: float = float("nan")
    counts: list = field(default_factory=list, repr=False)
    #: Budget spent by the selection: none (only public information is used).
    privacy_cost: float = 0.0


def _as_points(public: Any, contrast: Any) -> np.ndarray:
    """Public records as points: an ``(X, y)`` pair becomes ``[X, y]`` (label last)."""
    if isinstance(public, tuple) and len(public) == 2:
        X = _check_matrix(public[0], "public[0]")
        y = _check_outcome(public[1], "public[1]", X.shape[0])
        return np.column_stack([X, y])
    return _check_matrix(public, "public")


def noisy_weights(counts: np.ndarray, n_private: int, epsilon: float, rng: np.random.Generator | None,
                  truncate: bool = True, size: int | None = None) -> np.ndarray:
    """Definitions 5-6 from precomputed counts: ``max((counts + Laplace(2 / epsilon)) / n_D, 0)``.

    :func:`hybridpriv.estimators.wang.weights_from_counts` (the noise step of
    :func:`~hybridpriv.estimators.wang.representation_weights`, same draws in the same order);
    used to add fresh noise many times to counts computed once.
    """
    from hybridpriv.estimators.wang import weights_from_counts

    return weights_from_counts(counts, n_private, epsilon, rng, truncate, size)


def _fit_or_uniform(points: np.ndarray, weights: np.ndarray, contrast: Any) -> np.ndarray:
    """``m_estimate``; all-zero truncated weights fall back to equal weights (the public-only fit),
    as ``algorithm2(on_zero_weights="uniform")`` does."""
    from hybridpriv.estimators.wang import m_estimate

    if not weights.sum() > 0:
        weights = np.ones(points.shape[0])
    return m_estimate(points, weights, contrast)


def select_subset_size(
    posterior: WangPosterior,
    public: Any,
    contrast: Any,
    subset_sizes: Sequence[int],
    epsilon: float,
    *,
    datasets: int = 20,
    noise_draws: int = 4,
    order_datasets: int | None = None,
    seed: int = 0,
    truncate: bool = True,
    categorical: Sequence[int] | None = None,
    criterion: Callable[[np.ndarray, np.ndarray], float] | None = None,
    counts: Sequence[np.ndarray] | None = None,
    expected_weight: np.ndarray | None = None,
) -> SubsetChoice:
    """Choose how many public points to release, from public information only (no privacy cost).

    1. ``order_datasets`` simulated private datasets (default ``datasets``) give every public point
       its *expected* noise-free representation weight; the public points are ordered by it,
       decreasing (ties: lower index first).  The candidate subset of size ``n`` is the first ``n``.
    2. On ``datasets`` *other* simulated private datasets ``D*``, for every size and ``noise_draws``
       fresh noise draws: Algorithm 1 with the whole ``epsilon`` on the subset's weights (counts of
       ``D*`` re-assigned within the subset), and its prediction error against the non-private fit
       on ``D*`` (:func:`hybridpriv.estimators.wang.prediction_error`, the Section 5.1 criterion).
    3. The size with the lowest mean error; ``mcse`` is the standard error of that mean over the
       simulated datasets (per-dataset means over noise draws are the independent replicates).

    Parameters
    ----------
    posterior
        A :class:`WangPosterior` (its simulated datasets have ``summaries.n`` records).
    public
        The public records: ``(X_E, y_E)`` or an ``(n_E, p + 1)`` array with the 0/1 label last.
        Must be the records the posterior was built from (same shape).
    contrast
        ``"logistic"`` or a :class:`~hybridpriv.estimators.wang.LogisticContrast` (label last); with
        another contrast pass ``criterion``.
    subset_sizes
        Strictly increasing candidate sizes in ``[1, n_E]``.
    epsilon
        The budget that will be spent on the weights (all of it).
    datasets, noise_draws, order_datasets, seed
        Monte Carlo sizes and the seed (``SeedSequence(seed)`` spawns the ordering datasets, the
        evaluation datasets and the noise).
    truncate
        Truncated weights (Definition 6).
    categorical
        Categorical columns for the rescaling.
    criterion
        ``criterion(theta, private_points) -> float``; default the prediction error.  The simulated
        private points are ``[X, y]`` (label last), like the public ones.
    counts
        Precomputed noise-free counts of the evaluation datasets on every candidate subset (from
        an earlier call's ``SubsetChoice.counts`` with the same seed, sizes and datasets): skips
        the KD-tree queries when only ``epsilon`` changes.
    expected_weight
        Precomputed expected weights of the public points (an earlier call's
        ``SubsetChoice.expected_weight`` with the same seed and ``order_datasets``): skips the
        ordering step's KD-tree queries when only ``epsilon`` changes.

    Returns
    -------
    SubsetChoice

    Notes
    -----
    Privacy: the inputs are the posterior (built from public records and published summaries),
    the public records, the sizes, the contrast and ``epsilon``.  The private dataset is not an
    input, so the returned size and ordering are public information and the selection costs no
    budget; releasing Algorithm 1 on the chosen subset at ``epsilon`` is then ``epsilon``-DP in
    total (versus ``epsilon_1 + epsilon_2 + epsilon_3`` for Algorithm 2).
    """
    from hybridpriv.estimators.wang import (
        LogisticContrast,
        as_contrast,
        m_estimate,
        prediction_error,
        private_fit,
        representation_counts,
        rescale,
    )

    if not isinstance(posterior, WangPosterior):
        raise TypeError(f"posterior must be a WangPosterior, got {type(posterior).__name__}")
    c = as_contrast(contrast)
    E = c.check_points(_as_points(public, c))
    n_e = E.shape[0]
    if isinstance(c, LogisticContrast):
        spec = posterior.spec
        if E.shape != (spec.public_X.shape[0], spec.p + 1):
            raise ValueError(
                f"public must be the model's public records: shape {(spec.public_X.shape[0], spec.p + 1)}, got {E.shape}"
            )
    elif criterion is None:
        raise ValueError(f"the default criterion is for the logistic contrast, got {c.name!r}; pass criterion=")
    sizes = np.asarray(subset_sizes)
    if sizes.ndim != 1 or sizes.size == 0 or sizes.dtype.kind not in "iu":
        raise ValueError(f"subset_sizes must be a non-empty 1-D sequence of integers, got {subset_sizes!r}")
    if sizes.min() < 1 or sizes.max() > n_e or np.any(np.diff(sizes) <= 0):
        raise ValueError(f"subset_sizes must be strictly increasing in [1, n_E={n_e}], got {sizes.tolist()}")
    eps = check_epsilon(epsilon)
    datasets = check_integer(datasets, "datasets", 2)
    noise_draws = check_integer(noise_draws, "noise_draws", 1)
    order_datasets = datasets if order_datasets is None else check_integer(order_datasets, "order_datasets", 1)
    seed = check_integer(seed, "seed", 0)
    ss_order, ss_eval, ss_noise = np.random.SeedSequence(seed).spawn(3)
    order_seed = int(ss_order.generate_state(1)[0])
    eval_seed = int(ss_eval.generate_state(1)[0])
    rng = np.random.default_rng(ss_noise)

    def to_points(X: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.column_stack([X, y])

    # 1. ordering by expected noise-free weights (public: simulated data only)
    if expected_weight is None:
        expected = np.zeros(n_e)
        for X, y in posterior.sample_datasets(order_datasets, order_seed):
            d01, e01, _ = rescale(to_points(X, y), E, categorical)
            expected += representation_counts(d01, e01) / X.shape[0]
        expected /= order_datasets
    else:
        expected = check_real_array(expected_weight, "expected_weight")
        if expected.shape != (n_e,) or not np.isfinite(expected).all():
            raise ValueError(
                f"expected_weight must hold {n_e} finite numbers (one per public point), got shape {expected.shape}"
            )
    order = np.argsort(-expected, kind="stable")

    # 2. expected criterion per size
    if counts is not None and len(counts) != datasets:
        raise ValueError(f"counts must hold one entry per evaluation dataset ({datasets}), got {len(counts)}")
    all_counts: list[list[np.ndarray]] = []
    errors = np.empty((datasets, noise_draws, sizes.size))
    pub_errors = np.empty(datasets)
    theta_pub = m_estimate(E, np.ones(n_e), c)
    for j, (X, y) in enumerate(posterior.sample_datasets(datasets, eval_seed)):
        D = to_points(X, y)
        d01, e01, _ = rescale(D, E, categorical)
        if criterion is None:
            ref = private_fit(D, c)
            crit = lambda th: prediction_error(th, X, reference=ref, contrast=c)  # noqa: E731
        else:
            crit = lambda th: float(criterion(th, D))  # noqa: E731
        pub_errors[j] = crit(theta_pub)
        cj = []
        for i, n in enumerate(sizes):  # candidate sizes, not records
            idx = order[:n]
            cnt = representation_counts(d01, e01[idx]) if counts is None else np.asarray(counts[j][i], dtype=float)
            cj.append(cnt)
            w = noisy_weights(cnt, X.shape[0], eps, rng, truncate, size=noise_draws)
            for r in range(noise_draws):
                errors[j, r, i] = crit(_fit_or_uniform(E[idx], w[r], c))
        all_counts.append(cj)
    per_dataset = errors.mean(axis=1)
    mean = per_dataset.mean(axis=0)
    mcse = per_dataset.std(axis=0, ddof=1) / math.sqrt(datasets)
    best = int(np.argmin(mean))
    return SubsetChoice(
        size=int(sizes[best]),
        subset_sizes=tuple(int(s) for s in sizes),
        expected_error=mean,
        mcse=mcse,
        order=order,
        expected_weight=expected,
        errors=errors,
        epsilon=eps,
        public_only_error=float(pub_errors.mean()),
        public_only_mcse=float(pub_errors.std(ddof=1) / math.sqrt(datasets)),
        counts=all_counts,
    )
