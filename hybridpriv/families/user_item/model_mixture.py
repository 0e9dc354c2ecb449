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
  Unlike ``p^k``, the power law's mean does not cancel: an i.i.d. prior conditioned on a total below its own mean
  is exponentially tilted, ``k^-s e^(-theta k)``, and the tilt cuts the tail (``s = 2`` has a mean of 2.9 items at
  ``m = 66``; on a heavy-tailed truth of 1.74 items per user, 2.6% of its reports beyond ``k = 20``, the
  posterior allowed 0-0.6%).  So the default power law is ``("power-law-mean", 1.0)``: the exponent whose own
  mean is the known mean ``sum(c) / n`` (:func:`matched_exponent`; 2.52 there), which conditioning on the total
  leaves untilted (issue 25's seventeenth session; the numbers in ``docs/calibration.md``);
- a capped power law ``("power-law-capped", v)``: ``k^-s`` up to ``cap = v x sum(c) / n`` items, falling by
  ``e^-2`` per item beyond (:func:`power_law_log_pmf`), its exponent again matched to the known mean.  The power
  law above spreads its heavy users' reports up to ``m`` items, where every ``k`` of interest drops nearly all of
  them alike, so under it a small ``k`` is seldom costly; a group of heavy users holding some 5-20 items each
  (a light majority beside a heavy minority) makes the choice between ``k = 6`` and ``k = 9`` matter most, and no
  other component puts its reports there (issue 25's nineteenth session: the three ``mixture`` truths of calibration
  seed 3 that came without a warning; their co-occurrence of items did not matter: the same row sums spread
  uniformly over the margins gave the same best ``k``).

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
from scipy.optimize import brentq
from scipy.special import gammaln

from ...core.model import judge_convergence
from ...core.random import stream

__all__ = ["CAP_DROP", "MATCHED_EXPONENTS", "MIXTURE_SHAPES", "SHAPES", "ItemsMixture", "capped_at",
           "dispersion_log_pmf", "fit_mixture", "matched_exponent", "power_law_log_pmf"]

#: The default components: a power law whose own mean is the known mean (the heavy users' long tail), the
#: exchangeable prior, a tighter spread, and a power law capped at 6 times the mean (a heavy minority of some 5-20
#: items each).  The power law was ``k^-2`` (chosen on the 33 user-item calibration truths against the dispersions
#: 0.25, 1, 4, ``docs/calibration-history.md``) until issue 25's seventeenth session, which matched its mean: a fixed
#: exponent's mean above the data's was tilted by the total and lost its tail (the module).  The capped power law
#: joined in its nineteenth session (the module; the numbers in ``docs/user-item.md``).
MIXTURE_SHAPES = (("power-law-mean", 1.0), ("negative-binomial", 1.0), ("negative-binomial", 4.0),
                  ("power-law-capped", 6.0))


def dispersion_log_pmf(m: int, dispersion: float) -> np.ndarray:
    """``log g_a(k)`` for ``k = 1..m``, up to a constant and a term linear in ``k`` (which the fixed
    total cancels): ``log Γ(k + a) - log Γ(a) - log k!``, normalised over ``1..m``."""
    a = float(dispersion)
    if not (math.isfinite(a) and a > 0):
        raise ValueError(f"dispersion must be a finite number > 0, got {dispersion!r}")
    k = np.arange(1, int(m) + 1, dtype=float)
    lp = gammaln(k + a) - gammaln(a) - gammaln(k + 1)
    return lp - np.logaddexp.reduce(lp)


#: How steeply a capped power law (:func:`power_law_log_pmf`) falls beyond its cap: ``e^-2`` per item.
CAP_DROP = 2.0


def power_law_log_pmf(m: int, exponent: float, cap: int | None = None) -> np.ndarray:
    """``log g_s(k) = -s log k`` for ``k = 1..m``, normalised over ``1..m`` (a truncated zeta law).

    ``cap``: beyond ``cap`` items the law falls by a factor ``e^CAP_DROP`` per item (``-s log cap - CAP_DROP (k -
    cap)``): a power law of heavy users who hold up to about ``cap`` items (finite everywhere, so a matrix whose
    column sums need a user above ``cap`` stays possible)."""
    s = float(exponent)
    if not (math.isfinite(s) and s > 0):
        raise ValueError(f"power-law exponent must be a finite number > 0, got {exponent!r}")
    k = np.arange(1, int(m) + 1, dtype=float)
    lp = -s * np.log(k)
    if cap is not None:
        lp = np.where(k <= cap, lp, -s * math.log(cap) - CAP_DROP * (k - cap))
    return lp - np.logaddexp.reduce(lp)


#: The exponents :func:`matched_exponent` chooses between (a mean at or above the uniform law's gives the lower end,
#: a mean at or below 1 the upper one).
MATCHED_EXPONENTS = (0.05, 50.0)


def matched_exponent(m: int, mean: float, cap: int | None = None) -> float:
    """The exponent ``s`` whose power law on ``1..m`` (capped at ``cap``: :func:`power_law_log_pmf`) has mean
    ``mean`` (its *own* mean, before the total is fixed).

    The mean of ``k^-s`` on ``1..m`` falls from ``(m + 1) / 2`` at ``s = 0`` towards 1 as ``s`` grows (capped: from
    about ``(cap + 1) / 2``), so the root is unique; it is clipped to :data:`MATCHED_EXPONENTS` (a mean of 1 item per
    user is met by any steep law).
    """
    m, mu = int(m), float(mean)
    if m < 1:
        raise ValueError(f"m must be an integer >= 1, got {m!r}")
    if not (math.isfinite(mu) and mu >= 1):
        raise ValueError(f"mean must be a finite number >= 1 (items per user), got {mean!r}")
    lo, hi = MATCHED_EXPONENTS
    k = np.arange(1, m + 1, dtype=float)

    def gap(s: float) -> float:
        return float(np.exp(power_law_log_pmf(m, s, cap)) @ k) - mu

    if m == 1 or gap(hi) >= 0:
        return hi
    if gap(lo) <= 0:
        return lo
    return float(brentq(gap, lo, hi, xtol=1e-10))


def _needs_mean(shape: str, mean: float | None) -> float:
    if mean is None:
        raise ValueError(f"shapes: a {shape!r} component needs the known mean number of items per user: "
                         "ItemsMixture(m, shapes, mean=sum(column_sums) / n) (items_prior=\"mixture\" passes it)")
    return mean


def _matched(m: int, factor: float, mean: float | None) -> float:
    """The exponent of a ``("power-law-mean", factor)`` component: its own mean is ``factor x mean``."""
    mean = _needs_mean("power-law-mean", mean)
    f = float(factor)
    if not (math.isfinite(f) and f > 0):
        raise ValueError(f"power-law-mean factor must be a finite number > 0, got {factor!r}")
    return matched_exponent(m, max(1.0, f * mean))


def capped_at(m: int, multiple: float, mean: float | None) -> int:
    """The cap of a ``("power-law-capped", multiple)`` component: ``multiple x mean`` items, rounded, in ``2..m``."""
    mean = _needs_mean("power-law-capped", mean)
    v = float(multiple)
    if not (math.isfinite(v) and v >= 1):
        raise ValueError(f"power-law-capped multiple must be a finite number >= 1, got {multiple!r}")
    return int(min(max(m, 2), max(2, round(v * mean))))


def _power_law_of(m: int, shape: str, v: float, mean: float | None) -> tuple[float | None, int | None]:
    """A component's power law as ``(exponent, cap)``: ``(None, None)`` for a negative binomial."""
    if shape == "power-law":
        return v, None
    if shape == "power-law-mean":
        return _matched(m, v, mean), None
    if shape == "power-law-capped":
        known = _needs_mean(shape, mean)
        cap = capped_at(m, v, known)
        return matched_exponent(m, known, cap), cap
    return None, None


#: The shapes a component may take (see the module): each one's label in diagnostics and its words in the
#: selection's header (formatted with its value ``v``, its exponent ``s`` and the power law's own mean ``mu``).
_SHAPES = {
    "negative-binomial": ("dispersion {v:g}", "negative binomial of dispersion {v:g}"),
    "power-law": ("power law {v:g}", "power law k^-{v:g}"),
    "power-law-mean": ("power law {s:.3g}", "power law k^-{s:.3g} (its own mean {v:g} x sum(c) / n = {mu:.3g} items)"),
    "power-law-capped": ("power law {s:.3g} to {cap}", "power law k^-{s:.3g} up to {cap} items ({v:g} x sum(c) / n; "
                         "its own mean sum(c) / n = {mean:.3g} items)"),
}
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

    ``shapes``: pairs ``("negative-binomial", dispersion)``, ``("power-law", exponent)``,
    ``("power-law-mean", factor)`` (a power law whose own mean is ``factor x mean``; :func:`matched_exponent`) or
    ``("power-law-capped", multiple)`` (a power law capped at ``multiple x mean`` items, its own mean ``mean``;
    :func:`capped_at`), at least two different ones (default :data:`MIXTURE_SHAPES`).  ``mean``: the known mean
    number of items per user, ``sum(column_sums) / n`` (needed by the matched and capped power laws;
    ``items_prior="mixture"`` passes the model's).  Used as ``UserItemModel(..., items_prior="mixture")`` (or an
    instance, for other shapes); needs ``n``, as the exchangeable prior does.  Pickles across processes.
    """

    def __init__(self, m: int, shapes: Sequence[tuple[str, float]] = MIXTURE_SHAPES, mean: float | None = None) -> None:
        from .model import FixedItems

        if mean is not None and (isinstance(mean, bool) or not isinstance(mean, numbers.Real)
                                 or not (math.isfinite(mean) and mean >= 1)):
            raise ValueError(f"mean must be None or a finite number >= 1 (items per user), got {mean!r}")
        self.m, self.shapes = int(m), _check_shapes(shapes)
        self.mean = None if mean is None else float(mean)
        laws = [_power_law_of(self.m, shape, v, self.mean) for shape, v in self.shapes]
        #: Every component's exponent (``None`` for a negative binomial; a matched one as solved) and cap (``None``
        #: but for a ``power-law-capped`` component).
        self.exponents = tuple(s for s, _ in laws)
        self.caps = tuple(cap for _, cap in laws)
        self.components = tuple(FixedItems(dispersion_log_pmf(self.m, v) if s is None
                                           else power_law_log_pmf(self.m, s, cap))
                                for (_, v), s, cap in zip(self.shapes, self.exponents, self.caps))

    def describe_params(self) -> dict:
        """Its parameters (for :func:`hybridpriv.core.params.describe`)."""
        return {"class": type(self).__name__, "m": self.m, "shapes": [list(x) for x in self.shapes], "mean": self.mean}

    def _format(self, j: int, which: int) -> str:
        shape, v = self.shapes[j]
        return _SHAPES[shape][which].format(v=v, s=self.exponents[j], mu=(self.mean or 0.0) * v, cap=self.caps[j],
                                            mean=self.mean or 0.0)

    def label(self, j: int) -> str:
        """How component ``j`` is named in diagnostics: ``"power law 2"``, ``"dispersion 1"``."""
        return self._format(j, 0)

    def describe_one(self, j: int) -> str:
        """Component ``j`` in words: ``"power law k^-1.9 (its own mean 1 x sum(c) / n = 1.5 items)"``."""
        return self._format(j, 1)

    def describe(self) -> str:
        """The components in words, for the selection's header."""
        return ", ".join(self.describe_one(j) for j in range(len(self.shapes)))


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
    pooled.attrs["strata"] = "items_component"  # Monte Carlo errors within components (core.data.strata_of)
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
