"""The data families of :class:`hybridpriv.models.GroupedDataModel`: normal, beta, any PyMC distribution.

A family supplies the priors of its parameters, the censored likelihood of public records on
the bounds, a NumPy simulator of clamped records and the clamped distribution's moments.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from numbers import Integral
from typing import Any

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pytensor.graph.basic import Variable
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.type import RandomGeneratorType, random_generator_type
from pytensor.tensor.variable import TensorVariable

from ...core.privacy import Bounds, check_finite, check_positive
from . import clamped_normal_moments

__all__ = ["BETA_BOUNDARY_NUDGE", "BetaFamily", "CUSTOM_MC_SAMPLES", "CustomFamily", "Family", "NormalFamily", "Params"]

#: How far (on the unit scale) :class:`BetaFamily` moves public records lying exactly on a
#: bound inside ``(0, 1)`` before they enter the Beta likelihood (whose density is 0 or
#: infinite on the boundary).  On the data scale the shift is ``1e-6 * (upper - lower)``.
BETA_BOUNDARY_NUDGE = 1e-6

#: Default number of Monte Carlo samples :class:`CustomFamily` uses for population moments.
#: The standard error of the mean is ``sqrt(variance / 20000)``, about 0.7% of a standard
#: deviation.
CUSTOM_MC_SAMPLES = 20_000

Params = Mapping[str, float]


def _check_prior_pair(pair: object, name: str) -> tuple[float, float]:
    """A ``(location, positive scale)`` pair of a prior."""
    if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
        raise TypeError(f"{name} must be a pair of numbers, got {pair!r}")
    return check_finite(pair[0], f"{name}[0]"), check_positive(pair[1], f"{name}[1]")


# --------------------------------------------------------------------------------------
# Families
# --------------------------------------------------------------------------------------


class Family(ABC):
    """A parametric data distribution, clamped to the bounds.

    A family is bound to a :class:`~hybridpriv.core.privacy.Bounds` (:meth:`with_bounds`; a
    :class:`GroupedDataModel` does this for you) and then offers:

    * :meth:`priors`, run inside a ``pm.Model`` context, creating the named priors;
    * :meth:`observe`, adding observed public records (clamped to the bounds);
    * :meth:`simulate`, drawing clamped records for numeric parameters;
    * :meth:`population`, the clamped distribution's mean, median and variance;
    * :meth:`clamped_moments`, the clamped mean and variance as pytensor expressions
      (only families with ``supports_released_means``);
    * :meth:`known_variance_params`, fixing parameters from a published variance (only
      families that support ``known_variance``).
    """

    #: Short name used in error messages (``family='normal'``).
    name: str = "family"
    #: Whether :meth:`clamped_moments` is available (needed for :class:`ReleasedMean`).
    supports_released_means: bool = False

    def __init__(self, bounds: Bounds | tuple[float, float] | None = None) -> None:
        self._bounds = None if bounds is None else Bounds.from_pair(bounds)

    @property
    def bounds(self) -> Bounds:
        """The bounds the family clamps to (error if the family is not bound yet)."""
        if self._bounds is None:
            raise ValueError(
                f"{type(self).__name__} has no bounds; pass bounds=... or use it through GroupedDataModel"
            )
        return self._bounds

    @property
    def is_bound(self) -> bool:
        """True once the family knows its bounds."""
        return self._bounds is not None

    @abstractmethod
    def _copy(self) -> Family:
        """A shallow copy (used by :meth:`with_bounds`)."""

    def with_bounds(self, bounds: Bounds | tuple[float, float]) -> Family:
        """Return a copy of this family bound to ``bounds``.

        Raises
        ------
        ValueError
            If the family is already bound to different bounds.
        """
        b = Bounds.from_pair(bounds)
        if self._bounds is not None and self._bounds != b:
            raise ValueError(
                f"family bounds [{self._bounds.lower:g}, {self._bounds.upper:g}] differ from "
                f"the model's bounds [{b.lower:g}, {b.upper:g}]"
            )
        new = self._copy()
        new._bounds = b
        return new

    @abstractmethod
    def priors(self, fixed: Params | None = None) -> dict[str, TensorVariable]:
        """Create the named priors in the current model; return all parameters by name.

        Parameters in ``fixed`` are constants, not random variables.
        """

    @abstractmethod
    def observe(self, name: str, params: Mapping[str, TensorVariable], values: np.ndarray) -> TensorVariable:
        """Add ``values`` (records inside the bounds) as an observed variable ``name``."""

    @abstractmethod
    def simulate(self, params: Params, size: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``size`` records clamped to the bounds, using only ``rng``."""

    @abstractmethod
    def population(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, float]:
        """``{"mean", "median", "variance"}`` of the clamped distribution at ``params``.

        ``rng`` is used only by families whose moments are computed by Monte Carlo.
        """

    def clamped_moments(self, params: Mapping[str, TensorVariable]) -> tuple[TensorVariable, TensorVariable]:
        """Clamped mean and variance as pytensor expressions of the parameters."""
        raise ValueError(
            "released_means need a family with closed-form clamped moments (normal, beta, mixture), "
            f"got {self!r}"
        )

    def known_variance_params(self, known_variance: float) -> dict[str, float]:
        """The parameters a published variance fixes (``{}`` not supported: ValueError)."""
        raise ValueError(f"known_variance is supported for family='normal' only, got family={self.name!r}")


class NormalFamily(Family):
    """Records ``Normal(mu, sigma^2)`` clamped to the bounds ``[a, b]``.

    Parameters
    ----------
    mu
        ``(mean, sd)`` of the Normal prior on ``mu``.  Default: centred at the bounds'
        midpoint with ``sd`` = bounds width.
    sigma_scale
        Scale of the HalfNormal prior on ``sigma``.  Default: bounds width / 2.
    bounds
        Optional; a :class:`GroupedDataModel` binds the family to its own bounds.

    Notes
    -----
    Clamped values sit exactly on a bound, so public records enter as
    ``pm.Censored(pm.Normal.dist(mu, sigma), lower=a, upper=b)``.  Population moments are
    :func:`hybridpriv.families.grouped.clamped_normal_moments`.  The parameters are ``"mu"`` and
    ``"sigma"`` (of the unclamped distribution).
    """

    name = "normal"
    supports_released_means = True

    def __init__(
        self,
        mu: tuple[float, float] | None = None,
        sigma_scale: float | None = None,
        bounds: Bounds | tuple[float, float] | None = None,
    ) -> None:
        super().__init__(bounds)
        self.mu = None if mu is None else _check_prior_pair(mu, "mu")
        self.sigma_scale = None if sigma_scale is None else check_positive(sigma_scale, "sigma_scale")

    def __repr__(self) -> str:
        return f"NormalFamily(mu={self.mu!r}, sigma_scale={self.sigma_scale!r})"

    def _copy(self) -> NormalFamily:
        return NormalFamily(self.mu, self.sigma_scale, self._bounds)

    @property
    def mu_prior(self) -> tuple[float, float]:
        """``(mean, sd)`` of the prior on ``mu`` (defaults resolved from the bounds)."""
        return self.mu if self.mu is not None else (self.bounds.midpoint, self.bounds.width)

    @property
    def sigma_prior_scale(self) -> float:
        """HalfNormal scale of the prior on ``sigma`` (default resolved from the bounds)."""
        return self.sigma_scale if self.sigma_scale is not None else self.bounds.width / 2

    def priors(self, fixed: Params | None = None) -> dict[str, TensorVariable]:
        fixed = dict(fixed or {})
        out: dict[str, TensorVariable] = {}
        for name in ("mu", "sigma"):
            if name in fixed:
                out[name] = pt.as_tensor_variable(float(fixed[name]))
            elif name == "mu":
                m, s = self.mu_prior
                out[name] = pm.Normal("mu", mu=m, sigma=s)
            else:
                out[name] = pm.HalfNormal("sigma", sigma=self.sigma_prior_scale)
        return out

    def observe(self, name: str, params: Mapping[str, TensorVariable], values: np.ndarray) -> TensorVariable:
        b = self.bounds
        return pm.Censored(
            name, pm.Normal.dist(params["mu"], params["sigma"]), lower=b.lower, upper=b.upper, observed=values
        )

    def simulate(self, params: Params, size: int, rng: np.random.Generator) -> np.ndarray:
        b = self.bounds
        return np.clip(rng.normal(float(params["mu"]), float(params["sigma"]), size), b.lower, b.upper)

    def population(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, float]:
        return clamped_normal_moments(float(params["mu"]), float(params["sigma"]), self.bounds)

    def clamped_moments(self, params: Mapping[str, TensorVariable]) -> tuple[TensorVariable, TensorVariable]:
        """The formulas of :func:`hybridpriv.families.grouped.clamped_normal_moments` in pytensor."""
        a, b = self.bounds.lower, self.bounds.upper
        mu, sigma = params["mu"], params["sigma"]
        al, be = (a - mu) / sigma, (b - mu) / sigma
        Pa, Pb = 0.5 * pt.erfc(-al / np.sqrt(2.0)), 0.5 * pt.erfc(-be / np.sqrt(2.0))
        pa, pb = pt.exp(-0.5 * al**2) / np.sqrt(2 * np.pi), pt.exp(-0.5 * be**2) / np.sqrt(2 * np.pi)
        mid = Pb - Pa
        m1 = mu * mid + sigma * (pa - pb)
        m2 = (mu**2 + sigma**2) * mid + 2 * mu * sigma * (pa - pb) + sigma**2 * (al * pa - be * pb)
        mean = a * Pa + b * (1 - Pb) + m1
        second = a * a * Pa + b * b * (1 - Pb) + m2
        return mean, pt.maximum(second - mean**2, 0.0)

    def known_variance_params(self, known_variance: float) -> dict[str, float]:
        """``sigma = sqrt(known_variance)`` (a variance of the unclamped distribution)."""
        return {"sigma": math.sqrt(known_variance)}


class BetaFamily(Family):
    """Records ``a + (b - a) * Beta(m * kappa, (1 - m) * kappa)`` on the bounds ``[a, b]``.

    Parameters
    ----------
    mean
        ``(alpha, beta)`` of the Beta prior on ``m``, the mean on the unit scale.
        Default ``(1, 1)`` (uniform).
    concentration
        ``(shape, rate)`` of the Gamma prior on the concentration ``kappa = alpha + beta``.
        Default ``(2, 0.1)``: prior mean 20, wide enough for U-shaped (``kappa < 2``) and
        tightly concentrated (``kappa`` in the hundreds) data.
    bounds
        Optional; a :class:`GroupedDataModel` binds the family to its own bounds.

    Notes
    -----
    The records never leave the bounds, so clamping is the identity.  Observed public
    records are rescaled to the unit interval; values exactly on a bound are moved inside
    by :data:`BETA_BOUNDARY_NUDGE`.  Population mean ``a + (b - a) m``, variance
    ``(b - a)^2 m (1 - m) / (kappa + 1)``, median from ``scipy.stats.beta``.
    The parameters are ``"m"`` and ``"kappa"``.
    """

    name = "beta"
    supports_released_means = True

    def __init__(
        self,
        mean: tuple[float, float] = (1.0, 1.0),
        concentration: tuple[float, float] = (2.0, 0.1),
        bounds: Bounds | tuple[float, float] | None = None,
    ) -> None:
        super().__init__(bounds)
        if isinstance(mean, (str, bytes)) or not isinstance(mean, Sequence) or len(mean) != 2:
            raise TypeError(f"mean must be a pair (alpha, beta), got {mean!r}")
        self.mean = (check_positive(mean[0], "mean[0]"), check_positive(mean[1], "mean[1]"))
        if (
            isinstance(concentration, (str, bytes))
            or not isinstance(concentration, Sequence)
            or len(concentration) != 2
        ):
            raise TypeError(f"concentration must be a pair (shape, rate), got {concentration!r}")
        self.concentration = (
            check_positive(concentration[0], "concentration[0]"),
            check_positive(concentration[1], "concentration[1]"),
        )

    def __repr__(self) -> str:
        return f"BetaFamily(mean={self.mean!r}, concentration={self.concentration!r})"

    def _copy(self) -> BetaFamily:
        return BetaFamily(self.mean, self.concentration, self._bounds)

    def priors(self, fixed: Params | None = None) -> dict[str, TensorVariable]:
        fixed = dict(fixed or {})
        out: dict[str, TensorVariable] = {}
        out["m"] = (
            pt.as_tensor_variable(float(fixed["m"]))
            if "m" in fixed
            else pm.Beta("m", alpha=self.mean[0], beta=self.mean[1])
        )
        out["kappa"] = (
            pt.as_tensor_variable(float(fixed["kappa"]))
            if "kappa" in fixed
            else pm.Gamma("kappa", alpha=self.concentration[0], beta=self.concentration[1])
        )
        return out

    def to_unit(self, values: np.ndarray) -> np.ndarray:
        """Records rescaled to ``(0, 1)``, bound values nudged inside (see module constant); a PyTensor
        variable (``pm.Data``) is rescaled symbolically."""
        b = self.bounds
        if isinstance(values, Variable):
            return pt.clip((values - b.lower) / b.width, BETA_BOUNDARY_NUDGE, 1.0 - BETA_BOUNDARY_NUDGE)
        z = (np.asarray(values, dtype=float) - b.lower) / b.width
        return np.clip(z, BETA_BOUNDARY_NUDGE, 1.0 - BETA_BOUNDARY_NUDGE)

    def observe(self, name: str, params: Mapping[str, TensorVariable], values: np.ndarray) -> TensorVariable:
        m, kappa = params["m"], params["kappa"]
        return pm.Beta(name, alpha=m * kappa, beta=(1 - m) * kappa, observed=self.to_unit(values))

    def simulate(self, params: Params, size: int, rng: np.random.Generator) -> np.ndarray:
        b = self.bounds
        m, kappa = float(params["m"]), float(params["kappa"])
        z = rng.beta(m * kappa, (1 - m) * kappa, size)
        return np.clip(b.lower + b.width * z, b.lower, b.upper)

    def population(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, float]:
        from scipy import stats

        b = self.bounds
        m, kappa = float(params["m"]), float(params["kappa"])
        median = float(stats.beta.median(m * kappa, (1 - m) * kappa))
        return {
            "mean": b.lower + b.width * m,
            "median": b.lower + b.width * median,
            "variance": b.width**2 * m * (1 - m) / (kappa + 1),
        }

    def clamped_moments(self, params: Mapping[str, TensorVariable]) -> tuple[TensorVariable, TensorVariable]:
        b = self.bounds
        m, kappa = params["m"], params["kappa"]
        return b.lower + b.width * m, b.width**2 * m * (1 - m) / (kappa + 1)


class CustomFamily(Family):
    """Any PyMC distribution as the data distribution, clamped to the bounds.

    Parameters
    ----------
    priors
        ``priors() -> dict[str, tensor]``, run inside the model context: creates named
        priors (``pm.Normal("mu", ...)``) and returns the distribution's parameters by
        name.  A returned expression that is not a named model variable is registered as
        ``pm.Deterministic`` under its key, so every parameter is in the posterior.
    dist
        ``dist(**params) -> pm.X.dist(...)``: an unnamed, scalar PyMC distribution on the
        data scale.  It is called with pytensor scalars, so it must use pytensor (not numpy)
        operations.  Observations enter as ``pm.Censored(dist, lower=a, upper=b)``.
    mc_samples
        Monte Carlo samples for :meth:`population` (default :data:`CUSTOM_MC_SAMPLES`).
    mc_seed
        Seed of the Monte Carlo when :meth:`population` is given no ``rng``.
    bounds
        Optional; a :class:`GroupedDataModel` binds the family to its own bounds.

    Notes
    -----
    Simulation draws what ``pm.draw(dist(**params), draws=size, random_seed=rng)`` would
    draw, then clips to the bounds; for speed the draw function is compiled once (with the
    parameters and the random generator as inputs) instead of once per call.  The
    generator passed to the function is a child seeded from ``rng``, so ``rng`` advances.
    ``known_variance`` and released means are not supported (no closed-form moments).
    """

    name = "custom"

    def __init__(
        self,
        priors: Callable[[], Mapping[str, Any]],
        dist: Callable[..., TensorVariable],
        mc_samples: int = CUSTOM_MC_SAMPLES,
        mc_seed: int = 0,
        bounds: Bounds | tuple[float, float] | None = None,
    ) -> None:
        super().__init__(bounds)
        if not callable(priors):
            raise TypeError(f"priors must be callable, got {priors!r}")
        if not callable(dist):
            raise TypeError(f"dist must be callable, got {dist!r}")
        if not isinstance(mc_samples, Integral) or isinstance(mc_samples, bool) or mc_samples < 2:
            raise ValueError(f"mc_samples must be an integer >= 2, got {mc_samples!r}")
        if not isinstance(mc_seed, Integral) or isinstance(mc_seed, bool) or mc_seed < 0:
            raise ValueError(f"mc_seed must be an integer >= 0, got {mc_seed!r}")
        self.priors_fn = priors
        self.dist = dist
        self.mc_samples = int(mc_samples)
        self.mc_seed = int(mc_seed)
        self._samplers: dict[tuple[str, ...], Callable[..., np.ndarray]] = {}

    def __repr__(self) -> str:
        return f"CustomFamily(priors={self.priors_fn!r}, dist={self.dist!r})"

    def _copy(self) -> CustomFamily:
        new = CustomFamily(self.priors_fn, self.dist, self.mc_samples, self.mc_seed, self._bounds)
        new._samplers = self._samplers  # compiled samplers do not depend on the bounds
        return new

    def priors(self, fixed: Params | None = None) -> dict[str, TensorVariable]:
        if fixed:
            raise ValueError(f"CustomFamily cannot fix parameters, got fixed={dict(fixed)!r}")
        model = pm.modelcontext(None)
        params = self.priors_fn()
        if not isinstance(params, Mapping) or not params:
            raise TypeError(f"priors() must return a non-empty dict name -> tensor, got {params!r}")
        out: dict[str, TensorVariable] = {}
        for key, value in params.items():
            if not isinstance(key, str) or not key:
                raise TypeError(f"priors() keys must be non-empty strings, got {key!r}")
            existing = model.named_vars.get(key)
            if existing is not None and existing is value:
                out[key] = existing
            elif existing is not None:
                raise ValueError(
                    f"priors() returned {key!r} for an expression, but the model already has a "
                    f"different variable named {key!r}"
                )
            else:
                out[key] = pm.Deterministic(key, pt.as_tensor_variable(value))
        return out

    def _dist_checked(self, params: Mapping[str, Any]) -> TensorVariable:
        rv = self.dist(**params)
        if not isinstance(rv, TensorVariable) or rv.owner is None:
            raise TypeError(f"dist(**params) must return an unnamed pm.X.dist(...) variable, got {rv!r}")
        if rv.ndim != 0:
            raise ValueError(f"dist(**params) must be a scalar distribution, got ndim={rv.ndim}")
        return rv

    def observe(self, name: str, params: Mapping[str, TensorVariable], values: np.ndarray) -> TensorVariable:
        b = self.bounds
        return pm.Censored(name, self._dist_checked(params), lower=b.lower, upper=b.upper, observed=values)

    def _sampler(self, names: tuple[str, ...]) -> Callable[..., np.ndarray]:
        """``f(*param_values, size, generator) -> draws``, compiled once per parameter set."""
        if names not in self._samplers:
            from pymc.distributions.shape_utils import change_dist_size

            syms = {n: pt.dscalar(n) for n in names}
            size = pt.lscalar("size")
            rv = change_dist_size(self._dist_checked(syms), [size])
            rngs = [v for v in ancestors([rv]) if isinstance(v.type, RandomGeneratorType)]
            rng_inputs = [random_generator_type(f"rng{i}") for i in range(len(rngs))]
            out = graph_replace(rv, dict(zip(rngs, rng_inputs)))
            from ...core.model import sampling_mode  # strict floating point: the same bits whatever the cache

            fn = pytensor.function([*syms.values(), size, *rng_inputs], out, mode=sampling_mode())
            n_rng = len(rng_inputs)

            def sample(values: Sequence[float], n: int, rng: np.random.Generator) -> np.ndarray:
                children = [np.random.default_rng(int(s)) for s in rng.integers(0, 2**63, size=n_rng)]
                return np.asarray(fn(*values, n, *children), dtype=float)

            self._samplers[names] = sample
        return self._samplers[names]

    def simulate(self, params: Params, size: int, rng: np.random.Generator) -> np.ndarray:
        b = self.bounds
        names = tuple(sorted(params))
        x = self._sampler(names)([float(params[n]) for n in names], int(size), rng)
        return np.clip(x, b.lower, b.upper)

    def population(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, float]:
        """Monte Carlo moments from ``mc_samples`` clamped draws (``rng`` or ``mc_seed``)."""
        if rng is None:
            rng = np.random.default_rng(self.mc_seed)
        x = self.simulate(params, self.mc_samples, rng)
        return {"mean": float(x.mean()), "median": float(np.median(x)), "variance": float(x.var(ddof=1))}


_FAMILIES: dict[str, type[Family]] = {"normal": NormalFamily, "beta": BetaFamily}


# --------------------------------------------------------------------------------------
# Released means
# --------------------------------------------------------------------------------------
