"""The histogram family's model of public knowledge: the categories' shares, from the public records.

What is public: the categories, each group's size and epsilon, and the records of the public groups.
The model: every record falls in category ``c`` with probability ``p_c``, and
``p ~ Dirichlet(prior, ..., prior)`` a priori; the public records' counts update it to the conjugate
posterior ``Dirichlet(prior + public counts)``, drawn exactly (independent draws, no MCMC: R-hat and ESS
only confirm it).

The private groups may answer alike (as when people were put in groups at random) or otherwise than the
public ones and each other (people who choose a stricter privacy setting may differ in what they answer):
a mixture.  With probability ``shared_prior`` (default :data:`SHARED_PRIOR`) they answer alike
(``tau = 0``, drawn as ``alike``); otherwise each private group's own shares are drawn around ``p``,
``q_g ~ Dirichlet(p (1/tau^2 - 1))``, so a share's standard deviation across groups is
``tau sqrt(p_c (1 - p_c))``, with the spread ``tau ~ HalfNormal(between)`` (default :data:`BETWEEN`).
Nothing in the public groups' records informs ``alike`` or ``tau`` (they are pooled into ``p``), so without
earlier releases their posterior is their prior, drawn exactly; earlier noisy releases of private groups' counts
(``released_counts``, :mod:`.model_released`) do inform them.  ``between = 0`` (or ``shared_prior = 1``) states that the groups
answer alike.  A simulated dataset keeps the public groups' counts and draws
each private group's counts from ``Multinomial(n_g, q_g)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from ...core.privacy import Group, check_finite, check_groups, check_positive
from ...core.model import KnowledgeModel, Posterior
from .data import BETWEEN, SHARED_PRIOR, CategoryCounts
from .model_released import MAX_RELEASE_CATEGORIES, MAX_SPREAD, ReleasedCounts, draw_released

__all__ = ["BETWEEN", "SHARED_PRIOR", "CategoryModel", "CategoryPosterior", "ReleasedCounts"]



class CategoryPosterior(Posterior):
    """The posterior draws of the shares as a source of :class:`CategoryCounts` datasets."""

    convergence_vars = ("p",)
    data_kind = "category-counts"

    def __init__(self, model: CategoryModel, idata: Any, seed: int = 0) -> None:
        super().__init__(model, idata, seed)
        self.p = np.asarray(idata["posterior"]["p"].values, dtype=float)
        post = idata["posterior"]
        #: the between-group spread ``tau`` per draw ``(chain, draw)`` (zeros when the groups answer alike)
        self.between = (np.asarray(post["between"].values, dtype=float) if "between" in post
                        else np.zeros(self.p.shape[:2]))
        #: whether the groups answer alike in each draw (``None`` without the mixture)
        self.alike = np.asarray(post["alike"].values, dtype=bool) if "alike" in post else None
        if "between" in post:
            self.convergence_vars = ("p", "between")
        #: each released group's shares per draw ``{name: (chain, draw, category)}`` (earlier releases of its counts,
        #: :mod:`.model_released`); the other private groups' are drawn around ``p`` in :meth:`generate`
        self.q = ({str(g): np.asarray(post["q"].sel(released=g).values, dtype=float) for g in post["released"].values}
                  if "q" in post else {})
        self.groups = model.groups
        self.categories = model.categories

    def branches(self) -> list[Any]:
        """With the mixture (``0 < shared_prior < 1``): whether the private groups answer alike."""
        if self.alike is None:
            return []
        from ...core.assumptions import Branch

        return [Branch("alike", "the private groups answer alike, with the public groups' shares",
                       "the private groups' shares differ from the public groups' and each other's", self.alike,
                       advice="if you know, say so: model.groups_may_differ = false if people were put in groups at "
                              "random, model.shared_prior = 0 if their answers go with their privacy choice")]

    @property
    def category_variance(self) -> float:
        """Posterior mean of ``sum_c p_c (1 - p_c) / C``: the variance of a category indicator, averaged."""
        p = self.p
        return float(np.mean(np.sum(p * (1.0 - p), axis=-1) / p.shape[-1]))

    def generate(self, chain: int, draw: int, rng: np.random.Generator) -> CategoryCounts:
        chain, draw = self._check_index(chain, draw)
        m = self.model_spec
        p = self.p[chain, draw]
        p = p / p.sum()
        tau = min(float(self.between[chain, draw]), MAX_SPREAD)
        rows = []
        for g in m.groups:
            if g.name in m.public_counts:
                rows.append(m.public_counts[g.name])
                continue
            if g.name in self.q:
                q = self.q[g.name][chain, draw]
                rows.append(rng.multinomial(g.size, q / q.sum()))
                continue
            q = p
            if tau > 0:
                q = rng.dirichlet(p * (1.0 / tau ** 2 - 1.0))
                q = q / q.sum()
            rows.append(rng.multinomial(g.size, q))
        return CategoryCounts(np.stack(rows))


class CategoryModel(KnowledgeModel):
    """Shares of public categories, learned from the public groups' records.

    Parameters
    ----------
    groups
        The privacy groups (public ones have ``epsilon = inf``).
    categories
        The category names.
    public_counts
        ``{public group name: counts per category}`` (their records; a public group without them is
        simulated like a private one).
    prior
        The Dirichlet concentration of every category (default 1: uniform over share vectors).
    between
        The prior scale of the between-group spread ``tau ~ HalfNormal(between)`` when the groups differ
        (default :data:`BETWEEN`); 0: the private groups answer like the public ones and like each other.
    shared_prior
        The prior probability that the groups answer alike (default :data:`SHARED_PRIOR`; read only
        when ``between > 0``).
    released_counts
        Earlier noisy releases of private groups' counts (:class:`~.model_released.ReleasedCounts`, at most one per
        group): the posterior is then drawn in the Gaussian approximation of :mod:`.model_released`, each released
        group with its own shares (``q``); without them, exactly as above.
    """

    posterior_class = CategoryPosterior  # what fit() returns

    def __init__(self, groups: Sequence[Group], categories: Sequence[str],
                 public_counts: Mapping[str, Any] | None = None, prior: float = 1.0,
                 between: float = BETWEEN, shared_prior: float = SHARED_PRIOR,
                 released_counts: Sequence[ReleasedCounts] = ()) -> None:
        self.groups = check_groups(groups)
        self.categories = tuple(str(c) for c in categories)
        if len(self.categories) < 2:
            raise ValueError(f"categories must name at least 2 categories, got {list(categories)!r}")
        self.prior = check_positive(prior, "prior")
        self.between = check_finite(between, "between")
        if not 0.0 <= self.between <= 1.0:
            raise ValueError(f"between must be a number in [0, 1], got {between!r}")
        p = check_finite(shared_prior, "shared_prior")
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"shared_prior must be a probability in [0, 1], got {shared_prior!r}")
        self.shared_prior = p if self.between > 0 else 1.0
        counts = {}
        for name, c in (public_counts or {}).items():
            g = next((x for x in self.groups if x.name == name), None)
            if g is None or not g.is_public:
                raise ValueError(f"public_counts names {name!r}, which is not a public group")
            arr = np.asarray(c)
            if arr.shape != (len(self.categories),) or np.any(arr < 0) or arr.sum() != g.size:
                raise ValueError(f"public_counts[{name!r}] must be {len(self.categories)} counts summing to the "
                                 f"group's size {g.size}")
            counts[name] = arr.astype(np.int64)
        self.public_counts = counts
        self.released_counts = self._check_releases(released_counts)

    def _check_releases(self, releases: Any) -> tuple[ReleasedCounts, ...]:
        if isinstance(releases, ReleasedCounts) or not isinstance(releases, Sequence) or not all(
                isinstance(r, ReleasedCounts) for r in releases):
            raise TypeError(f"released_counts must be a sequence of ReleasedCounts, got {releases!r}")
        seen = set()
        for k, r in enumerate(releases):
            g = next((x for x in self.groups if x.name == r.group), None)
            if g is None or g.is_public:
                raise ValueError(f"released_counts[{k}].group must name a private group, got {r.group!r}")
            if r.group in seen:
                raise ValueError(f"released_counts[{k}].group {r.group!r} is released twice: give one release a group")
            seen.add(r.group)
            if len(r.counts) != len(self.categories):
                raise ValueError(f"released_counts[{k}].counts must hold {len(self.categories)} counts (one per "
                                 f"category), got {len(r.counts)}")
        if releases and len(self.categories) > MAX_RELEASE_CATEGORIES:
            raise ValueError(f"released_counts: a model with releases takes at most {MAX_RELEASE_CATEGORIES} "
                             f"categories, got {len(self.categories)}")
        return tuple(releases)

    def _alpha(self) -> np.ndarray:
        seen = sum(self.public_counts.values()) if self.public_counts else 0
        return self.prior + np.asarray(seen, dtype=float) * np.ones(len(self.categories))

    def build(self) -> Any:
        """The PyMC model: ``p ~ Dirichlet(prior)``, the public counts ``~ Multinomial(p)``, and the spread
        ``between ~ HalfNormal`` when the groups may differ."""
        import pymc as pm

        c = len(self.categories)
        with pm.Model(coords={"category": list(self.categories)}) as model:
            p = pm.Dirichlet("p", a=np.full(c, self.prior), dims="category")
            if self.public_counts:
                seen = np.sum(list(self.public_counts.values()), axis=0)
                pm.Multinomial("public", n=int(seen.sum()), p=p, observed=seen, dims="category")
            if self.shared_prior < 1:
                spread = pm.HalfNormal("spread", sigma=self.between)
                if self.shared_prior > 0:
                    alike = pm.Bernoulli("alike", p=self.shared_prior)
                    pm.Deterministic("between", pm.math.switch(alike, 0.0, spread))
                else:
                    pm.Deterministic("between", spread)
        return model

    def _sample(self, model: Any, draws: int, tune: int, chains: int, random_seed: list[int], progressbar: bool,
                **sample_kwargs: Any) -> Any:
        """Exact draws of ``Dirichlet(prior + public counts)`` and, when the groups may differ, of the mixture's
        prior (``alike ~ Bernoulli(shared_prior)``, else ``between ~ HalfNormal``); chain ``c`` from
        ``default_rng(random_seed[c])`` (``p``, then the spread, then ``alike``)."""
        if sample_kwargs:
            raise TypeError(f"{type(self).__name__} draws exactly and takes no sampler arguments, got {sorted(sample_kwargs)}")
        alpha = self._alpha()
        gens = [np.random.default_rng(s) for s in random_seed]
        if self.released_counts:
            return self._sample_released(alpha, draws, chains, gens)
        p = np.stack([g.dirichlet(alpha, size=draws) for g in gens])
        data = {"p": (("chain", "draw", "category"), p)}
        if self.shared_prior < 1:
            spread = np.stack([self.between * np.abs(g.standard_normal(draws)) for g in gens])
            alike = np.stack([g.random(draws) < self.shared_prior for g in gens])
            data["between"] = (("chain", "draw"), np.where(alike, 0.0, spread))
            if self.shared_prior > 0:
                data["alike"] = (("chain", "draw"), alike)
        ds = xr.Dataset(data,
                        coords={"chain": np.arange(chains), "draw": np.arange(draws), "category": list(self.categories)},
                        attrs={"sampler": "exact draws: Dirichlet(prior + public counts); the spread from its prior"})
        return xr.DataTree.from_dict({"posterior": ds})

    def _sample_released(self, alpha: np.ndarray, draws: int, chains: int, gens: list) -> Any:
        """The draws given the releases (:func:`~.model_released.draw_released`, chain ``c`` from ``gens[c]``)."""
        sizes = {g.name: g.size for g in self.groups}
        out = [draw_released(alpha, sizes, self.released_counts, self.between, self.shared_prior, draws, g)
               for g in gens]
        data = {"p": (("chain", "draw", "category"), np.stack([o["p"] for o in out])),
                "q": (("chain", "draw", "released", "category"), np.stack([o["q"] for o in out]))}
        if self.shared_prior < 1:
            data["between"] = (("chain", "draw"), np.stack([o["between"] for o in out]))
            if self.shared_prior > 0:
                data["alike"] = (("chain", "draw"), np.stack([o["alike"] for o in out]))
        floored = float(np.mean([o["floored"] for o in out]))
        ds = xr.Dataset(data, coords={"chain": np.arange(chains), "draw": np.arange(draws),
                                      "category": list(self.categories),
                                      "released": [r.group for r in self.released_counts]},
                        attrs={"sampler": "the Gaussian approximation given earlier releases (model_released): "
                                          "independent draws", "floored_share": floored})
        return xr.DataTree.from_dict({"posterior": ds})
