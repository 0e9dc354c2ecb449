"""What a hybrid-model curator knows about the two groups, and the Bayes weight it implies.

The convex hybrid estimator of Avent et al. (2020) combines the TCM users' private mean and
the LM users' private mean as ``w * mu_T~ + (1 - w) * mu_L~``.  Its exact MSE (Lemma 3.13,
:func:`hybridpriv.theory.avent.hybrid_mse`) depends on the records' variances
``sigma_T^2, sigma_L^2`` and on the mean gap ``mu_T - mu_L``, which the curator does not know.
KVH plugs in the true values (an oracle); PWH ignores them.

:class:`HybridTrustModel` is a PyMC model of what the curator *does* know: the bounds
``[0, m]``, priors on each group's mean and variance, optionally pilot (public) records of
either group.  Its fitted result, :class:`HybridTrustPosterior`, gives

* :meth:`HybridTrustPosterior.bayes_weight` -- the weight minimising the **posterior expected
  MSE**.  ``hybrid_mse`` is linear in ``sigma_T^2``, ``sigma_L^2`` and ``(mu_T - mu_L)^2``
  and quadratic in ``w``, so the minimiser is the heterogeneous KVH weight (Definition 6.1)
  at the plug-ins ``E[sigma_T^2]``, ``E[sigma_L^2]`` and ``E[(mu_T - mu_L)^2]`` (note: the
  posterior mean of the *squared* gap, not the square of the mean gap); see
  ``docs/avent-bayes.md``;
* :meth:`HybridTrustPosterior.expected_mse` -- the posterior expected MSE of any weight,
  averaging ``hybrid_mse`` over the draws (the brute-force check of the closed form).

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

``homogeneous=True`` is the paper's Sections 4-5 setting (both groups share one
distribution): one ``p0`` and one ``v``, ``gap = 0``, ``sigma_T = sigma_L``.

Deterministic quantities on the data scale: ``mu_T``, ``mu_L``, ``gap = mu_T - mu_L``,
``sigma_T2``, ``sigma_L2`` (variances).  Pilot records enter through the Beta likelihood
(records exactly on a bound are moved inside by
:data:`hybridpriv.models.grouped.BETA_BOUNDARY_NUDGE` of the range).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from hybridpriv.privacy import Bounds, check_integer, check_positive, check_real_array

from ._sampling import chain_seeds
from .grouped import BETA_BOUNDARY_NUDGE

__all__ = ["BAYES_RHAT_FAIL", "HybridTrustModel", "HybridTrustPosterior", "bayes_weight_from_moments", "fit_many"]

#: A posterior with a larger R-hat (on any of sigma_T^2, sigma_L^2, the gap or a free
#: parameter) is refused by :meth:`HybridTrustPosterior.bayes_weight`, as the CLI refuses an
#: unconverged model of public knowledge.
BAYES_RHAT_FAIL = 1.1

#: The quantities the weight depends on, in the order they are stored.
_MOMENTS = ("sigma_T2", "sigma_L2", "gap")


def _check_pair(pair: object, name: str) -> tuple[float, float]:
    if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
        raise TypeError(f"{name} must be a pair of positive numbers, got {pair!r}")
    return check_positive(pair[0], f"{name}[0]"), check_positive(pair[1], f"{name}[1]")


def _check_array(value: object, name: str, allow_zero: bool = True, upper: float | None = None) -> Any:
    """Check a scalar / array / DataArray argument; return it unchanged (xarray passes through)."""
    if isinstance(value, bool) or (isinstance(value, np.ndarray) and value.dtype == bool):
        raise TypeError(f"{name} must be a real number or array of them, got {value!r}")
    arr = check_real_array(getattr(value, "values", value), name)
    if not np.isfinite(arr).all():
        bad = float(arr[~np.isfinite(arr)].flat[0])
        raise ValueError(f"{name} must be finite, got {bad!r}")
    low = arr < 0 if allow_zero else arr <= 0
    if low.any():
        raise ValueError(f"{name} must be {'>=' if allow_zero else '>'} 0, got {float(arr[low].flat[0])!r}")
    if upper is not None and (arr >= upper).any():
        raise ValueError(f"{name} must be < {upper:g}, got {float(arr[arr >= upper].flat[0])!r}")
    return value if hasattr(value, "dims") else (float(arr) if arr.ndim == 0 else arr)


def _check_setting(n: object, c: object, s_T2: object, s_L2: object) -> tuple[Any, Any, Any, Any]:
    n = _check_array(n, "n", allow_zero=False)
    c = _check_array(c, "c", allow_zero=False, upper=1.0)
    s_T2 = _check_array(s_T2, "s_T2")
    s_L2 = _check_array(s_L2, "s_L2")
    return n, c, s_T2, s_L2


def bayes_weight_from_moments(
    n: Any, c: Any, s_T2: Any, s_L2: Any, e_sigma_T2: Any, e_sigma_L2: Any, e_gap2: Any,
    benchmark: str = "empirical",
) -> Any:
    """The weight minimising the posterior expected MSE, from posterior moments.

    ``benchmark="empirical"`` (the paper's risk, against the empirical mean):
    ``w = (c A + B) / (A + s_T2 + B)`` with
    ``A = E[sigma_T^2] / (c n) + E[sigma_L^2] / ((1 - c) n) + E[(mu_T - mu_L)^2]`` and
    ``B = s_L2 / ((1 - c) n)`` (derivation in ``docs/avent-bayes.md``).  With point masses
    (``E[gap^2] = gap^2``) it is the heterogeneous KVH weight of Definition 6.1.
    ``benchmark="population"`` (risk against the mixture mean):
    ``w = (V_L + c G) / (V_T + V_L + G)`` with ``V_T = E[sigma_T^2] / (c n) + s_T2``,
    ``V_L = (E[sigma_L^2] + s_L2) / ((1 - c) n)`` and ``G = E[(mu_T - mu_L)^2]``.
    Broadcasts over NumPy arrays and xarray; always in ``[0, 1]``.
    """
    if benchmark == "empirical":
        a = e_sigma_T2 / (c * n) + e_sigma_L2 / ((1 - c) * n) + e_gap2
        b = s_L2 / ((1 - c) * n)
        num, den = c * a + b, a + s_T2 + b
    elif benchmark == "population":
        v_t = e_sigma_T2 / (c * n) + s_T2
        v_l = (e_sigma_L2 + s_L2) / ((1 - c) * n)
        num, den = v_l + c * e_gap2, v_t + v_l + e_gap2
    else:
        raise ValueError(f"benchmark must be 'empirical' or 'population', got {benchmark!r}")
    if (np.asarray(den) <= 0).any():
        raise ValueError(
            "the expected MSE does not depend on w (no data variance, mean gap nor noise): "
            "s_T2 and s_L2 must not both be 0 when the posterior puts all mass on sigma^2 = 0 and gap = 0"
        )
    return num / den


# --------------------------------------------------------------------------------------
# the posterior
# --------------------------------------------------------------------------------------


def _rhat(x: np.ndarray) -> float:
    """Rank-normalised split R-hat (arviz_stats) of draws shaped (chain, draw); one chain is
    split in two halves.  Constant draws have R-hat 1 (ArviZ returns NaN for them)."""
    import arviz_stats

    if x.shape[0] == 1:
        half = x.shape[1] // 2
        x = np.stack([x[0, :half], x[0, half : 2 * half]])
    if x.shape[1] < 4 or np.ptp(x) == 0:
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r = float(arviz_stats.rhat(x, method="rank"))
    return r if math.isfinite(r) else math.inf


class HybridTrustPosterior:
    """Draws of ``(sigma_T^2, sigma_L^2, mu_T - mu_L)`` and the Bayes weight they imply.

    Build it with :meth:`HybridTrustModel.fit`, :meth:`HybridTrustModel.prior` or, from any
    sampler's draws, :meth:`from_draws`.

    Attributes
    ----------
    sigma_T2, sigma_L2, gap
        Float arrays shaped ``(chains, draws)``: the records' variances of each group and the
        mean gap ``mu_T - mu_L`` (data scale).
    rhat
        ``{name: R-hat}`` for the three quantities (and the model's free parameters after a fit).
    idata, model
        The ``DataTree`` of ``pm.sample`` and the ``pm.Model`` (``None`` for :meth:`from_draws`).
    """

    def __init__(
        self,
        sigma_T2: np.ndarray,
        sigma_L2: np.ndarray,
        gap: np.ndarray,
        rhat: dict[str, float] | None = None,
        idata: Any = None,
        model: pm.Model | None = None,
        spec: HybridTrustModel | None = None,
    ) -> None:
        self.sigma_T2, self.sigma_L2, self.gap = sigma_T2, sigma_L2, gap
        self.idata, self.model, self.spec = idata, model, spec
        self.rhat = dict(rhat) if rhat is not None else {}
        for name in _MOMENTS:
            self.rhat.setdefault(name, _rhat(getattr(self, name)))

    @classmethod
    def from_draws(cls, sigma_T2: object, sigma_L2: object, gap: object = 0.0) -> HybridTrustPosterior:
        """A posterior from given draws (any sampler, or a point mass for a known setting).

        Parameters
        ----------
        sigma_T2, sigma_L2
            Draws of the two groups' record variances (>= 0): scalars, 1-D arrays (one chain)
            or arrays shaped ``(chains, draws)``; broadcast against each other.
        gap
            Draws of ``mu_T - mu_L`` (default 0: the groups share their mean).
        """
        arrays = {}
        for name, v in (("sigma_T2", sigma_T2), ("sigma_L2", sigma_L2), ("gap", gap)):
            a = check_real_array(v, name)
            if a.ndim > 2:
                raise ValueError(f"{name} must be a scalar, 1-D (draws) or 2-D (chains, draws), got shape {a.shape}")
            if not np.isfinite(a).all():
                raise ValueError(f"{name} must be finite, got {float(a[~np.isfinite(a)].flat[0])!r}")
            if name != "gap" and (a < 0).any():
                raise ValueError(f"{name} must be >= 0 (a variance), got {float(a[a < 0].flat[0])!r}")
            arrays[name] = np.atleast_2d(a)
        try:
            b = np.broadcast_arrays(*arrays.values())
        except ValueError:
            raise ValueError(
                "sigma_T2, sigma_L2 and gap must broadcast to one (chains, draws) shape, got "
                + ", ".join(str(a.shape) for a in arrays.values())
            ) from None
        if b[0].size == 0:
            raise ValueError("the posterior needs at least one draw, got none")
        return cls(*(np.array(x, dtype=float) for x in b))

    def __repr__(self) -> str:
        e = self.moments
        return (
            f"HybridTrustPosterior(shape={self.shape}, E[sigma_T^2]={e['sigma_T2']:.4g}, "
            f"E[sigma_L^2]={e['sigma_L2']:.4g}, E[gap^2]={e['gap2']:.4g}, max R-hat={self.max_rhat:.3f})"
        )

    @property
    def shape(self) -> tuple[int, int]:
        """``(chains, draws)``."""
        return tuple(self.sigma_T2.shape)  # type: ignore[return-value]

    @property
    def max_rhat(self) -> float:
        """The largest R-hat over the stored quantities."""
        return max(self.rhat.values())

    def check_converged(self, rhat_fail: float = BAYES_RHAT_FAIL) -> None:
        """Raise ``ValueError`` if any R-hat exceeds ``rhat_fail`` (default 1.1)."""
        if self.max_rhat > rhat_fail:
            worst = max(self.rhat, key=self.rhat.get)
            raise ValueError(
                f"the model of what the curator knows did not converge (R-hat of {worst} = "
                f"{self.rhat[worst]:.3g} > {rhat_fail}): its Bayes weight would not reflect the knowledge; "
                "raise tune/draws, or check the pilot records against the priors and the bounds"
            )

    @property
    def moments(self) -> dict[str, float]:
        """Posterior means ``E[sigma_T^2]``, ``E[sigma_L^2]``, ``E[gap]`` and ``E[gap^2]``."""
        return {
            "sigma_T2": float(self.sigma_T2.mean()),
            "sigma_L2": float(self.sigma_L2.mean()),
            "gap": float(self.gap.mean()),
            "gap2": float(np.mean(self.gap**2)),
        }

    def bayes_weight(self, n: Any, c: Any, s_T2: Any, s_L2: Any, benchmark: str = "empirical") -> Any:
        """The weight ``w`` minimising ``E_post[hybrid_mse(w, n, c, sigma_T2, sigma_L2, s_T2, s_L2, gap, 0)]``.

        Closed form :func:`bayes_weight_from_moments` at this posterior's moments.  ``n``,
        ``c``, ``s_T2`` (variance of the TCM mean's noise) and ``s_L2`` (variance of one LM
        user's noise) broadcast over NumPy arrays or xarray; a float for scalar inputs.
        ``benchmark``: the risk of :func:`hybridpriv.theory.avent.hybrid_mse` (``"empirical"``,
        the paper's, or ``"population"``).

        Raises
        ------
        ValueError
            For an unconverged posterior (:meth:`check_converged`) or bad input.
        """
        self.check_converged()
        n, c, s_T2, s_L2 = _check_setting(n, c, s_T2, s_L2)
        e = self.moments
        return bayes_weight_from_moments(n, c, s_T2, s_L2, e["sigma_T2"], e["sigma_L2"], e["gap2"], benchmark)

    def expected_mse(self, w: Any, n: Any, c: Any, s_T2: Any, s_L2: Any, benchmark: str = "empirical") -> Any:
        """Posterior expected MSE of the hybrid estimator with weight ``w``: the average of
        :func:`hybridpriv.theory.avent.hybrid_mse` over every draw (brute force, no closed form).

        Arguments broadcast over NumPy arrays (memory: their size times the number of draws);
        a float for scalar inputs.
        """
        from hybridpriv.theory.avent import hybrid_mse

        self.check_converged()
        n, c, s_T2, s_L2 = _check_setting(n, c, s_T2, s_L2)
        w = check_real_array(w, "w")
        if not np.isfinite(w).all():
            raise ValueError(f"w must be finite, got {float(w[~np.isfinite(w)].flat[0])!r}")
        args = np.broadcast_arrays(w, *(np.asarray(x, dtype=float) for x in (n, c, s_T2, s_L2)))
        w_, n_, c_, t_, l_ = (a[..., None] for a in args)
        mse = hybrid_mse(w_, n_, c_, self.sigma_T2.ravel(), self.sigma_L2.ravel(), t_, l_, self.gap.ravel(), 0.0,
                         benchmark=benchmark)
        out = np.asarray(mse).mean(axis=-1)
        return float(out) if out.ndim == 0 else out

    def summary(self) -> dict[str, dict[str, float]]:
        """``{name: {"mean", "sd", "r_hat"}}`` for ``sigma_T2``, ``sigma_L2`` and ``gap``."""
        return {
            k: {"mean": float(getattr(self, k).mean()), "sd": float(getattr(self, k).std()), "r_hat": self.rhat[k]}
            for k in _MOMENTS
        }


# --------------------------------------------------------------------------------------
# the model
# --------------------------------------------------------------------------------------


class HybridTrustModel:
    """A PyMC model of what the curator knows about the TCM and LM groups' data.

    Parameters
    ----------
    m
        Upper bound of the records, which lie in ``[0, m]`` (the paper's convention).
    homogeneous
        ``True``: both groups share one distribution (gap 0, ``sigma_T = sigma_L``), as in the
        paper's Sections 4-5.  ``False`` (default): separate means and variances.
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
    clamp
        Clamp pilot records into ``[0, m]`` instead of refusing records outside.

    Examples
    --------
    >>> post = HybridTrustModel(1.0, homogeneous=True).prior(draws=2000, seed=0)  # doctest: +SKIP
    >>> post.bayes_weight(n=10_000, c=0.05, s_T2=3.2e-5, s_L2=2.0)                 # doctest: +SKIP
    """

    def __init__(
        self,
        m: float = 1.0,
        *,
        homogeneous: bool = False,
        mean: tuple[float, float] = (1.0, 1.0),
        variance_fraction: tuple[float, float] = (1.0, 1.0),
        gap_logit_sd: float = 0.5,
        pilot_T: object = None,
        pilot_L: object = None,
        clamp: bool = False,
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
        self.pilot_T = self._check_pilot(pilot_T, "pilot_T")
        self.pilot_L = self._check_pilot(pilot_L, "pilot_L")

    def __repr__(self) -> str:
        sizes = [0 if p is None else p.size for p in (self.pilot_T, self.pilot_L)]
        return (
            f"HybridTrustModel(m={self.m:g}, homogeneous={self.homogeneous}, mean={self.mean}, "
            f"variance_fraction={self.variance_fraction}, gap_logit_sd={self.gap_logit_sd:g}, "
            f"pilot sizes T/L={sizes[0]}/{sizes[1]})"
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
        if self.homogeneous:
            v = pm.Beta("v", alpha=self.variance_fraction[0], beta=self.variance_fraction[1])
            p_T = p_L = p0
            v_T = v_L = v
        else:
            d = pm.Normal("gap_logit", 0.0, self.gap_logit_sd)
            z = pt.log(p0) - pt.log1p(-p0)
            p_T, p_L = pm.math.sigmoid(z + d / 2), pm.math.sigmoid(z - d / 2)
            v_T = pm.Beta("v_T", alpha=self.variance_fraction[0], beta=self.variance_fraction[1])
            v_L = pm.Beta("v_L", alpha=self.variance_fraction[0], beta=self.variance_fraction[1])
        pm.Deterministic("mu_T", m * p_T)
        pm.Deterministic("mu_L", m * p_L)
        pm.Deterministic("gap", m * (p_T - p_L))
        pm.Deterministic("sigma_T2", m**2 * v_T * p_T * (1 - p_T))
        pm.Deterministic("sigma_L2", m**2 * v_L * p_L * (1 - p_L))
        for name, p, v, rec in (("pilot_T", p_T, v_T, self.pilot_T), ("pilot_L", p_L, v_L, self.pilot_L)):
            if rec is not None:
                kappa = 1 / v - 1
                pm.Beta(name, alpha=p * kappa, beta=(1 - p) * kappa, observed=self._unit(rec))

    @property
    def free_names(self) -> tuple[str, ...]:
        return ("p0", "v") if self.homogeneous else ("p0", "gap_logit", "v_T", "v_L")

    def fit(
        self,
        draws: int = 500,
        tune: int = 500,
        chains: int = 2,
        seed: int = 0,
        progressbar: bool = False,
        **sample_kwargs: Any,
    ) -> HybridTrustPosterior:
        """Sample the posterior with ``pm.sample`` (NUTS; ``cores=1`` unless given).

        ``seed`` (integer >= 0) gives one ``random_seed`` per chain through
        ``numpy.random.SeedSequence(seed).spawn(chains)``.  The R-hat of every free parameter
        and of ``sigma_T2``, ``sigma_L2``, ``gap`` is stored; an unconverged posterior is
        returned but refuses to give a weight (:meth:`HybridTrustPosterior.check_converged`).
        Other keyword arguments go to ``pm.sample``.
        """
        return fit_many([self], draws, tune, chains, seed, progressbar, **sample_kwargs)[0]

    def prior(self, draws: int = 2000, seed: int = 0) -> HybridTrustPosterior:
        """Independent draws from the prior (pilot records ignored), without MCMC.

        The knowledge of a curator with no records; one chain of ``draws`` exact draws
        (``pm.draw``, seeded by ``seed``).
        """
        draws = check_integer(draws, "draws", 4)
        seed = check_integer(seed, "seed", 0)
        model = HybridTrustModel(self.m, homogeneous=self.homogeneous, mean=self.mean,
                                 variance_fraction=self.variance_fraction, gap_logit_sd=self.gap_logit_sd).build()
        vals = pm.draw([model[k] for k in _MOMENTS], draws=draws, random_seed=seed)
        a = [np.asarray(v, dtype=float).reshape(1, draws) for v in vals]
        return HybridTrustPosterior(*a, model=model, spec=self)


def fit_many(
    models: Sequence[HybridTrustModel],
    draws: int = 500,
    tune: int = 500,
    chains: int = 2,
    seed: int = 0,
    progressbar: bool = False,
    **sample_kwargs: Any,
) -> list[HybridTrustPosterior]:
    """Fit several independent :class:`HybridTrustModel` in one ``pm.sample`` call.

    The models become named sub-models (``k0::p0``, ...) of one PyMC model whose posterior is
    the product of theirs (they share no variable), so each block's draws follow its own
    posterior; one compilation serves them all, which is what makes a study with many pilot
    samples fast.  Arguments as :meth:`HybridTrustModel.fit` (which calls this with one model);
    each returned posterior's ``idata`` is the joint one (names prefixed ``k{i}::``, except
    with a single model).
    """
    if isinstance(models, HybridTrustModel) or not isinstance(models, Sequence) or not models:
        raise TypeError(f"models must be a non-empty sequence of HybridTrustModel, got {models!r}")
    for i, mod in enumerate(models):
        if not isinstance(mod, HybridTrustModel):
            raise TypeError(f"models[{i}] must be a HybridTrustModel, got {mod!r}")
    draws = check_integer(draws, "draws", 4)
    tune = check_integer(tune, "tune", 0)
    chains = check_integer(chains, "chains", 1)
    seed = check_integer(seed, "seed", 0)
    random_seed = chain_seeds(seed, chains, sample_kwargs)
    sample_kwargs.setdefault("cores", 1)
    sample_kwargs.setdefault("compute_convergence_checks", False)
    single = len(models) == 1
    prefixes = [""] if single else [f"k{i}::" for i in range(len(models))]
    with pm.Model() as model:
        for i, mod in enumerate(models):
            if single:
                mod._populate()
            else:
                with pm.Model(name=f"k{i}"):
                    mod._populate()
        idata = pm.sample(
            draws=draws, tune=tune, chains=chains, random_seed=random_seed, progressbar=progressbar, **sample_kwargs
        )
    post = idata["posterior"]
    out = []
    for pre, mod in zip(prefixes, models):
        arr = {k: np.asarray(post[pre + k].transpose("chain", "draw").values, dtype=float)
               for k in (*_MOMENTS, *mod.free_names)}
        rhat = {k: _rhat(a) for k, a in arr.items()}
        out.append(HybridTrustPosterior(arr["sigma_T2"], arr["sigma_L2"], arr["gap"], rhat=rhat, idata=idata,
                                        model=model, spec=mod))
    return out
