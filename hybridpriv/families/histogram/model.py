"""The histogram family's model of public knowledge: the categories' shares, from the public records.

What is public: the categories, each group's size and epsilon, and the records of the public groups.
The model: every record falls in category ``c`` with probability ``p_c``, the same in every group, and
``p ~ Dirichlet(prior, ..., prior)`` a priori; the public records' counts update it to the conjugate
posterior ``Dirichlet(prior + public counts)``, drawn exactly (independent draws, no MCMC: R-hat and ESS
only confirm it).  A simulated dataset keeps the public groups' counts and draws each private group's
counts from ``Multinomial(n_g, p)``.  Groups whose shares differ are beyond this model: say so when
you quote its numbers (the calibration study measures what that costs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from ...core.privacy import Group, check_groups, check_positive
from ...core.model import KnowledgeModel, Posterior
from .data import CategoryCounts

__all__ = ["CategoryModel", "CategoryPosterior"]


class CategoryPosterior(Posterior):
    """The posterior draws of the shares as a source of :class:`CategoryCounts` datasets."""

    convergence_vars = ("p",)
    data_kind = "category-counts"

    def __init__(self, model: CategoryModel, idata: Any, seed: int = 0) -> None:
        super().__init__(model, idata, seed)
        self.p = np.asarray(idata["posterior"]["p"].values, dtype=float)
        self.groups = model.groups
        self.categories = model.categories

    @property
    def category_variance(self) -> float:
        """Posterior mean of ``sum_c p_c (1 - p_c) / C``: the variance of a category indicator, averaged."""
        p = self.p
        return float(np.mean(np.sum(p * (1.0 - p), axis=-1) / p.shape[-1]))

    def generate(self, chain: int, draw: int, rng: np.random.Generator) -> CategoryCounts:
        chain, draw = self._check_index(chain, draw)
        m = self.model_spec
        p = self.p[chain, draw]
        rows = [m.public_counts[g.name] if g.name in m.public_counts else rng.multinomial(g.size, p / p.sum())
                for g in m.groups]
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
    """

    posterior_class = CategoryPosterior  # what fit() returns

    def __init__(self, groups: Sequence[Group], categories: Sequence[str],
                 public_counts: Mapping[str, Any] | None = None, prior: float = 1.0) -> None:
        self.groups = check_groups(groups)
        self.categories = tuple(str(c) for c in categories)
        if len(self.categories) < 2:
            raise ValueError(f"categories must name at least 2 categories, got {list(categories)!r}")
        self.prior = check_positive(prior, "prior")
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

    def _alpha(self) -> np.ndarray:
        seen = sum(self.public_counts.values()) if self.public_counts else 0
        return self.prior + np.asarray(seen, dtype=float) * np.ones(len(self.categories))

    def build(self) -> Any:
        """The PyMC model: ``p ~ Dirichlet(prior)``, the public counts ``~ Multinomial(p)``."""
        import pymc as pm

        c = len(self.categories)
        with pm.Model(coords={"category": list(self.categories)}) as model:
            p = pm.Dirichlet("p", a=np.full(c, self.prior), dims="category")
            if self.public_counts:
                seen = np.sum(list(self.public_counts.values()), axis=0)
                pm.Multinomial("public", n=int(seen.sum()), p=p, observed=seen, dims="category")
        return model

    def _sample(self, model: Any, draws: int, tune: int, chains: int, random_seed: list[int], progressbar: bool,
                **sample_kwargs: Any) -> Any:
        """Exact draws of ``Dirichlet(prior + public counts)``, chain ``c`` from ``default_rng(random_seed[c])``."""
        if sample_kwargs:
            raise TypeError(f"{type(self).__name__} draws exactly and takes no sampler arguments, got {sorted(sample_kwargs)}")
        alpha = self._alpha()
        p = np.stack([np.random.default_rng(s).dirichlet(alpha, size=draws) for s in random_seed])
        ds = xr.Dataset({"p": (("chain", "draw", "category"), p)},
                        coords={"chain": np.arange(chains), "draw": np.arange(draws), "category": list(self.categories)},
                        attrs={"sampler": "exact Dirichlet(prior + public counts) draws"})
        return xr.DataTree.from_dict({"posterior": ds})
