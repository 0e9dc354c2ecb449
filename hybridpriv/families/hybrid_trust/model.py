"""What a hybrid-model curator knows about the two groups, the Bayes weight it implies, and its datasets.

The convex hybrid estimator of Avent et al. (2020) combines the TCM users' private mean and
the LM users' private mean as ``w * mu_T~ + (1 - w) * mu_L~``.  Its exact MSE (Lemma 3.13,
:func:`hybridpriv.theory.avent.hybrid_mse`) depends on the records' variances
``sigma_T^2, sigma_L^2`` and on the mean gap ``mu_T - mu_L``, which the curator does not know.
KVH plugs in the true values (an oracle); PWH ignores them.

:class:`HybridTrustModel` is a PyMC model of what the curator *does* know: the bounds
``[0, m]``, priors on each group's mean and variance, optionally pilot (public) records of
either group.  It is a :class:`~hybridpriv.core.model.KnowledgeModel` (the one ``fit``, the
shared convergence check); its fitted result, :class:`HybridTrustPosterior`, gives

* :meth:`HybridTrustPosterior.bayes_weight` -- the weight minimising the **posterior expected
  MSE**.  ``hybrid_mse`` is linear in ``sigma_T^2``, ``sigma_L^2`` and ``(mu_T - mu_L)^2``
  and quadratic in ``w``, so the minimiser is the heterogeneous KVH weight (Definition 6.1)
  at the plug-ins ``E[sigma_T^2]``, ``E[sigma_L^2]`` and ``E[(mu_T - mu_L)^2]`` (note: the
  posterior mean of the *squared* gap, not the square of the mean gap); see
  ``docs/avent-bayes.md``;
* :meth:`HybridTrustPosterior.expected_mse` -- the posterior expected MSE of any weight,
  averaging ``hybrid_mse`` over the draws (the brute-force check of the closed form);
* :meth:`HybridTrustPosterior.generate` -- a dataset source for
  :func:`hybridpriv.engine.evaluate.evaluate`: given the groups' sizes (``sizes=(n_T, n_L)``), the
  two-group dataset (TCM records, then LM records, on ``[0, m]``) of one posterior draw.

The model
---------
Each group's records follow ``m * Beta(p_g * kappa_g, (1 - p_g) * kappa_g)`` on ``[0, m]``:

* ``p0 ~ Beta(*mean)`` is the central unit-scale mean; the groups sit symmetrically around it
  on the logit scale, ``logit p_T = logit p0 + gap_logit / 2`` and
  ``logit p_L = logit p0 - gap_logit / 2`` with ``gap_logit ~ Normal(0, gap_logit_sd)``;
* ``v_g = 1 / (kappa_g + 1) ~ Beta(*variance_fraction)`` is the group's variance as a
  fraction of the largest variance a distribution on ``[0, m]`` with that mean can have
  (``mu_g (m - mu_g)``, Bhatia-Davis), so ``sigma_g^2 = v_g mu_g (m - mu_g) <= m^2 / 4``:
  every prior draw is a feasible distribution on the bounds and ``sigma_g <= m / 2``.

Whether the two groups share one law is itself uncertain (partial pooling, issue 25): with prior
probability ``shared_prior`` (default 1/2) the LM group follows the TCM group's law (``p_L =
p_T``, ``v_L = v_T``: gap 0, equal variances), otherwise its own as above.  The indicator is
marginalised out of the likelihood (``log(pi L_shared + (1 - pi) L_differ)``, a ``pm.Potential``) so
NUTS samples the continuous parameters; the deterministic ``shared_logodds`` is the log posterior odds
of a shared law given a draw's parameters, and the posterior draws the indicator ``shared`` from it
(stream ``("shared-law",)`` of the fit's seed), so ``mu_L = mu_T``, ``gap = 0`` and ``sigma_L2 =
sigma_T2`` in a shared draw.  The pilots thus *learn* how alike the groups are: when they agree, the
posterior puts most of its mass on one law and the weights lean on the TCM group's precision; when
they differ, on two.  ``shared_prior=0`` is the former heterogeneous model (always two laws).

``homogeneous=True`` (``shared_prior=1``) is the paper's Sections 4-5 setting (both groups share one
distribution): one ``p0`` and one ``v``, ``gap = 0``, ``sigma_T = sigma_L``.

Deterministic quantities on the data scale: ``mu_T``, ``mu_L``, ``gap = mu_T - mu_L``,
``sigma_T2``, ``sigma_L2`` (variances).  Pilot records enter through the Beta likelihood
(records exactly on a bound are moved inside by
:data:`hybridpriv.families.grouped.model.BETA_BOUNDARY_NUDGE` of the range), or with
``pilot_likelihood="moments"`` through each group's pilot mean and log variance only (see the class).  Earlier noisy releases of
a group's mean (:class:`~hybridpriv.families.grouped.model.ReleasedMean` with ``group`` ``"T"``, ``"L"``
or ``None`` for both groups pooled; needs ``sizes``) enter as ``y ~ Laplace(latent, b)``, where
the latent sample mean of the ``n_g`` records is ``mu_g + sqrt(sigma_g^2 / n_g) z``,
``z ~ Normal(0, 1)`` (the central-limit approximation the grouped model uses too).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr

from ...core.privacy import Bounds, check_finite, check_integer, check_positive, check_real_array
from ...core.random import check_seed
from ...core.random import rng as named_rng
from .model_posterior import MOMENTS, HybridTrustPosterior, bayes_weight_from_moments, resolve_shared_law
from ...core.model import KnowledgeModel, _check_count, chain_seeds, sampling_mode
from ..grouped.model import BETA_BOUNDARY_NUDGE, RELEASE_TAIL, ReleasedMean

#: Prior probability that the TCM and LM groups follow one law (``HybridTrustModel.shared_prior``).
DEFAULT_SHARED_PRIOR = 0.5
#: How pilot records enter the likelihood (``HybridTrustModel.pilot_likelihood``).
PILOT_LIKELIHOODS = ("beta", "moments")
DEFAULT_PILOT_LIKELIHOOD = "beta"

__all__ = ["DEFAULT_PILOT_LIKELIHOOD", "DEFAULT_SHARED_PRIOR", "PILOT_LIKELIHOODS", "HybridTrustModel", "HybridTrustPosterior", "bayes_weight_from_moments", "fit_many"]


def _check_pair(pair: object, name: str) -> tuple[float, float]:
    if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
        raise TypeError(f"{name} must be a pair of positive numbers, got {pair!r}")
    return check_positive(pair[0], f"{name}[0]"), check_positive(pair[1], f"{name}[1]")


def _check_sizes(sizes: object) -> tuple[int, int] | None:
    if sizes is None:
        return None
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Sequence) or len(sizes) != 2:
        raise TypeError(f"sizes must be a pair of group sizes (n_T, n_L), got {sizes!r}")
    return check_integer(sizes[0], "sizes[0]", 1), check_integer(sizes[1], "sizes[1]", 1)


# --------------------------------------------------------------------------------------
# the model
# --------------------------------------------------------------------------------------


def released_mean_moments(group: str | None, mu_T: Any, mu_L: Any, s_T: Any, s_L: Any,
                          sizes: tuple[int, int]) -> tuple[Any, Any]:
    """Mean and sampling variance of the mean of group ``group``'s records (``"T"``, ``"L"``, or
    ``None`` for both pooled), from the groups' means ``mu``, record variances ``s`` and ``sizes``;
    numbers or PyTensor variables alike (the model's likelihood and its predictive checks)."""
    n_T, n_L = sizes
    if group == "T":
        return mu_T, s_T / n_T
    if group == "L":
        return mu_L, s_L / n_L
    return (n_T * mu_T + n_L * mu_L) / (n_T + n_L), (n_T * s_T + n_L * s_L) / (n_T + n_L) ** 2


class HybridTrustModel(KnowledgeModel):
    """A PyMC model of what the curator knows about the TCM and LM groups' data.

    Parameters
    ----------
    m
        Upper bound of the records, which lie in ``[0, m]`` (the paper's convention).
    homogeneous
        ``True``: both groups share one distribution (gap 0, ``sigma_T = sigma_L``), as in the
        paper's Sections 4-5 (the same as ``shared_prior=1``).  ``False`` (default): whether
        they share one is learned from the pilots (``shared_prior``).
    shared_prior
        Prior probability that both groups follow one law (a number in ``[0, 1]``; default 0.5,
        or 1 with ``homogeneous``).  0: always separate means and variances (the model before
        issue 25).
    mean
        ``(alpha, beta)`` of the Beta prior on ``p0``, the central mean on the unit scale.
        Default ``(1, 1)``: uniform.
    variance_fraction
        ``(alpha, beta)`` of the Beta prior on each group's ``v = sigma^2 / (mu (m - mu))``,
        the variance as a fraction of the largest possible one.  Default ``(1, 1)``: uniform
        (prior mean of ``sigma^2`` with both defaults: ``m^2 / 12``, the uniform's variance).
    gap_logit_sd
        Standard deviation of the Normal prior on ``logit p_T - logit p_L``.  Default 0.5:
        near ``p0 = 1/2``, a gap ``mu_T - mu_L`` with standard deviation about ``m / 8``.
        Ignored when ``homogeneous``.
    pilot_T, pilot_L
        Optional public / pilot records known to come from the TCM group and from the LM group
        (1-D, in ``[0, m]``).  With ``homogeneous`` both inform the shared distribution.
    sizes
        ``(n_T, n_L)``: the groups' sizes, needed only for the posterior to generate datasets.
    clamp
        Clamp pilot records into ``[0, m]`` instead of refusing records outside.
    pilot_likelihood
        How pilot records inform their group's law.  ``"beta"`` (default): each record through the
        Beta density.  ``"moments"``: only the group's pilot mean and variance, through their sampling
        laws (central limit theorem: ``mean ~ Normal(mu_g, sigma_g^2 / k)`` and ``log s^2 ~ Normal(log
        sigma_g^2, 2 / (k - 1) + kurt / k)``, ``k`` records, ``kurt`` the pilots' excess kurtosis about
        their own group's mean, pooled over both groups (:attr:`pilot_kurtosis`); the sd is at least
        ``1 / sqrt(k)`` and ``log s^2`` is not corrected for its bias, about ``-sd^2 / 2``).  The candidates'
        risks depend on the groups' means and variances alone, and these laws hold approximately for records of
        any shape (skewed, heavy-tailed, clamped, bimodal) as ``k`` grows, where a misfitting Beta can make a
        shared law look unlikely.  Pilots all equal give their mean only (no variance term).
    released_means
        Earlier DP releases ``mean(records of the group) + Laplace(0, b)``: a sequence of
        :class:`~hybridpriv.families.grouped.model.ReleasedMean` whose ``group`` is ``"T"`` (the TCM
        group), ``"L"`` (the LM group) or ``None`` (both groups pooled).  Needs ``sizes``.

    Examples
    --------
    >>> post = HybridTrustModel(1.0, homogeneous=True).prior(draws=2000, seed=0)  # doctest: +SKIP
    >>> post.bayes_weight(n=10_000, c=0.05, s_T2=3.2e-5, s_L2=2.0)                 # doctest: +SKIP
    """

    posterior_class = HybridTrustPosterior  # what fit() returns

    def __init__(
        self,
        m: float = 1.0,
        *,
        homogeneous: bool = False,
        mean: tuple[float, float] = (1.0, 1.0),
        variance_fraction: tuple[float, float] = (1.0, 1.0),
        gap_logit_sd: float = 0.5,
        shared_prior: float | None = None,
        pilot_T: object = None,
        pilot_L: object = None,
        sizes: tuple[int, int] | None = None,
        clamp: bool = False,
        released_means: Sequence[ReleasedMean] = (),
        pilot_likelihood: str | None = None,
    ) -> None:
        self.m = check_positive(m, "m")
        self.bounds = Bounds(0.0, self.m)
        if not isinstance(homogeneous, bool):
            raise TypeError(f"homogeneous must be True or False, got {homogeneous!r}")
        if not isinstance(clamp, bool):
            raise TypeError(f"clamp must be True or False, got {clamp!r}")
        self.homogeneous, self.clamp = homogeneous, clamp
        self.mean = _check_pair(mean, "mean")
        self.variance_fraction = _check_pair(variance_fraction, "variance_fraction")
        self.gap_logit_sd = check_positive(gap_logit_sd, "gap_logit_sd")
        self.shared_prior = self._check_shared_prior(shared_prior)
        self.pilot_T = self._check_pilot(pilot_T, "pilot_T")
        self.pilot_L = self._check_pilot(pilot_L, "pilot_L")
        self.sizes = _check_sizes(sizes)
        self.released_means = self._check_released(released_means)
        if pilot_likelihood is None:
            pilot_likelihood = DEFAULT_PILOT_LIKELIHOOD
        if pilot_likelihood not in PILOT_LIKELIHOODS:
            raise ValueError(f"pilot_likelihood must be one of {PILOT_LIKELIHOODS}, got {pilot_likelihood!r}")
        self.pilot_likelihood = pilot_likelihood

    def _check_shared_prior(self, value: object) -> float:
        if value is None:
            return 1.0 if self.homogeneous else DEFAULT_SHARED_PRIOR
        p = check_finite(value, "shared_prior")
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"shared_prior must be a probability in [0, 1], got {value!r}")
        if self.homogeneous and p != 1.0:
            raise ValueError(f"shared_prior = {value!r} contradicts homogeneous=True (one shared law: shared_prior 1)")
        return p

    @property
    def mixes(self) -> bool:
        """Whether the model is a mixture of "one shared law" and "two laws" (``0 < shared_prior < 1``)."""
        return 0.0 < self.shared_prior < 1.0

    def _check_released(self, released: object) -> tuple[ReleasedMean, ...]:
        if isinstance(released, (str, bytes)) or not isinstance(released, Sequence):
            raise TypeError(f"released_means must be a sequence of ReleasedMean, got {released!r}")
        for i, r in enumerate(released):
            if not isinstance(r, ReleasedMean):
                raise TypeError(f"released_means[{i}] must be a ReleasedMean, got {r!r}")
            if r.group not in ("T", "L", None):
                raise ValueError(f"released_means[{i}].group must be 'T', 'L' or None (both groups), got {r.group!r}")
            if self.sizes is None:
                raise ValueError(f"released_means[{i}]: a released mean needs the groups' sizes, sizes=(n_T, n_L)")
            slack = RELEASE_TAIL * r.noise_scale
            if not -slack <= r.value <= self.m + slack:
                raise ValueError(
                    f"released_means[{i}].value = {r.value:g} is impossible: a mean lies in [0, {self.m:g}] and "
                    f"Laplace noise of scale {r.noise_scale:g} exceeds {RELEASE_TAIL:g} scales with probability "
                    f"e^-{RELEASE_TAIL:g}"
                )
        return tuple(released)

    def __repr__(self) -> str:
        counts = [0 if p is None else p.size for p in (self.pilot_T, self.pilot_L)]
        return (
            f"HybridTrustModel(m={self.m:g}, homogeneous={self.homogeneous}, mean={self.mean}, "
            f"variance_fraction={self.variance_fraction}, gap_logit_sd={self.gap_logit_sd:g}, "
            f"shared_prior={self.shared_prior:g}, pilot_likelihood={self.pilot_likelihood!r}, "
            f"pilot sizes T/L={counts[0]}/{counts[1]}, sizes={self.sizes})"
        )

    def _check_pilot(self, values: object, name: str) -> np.ndarray | None:
        if values is None:
            return None
        arr = check_real_array(values, name)
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"{name} must be a non-empty 1-D array of records, got shape {arr.shape}")
        if np.isnan(arr).any():
            raise ValueError(f"{name} contains NaN")
        arr = self.bounds.clamp(arr) if self.clamp else self.bounds.check(arr, name=name)
        arr = np.array(arr, dtype=float)
        arr.setflags(write=False)
        return arr

    def _unit(self, values: np.ndarray) -> np.ndarray:
        u = values / self.m
        return np.clip(u, BETA_BOUNDARY_NUDGE, 1 - BETA_BOUNDARY_NUDGE)

    def build(self) -> pm.Model:
        """The PyMC model (free: ``p0``, ``v_T``, ``v_L`` (or ``v``), ``gap_logit``; deterministic:
        ``mu_T``, ``mu_L``, ``gap``, ``sigma_T2``, ``sigma_L2``)."""
        with pm.Model() as model:
            self._populate()
        return model

    def _populate(self) -> None:
        """Create the variables in the current model context (names prefixed by a named sub-model)."""
        m = self.m
        p0 = pm.Beta("p0", alpha=self.mean[0], beta=self.mean[1])
        if self.shared_prior == 1.0:
            v = pm.Beta("v", alpha=self.variance_fraction[0], beta=self.variance_fraction[1])
            p_T = p_L = p0
            v_T = v_L = v
        else:
            d = pm.Normal("gap_logit", 0.0, self.gap_logit_sd)
            z = pt.log(p0) - pt.log1p(-p0)
            p_T, p_L = pm.math.sigmoid(z + d / 2), pm.math.sigmoid(z - d / 2)
            v_T = pm.Beta("v_T", alpha=self.variance_fraction[0], beta=self.variance_fraction[1])
            v_L = pm.Beta("v_L", alpha=self.variance_fraction[0], beta=self.variance_fraction[1])
        mu_T = pm.Deterministic("mu_T", m * p_T)
        mu_L = pm.Deterministic("mu_L", m * p_L)
        pm.Deterministic("gap", m * (p_T - p_L))
        s_T = pm.Deterministic("sigma_T2", m**2 * v_T * p_T * (1 - p_T))
        s_L = pm.Deterministic("sigma_L2", m**2 * v_L * p_L * (1 - p_L))
        zs, latents = [], []
        for i, r in enumerate(self.released_means):
            mean, var = released_mean_moments(r.group, mu_T, mu_L, s_T, s_L, self.sizes)  # type: ignore[arg-type]
            zs.append(pm.Normal(f"released_mean_{i}_z", 0.0, 1.0))  # the release's sampling error, standardised
            latents.append(pm.Deterministic(f"released_mean_{i}_latent", mean + pt.sqrt(var) * zs[-1]))
            if not self.mixes:
                pm.Laplace(f"released_mean_{i}", mu=latents[-1], b=r.noise_scale, observed=r.value)
        if not self.mixes:
            for name, p, v, rec in (("pilot_T", p_T, v_T, self.pilot_T), ("pilot_L", p_L, v_L, self.pilot_L)):
                if rec is None:
                    continue
                if self.pilot_likelihood == "moments":
                    pm.Potential(name, self._pilot_logp(p, v, rec))
                else:
                    kappa = 1 / v - 1
                    pm.Beta(name, alpha=p * kappa, beta=(1 - p) * kappa, observed=self._unit(rec))
            return
        # the mixture: the same public records under two laws (apart) and under one (the TCM group's)
        differ = self._loglik(p_T, p_L, v_T, v_L, latents)
        # one law: the LM group's records follow the TCM group's law (its records are modelled alike in both
        # branches, so the branches differ only in what the LM group's public records say).  Giving the one law
        # its own parameters instead left NUTS in one branch per chain (R-hat 1.6); a centre p0 for it, 1.11.
        mu0, s0 = mu_T, s_T
        shared_latents = []
        for r, z_i in zip(self.released_means, zs):
            mean, var = released_mean_moments(r.group, mu0, mu0, s0, s0, self.sizes)  # type: ignore[arg-type]
            shared_latents.append(mean + pt.sqrt(var) * z_i)
        shared = self._loglik(p_T, p_T, v_T, v_T, shared_latents)
        log_pi, log_1m = np.log(self.shared_prior), np.log1p(-self.shared_prior)
        pm.Deterministic("shared_logodds", log_pi - log_1m + shared - differ)
        pm.Potential("shared_law", pt.logaddexp(log_pi + shared, log_1m + differ))

    def _loglik(self, p_T: Any, p_L: Any, v_T: Any, v_L: Any, latents: list[Any]) -> Any:
        """Log-likelihood of the public records (pilots, earlier releases) under one branch's law(s)."""
        total = pt.constant(0.0)
        for p, v, rec in ((p_T, v_T, self.pilot_T), (p_L, v_L, self.pilot_L)):
            if rec is not None:
                total = total + self._pilot_logp(p, v, rec)
        for r, latent in zip(self.released_means, latents):
            total = total + pm.logp(pm.Laplace.dist(mu=latent, b=r.noise_scale), r.value)
        return total

    @cached_property
    def pilot_kurtosis(self) -> float:
        """Excess kurtosis of the pilot records about their own group's mean, pooled over both groups
        (``0``, the normal's, with fewer than 4 records or no spread), clipped to ``[-2, 50]``; computed once (the
        pilots are read-only).

        The residuals are pooled raw, not each scaled to its group's spread: two groups of different spreads
        inflate it (two normal groups, sd 0.02 and 0.10, 30 records each: about 2.3 instead of 0), which widens
        the log variance's law and weakens what the variances say.  The calibrated model (docs/calibration.md)
        is this one; scaling each group first is a change to calibrate again (issue 25's notes)."""
        resid = [rec - rec.mean() for rec in (self.pilot_T, self.pilot_L) if rec is not None]
        if not resid or sum(r.size for r in resid) < 4:
            return 0.0
        r = np.concatenate(resid)
        m2 = float(np.mean(r**2))
        if m2 <= 0:
            return 0.0
        return float(np.clip(np.mean(r**4) / m2**2 - 3.0, -2.0, 50.0))

    def _pilot_logp(self, p: Any, v: Any, rec: np.ndarray) -> Any:
        """Log-likelihood of one group's pilot records: the Beta density of each (``"beta"``) or the sampling
        laws of their mean and log variance (``"moments"``, see the class docstring), on the unit scale."""
        if self.pilot_likelihood == "beta":
            kappa = 1 / v - 1
            return pm.logp(pm.Beta.dist(alpha=p * kappa, beta=(1 - p) * kappa), self._unit(rec)).sum()
        u = rec / self.m
        k = u.size
        var = v * p * (1 - p)  # the group's record variance on the unit scale
        total = pm.logp(pm.Normal.dist(mu=p, sigma=pt.sqrt(var / k)), float(u.mean()))
        s2 = float(u.var(ddof=1)) if k >= 2 else 0.0
        if s2 > 0:  # records all equal (or one): their variance says only that it is small; the mean term stays
            sd = np.sqrt(max(2.0 / (k - 1) + self.pilot_kurtosis / k, 1.0 / k))
            total = total + pm.logp(pm.Normal.dist(mu=pt.log(var), sigma=sd), np.log(s2))
        return total

    @property
    def free_names(self) -> tuple[str, ...]:
        """The model's free parameters (checked for convergence with ``sigma_T2``, ``sigma_L2``, ``gap``)."""
        if self.shared_prior == 1.0:
            return ("p0", "v")
        return ("p0", "gap_logit", "v_T", "v_L")

    def _sample(self, model: Any, draws: int, tune: int, chains: int, random_seed: list[int], progressbar: bool,
                **sample_kwargs: Any) -> Any:
        """``pm.sample`` (NUTS) with ``cores=1`` and PyMC's own convergence checks off unless given
        (the shared check runs after the fit)."""
        sample_kwargs.setdefault("cores", 1)
        sample_kwargs.setdefault("compute_convergence_checks", False)
        return super()._sample(model, draws, tune, chains, random_seed, progressbar, **sample_kwargs)

    def prior(self, draws: int = 2000, seed: int = 0) -> HybridTrustPosterior:
        """Independent draws from the prior (pilot records ignored), without MCMC.

        The knowledge of a curator with no records: one chain of ``draws`` exact draws
        (``pm.draw``, from stream ``("prior",)`` of ``seed``), as a posterior of this model without
        its pilot records (so it generates datasets when ``sizes`` is given).
        """
        draws = check_integer(draws, "draws", 4)
        seed = check_seed(seed)
        spec = HybridTrustModel(self.m, homogeneous=self.homogeneous, mean=self.mean,
                                variance_fraction=self.variance_fraction, gap_logit_sd=self.gap_logit_sd,
                                shared_prior=self.shared_prior, sizes=self.sizes,
                                pilot_likelihood=self.pilot_likelihood)
        model = spec.build()
        names = (*MOMENTS, "mu_T", "mu_L", *spec.free_names)
        vals = pm.draw([model[k] for k in names], draws=draws, random_seed=named_rng(seed, "prior"),
                       mode=sampling_mode())  # fast-math off: the same bits whatever the compile cache holds
        ds = xr.Dataset({k: (("chain", "draw"), np.asarray(v, dtype=float).reshape(1, draws)) for k, v in zip(names, vals)})
        if spec.mixes:  # no records: the odds of a shared law are the prior's (the posterior draws the indicator)
            odds = np.log(spec.shared_prior) - np.log1p(-spec.shared_prior)
            ds["shared_logodds"] = xr.full_like(ds["p0"], odds)
        # exact independent draws: nothing to converge.  The R-hat check this had refused 13 of 40 seeds'
        # exact priors at draws=50 (split R-hat of a heavy-tailed variance exceeds 1.1 by chance)
        return HybridTrustPosterior(spec, xr.DataTree.from_dict({"posterior": ds}), seed)


def fit_many(
    models: Sequence[HybridTrustModel],
    draws: int = 500,
    tune: int = 500,
    chains: int = 2,
    seed: int = 0,
    progressbar: bool = False,
    on_unconverged: str = "raise",
    **sample_kwargs: Any,
) -> list[HybridTrustPosterior]:
    """Fit several independent :class:`HybridTrustModel` in one ``pm.sample`` call (a performance helper).

    The models become named sub-models (``k0::p0``, ...) of one PyMC model whose posterior is
    the product of theirs (they share no variable), so each block's draws follow its own
    posterior; one compilation serves them all, which is what makes a study with many pilot
    samples fast.  Each returned posterior is what :meth:`HybridTrustModel.fit` returns -- its
    ``idata`` holds its own block only, under its plain names -- and has passed the same
    convergence check (``on_unconverged``).  Arguments as :meth:`HybridTrustModel.fit`; chain
    ``c`` samples with the seed of stream ``("fit", c)``, as there; a mixture model's shared-law indicator of
    block ``i`` is drawn from stream ``("shared-law", "block", i)``.  The draws are not those of
    separate fits (the sampler adapts to the joint model), only their distribution is.
    """
    if isinstance(models, HybridTrustModel) or not isinstance(models, Sequence) or not models:
        raise TypeError(f"models must be a non-empty sequence of HybridTrustModel, got {models!r}")
    for i, mod in enumerate(models):
        if not isinstance(mod, HybridTrustModel):
            raise TypeError(f"models[{i}] must be a HybridTrustModel, got {mod!r}")
    if len(models) == 1:
        return [models[0].fit(draws, tune, chains, seed, progressbar, on_unconverged, **sample_kwargs)]  # type: ignore[list-item]
    draws, tune, chains = _check_count(draws, "draws", 1), _check_count(tune, "tune", 0), _check_count(chains, "chains", 1)
    seed = check_seed(seed)
    random_seed = chain_seeds(seed, chains, sample_kwargs)
    with pm.Model() as joint:
        for i, mod in enumerate(models):
            with pm.Model(name=f"k{i}"):
                mod._populate()
    idata = models[0]._sample(joint, draws, tune, chains, random_seed, progressbar, **sample_kwargs)
    post = idata["posterior"].to_dataset()
    out = []
    for i, mod in enumerate(models):
        prefix = f"k{i}::"
        block = post[[k for k in post.data_vars if str(k).startswith(prefix)]]
        block = block.rename({k: str(k)[len(prefix):] for k in block.data_vars})
        tree = xr.DataTree.from_dict({"posterior": block})
        if "shared_logodds" in block.data_vars:  # each block its own indicator stream
            tree = resolve_shared_law(mod, tree, seed, "block", i)
        posterior = HybridTrustPosterior(mod, tree, seed)
        posterior.check_convergence(on_unconverged)
        out.append(posterior)
    return out
