"""A PyMC generative model of public knowledge about grouped data.

:class:`GroupedDataModel` turns what is *public* about a dataset split into privacy groups
into a posterior over the data distribution:

* the records of public groups (``epsilon = inf``) that are available, entering the model
  as observations clamped to the bounds;
* optionally a published variance of the data distribution (``known_variance``);
* optionally earlier differentially private releases of group means
  (:class:`ReleasedMean`), each a noisy mean ``y = mean(records) + Laplace(0, b)``.

Private records are never handed to the model.  The fitted result,
:class:`GroupedPosterior`, is a :class:`hybridpriv.data.DatasetSource`: at every posterior
draw ``(chain, draw)`` it generates a simulated dataset, keeping the observed public records
and simulating every other group from the data distribution at that draw.

The data distribution is a *family* (:class:`NormalFamily`, :class:`BetaFamily`, or any PyMC
distribution through :class:`CustomFamily`), always clamped to the declared bounds.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from numbers import Integral
from typing import Any

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.type import RandomGeneratorType, random_generator_type
from pytensor.tensor.variable import TensorVariable

from hybridpriv.data import GroupedDataset, clamped_normal_moments
from hybridpriv.privacy import Bounds, Group, check_finite, check_groups, check_positive, check_real_array

from ._base import KnowledgeModel, Posterior

__all__ = [
    "BETA_BOUNDARY_NUDGE",
    "BetaFamily",
    "CUSTOM_MC_SAMPLES",
    "CustomFamily",
    "Family",
    "GroupedDataModel",
    "GroupedPosterior",
    "NormalFamily",
    "RELEASE_TAIL",
    "ReleasedMean",
]

#: How far (on the unit scale) :class:`BetaFamily` moves public records lying exactly on a
#: bound inside ``(0, 1)`` before they enter the Beta likelihood (whose density is 0 or
#: infinite on the boundary).  On the data scale the shift is ``1e-6 * (upper - lower)``.
BETA_BOUNDARY_NUDGE = 1e-6

#: How many noise scales a released mean may lie outside the bounds before it is refused as
#: contradictory (Laplace noise exceeds it with probability e^-50).
RELEASE_TAIL = 50.0

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

    A family is bound to a :class:`~hybridpriv.privacy.Bounds` (:meth:`with_bounds`; a
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
            f"released_means are supported for family='normal' and family='beta' only "
            f"(closed-form clamped moments), got {self!r}"
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
    :func:`hybridpriv.data.clamped_normal_moments`.  The parameters are ``"mu"`` and
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
        """The formulas of :func:`hybridpriv.data.clamped_normal_moments` in pytensor."""
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
        """Records rescaled to ``(0, 1)``, bound values nudged inside (see module constant)."""
        b = self.bounds
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
            fn = pytensor.function([*syms.values(), size, *rng_inputs], out)
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


@dataclass(frozen=True)
class ReleasedMean:
    """An earlier DP release ``y = mean(records) + Laplace(0, noise_scale)``.

    Parameters
    ----------
    value
        The released number ``y``.
    noise_scale
        Scale ``b`` of the Laplace noise (``b = sensitivity / epsilon``).
    group
        The group whose records were averaged; ``None`` means all groups pooled.
    """

    value: float
    noise_scale: float
    group: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", check_finite(self.value, "value"))
        object.__setattr__(self, "noise_scale", check_positive(self.noise_scale, "noise_scale"))
        if self.group is not None and not isinstance(self.group, str):
            raise TypeError(f"group must be a group name or None, got {self.group!r}")


# --------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------


class GroupedDataModel(KnowledgeModel):
    """A PyMC model of public knowledge about data split into privacy groups.

    Parameters
    ----------
    groups
        The privacy groups (:class:`~hybridpriv.privacy.Group`), checked with
        :func:`~hybridpriv.privacy.check_groups`.
    bounds
        :class:`~hybridpriv.privacy.Bounds` or a ``(lower, upper)`` pair.
    family
        ``"normal"``, ``"beta"`` or a :class:`Family` instance.
    public_data
        Mapping group name -> 1-D array of that *public* group's records.  Public groups
        without data are simulated like private ones.
    known_variance
        A published variance of the (unclamped) data distribution; normal family only
        (``sigma`` is fixed to its square root).
    released_means
        Earlier DP releases of group means (:class:`ReleasedMean`); normal and beta only.
    clamp
        Clip public records into the bounds instead of raising on values outside them.

    Raises
    ------
    ValueError, TypeError
        On any invalid input, naming the parameter and the bad value; all checks happen
        here, before any sampling.

    Notes
    -----
    Each released mean adds a latent mean of the records it averaged.  Records of public
    groups with data are known, so only the sum of the other ``n_u`` records is latent:
    ``S ~ Normal(n_u * m, sqrt(n_u * v))`` (central limit theorem, with ``m`` and ``v``
    the clamped population mean and variance, non-centred), the latent mean is
    ``(known sum + S) / n`` and ``y ~ Laplace(latent mean, noise_scale)``.  When only
    public groups with data were averaged the release carries no information and is left
    out of the model.
    """

    def __init__(
        self,
        groups: Sequence[Group],
        bounds: Bounds | tuple[float, float],
        family: str | Family = "normal",
        public_data: Mapping[str, np.ndarray] | None = None,
        known_variance: float | None = None,
        released_means: Sequence[ReleasedMean] = (),
        clamp: bool = False,
    ) -> None:
        self.groups = check_groups(groups)
        self.bounds = Bounds.from_pair(bounds)
        if not isinstance(clamp, bool):
            raise TypeError(f"clamp must be True or False, got {clamp!r}")
        self.clamp = clamp

        if isinstance(family, str):
            if family not in _FAMILIES:
                raise ValueError(f"family must be one of {sorted(_FAMILIES)} or a Family instance, got {family!r}")
            family = _FAMILIES[family]()
        elif not isinstance(family, Family):
            raise TypeError(f"family must be 'normal', 'beta' or a Family instance, got {family!r}")
        self.family: Family = family.with_bounds(self.bounds)

        self.public_data = self._check_public_data(public_data)

        self.known_variance: float | None = None
        self.fixed: dict[str, float] = {}
        if known_variance is not None:
            kv = check_positive(known_variance, "known_variance")
            self.fixed = self.family.known_variance_params(kv)
            self.known_variance = kv

        self.released_means = self._check_released(released_means)

    # -- validation -------------------------------------------------------------------

    def _group(self, name: object, param: str) -> Group:
        for g in self.groups:
            if g.name == name:
                return g
        raise ValueError(f"{param} names unknown group {name!r}; groups are {[g.name for g in self.groups]}")

    def _check_public_data(self, public_data: object) -> dict[str, np.ndarray]:
        if public_data is None:
            return {}
        if not isinstance(public_data, Mapping):
            raise TypeError(f"public_data must be a mapping group name -> records, got {type(public_data).__name__}")
        out: dict[str, np.ndarray] = {}
        for name, values in public_data.items():
            param = f"public_data[{name!r}]"
            g = self._group(name, "public_data")
            if not g.is_public:
                raise ValueError(
                    f"public_data given for group {name!r}, which is not public (epsilon={g.epsilon:g}); "
                    "private records must never be handed to the model"
                )
            arr = check_real_array(values, param).copy()  # a private copy, made read-only below
            if arr.ndim != 1 or arr.shape[0] != g.size:
                raise ValueError(
                    f"{param} must be a 1-D array of {g.size} records (the group's declared size), got shape {arr.shape}"
                )
            if np.isnan(arr).any():
                raise ValueError(f"{param} contains NaN")
            arr = self.bounds.clamp(arr) if self.clamp else self.bounds.check(arr, name=param)
            arr.setflags(write=False)
            out[g.name] = arr
        return out

    def _check_released(self, released_means: object) -> tuple[ReleasedMean, ...]:
        if isinstance(released_means, ReleasedMean):
            released_means = (released_means,)
        if isinstance(released_means, (str, bytes)) or not isinstance(released_means, Sequence):
            raise TypeError(f"released_means must be a sequence of ReleasedMean, got {released_means!r}")
        for i, r in enumerate(released_means):
            if not isinstance(r, ReleasedMean):
                raise TypeError(f"released_means[{i}] must be a ReleasedMean, got {r!r}")
            if r.group is not None:
                self._group(r.group, f"released_means[{i}].group")
            # a mean lies in the bounds; Laplace noise beyond RELEASE_TAIL scales has probability
            # e^-RELEASE_TAIL, so a release farther out than that is contradictory knowledge
            slack = RELEASE_TAIL * r.noise_scale
            if not (self.bounds.lower - slack <= r.value <= self.bounds.upper + slack):
                raise ValueError(
                    f"released_means[{i}].value = {r.value:g} is impossible: a mean lies in the bounds "
                    f"[{self.bounds.lower:g}, {self.bounds.upper:g}] and Laplace noise of scale {r.noise_scale:g} "
                    f"exceeds {RELEASE_TAIL:g} scales with probability e^-{RELEASE_TAIL:g}"
                )
        if released_means and not self.family.supports_released_means:
            raise ValueError(
                "released_means are supported for family='normal' and family='beta' only "
                f"(closed-form clamped moments), got {self.family!r}"
            )
        return tuple(released_means)

    # -- model ------------------------------------------------------------------------

    def build(self) -> pm.Model:
        """The PyMC model: priors, public records, released means.

        Returns
        -------
        pm.Model
            A fresh model; its free family parameters are named as in :meth:`Family.priors`.
        """
        with pm.Model() as model:
            params = self.family.priors(self.fixed)
            for g in self.groups:
                if g.name in self.public_data:
                    self.family.observe(f"public_{g.name}", params, self.public_data[g.name])
            for i, r in enumerate(self.released_means):
                members = [g for g in self.groups if r.group is None or g.name == r.group]
                n = sum(g.size for g in members)
                known_sum = sum(float(self.public_data[g.name].sum()) for g in members if g.name in self.public_data)
                n_u = sum(g.size for g in members if g.name not in self.public_data)
                if n_u == 0:
                    continue  # the averaged records are all observed: no information
                mean, var = self.family.clamped_moments(params)
                z = pm.Normal(f"released_mean_{i}_z", 0.0, 1.0)
                latent = pm.Deterministic(
                    f"released_mean_{i}_latent", (known_sum + n_u * mean + pt.sqrt(n_u * var) * z) / n
                )
                pm.Laplace(f"released_mean_{i}", mu=latent, b=r.noise_scale, observed=r.value)
        self.param_names: tuple[str, ...] = tuple(params)
        return model

class GroupedPosterior(Posterior):
    """A fitted :class:`GroupedDataModel`: a :class:`hybridpriv.data.DatasetSource`.

    Parameters
    ----------
    spec
        The :class:`GroupedDataModel` that was fitted.
    idata
        The ``xarray.DataTree`` returned by ``pm.sample``.
    seed
        The fit's seed (used for Monte Carlo population moments of custom families).

    Attributes
    ----------
    groups, bounds
        The setting (as the :class:`~hybridpriv.data.DatasetSource` protocol asks).
    family
        The bound :class:`Family`.
    """

    data_kind = "grouped"

    def __init__(self, spec: GroupedDataModel, idata: Any, seed: int = 0) -> None:
        super().__init__(spec, idata, seed)
        self.spec = spec
        self.groups: tuple[Group, ...] = spec.groups
        self.bounds: Bounds = spec.bounds
        self.family = spec.family
        self.param_names = spec.param_names
        self.free_params = tuple(n for n in self.param_names if n not in spec.fixed)
        self.convergence_vars = self.free_params
        post = idata["posterior"]
        self._draws = {n: np.asarray(post[n].transpose("chain", "draw").values, dtype=float) for n in self.free_params}

    def __repr__(self) -> str:
        return f"GroupedPosterior(family={self.family!r}, groups={[g.name for g in self.groups]}, shape={self.shape})"

    def params(self, chain: int, draw: int) -> dict[str, float]:
        """The family parameters at posterior draw ``(chain, draw)`` (fixed ones included)."""
        c, d = self._check_index(chain, draw)
        out = {n: float(self.spec.fixed[n]) for n in self.param_names if n in self.spec.fixed}
        out.update({n: float(a[c, d]) for n, a in self._draws.items()})
        return {n: out[n] for n in self.param_names}

    def generate(self, chain: int, draw: int, rng: np.random.Generator) -> GroupedDataset:
        """The simulated dataset at ``(chain, draw)``.

        Public groups with data keep their observed records; every other group gets
        ``family.simulate(params, group.size, rng)``.  ``population`` holds the clamped
        distribution's mean, median and variance at these parameters (Monte Carlo families
        draw it from ``rng`` after the records, so the records do not depend on it).
        """
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {rng!r}")
        p = self.params(chain, draw)
        public = self.spec.public_data
        values = tuple(
            public[g.name] if g.name in public else self.family.simulate(p, g.size, rng) for g in self.groups
        )
        return GroupedDataset(values, self.family.population(p, rng))

    def predictive_checks(self, seed: int = 0, draws: int = 400):
        """Posterior predictive checks of the public knowledge (:mod:`hybridpriv.criticism`).

        For ``draws`` posterior draws (spread evenly), replicate every public group's records
        (``family.simulate``, as many as published) and every earlier release (the group's
        replicated mean plus its Laplace noise; unpublished records drawn from the model).
        Statistics: each public group's mean, standard deviation, 10/50/90% quantiles and share
        of records at each bound; each release's value.  Randomness: stream
        ``("predictive-check", seed)``.
        """
        from hybridpriv.random import rng as stream_rng

        from ._grouped_checks import grouped_predictive_checks

        return grouped_predictive_checks(self, stream_rng(seed, "predictive-check"), draws)

    @cached_property
    def population_posterior_means(self) -> dict[str, float]:
        """Posterior means of the clamped distribution's ``mean``, ``mean_square`` (the
        squared mean) and ``variance``: averages over all draws of ``family.population(params)``.
        Monte Carlo families use a generator seeded from ``(seed, chain, draw)``.
        """
        totals = {"mean": 0.0, "mean_square": 0.0, "variance": 0.0}
        chains, draws = self._shape
        for c in range(chains):
            for d in range(draws):
                rng = np.random.default_rng([self.seed, c, d])
                pop = self.family.population(self.params(c, d), rng)
                totals["mean"] += pop["mean"]
                totals["mean_square"] += pop["mean"] ** 2
                totals["variance"] += pop["variance"]
        return {k: v / (chains * draws) for k, v in totals.items()}

    @property
    def variance_posterior_mean(self) -> float:
        """Posterior mean of the clamped distribution's variance: the Bayes plug-in
        ``sigma^2`` for the weighted mean (see ``docs/theory.md``)."""
        return self.population_posterior_means["variance"]

    @property
    def mean_square_posterior_mean(self) -> float:
        """Posterior mean of the squared population mean, ``E[mu^2]`` (used by PDP Sample
        with the expected-count denominator)."""
        return self.population_posterior_means["mean_square"]


GroupedDataModel.posterior_class = GroupedPosterior
