"""A mixture of items-per-user priors: what the column sums cannot say about the spread of the row sums.

The column sums and ``n`` fix the mean number of items per user (``sum(c) / n``), not how the reports
are spread over the users, which decides what a bound ``k`` drops.  One prior on that spread (the
exchangeable prior, the default until issue 25's eighth session) makes the posterior as sure of the
spread as that prior is: on the calibration truths its 5-95% ranges held 30% of the realised risks.
:class:`ItemsMixture` spreads the prior over several spreads instead.

Each component is an i.i.d. prior on the row sums, a negative binomial of dispersion ``a`` truncated
to ``1..m``: ``g_a(k) ∝ Γ(k + a) / (Γ(a) k!) p^k``.  Given the total ``sum(c)`` (which the model fixes)
the factor ``p^k`` cancels (it contributes ``p^sum(c)`` to every histogram), so only the dispersion is
left: ``a = 1`` is the exchangeable prior (``g`` flat), ``a < 1`` puts more users at one item and more
in the tail, ``a > 1`` fewer at one item and a tighter spread (:func:`dispersion_log_pmf`).

The components are fitted separately (a chain that had to move between spreads would stay in one:
given the histogram the dispersion is known to hundreds of nats) and pooled with **equal weights**:
feasibility of the column sums (Gale-Ryser) is the only evidence the model has about the spread, and
a weight from it would need the prior probability of feasibility under each component, which is not
computed here; equal weights are the prior's, stated as such.  Each component's draws keep their own
R-hat and ESS (the convergence check names the component), and the pooled posterior records which
component every draw came from (``items_dispersion``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr
from scipy.special import gammaln

from ...core.model import judge_convergence
from ...core.random import stream

__all__ = ["MIXTURE_DISPERSIONS", "ItemsMixture", "dispersion_log_pmf", "fit_mixture"]

#: The default dispersions: heavier tails than exchangeable, exchangeable, tighter (symmetric in log).
MIXTURE_DISPERSIONS = (0.25, 1.0, 4.0)


def dispersion_log_pmf(m: int, dispersion: float) -> np.ndarray:
    """``log g_a(k)`` for ``k = 1..m``, up to a constant and a term linear in ``k`` (which the fixed
    total cancels): ``log Γ(k + a) - log Γ(a) - log k!``, normalised over ``1..m``."""
    a = float(dispersion)
    if not (math.isfinite(a) and a > 0):
        raise ValueError(f"dispersion must be a finite number > 0, got {dispersion!r}")
    k = np.arange(1, int(m) + 1, dtype=float)
    lp = gammaln(k + a) - gammaln(a) - gammaln(k + 1)
    return lp - np.logaddexp.reduce(lp)


class ItemsMixture:
    """An equal-weight mixture of fixed items-per-user priors, one per dispersion (see the module).

    Used as ``UserItemModel(..., items_prior="mixture")`` (or an instance, for other dispersions);
    needs ``n``, as the exchangeable prior does.  Pickles across processes.
    """

    def __init__(self, m: int, dispersions: Sequence[float] = MIXTURE_DISPERSIONS) -> None:
        from .model import FixedItems

        ds = tuple(float(a) for a in dispersions)
        if len(ds) < 2 or len(set(ds)) != len(ds):
            raise ValueError(f"dispersions must hold at least two different values, got {list(dispersions)!r}")
        self.m, self.dispersions = int(m), ds
        self.components = tuple(FixedItems(dispersion_log_pmf(self.m, a)) for a in ds)

    def describe_params(self) -> dict:
        """Its parameters (for :func:`hybridpriv.core.params.describe`)."""
        return {"class": type(self).__name__, "m": self.m, "dispersions": list(self.dispersions)}

    def label(self, j: int) -> str:
        """How component ``j`` is named in diagnostics."""
        return f"dispersion {self.dispersions[j]:g}"


def _pool(parts: list[Any], dispersions: tuple[float, ...]) -> xr.DataTree:
    """The components' posterior draws one after another along ``draw`` (chain by chain), with the
    dispersion of every draw as ``items_dispersion``."""
    datasets = []
    for post, a in zip(parts, dispersions):
        # log_f_items: a constant per component, different between them
        ds = post.idata["posterior"].to_dataset().drop_vars(["log_f_items", "log_f_items_dim_0"], errors="ignore")
        datasets.append(ds.assign(items_dispersion=xr.full_like(ds["share_one_item"], a, dtype=float)))
    pooled = xr.concat(datasets, dim="draw", coords="minimal", compat="override", join="override")
    pooled = pooled.assign_coords(draw=np.arange(pooled.sizes["draw"]))
    pooled.attrs["items_prior"] = (f"mixture, equal weights: the draws of dispersion {', '.join(f'{a:g}' for a in dispersions)}"
                                   f" one after another ({datasets[0].sizes['draw']} per chain each; items_dispersion)")
    return xr.DataTree.from_dict({"/posterior": pooled})


def fit_mixture(model: Any, mixture: ItemsMixture, draws: int, tune: int, chains: int, seed: int, progressbar: bool,
                on_unconverged: str, **sample_kwargs: Any) -> Any:
    """Fit every component of ``mixture`` (``draws`` per chain each, seed from stream ``("items-mixture",
    j)``) and pool them (:class:`~hybridpriv.families.user_item.model.UserItemPosterior` of ``model``).

    Convergence is checked per component (a chain over pooled draws would mix nothing); a refusal names
    the component.  ``posterior.convergence`` holds every component's variables as
    ``"share_one_item (dispersion 0.25)"``; ``posterior.component_summaries`` their summaries.
    """
    import pandas as pd

    if on_unconverged not in ("raise", "warn", "ignore"):
        raise ValueError(f"on_unconverged must be 'raise', 'warn' or 'ignore', got {on_unconverged!r}")
    parts, convergence, summaries = [], {}, []
    for j, prior in enumerate(mixture.components):
        sub = type(model)(model.column_sums, model.n_range, items_prior=prior, trades_per_row=model.trades_per_row,
                          start=model.start, block=model.block)
        sub_seed = int(stream(seed, "items-mixture", j).generate_state(1, np.uint32)[0])
        post = sub.fit(draws=draws, tune=tune, chains=chains, seed=sub_seed, progressbar=progressbar,
                       on_unconverged="ignore", **sample_kwargs)
        label = mixture.label(j)
        judge_convergence(post.convergence, on_unconverged,  # the diagnostics its fit computed
                          what=f"the {type(model).__name__} of public knowledge (items prior {label})",
                          advice=post.convergence_advice)
        convergence.update({f"{k} ({label})": v for k, v in post.convergence.items()})
        s = post.summary()
        summaries.append(s.rename(index={name: f"{name} ({label})" for name in s.index}))
        parts.append(post)
    posterior = model.posterior_class(model, _pool(parts, mixture.dispersions), seed)
    posterior.convergence = convergence
    posterior.component_summaries = pd.concat(summaries)
    return posterior
