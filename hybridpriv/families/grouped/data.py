"""The grouped family's data: :class:`GroupedDataset` (one array of records per privacy group), the sources
that simulate it from known distributions (:class:`IIDSource`, :func:`normal_source` and the samplers) and the
clamped normal's moments.

The evaluation engine asks a source for the dataset of one ``(chain, draw)`` index and hands it a NumPy
``Generator`` on the stream ``("dataset", chain, draw)`` (:mod:`hybridpriv.core.data` has the protocol).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real

import numpy as np

from ...core.data import _check_draws
from ...core.params import Parametrized
from ...core.privacy import Bounds, Group, check_groups

__all__ = ["GROUP_SHIFT", "BetaSampler", "GroupedDataset", "IIDSource", "NormalSampler", "STATISTICS", "UniformSampler",
           "clamped_normal_moments", "normal_source", "sample_statistic"]

#: ``groups_may_differ``: the prior scale of a private group's shift against the public law, as a share of the
#: bounds' width (``group_shift_sd ~ HalfNormal(GROUP_SHIFT x width)``; the model's default, the SPEC's
#: ``model.group_shift``).
GROUP_SHIFT = 0.05

#: Statistics a dataset's truth is computed for.
STATISTICS = ("mean", "median")

def sample_statistic(values: Sequence[np.ndarray], statistic: str) -> float:
    """The statistic of all records pooled (the simulated dataset's own value)."""
    pooled = np.concatenate([np.ravel(v) for v in values])
    if statistic == "mean":
        return float(pooled.mean())
    if statistic == "median":
        return float(np.median(pooled))
    raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")


@dataclass(frozen=True)
class GroupedDataset:
    """One simulated dataset.

    Parameters
    ----------
    values
        One 1-D float array per group, in group order, inside the bounds.
    population
        The data distribution's own values (``"mean"``, ``"median"``, ``"variance"``) of the
        distribution the records were drawn from, after clamping to the bounds.
    """

    values: tuple[np.ndarray, ...]
    population: Mapping[str, float] = field(default_factory=dict)
    data_kind = "grouped"

    def __post_init__(self) -> None:
        # What the grouped estimators computed from ``values`` (validated arrays, group sums:
        # :func:`hybridpriv.families.grouped.estimator.grouped_statistics`), by setting, so the candidates
        # evaluated on one dataset share them; ``values`` are treated as read-only.  Not a field:
        # a dataset's description and fingerprint (checkpoints, provenance) must not depend on it.
        object.__setattr__(self, "statistics_cache", {})

    def truth(self, statistic: str, target: str = "population") -> float:
        """The value an estimator of ``statistic`` is scored against.

        ``target="population"`` uses the generating distribution's value (the papers'
        convention); ``target="sample"`` uses the pooled records of this dataset.
        """
        if target == "sample":
            return sample_statistic(self.values, statistic)
        if target == "population":
            if statistic not in self.population:
                raise ValueError(f"this dataset has no population {statistic!r}; use target='sample'")
            return float(self.population[statistic])
        raise ValueError(f"target must be 'population' or 'sample', got {target!r}")


@dataclass(frozen=True)
class NormalSampler:
    """``f(rng, size)`` drawing ``Normal(mu, sigma^2)`` (picklable, described by its fields)."""

    mu: float
    sigma: float

    def __call__(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.normal(self.mu, self.sigma, size)


@dataclass(frozen=True)
class BetaSampler:
    """``f(rng, size)`` drawing ``shift + scale * Beta(a, b)`` (picklable, described by its fields)."""

    a: float
    b: float
    scale: float = 1.0
    shift: float = 0.0

    def __call__(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return self.shift + self.scale * rng.beta(self.a, self.b, size=size)


@dataclass(frozen=True)
class UniformSampler:
    """``f(rng, size)`` drawing ``Uniform(low, high)`` (picklable, described by its fields)."""

    low: float
    high: float

    def __call__(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.uniform(self.low, self.high, size=size)


class IIDSource(Parametrized):
    """Grouped datasets drawn afresh from known distributions, clamped to the bounds.

    Parameters
    ----------
    groups, bounds
        The setting.
    sampler
        ``sampler(rng, size) -> ndarray`` drawing unclamped records, used for every group; or a
        sequence of samplers, one per group (groups from different distributions).  Give
        picklable samplers (e.g. :class:`NormalSampler`) for cluster runs; their fields are
        what results and checkpoints record.
    population
        The clamped distribution's ``mean``, ``median`` and ``variance`` (see
        :func:`clamped_normal_moments` for a normal distribution): the values a
        ``target="population"`` task scores against.
    draws
        How many datasets the source offers (one chain).
    public_values
        Optional fixed records for public groups, by group name (kept in every dataset).
    """

    data_kind = "grouped"

    def __init__(
        self,
        groups: Sequence[Group],
        bounds: Bounds | tuple[float, float],
        sampler: Callable[[np.random.Generator, int], np.ndarray] | Sequence[Callable],
        population: Mapping[str, float],
        draws: int,
        public_values: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        self.groups = check_groups(groups)
        self.bounds = Bounds.from_pair(bounds)
        samplers = list(sampler) if isinstance(sampler, Sequence) and not isinstance(sampler, (str, bytes)) else [sampler] * len(self.groups)
        if len(samplers) != len(self.groups):
            raise ValueError(f"sampler must be one callable or one per group ({len(self.groups)}), got {len(samplers)}")
        for f in samplers:
            if not callable(f):
                raise TypeError(f"sampler must be callable, got {f!r}")
        self.samplers = tuple(samplers)
        if not isinstance(population, Mapping):
            raise TypeError(f"population must be a mapping statistic -> value, got {population!r}")
        for key, value in population.items():
            if not isinstance(key, str):
                raise TypeError(f"population keys must be statistic names, got {key!r}")
            if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(float(value)):
                raise ValueError(f"population[{key!r}] must be a finite number, got {value!r}")
        self.population = {k: float(v) for k, v in population.items()}
        self.draws = _check_draws(draws)
        self.public_values = {}
        if public_values is not None and not isinstance(public_values, Mapping):
            raise TypeError(f"public_values must be a mapping group name -> records, got {public_values!r}")
        for name, vals in (public_values or {}).items():
            g = next((g for g in self.groups if g.name == name), None)
            if g is None:
                raise ValueError(f"public_values names unknown group {name!r}")
            if not g.is_public:
                raise ValueError(f"public_values given for group {name!r}, which is not public (epsilon={g.epsilon:g})")
            arr = self.bounds.check(vals, f"public_values[{name!r}]")
            if arr.shape != (g.size,):
                raise ValueError(f"public_values[{name!r}] must have {g.size} records, got shape {arr.shape}")
            self.public_values[name] = arr

    @property
    def sampler(self) -> Callable:
        """The first group's sampler (all groups' when one was given)."""
        return self.samplers[0]

    @property
    def shape(self) -> tuple[int, int]:
        return (1, self.draws)

    def generate(self, chain: int, draw: int, rng: np.random.Generator) -> GroupedDataset:
        values = []
        for g, f in zip(self.groups, self.samplers):
            if g.name in self.public_values:
                values.append(self.public_values[g.name])
            else:
                x = np.asarray(f(rng, g.size), dtype=float)
                values.append(np.clip(x, self.bounds.lower, self.bounds.upper))
        return GroupedDataset(tuple(values), self.population)


def clamped_normal_moments(mu: float, sigma: float, bounds: Bounds) -> dict[str, float]:
    """Mean, median and variance of ``clip(X, a, b)`` for ``X ~ Normal(mu, sigma^2)``.

    Closed form: with ``alpha = (a - mu)/sigma``, ``beta = (b - mu)/sigma``,
    ``E[Y] = a Phi(alpha) + b (1 - Phi(beta)) + mu (Phi(beta) - Phi(alpha)) + sigma (phi(alpha) - phi(beta))``
    and the second moment likewise; the median is ``clip(mu, a, b)``.
    """
    from scipy import stats

    a, b = bounds.lower, bounds.upper
    mu, sigma = np.float64(mu), np.float64(sigma)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        al, be = (a - mu) / sigma, (b - mu) / sigma
        Pa, Pb = stats.norm.cdf(al), stats.norm.cdf(be)
        pa, pb = stats.norm.pdf(al), stats.norm.pdf(be)
        mid = Pb - Pa
        # moments of the part inside (a, b): E[X 1{a<X<b}], E[X^2 1{a<X<b}]
        # (x phi(x) -> 0 as x -> +-inf: a tiny sigma puts a bound at infinitely many sigmas)
        al_pa = al * pa if np.isfinite(al) else 0.0
        be_pb = be * pb if np.isfinite(be) else 0.0
        m1 = mu * mid + sigma * (pa - pb)
        m2 = (mu**2 + sigma**2) * mid + 2 * mu * sigma * (pa - pb) + sigma**2 * (al_pa - be_pb)
        mean = a * Pa + b * (1 - Pb) + m1
        second = a * a * Pa + b * b * (1 - Pb) + m2
    return {"mean": float(mean), "median": float(min(max(mu, a), b)), "variance": float(max(second - mean**2, 0.0))}


def normal_source(
    groups: Sequence[Group], bounds: Bounds | tuple[float, float], mu: float, sigma: float, draws: int
) -> IIDSource:
    """An :class:`IIDSource` of ``Normal(mu, sigma^2)`` records clamped to ``bounds``."""
    b = Bounds.from_pair(bounds)
    for name, v in (("mu", mu), ("sigma", sigma)):
        if isinstance(v, bool) or not isinstance(v, Real):
            raise TypeError(f"normal_source needs real numbers mu and sigma, got {name}={v!r}")
    if not (math.isfinite(mu) and math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"normal_source needs finite mu and sigma > 0, got mu={mu!r}, sigma={sigma!r}")
    moments = clamped_normal_moments(mu, sigma, b)
    if not all(math.isfinite(v) for v in moments.values()):
        raise ValueError(
            f"normal_source: mu={mu!r}, sigma={sigma!r} are too large for the clamped moments in floating point"
        )
    return IIDSource(groups, b, NormalSampler(float(mu), float(sigma)), moments, draws)
