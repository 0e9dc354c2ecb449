"""A mixture of items-per-user priors: what the column sums cannot say about the spread of the row sums.

The column sums and ``n`` fix the mean number of items per user (``sum(c) / n``), not how the reports
are spread over the users, which decides what a bound ``k`` drops.  One prior on that spread (the
exchangeable prior, the default until issue 25's eighth session) makes the posterior as sure of the
spread as that prior is: on the calibration truths its 5-95% ranges held 30% of the realised risks.
:class:`ItemsMixture` spreads the prior over several spreads instead.

Each component is an i.i.d. prior on the row sums truncated to ``1..m``, one of two shapes:

- a negative binomial of dispersion ``a``: ``g_a(k) ∝ Γ(k + a) / (Γ(a) k!) p^k``.  Given the total ``sum(c)``
  (which the model fixes) the factor ``p^k`` cancels (it contributes ``p^sum(c)`` to every histogram), so only
  the dispersion is left: ``a = 1`` is the exchangeable prior (``g`` flat), ``a < 1`` puts more users at one
  item and more in the tail, ``a > 1`` fewer at one item and a tighter spread (:func:`dispersion_log_pmf`);
- a power law of exponent ``s``: ``g_s(k) ∝ k^-s`` (:func:`power_law_log_pmf`), the discrete Pareto law of
  heavy users: most users at one or two items and a tail far longer than a negative binomial's of the same
  mean.  Given the mean, the negative binomials' tails differ little (at a mean of 3.6 items and 100 items,
  ``P(r > 12)`` is 0.036, 0.019 and 0.004 for ``a = 0.25, 1, 4``; 0.051 for ``s = 2``), so the default
  mixture (:data:`MIXTURE_SHAPES`, issue 25's twelfth session) replaced the dispersion 0.25 by ``s = 2``.

The components are fitted separately (a chain that had to move between spreads would stay in one:
given the histogram the dispersion is known to hundreds of nats) and pooled with **equal weights**:
feasibility of the column sums (Gale-Ryser) is the only evidence the model has about the spread, and
a weight from it would need the prior probability of feasibility under each component, which is not
computed here; equal weights are the prior's, stated as such.  Each component's draws keep their own
R-hat and ESS (the convergence check names the component), and the pooled posterior records which
component every draw came from (``items_component``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr
from scipy.special import gammaln

from ...core.model import judge_convergence
from ...core.random import stream

__all__ = ["MIXTURE_SHAPES", "SHAPES", "ItemsMixture", "dispersion_log_pmf", "fit_mixture", "power_law_log_pmf"]

#: The default components: a power law (the heavy users' long tail), the exchangeable prior and a tighter spread.
#: Chosen on the 33 user-item calibration truths against the dispersions 0.25, 1, 4 (``docs/calibration-history.md``).
MIXTURE_SHAPES = (("power-law", 2.0), ("negative-binomial", 1.0), ("negative-binomial", 4.0))


def dispersion_log_pmf(m: int, dispersion: float) -> np.ndarray:
    """``log g_a(k)`` for ``k = 1..m``, up to a constant and a term linear in ``k`` (which the fixed
    total cancels): ``log Γ(k + a) - log Γ(a) - log k!``, normalised over ``1..m``."""
    a = float(dispersion)
    if not (math.isfinite(a) and a > 0):
        raise ValueError(f"dispersion must be a finite number > 0, got {dispersion!r}")
    k = np.arange(1, int(m) + 1, dtype=float)
    lp = gammaln(k + a) - gammaln(a) - gammaln(k + 1)
    return lp - np.logaddexp.reduce(lp)


def power_law_log_pmf(m: int, exponent: float) -> np.ndarray:
    """``log g_s(k) = -s log k`` for ``k = 1..m``, normalised over ``1..m`` (a truncated zeta law)."""
    s = float(exponent)
    if not (math.isfinite(s) and s > 0):
        raise ValueError(f"power-law exponent must be a finite number > 0, got {exponent!r}")
    lp = -s * np.log(np.arange(1, int(m) + 1, dtype=float))
    return lp - np.logaddexp.reduce(lp)


#: The shapes a component may take (see the module): each one's log pmf over ``1..m``, its label in diagnostics and
#: its words in the selection's header.
_SHAPES = {"negative-binomial": (dispersion_log_pmf, "dispersion {:g}", "negative binomial of dispersion {:g}"),
           "power-law": (power_law_log_pmf, "power law {:g}", "power law k^-{:g}")}
SHAPES = tuple(_SHAPES)


def _check_shapes(shapes: Sequence[Any]) -> tuple[tuple[str, float], ...]:
    out = []
    for item in shapes:
        if (not isinstance(item, (tuple, list)) or len(item) != 2 or item[0] not in SHAPES
                or isinstance(item[1], bool) or not isinstance(item[1], numbers.Real)):
            raise ValueError(f"shapes: each component must be a pair (shape, value), shape one of {list(SHAPES)}, "
                             f"got {item!r}")
        out.append((str(item[0]), float(item[1])))
    if len(out) < 2 or len(set(out)) != len(out):
        raise ValueError(f"shapes must hold at least two different components, got {list(shapes)!r}")
    return tuple(out)


class ItemsMixture:
    """An equal-weight mixture of fixed items-per-user priors, one per shape (see the module).

    ``shapes``: pairs ``("negative-binomial", dispersion)`` or ``("power-law", exponent)``, at least two
    different ones (default :data:`MIXTURE_SHAPES`).  Used as ``UserItemModel(..., items_prior="mixture")`` (or
    an instance, for other shapes); needs ``n``, as the exchangeable prior does.  Pickles across processes.
    """

    def __init__(self, m: int, shapes: Sequence[tuple[str, float]] = MIXTURE_SHAPES) -> None:
        from .model import FixedItems

        self.m, self.shapes = int(m), _check_shapes(shapes)
        self.components = tuple(FixedItems(_SHAPES[shape][0](self.m, v)) for shape, v in self.shapes)

    def describe_params(self) -> dict:
        """Its parameters (for :func:`hybridpriv.core.params.describe`)."""
        return {"class": type(self).__name__, "m": self.m, "shapes": [list(x) for x in self.shapes]}

    def label(self, j: int) -> str:
        """How component ``j`` is named in diagnostics: ``"power law 2"``, ``"dispersion 1"``."""
        shape, v = self.shapes[j]
        return _SHAPES[shape][1].format(v)

    def describe(self) -> str:
        """The components in words, for the selection's header."""
        return ", ".join(_SHAPES[shape][2].format(v) for shape, v in self.shapes)


def _pool(parts: list[Any], mixture: ItemsMixture) -> xr.DataTree:
    """The components' posterior draws one after another along ``draw`` (chain by chain), with the
    component of every draw as ``items_component`` (its index in ``mixture.shapes``)."""
    datasets = []
    for j, post in enumerate(parts):
        # log_f_items: a constant per component, different between them
        ds = post.idata["posterior"].to_dataset().drop_vars(["log_f_items", "log_f_items_dim_0"], errors="ignore")
        datasets.append(ds.assign(items_component=xr.full_like(ds["share_one_item"], j, dtype=np.int64)))
    pooled = xr.concat(datasets, dim="draw", coords="minimal", compat="override", join="override")
    pooled = pooled.assign_coords(draw=np.arange(pooled.sizes["draw"]))
    labels = [mixture.label(j) for j in range(len(parts))]
    pooled.attrs["items_prior"] = (f"mixture, equal weights: the draws of {', '.join(labels)} one after another "
                                   f"({datasets[0].sizes['draw']} per chain each; items_component 0..{len(parts) - 1})")
    return xr.DataTree.from_dict({"/posterior": pooled})


def fit_mixture(model: Any, mixture: ItemsMixture, draws: int, tune: int, chains: int, seed: int, progressbar: bool,
                on_unconverged: str, **sample_kwargs: Any) -> Any:
    """Fit every component of ``mixture`` (``draws`` per chain each, seed from stream ``("items-mixture",
    j)``) and pool them (:class:`~hybridpriv.families.user_item.model.UserItemPosterior` of ``model``).

    Convergence is checked per component (a chain over pooled draws would mix nothing); a refusal names
    the component.  ``posterior.convergence`` holds every component's variables as
    ``"share_one_item (power law 2)"``; ``posterior.component_summaries`` their summaries.
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
    posterior = model.posterior_class(model, _pool(parts, mixture), seed)
    posterior.convergence = convergence
    posterior.component_summaries = pd.concat(summaries)
    return posterior
