"""A PyMC generative model of public knowledge about grouped data.

:class:`GroupedDataModel` turns what is *public* about a dataset split into privacy groups
into a posterior over the data distribution:

* the records of public groups (``epsilon = inf``) that are available, entering the model
  as observations clamped to the bounds;
* optionally a published variance of the data distribution (``known_variance``);
* optionally earlier differentially private releases of group means
  (:class:`ReleasedMean`), each a noisy mean ``y = mean(records) + Laplace(0, b)``.

Private records are never handed to the model.  The fitted result,
:class:`GroupedPosterior`, is a :class:`hybridpriv.core.data.DatasetSource`: at every posterior
draw ``(chain, draw)`` it generates a simulated dataset, keeping the observed public records
and simulating every other group from the data distribution at that draw.

The data distribution is a *family* (:class:`NormalFamily`, :class:`BetaFamily`, or any PyMC
distribution through :class:`CustomFamily`), always clamped to the declared bounds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from ...core.privacy import Bounds, Group, check_finite, check_groups, check_positive, check_real_array
from ...core.random import rng as stream_rng
from . import GroupedDataset
from ...core.model import KnowledgeModel, Posterior

__all__ = [
    "BETA_BOUNDARY_NUDGE",
    "BetaFamily",
    "CUSTOM_MC_SAMPLES",
    "CustomFamily",
    "Family",
    "GroupedDataModel",
    "GroupedPosterior",
    "MixtureFamily",
    "NormalFamily",
    "RELEASE_TAIL",
    "GROUP_SHIFT",
    "choose_family",
    "ReleasedMean",
]

#: How many noise scales a released mean may lie outside the bounds before it is refused as
#: contradictory (Laplace noise exceeds it with probability e^-50).
RELEASE_TAIL = 50.0
from .data import GROUP_SHIFT  # noqa: E402

from .model_choice import choose_family  # noqa: E402
from .model_families import (  # noqa: E402
    _FAMILIES,
    BETA_BOUNDARY_NUDGE,
    CUSTOM_MC_SAMPLES,
    BetaFamily,
    CustomFamily,
    Family,
    NormalFamily,
    Params,
)
from .model_mixture import MixtureFamily  # noqa: E402

_FAMILIES = {**_FAMILIES, "mixture": MixtureFamily}


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


class GroupedPosterior(Posterior):
    """A fitted :class:`GroupedDataModel`: a :class:`hybridpriv.core.data.DatasetSource`.

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
        The setting (as the :class:`~hybridpriv.core.data.DatasetSource` protocol asks).
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
        self._draws = {n: np.asarray(post[n].transpose("chain", "draw", ...).values, dtype=float)
                       for n in self.free_params}
        #: per private group (``spec.shifted``), its records' location shift at each draw: ``(chain, draw, group)``
        self._shift = (np.asarray(post["group_shift"].transpose("chain", "draw", ...).values, dtype=float)
                       if spec.shifted else None)

    def shifts(self, chain: int, draw: int) -> dict[str, float]:
        """Each shifted group's location shift at draw ``(chain, draw)`` (``{}`` when the groups share one law)."""
        if self._shift is None:
            return {}
        c, d = self._check_index(chain, draw)
        return {self.groups[k].name: float(v) for k, v in zip(self.spec.shifted, self._shift[c, d])}

    def __repr__(self) -> str:
        return f"GroupedPosterior(family={self.family!r}, groups={[g.name for g in self.groups]}, shape={self.shape})"

    def params(self, chain: int, draw: int) -> dict[str, float]:
        """The family parameters at posterior draw ``(chain, draw)`` (fixed ones included)."""
        c, d = self._check_index(chain, draw)
        out = {n: float(self.spec.fixed[n]) for n in self.param_names if n in self.spec.fixed}
        out.update({n: float(a[c, d]) if a.ndim == 2 else a[c, d].copy() for n, a in self._draws.items()})
        return {n: out[n] for n in self.param_names}

    def group_records(self, params: Params, shift: float, size: int, rng: np.random.Generator
                      ) -> tuple[np.ndarray, np.ndarray]:
        """``size`` records of a group from the family's law at ``params``, and the same records moved by
        ``shift`` and clipped into the bounds (``shift = 0``: the same array twice)."""
        x = self.family.simulate(params, size, rng)
        return x, (np.clip(x + shift, self.bounds.lower, self.bounds.upper) if shift else x)

    def generate(self, chain: int, draw: int, rng: np.random.Generator) -> GroupedDataset:
        """The simulated dataset at ``(chain, draw)``.

        Public groups with data keep their observed records; every other group gets
        ``family.simulate(params, group.size, rng)``, a private group's moved by its shift at the draw when the
        groups may differ (clipped into the bounds).  ``population`` holds the clamped distribution's mean, median
        and variance at these parameters (Monte Carlo families draw it from ``rng`` after the records, so the
        records do not depend on it); with shifts only its mean, moved by the records' mean shift (clipping
        included, as :class:`~hybridpriv.families.grouped.assumptions.ShiftGroups` moves it).
        """
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {rng!r}")
        p = self.params(chain, draw)
        public = self.spec.public_data
        shifts = self.shifts(chain, draw)
        moved, values = 0.0, []
        for g in self.groups:
            if g.name in public:
                values.append(public[g.name])
                continue
            x, y = self.group_records(p, shifts.get(g.name, 0.0), g.size, rng)
            moved += float(y.sum() - x.sum())
            values.append(y)
        population = self.family.population(p, rng)
        if shifts:
            population = {"mean": float(population["mean"]) + moved / sum(g.size for g in self.groups)}
        return GroupedDataset(tuple(values), population)

    def predictive_checks(self, seed: int = 0, draws: int = 400):
        """Posterior predictive checks of the public knowledge (:mod:`hybridpriv.criticism`).

        For ``draws`` posterior draws (spread evenly), replicate every public group's records
        (``family.simulate``, as many as published) and every earlier release (the group's
        replicated mean plus its Laplace noise; unpublished records drawn from the model).
        Statistics: each public group's mean, standard deviation, 10/50/90% quantiles and share
        of records at each bound; each release's value.  Randomness: stream
        ``("predictive-check", seed)``.  ``None`` when nothing is public but sizes and bounds.
        """
        from ...core.random import rng as stream_rng
        from .model_checks import grouped_predictive_checks

        return grouped_predictive_checks(self, stream_rng(seed, "predictive-check"), draws)

    @cached_property
    def population_posterior_means(self) -> dict[str, float]:
        """Posterior means of the clamped distribution's ``mean``, ``mean_square`` (the
        squared mean) and ``variance``: averages over all draws of ``family.population(params)``.
        Monte Carlo families use the stream ``(seed, "population", chain, draw)``.
        """
        totals = {"mean": 0.0, "mean_square": 0.0, "variance": 0.0}
        chains, draws = self._shape
        for c in range(chains):
            for d in range(draws):
                rng = stream_rng(self.seed, "population", c, d)
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


class GroupedDataModel(KnowledgeModel):
    """A PyMC model of public knowledge about data split into privacy groups.

    Parameters
    ----------
    groups
        The privacy groups (:class:`~hybridpriv.core.privacy.Group`), checked with
        :func:`~hybridpriv.core.privacy.check_groups`.
    bounds
        :class:`~hybridpriv.core.privacy.Bounds` or a ``(lower, upper)`` pair.
    family
        ``"normal"``, ``"beta"``, ``"mixture"`` (:class:`MixtureFamily`: point masses at the bounds
        beside a two-component Beta mixture), ``"auto"`` or a :class:`Family` instance.  ``"auto"``
        chooses among normal, beta and mixture by PSIS-LOO on the public records
        (:func:`hybridpriv.models.choose_family`; the table is ``family_choice``); with no public
        records, or a ``known_variance``, it is ``"normal"``.
    public_data
        Mapping group name -> 1-D array of that *public* group's records.  Public groups
        without data are simulated like private ones.
    known_variance
        A published variance of the (unclamped) data distribution; normal family only
        (``sigma`` is fixed to its square root).
    released_means
        Earlier DP releases of group means (:class:`ReleasedMean`); every family but a custom one
        without ``supports_released_means``.
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

    posterior_class = GroupedPosterior  # what fit() returns

    def __init__(
        self,
        groups: Sequence[Group],
        bounds: Bounds | tuple[float, float],
        family: str | Family = "auto",
        public_data: Mapping[str, np.ndarray] | None = None,
        known_variance: float | None = None,
        released_means: Sequence[ReleasedMean] = (),
        clamp: bool = False,
        group_shift: float = 0.0,
    ) -> None:
        self.groups = check_groups(groups)
        self.bounds = Bounds.from_pair(bounds)
        if not isinstance(group_shift, (int, float)) or isinstance(group_shift, bool) or not 0 <= group_shift <= 1:
            raise ValueError(f"group_shift must be a number in [0, 1] (a share of the bounds' width), got {group_shift!r}")
        self.group_shift = float(group_shift)
        #: the groups whose law may move against the public one: the private groups, when ``group_shift > 0``
        self.shifted: tuple[int, ...] = tuple(k for k, g in enumerate(self.groups) if not g.is_public) \
            if self.group_shift > 0 else ()
        if not isinstance(clamp, bool):
            raise TypeError(f"clamp must be True or False, got {clamp!r}")
        self.clamp = clamp

        self.public_data = self._check_public_data(public_data)
        self.family_choice = None
        if family == "auto":
            family = self._choose_family(known_variance)
        if isinstance(family, str):
            if family not in _FAMILIES:
                raise ValueError(f"family must be one of {sorted(_FAMILIES) + ['auto']} or a Family instance, "
                                 f"got {family!r}")
            family = _FAMILIES[family]()
        elif not isinstance(family, Family):
            raise TypeError(f"family must be 'normal', 'beta', 'mixture', 'auto' or a Family instance, got {family!r}")
        self.family: Family = family.with_bounds(self.bounds)

        self.known_variance: float | None = None
        self.fixed: dict[str, float] = {}
        if known_variance is not None:
            kv = check_positive(known_variance, "known_variance")
            self.fixed = self.family.known_variance_params(kv)
            self.known_variance = kv

        self.released_means = self._check_released(released_means)

    def _choose_family(self, known_variance: object) -> str:
        """``family="auto"``: normal without public records (no evidence) or with a known variance
        (only the normal family takes one); otherwise the PSIS-LOO choice on the public records."""
        records = np.concatenate(list(self.public_data.values())) if self.public_data else np.zeros(0)
        if known_variance is not None or records.size < 5:
            return "normal"
        from ...engine.progress import phase
        from .model_choice import choose_family

        with phase("choosing the data family (PSIS-LOO)", total=None):
            name, self.family_choice = choose_family(records, self.bounds)
        return name

    def fit(self, draws: int = 500, tune: int = 500, chains: int = 2, seed: int = 0, progressbar: bool = False,
            on_unconverged: str = "raise", **sample_kwargs: Any) -> Posterior:
        """The base class's :meth:`~hybridpriv.core.model.KnowledgeModel.fit`; with ``family="auto"``,
        a chosen family whose fit (with everything else that is public) does not converge gives way to
        the next family by PSIS-LOO, with a warning, and ``family_choice.attrs["fallback"]`` says so.
        The last family left is judged by ``on_unconverged`` as usual."""
        if self.family_choice is None:
            return super().fit(draws, tune, chains, seed, progressbar, on_unconverged, **sample_kwargs)
        import warnings

        from ...core.model import ConvergenceError

        table = self.family_choice
        order = [str(f) for f in table.family.values[np.argsort(-table.elpd.values, kind="stable")]]
        order = [self.family.name] + [f for f in order if f != self.family.name]
        for k, name in enumerate(order):
            self.use_family(name)
            last = k == len(order) - 1
            try:
                return super().fit(draws, tune, chains, seed, progressbar, on_unconverged if last else "raise",
                                   **sample_kwargs)
            except ConvergenceError as exc:
                if last:
                    raise
                nxt = order[k + 1]
                note = f"the {name} family's fit did not converge ({exc}); using {nxt}, the next by PSIS-LOO"
                table.attrs["fallback"] = "; ".join(filter(None, [table.attrs.get("fallback", ""), note]))
                warnings.warn(f"family = auto: {note}", UserWarning, stacklevel=2)
        raise AssertionError("unreachable")  # pragma: no cover

    def use_family(self, name: str) -> None:
        """Switch the data family to the built-in ``name`` (what ``fit``'s fallback does; a release
        from a selection uses it to rebuild the posterior with the family that selection fitted)."""
        if name not in _FAMILIES:
            raise ValueError(f"family must be one of {sorted(_FAMILIES)}, got {name!r}")
        if name != self.family.name:
            self.family = _FAMILIES[name]().with_bounds(self.bounds)

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
                "released_means need a family with closed-form clamped moments (normal, beta, mixture), "
                f"got {self.family!r}"
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
            shift = {}
            if self.shifted:  # groups_may_differ: each private group's law moved by its own shift (non-centred)
                sd = pm.HalfNormal("group_shift_sd", sigma=self.group_shift * self.bounds.width)
                z = pm.Normal("group_shift_z", 0.0, 1.0, shape=len(self.shifted))
                moved = pm.Deterministic("group_shift", sd * z)
                shift = {self.groups[k].name: moved[j] for j, k in enumerate(self.shifted)}
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
                # a shifted group's records move its sum by size x shift (the clipping at the bounds neglected)
                moved_sum = sum((g.size * shift[g.name] for g in members if g.name in shift), 0.0)
                latent = pm.Deterministic(
                    f"released_mean_{i}_latent", (known_sum + n_u * mean + moved_sum + pt.sqrt(n_u * var) * z) / n
                )
                pm.Laplace(f"released_mean_{i}", mu=latent, b=r.noise_scale, observed=r.value)
        self.param_names: tuple[str, ...] = tuple(params)
        return model
