"""A PyMC model of what is public about a private population, for Wang et al.'s hybrid M-estimators.

Algorithm 2 of Wang et al. (2018) spends ``epsilon_2 + epsilon_3`` of the budget only to choose how
many public points to release.  This module chooses that size from public information alone and so
leaves the whole budget for the representation weights:

1. :class:`PublishedSummaries` holds what was published about the private dataset ``D``: its size,
   and optionally the covariate means and variances and the outcome rate.
2. :class:`WangPrivateModel` (a :class:`~hybridpriv.core.model.KnowledgeModel`) encodes the public
   records ``E = (X_E, y_E)`` and those summaries in a PyMC model of the private population (see
   *Model* below); its one ``fit()`` samples it and checks convergence.
3. :class:`WangPosterior` is a dataset source: ``generate(chain, draw, rng)`` returns a
   :class:`~hybridpriv.families.public_private.wang.HybridDesign` -- a simulated private dataset beside the fixed
   public records -- so :func:`hybridpriv.engine.evaluate.evaluate` runs any Wang mechanism on it.
4. :func:`weight_order` orders the public points by their expected representation weight under the
   model (a public computation, no budget); :func:`hybridpriv.families.public_private.subset.select_subset_size` (with the family: a model never runs
   the engine) evaluates
   :class:`~hybridpriv.families.public_private.wang.Algorithm1` with the *whole* budget at every candidate size of
   that order on simulated datasets (``evaluate``, task
   :class:`~hybridpriv.families.public_private.wang.PredictionError``) and lets :func:`hybridpriv.engine.decision.decide`
   choose the size with the lowest expected prediction error.

Privacy: every input of ``select_subset_size`` is public (the posterior, built from the public
records and published summaries, the candidate sizes, the contrast and the budget); the private
dataset is never read.  The choice (and the ordering) is therefore a function of public information
only and costs no privacy budget; the only release that touches ``D`` is the final Algorithm 1 run,
at the full ``epsilon`` (parallel to Algorithm 2's ``epsilon_1 + epsilon_2 + epsilon_3``).

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
* Outcome: ``P(y = 1 | z) = sigmoid(theta_0 + z . theta_{1:})``; with prior probability ``shared_prior``
  the *same law* as the public records, ``theta = theta_public`` (only the covariates shift), otherwise
  ``theta = theta_public + coef_sd * delta``, ``delta ~ N(0, I)``.  The indicator is marginalised out of
  the published rate's likelihood and drawn afterwards from its posterior odds (:func:`resolve_same_law`).
  The public records enter through the Laplace
  approximation of their logistic likelihood: ``theta_hat_E ~ MvNormal(theta_public, Sigma_E)``
  (``theta_hat_E`` the public fit, ``Sigma_E`` its inverse Fisher information; prior
  ``theta_public ~ N(0, 10)``, the same weak prior is used as a ridge in the public fit).
* Published outcome rate: ``r ~ N(mean_k sigmoid(theta_0 + z_k . theta_{1:}), sqrt(r (1 - r)
  (1 / n + 1 / R)))``, the average over ``R`` fixed smoothed-bootstrap covariate draws ``z_k`` (a
  Monte Carlo version of the population rate, its error folded into the standard deviation).

Without summaries the posterior is the prior: private covariates are the public ones up to a
shift of about ``shift_sd`` public standard deviations and a scale factor of about
``exp(+-log_scale_sd)``, and the private coefficients are the public ones (probability ``shared_prior``)
or differ from them by about ``coef_sd``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import optimize, special

from ....core.privacy import check_finite, check_integer, check_positive, check_real_array
from ....core.random import rng as stream_rng
from ....core.model import KnowledgeModel, Posterior
from .cross_moments import CrossMoments, cross_loglik, cross_moment_statistic

__all__ = [
    "PUBLIC_FIT_PRIOR_SD",
    "SHARED_PRIOR",
    "PublishedSummaries",
    "WangPosterior",
    "WangPrivateModel",
    "fit_kept",
    "logistic_fit",
    "resolve_same_law",
    "smoothing_bandwidth",
    "weight_order",
]

#: Prior probability that the private cohort's outcome law is the public sample's (``WangPrivateModel.shared_prior``):
#: undecided, so that the published outcome rate decides.
SHARED_PRIOR = 0.5

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
    cross_moments
        An earlier noisy release of the cross-moments of the outcome with the covariates
        (:class:`~hybridpriv.families.public_private.wang.cross_moments.CrossMoments`, on the model's covariate
        scale); ``None`` if there was none.
    """

    n: int
    covariate_mean: Sequence[float] | np.ndarray | None = None
    covariate_variance: Sequence[float] | np.ndarray | None = None
    outcome_rate: float | None = None
    cross_moments: CrossMoments | None = None

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
        if self.cross_moments is not None and not isinstance(self.cross_moments, CrossMoments):
            raise TypeError(f"cross_moments must be a CrossMoments, got {self.cross_moments!r:.80}")
        if self.covariate_mean is not None and self.covariate_variance is not None:
            if self.covariate_mean.size != self.covariate_variance.size:
                raise ValueError(
                    f"covariate_mean has {self.covariate_mean.size} entries but covariate_variance has "
                    f"{self.covariate_variance.size}"
                )

    def describe_params(self) -> dict[str, Any]:
        """What provenance records (:func:`hybridpriv.core.params.describe`): the fields, ``cross_moments`` only when
        there is one (so the summaries of a cohort without it keep the fingerprint they had before it existed)."""
        fields = {f: getattr(self, f) for f in ("n", "covariate_mean", "covariate_variance", "outcome_rate")}
        if self.cross_moments is not None:
            fields["cross_moments"] = self.cross_moments
        return {"class": f"{type(self).__module__}.{type(self).__qualname__}", "fields": fields}

    @classmethod
    def from_data(cls, X: np.ndarray, y: np.ndarray | None = None) -> PublishedSummaries:
        """The summaries a data holder would publish about ``(X, y)`` (for simulations and tests)."""
        X = _check_matrix(X, "X")
        rate = None if y is None else float(np.mean(_check_outcome(y, "y", X.shape[0])))
        return cls(X.shape[0], X.mean(axis=0), X.var(axis=0, ddof=1), rate)


def resolve_same_law(idata: Any, seed: int) -> Any:
    """The draws of a mixture model (``0 < shared_prior < 1``) with its indicator drawn.

    Each draw's indicator ``same_law`` is Bernoulli(``p_same = sigmoid(same_logodds)``), the posterior probability
    that the private outcome law is the public sample's given the draw's parameters (the likelihood marginalised
    it out), with uniforms of stream ``("same-law",)`` of ``seed`` (the fit's).  A ``same_law`` draw's ``theta`` is
    its ``theta_public``; ``theta_differ`` keeps every draw's ``theta_public + coef_sd * delta``.
    """
    import xarray as xr

    from ....core.model import draw_indicator

    post = idata["posterior"].to_dataset()
    p_same, is_same = draw_indicator(post["same_logodds"].transpose("chain", "draw"), stream_rng(seed, "same-law"))
    out = post.assign(theta_differ=post["theta"], theta=xr.where(is_same, post["theta_public"], post["theta"]),
                      same_law=is_same.astype(float), p_same=p_same)
    tree = idata.copy()
    tree["posterior"] = xr.DataTree(out)
    return tree


class WangPosterior(Posterior):
    """A fitted :class:`WangPrivateModel`: a source of ``"public-private"`` datasets.

    ``generate(chain, draw, rng)`` simulates ``summaries.n`` private records ``(X, y)`` from
    posterior draw ``(chain, draw)`` and returns them beside the model's public records as a
    :class:`~hybridpriv.families.public_private.wang.HybridDesign` (columns ``x0 .. x{p-1}, y``, outcome last).

    Attributes
    ----------
    spec, idata
        The model specification and the ``DataTree`` from ``pm.sample``.
    shift, log_scale, theta
        The draws, ``(chains * draws, ...)`` (chain-major).
    """

    data_kind = "public-private"
    convergence_vars = ("shift", "log_scale", "theta")

    def __init__(self, spec: WangPrivateModel, idata: Any, seed: int = 0) -> None:
        if "same_logodds" in idata["posterior"].data_vars and "same_law" not in idata["posterior"].data_vars:
            idata = resolve_same_law(idata, seed)
        if "same_law" in idata["posterior"].data_vars:  # the mixture's indicator is checked too, fresh or read back
            self.convergence_vars = (*type(self).convergence_vars, "same_law")
        super().__init__(spec, idata, seed)
        self.spec = spec
        post = idata["posterior"]
        c, d = self.shape
        stack = lambda name: np.asarray(post[name].transpose("chain", "draw", ...).values, dtype=float)  # noqa: E731
        self.shift = stack("shift").reshape(c * d, -1)
        self.log_scale = stack("log_scale").reshape(c * d, -1)
        self.theta = stack("theta").reshape(c * d, -1)
        #: Per draw (chain-major), with ``0 < shared_prior < 1`` (else ``None``): the posterior probability that the
        #: outcome law is the public sample's given the draw's parameters, and the indicator drawn from it
        #: (:func:`resolve_same_law`).
        self.p_same = stack("p_same").reshape(c * d) if "p_same" in post.data_vars else None
        self.same_law = stack("same_law").reshape(c * d) > 0 if "same_law" in post.data_vars else None
        points = np.column_stack([spec.public_X, spec.public_y])
        points.flags.writeable = False
        self._public_points = points
        self._columns = (*(f"x{j}" for j in range(spec.p)), "y")

    def branches(self) -> list[Any]:
        """With the mixture (``0 < shared_prior < 1``): whether the private outcome law is the public sample's."""
        if self.same_law is None:
            return []
        from ....core.assumptions import Branch

        return [Branch("same-law", "the private outcome depends on the covariates as the public one does",
                       "the private outcome depends on the covariates otherwise", self.same_law.reshape(self.shape),
                       advice="if you know whether it does, say so: model.shared_prior = 1 if it does, 0 if not")]

    def __repr__(self) -> str:
        return f"WangPosterior(p={self.spec.p}, n={self.spec.summaries.n}, shape={self.shape})"

    @property
    def public(self) -> tuple[np.ndarray, np.ndarray]:
        """The public records ``(X_E, y_E)`` the model was built from."""
        return self.spec.public_X, self.spec.public_y

    def simulate(self, chain: int, draw: int, rng: np.random.Generator, size: int | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
        """``size`` private records ``(X, y)`` (default ``summaries.n``) from posterior draw ``(chain, draw)``."""
        c, d = self._check_index(chain, draw)
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {rng!r}")
        size = self.spec.summaries.n if size is None else check_integer(size, "size", 1)
        i = c * self.shape[1] + d
        spec = self.spec
        z = self.shift[i] + np.exp(self.log_scale[i]) * spec._smoothed(rng, size)
        th = self.theta[i]
        y = (rng.random(size) < special.expit(th[0] + z @ th[1:])).astype(float)
        return spec.center + spec.sd * z, y

    def generate(self, chain: int, draw: int, rng: np.random.Generator) -> Any:
        """The simulated private dataset of ``(chain, draw)`` beside the public records (a ``HybridDesign``)."""
        from . import HybridDesign

        X, y = self.simulate(chain, draw, rng)
        return HybridDesign(np.column_stack([X, y]), self._public_points, columns=self._columns, label="y")

    def predictive_checks(self, seed: int = 0, draws: int = 400):
        """Posterior predictive checks of the published summaries (:mod:`hybridpriv.criticism`).

        For ``draws`` posterior draws (spread evenly), simulate a private dataset of ``summaries.n``
        records and compute what was published about the real one: each covariate's mean and
        variance (``ddof=1``) and the outcome rate.  A flagged statistic is a summary the model
        cannot reproduce (e.g. an outcome rate out of reach of the public coefficients under
        ``coef_sd``).  The public records enter only through their logistic fit and are not
        replicated.  The simulated datasets are the engine's (:meth:`predictive_summaries`: streams
        ``("dataset", chain, draw)`` of ``seed``).  ``None`` when nothing was published but the size.
        """
        from ....criticism import predictive_check

        s = self.spec.summaries
        observed: dict[str, float] = {}
        for j in range(self.spec.p):
            if s.covariate_mean is not None:
                observed[f"x{j} mean (published)"] = float(s.covariate_mean[j])
            if s.covariate_variance is not None:
                observed[f"x{j} variance (published)"] = float(s.covariate_variance[j])
        if s.outcome_rate is not None:
            observed["outcome rate (published)"] = float(s.outcome_rate)
        if s.cross_moments is not None:
            observed.update({f"x{j} cross-moment (released)": float(v) for j, v in enumerate(s.cross_moments.values)})
        if not observed:
            return None
        total = self.shape[0] * self.shape[1]
        pred = self.predictive_summaries(min(check_integer(draws, "draws", 2), total), seed)
        replicated: dict[str, np.ndarray] = {}
        for j in range(self.spec.p):
            if s.covariate_mean is not None:
                replicated[f"x{j} mean (published)"] = pred["mean"][:, j]
            if s.covariate_variance is not None:
                replicated[f"x{j} variance (published)"] = pred["variance"][:, j]
        if s.outcome_rate is not None:
            replicated["outcome rate (published)"] = pred["rate"]
        if s.cross_moments is not None:
            replicated.update({f"x{j} cross-moment (released)": pred["cross"][:, j] for j in range(self.spec.p)})
        return predictive_check(observed, replicated,
                                advice="the prior (shift_sd, log_scale_sd, coef_sd) cannot reach the published "
                                       "summary from the public records: widen it, or check the summary")

    def _spread(self, count: object, name: str) -> list[tuple[int, int]]:
        """``count`` posterior draws ``(chain, draw)`` spread evenly over all chains and draws."""
        total = self.shape[0] * self.shape[1]
        count = check_integer(count, name, 1)
        if count > total:
            raise ValueError(f"{name} must be at most the number of posterior draws ({total}), got {count}")
        return [divmod(k * total // count, self.shape[1]) for k in range(count)]

    def sample_datasets(self, count: int, seed: int = 0, size: int | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``count`` simulated private datasets ``(X, y)`` of ``size`` records (default: ``summaries.n``).

        Dataset ``k`` uses posterior draw ``(chain, draw)`` number ``k * total // count`` (evenly
        spread over the chains and draws) and the generator of stream ``("dataset", chain, draw)``
        of ``seed`` -- the dataset :func:`hybridpriv.engine.evaluate.evaluate` makes at that index.
        """
        seed = check_integer(seed, "seed", 0)
        for c, d in self._spread(count, "count"):
            yield self.simulate(c, d, stream_rng(seed, "dataset", c, d), size)

    def predictive_summaries(self, count: int, seed: int = 0) -> dict[str, np.ndarray]:
        """Summaries of ``count`` simulated datasets: ``mean`` and ``variance`` ``(count, p)``, ``rate`` ``(count,)``;
        with released cross-moments also ``cross`` ``(count, p)``: each dataset's cross-moments plus the release's
        Laplace noise (stream ``("cross-noise",)`` of ``seed``), what the release would have shown."""
        means, variances, rates, cross = [], [], [], []
        release = self.spec.summaries.cross_moments
        for X, y in self.sample_datasets(count, seed):
            means.append(X.mean(axis=0))
            variances.append(X.var(axis=0, ddof=1))
            rates.append(y.mean())
            if release is not None:
                cross.append(cross_moment_statistic(X, y, release.clip))
        out = {"mean": np.array(means), "variance": np.array(variances), "rate": np.array(rates)}
        if release is not None:
            noise = stream_rng(seed, "cross-noise").laplace(0.0, release.noise_scale, (len(cross), self.spec.p))
            out["cross"] = np.array(cross) + noise
        return out


class WangPrivateModel(KnowledgeModel):
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
        covariates, intercept included), when they differ.
    shared_prior
        Prior probability that the private outcome depends on the covariates exactly as the public one
        does (``theta = theta_public``: only the covariates shift); otherwise ``theta`` differs by
        ``coef_sd``.  Default :data:`SHARED_PRIOR`; ``0`` is the model before 2026-11-28 (always
        different, as the Wang study's recorded numbers use), ``1`` the covariate-shift assumption alone.
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

    Notes
    -----
    ``fit(draws, tune, chains, seed, progressbar, on_unconverged)`` is the one
    :meth:`~hybridpriv.core.model.KnowledgeModel.fit` of every model: one seed per chain from
    stream ``("fit", chain)``, then R-hat and bulk ESS of ``shift``, ``log_scale`` and ``theta``
    checked (refused or warned about by ``on_unconverged``).  It returns a :class:`WangPosterior`.
    """

    posterior_class = WangPosterior  # what fit() returns

    def __init__(
        self,
        public_X: Any,
        public_y: Any,
        summaries: PublishedSummaries,
        *,
        shift_sd: float = 1.0,
        log_scale_sd: float = 0.5,
        coef_sd: float = 1.0,
        shared_prior: float = SHARED_PRIOR,
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
        if summaries.cross_moments is not None and summaries.cross_moments.values.size != p:
            raise ValueError(f"summaries.cross_moments has {summaries.cross_moments.values.size} values but public_X "
                             f"has {p} covariates")
        self.shift_sd = check_positive(shift_sd, "shift_sd")
        self.log_scale_sd = check_positive(log_scale_sd, "log_scale_sd")
        self.coef_sd = check_positive(coef_sd, "coef_sd")
        self.shared_prior = check_finite(shared_prior, "shared_prior")
        if not 0.0 <= self.shared_prior <= 1.0:
            raise ValueError(f"shared_prior must be a probability in [0, 1], got {shared_prior!r}")
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
        rng = stream_rng(self.seed, "smoothed-bootstrap")
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
            pi = self.shared_prior
            if pi == 1.0:  # the outcome law is the public sample's: nothing to shift
                theta = pm.Deterministic("theta", theta_public + 0.0, dims="coef")
            else:
                delta = pm.Normal("delta", 0.0, 1.0, dims="coef")
                theta = pm.Deterministic("theta", theta_public + self.coef_sd * delta, dims="coef")
            mixture = 0.0 < pi < 1.0
            log_odds = math.log(pi) - math.log1p(-pi) if mixture else 0.0
            if s.cross_moments is not None:
                self._outcome_evidence(shift, scale, theta, theta_public, pi, log_odds)
            elif s.outcome_rate is not None:
                r = s.outcome_rate
                z = shift[None, :] + scale[None, :] * self.rate_U

                def rate_of(th: Any) -> Any:
                    return pt.mean(pm.math.sigmoid(th[0] + pt.dot(z, th[1:])))

                rate = pm.Deterministic("rate", rate_of(theta))
                sd = math.sqrt(r * (1 - r) * (1.0 / n + 1.0 / self.rate_draws))
                if mixture:
                    # the indicator "same outcome law" marginalised out: log(pi L_same + (1 - pi) L_differ)
                    ll_same = pm.logp(pm.Normal.dist(rate_of(theta_public), sd), r)
                    ll_differ = pm.logp(pm.Normal.dist(rate, sd), r)
                    pm.Potential("published_rate",
                                 pm.math.logaddexp(math.log(pi) + ll_same, math.log1p(-pi) + ll_differ))
                    pm.Deterministic("same_logodds", log_odds + ll_same - ll_differ)
                else:
                    pm.Normal("published_rate", mu=rate, sigma=sd, observed=r)
            elif mixture:  # nothing published about the outcome: the indicator keeps its prior
                pm.Deterministic("same_logodds", pt.zeros_like(shift[0]) + log_odds)
        return model

    def _outcome_evidence(self, shift: Any, scale: Any, theta: Any, theta_public: Any, pi: float,
                          log_odds: float) -> None:
        """The published outcome rate (if any) and the released cross-moments, jointly Normal (:func:`.cross_loglik`),
        in the model being built: with the mixture, they marginalise the "same outcome law" indicator together
        (``published_outcome``)."""
        s, n, R = self.summaries, self.summaries.n, self.rate_draws
        z = shift[None, :] + scale[None, :] * self.rate_U
        x = self.center[None, :] + self.sd[None, :] * z

        def loglik(th: Any) -> Any:
            return cross_loglik(pm.math.sigmoid(th[0] + pt.dot(z, th[1:])), x, s.cross_moments, n, R, s.outcome_rate)

        pm.Deterministic("rate", pt.mean(pm.math.sigmoid(theta[0] + pt.dot(z, theta[1:]))))
        if 0.0 < pi < 1.0:
            ll_same, ll_differ = loglik(theta_public), loglik(theta)
            pm.Potential("published_outcome", pm.math.logaddexp(math.log(pi) + ll_same, math.log1p(-pi) + ll_differ))
            pm.Deterministic("same_logodds", log_odds + ll_same - ll_differ)
        else:
            pm.Potential("published_outcome", loglik(theta))

    def _sample(self, model: Any, draws: int, tune: int, chains: int, random_seed: list[int], progressbar: bool,
                **sample_kwargs: Any) -> Any:
        # pm.sample's own diagnostics are replaced by the one check of KnowledgeModel.fit
        sample_kwargs.setdefault("compute_convergence_checks", False)
        return super()._sample(model, draws, tune, chains, random_seed, progressbar, **sample_kwargs)


# the budget-free selection lives in its own module; its names are part of this one
from .model_selection import fit_kept, weight_order  # noqa: E402
