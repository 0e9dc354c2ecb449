"""SPEC kind ``user-item``: choose k for contribution-bounded DP item counts (Zeber & Lopatka).

What is public: every item's count (column sums), the number of users (known, a range, or unknown),
epsilon.  Candidates: ``ContributionBoundedCounts(k, epsilon)`` for every k of the range searched
(candidate dimension ``k``); task: the error of the released counts (exact risk for the squared loss).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...spec.schema import (
    Config,
    Context,
    Key,
    SpecError,
    Table,
    choice,
    epsilon,
    fit_table,
    integer,
    integer_range,
    plan_key,
    run_keys,
    string,
    table,
    values,
)

__all__ = ["EVALUATION", "SECTIONS", "TOP", "build", "check"]

#: Most Curveball trades per row between kept matrices (beyond it the run would take hours).
MAX_TRADES_PER_ROW = 10_000
#: The model's default (``hybridpriv.models.TRADES_PER_ROW``; not imported: that loads PyMC).
TRADES_PER_ROW = 10
#: The model's default draws per continuing matrix chain (``hybridpriv.models.BLOCK``; not imported).
BLOCK = 100
#: Most draws per block (a request out of order replays up to block - 1 matrices).
MAX_BLOCK = 10_000
#: Most Curveball trades in a whole run (about 10 M per second on one core).
MAX_TOTAL_TRADES = 2e11
#: Most items (``m = len(column_sums)``): the row-sum sampler keeps an m-vector per draw (PyMC
#: preallocates them for every draw), every candidate is evaluated on n x m matrices, the range of k
#: may widen up to m; 1,000 x the favorite-sites example (m = 100), 2,000 x flights (m = 47).
MAX_ITEMS = 100_000
#: Most reports (``sum(column_sums)``, the ones of every sampled matrix: about 9 bytes each in CSR,
#: several copies while a matrix is made).  The row-sum chain makes 25 moves per report per draw
#: (about 13 M per second, docs/reproduction-zeber.md): at this cap about 19 s a draw, and the default
#: 400 draws + 2 x 200 burn-in draws make 2e11 moves, the budget of MAX_TOTAL_MOVES.
MAX_REPORTS = 10_000_000
#: Most row-sum kernel moves in a whole run (about 13 M per second on one core: about 4 CPU hours).
MAX_TOTAL_MOVES = 2e11
#: With the negative-binomial prior a move also re-evaluates the prior's log density over the m item
#: counts (``_log_g`` in hybridpriv/families/user_item/model_chains.py): it costs about ``1 + m / ITEMS_PER_MOVE`` moves
#: of the uniform prior (measured: 2.0 and 5.5 us per move at m = 10,000 and 30,000, 77 ns uniform).
ITEMS_PER_MOVE = 400
#: Most memory (bytes) of the row-sum draws PyMC preallocates: (draws + burn-in) x m int64 per chain,
#: twice that with the negative-binomial prior (its log pmf over 1..m is recorded too); a mixture keeps every
#: component's.  3 GiB since the mixture's fourth component (a SPEC at MAX_ITEMS with the default evaluation needs
#: 2.4 GiB; 1.8 with three).
MAX_TRACE_BYTES = 3 * 2**30
#: Burn-in draws per chain of the row-sum sampler (the Problem's ``tune``).
TUNE = 200
#: Posterior draws per chain at least, however few datasets are evaluated, so that R-hat and ESS mean
#: something: with 50 per chain (``--draws 100``) the favorite-sites example was refused for R-hat of
#: share_one_item > 1.1 in 5 of 8 seeds, with 200 in none of 8.
MIN_DRAWS_PER_CHAIN = 200
#: The model's default row-sum moves per draw, ``max(MIN_MOVES, MOVES_PER_REPORT * sum(c))``
#: (``hybridpriv.families.user_item.model``; not imported: that loads PyMC).
MOVES_PER_REPORT = 25
MIN_MOVES = 300
#: The same with the exchangeable prior or a mixture's components (``FIXED_MOVES_PER_REPORT`` there).
FIXED_MOVES_PER_REPORT = 10
#: Components of ``items_prior = "mixture"`` (``len(hybridpriv.families.user_item.model_mixture.MIXTURE_SHAPES)``;
#: not imported: that loads PyMC).
MIXTURE_COMPONENTS = 4


def _n(value: Any, path: str, ctx: Context) -> int | tuple[int, int]:
    if isinstance(value, list):
        if len(value) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
            raise SpecError(f"{path} must be an integer or a [low, high] pair of integers, got {value!r}")
        return (value[0], value[1])
    if not isinstance(value, int) or isinstance(value, bool):
        raise SpecError(f"{path} must be an integer or a [low, high] pair of integers, got {value!r}")
    return value


EVALUATION = Table((
    *run_keys(400, 200, draws_doc="posterior draws = sampled matrices (over all chains)",
              trials_doc="Monte Carlo runs per matrix for the max and top10 losses"),
    plan_key("a histogram of items per user"),
), doc="how the candidates are evaluated")

FIT = fit_table("chains of the row-sum sampler", tune=None)

TOP = Table((
    Key("description", string(), "", doc="a line shown at the top of the output"),
    Key("column_sums", values(MAX_ITEMS), doc="every item's count: a list of integers or a CSV path", example="[1200, 600, 400, 300]"),
    Key("n", _n, None, doc="number of users: an integer, a [low, high] range, or omitted (unknown)", example="1500"),
    Key("epsilon", epsilon(allow_public=False), doc="user-level epsilon of the release", example="1.0"),
    Key("k", integer_range(1), None, doc="items kept per user to consider: k or a range [low, high] (default 1..min(10, m), "
        "doubled up to m while the best k is the largest searched)",
        example="[1, 4]"),
    Key("loss", choice("squared", "max", "top10"), "squared",
        doc="squared (total, exact), max (largest item error) or top10 (squared, 10 largest items)"),
    Key("items_prior", choice("auto", "uniform", "exchangeable", "mixture", "negative-binomial"), "auto",
        doc="prior on the items per user: exchangeable (every split of the reports among the labelled users equally "
            "likely: geometric-like rows; needs n), mixture (exchangeable beside a power law of heavy users "
            "whose own mean is the known sum(c) / n, and a tighter spread, equal weights, each fitted on its own; "
            "needs n), uniform over feasible sorted row sums (the seed's: most users at one item), a truncated "
            "negative binomial with hyperpriors, or auto (mixture when n is given, else uniform)"),
    Key("trades_per_row", integer(1, MAX_TRADES_PER_ROW), TRADES_PER_ROW,
        doc="Curveball trades per user for each sampled matrix (one continuing chain per block of draws, "
            "each block from a random start)"),
    Key("block", integer(1, MAX_BLOCK), BLOCK,
        doc="consecutive draws per continuing matrix chain (1: a fresh random start for every matrix, the "
            "sampler before issue 13)"),
    Key("fit", table(FIT), None, doc=FIT.doc),
    Key("evaluation", table(EVALUATION), None, doc="the evaluation"),
), doc="hybridpriv SPEC, kind user-item: choose k, the items kept per user, for DP item counts",
    examples=({"n": "1500"},), derived=("k_default",))  # the template gives n, so that it runs as printed (n unknown mixes slowly)

SECTIONS = (("fit", FIT, False), ("evaluation", EVALUATION, False))

#: Keys a format-1 SPEC names otherwise: ``(format-1 path, format-2 path)``, applied in order.
RENAMED = (("evaluation.chains", "fit.chains"),)


def check(v: Config, ctx: Context) -> Config:
    """Cross-key checks (before any sampling)."""
    c = v.column_sums
    m = int(c.size)
    # size guards first (O(1), then O(m) on the floats read): nothing grows with m, sum(c) or n before them
    if m > MAX_ITEMS:
        raise SpecError(f"column_sums: {m:,} items exceed the limit of {MAX_ITEMS:,} (every posterior draw keeps a "
                        "row-sum histogram over the items, every candidate is evaluated on users x items matrices)")
    bad = np.flatnonzero(~np.isfinite(c) | (c < 0) | (c != np.round(c)))
    if bad.size:
        raise SpecError(f"column_sums[{bad[0]}] must be a whole number >= 0, got {float(c[bad[0]]):g}")
    reports = float(c.sum())
    if reports > MAX_REPORTS:
        raise SpecError(f"column_sums: {reports:,.0f} reports (the sum of the column sums) exceed the limit of "
                        f"{MAX_REPORTS:,} (every sampled matrix holds that many ones; the row-sum sampler makes "
                        f"{MOVES_PER_REPORT} moves per report per draw)")
    v = v.replace(column_sums=c.astype(np.int64))
    ev = v.evaluation
    chains = v.fit.chains
    per_chain = max(1, math.ceil(ev.draws / chains)) + TUNE  # draws sampled per chain, burn-in included
    prior = items_prior_of(v)
    nb = prior == "negative-binomial"
    fits = MIXTURE_COMPONENTS if prior == "mixture" else 1  # a mixture fits each component
    per_report = FIXED_MOVES_PER_REPORT if prior in ("exchangeable", "mixture") else MOVES_PER_REPORT
    moves = fits * chains * per_chain * max(MIN_MOVES, per_report * reports) * (1 + m / ITEMS_PER_MOVE if nb else 1)
    if moves > MAX_TOTAL_MOVES:
        raise SpecError(f"evaluation.draws = {ev.draws} over {chains} chains (+ {TUNE} burn-in draws each) x "
                        f"{per_report} x sum(column_sums) = {reports:,.0f} row-sum moves per draw"
                        + (f" x {fits} mixture components" if fits > 1 else "")
                        + (f" (each worth 1 + m / {ITEMS_PER_MOVE} = {1 + m / ITEMS_PER_MOVE:.3g} with the "
                           "negative-binomial prior)" if nb else "")
                        + f" is {moves:.2g} moves (about {moves / 1.3e7 / 3600:.0f} CPU hours; limit "
                        f"{MAX_TOTAL_MOVES:.0g}); lower evaluation.draws or fit.chains, or the problem is too "
                        "large for this sampler")
    trace = fits * chains * per_chain * m * 8 * (2 if nb else 1)
    if trace > MAX_TRACE_BYTES:
        raise SpecError(f"evaluation.draws = {ev.draws} over {chains} chains (+ {TUNE} burn-in draws each) x "
                        f"m = {m:,} items: the sampler would keep {trace / 2**30:.3g} GiB of row-sum draws (limit "
                        f"{MAX_TRACE_BYTES / 2**30:g} GiB); lower evaluation.draws")
    # k_default: then the range is widened (up to m) while the best k sits at its edge
    v = v.replace(k_default=v.k is None, k=list(range(1, min(10, m) + 1)) if v.k is None else v.k)
    if v.k[-1] > m:
        raise SpecError(f"k must be <= m = {m} (the number of items), got {v.k[-1]}")
    return v


def context(v: Config, posterior: Any) -> dict[str, Any]:
    """What a SPEC-named mechanism's constructor may take (:data:`hybridpriv.spec.custom.CONTEXT`)."""
    return {"epsilon": v.epsilon, "m": int(len(v.column_sums)), "column_sums": v.column_sums,
            "posterior": posterior}


def items_prior_of(v: Config) -> str:
    """The items-per-user prior a SPEC asks for, ``auto`` resolved: the mixture when ``n`` is given (on the
    calibration truths its 5-95% ranges held 52% of the realised risks against the exchangeable prior's 30%, at the
    same regret, which was a third of the uniform prior's; issue 25), else the seed's uniform prior."""
    if v.items_prior != "auto":
        return v.items_prior
    return "mixture" if isinstance(v.n, int) else "uniform"


def build(v: Config):
    """The selection problem: the model of the matrix (validated now), the candidates over k, the task."""
    from ...core.privacy import Guarantee
    from ...estimators import ContributionBoundedCounts
    from ...models import UserItemModel
    from ...workflow import Problem
    from .assumptions import user_item_assumptions
    from .mechanisms import ItemCounts
    from .plan import user_item_probe

    prior = items_prior_of(v)
    try:
        model = UserItemModel(v.column_sums, v.n, trades_per_row=v.trades_per_row, block=v.block,
                              items_prior=None if prior == "uniform" else prior)
    except (TypeError, ValueError) as exc:
        msg = str(exc)
        raise SpecError(msg if msg.startswith("spec:") else f"model: {msg}") from None
    ev = v.evaluation
    lo, hi = model.n_range
    trades = ev.draws * v.trades_per_row * hi
    if trades > MAX_TOTAL_TRADES:
        raise SpecError(f"evaluation.draws = {ev.draws} x trades_per_row = {v.trades_per_row} x n <= {hi} "
                        f"is {trades:.2g} Curveball trades (about {trades / 1e7 / 3600:.0f} CPU hours); lower them")
    eps = v.epsilon

    def candidates(posterior) -> dict:
        return {k: ContributionBoundedCounts(k, eps) for k in v.k}

    def diagnostics(posterior, seed: int) -> tuple[list[str], dict[str, Any]]:
        mix = posterior.mixing_check(rng=seed)
        starts = mix.get("starts", ())
        line = (f"matrix chain: {v.trades_per_row} x n trades per matrix, continuing over blocks of "
                f"{posterior.model.block} draws from a random start; R-hat over "
                f"{len(starts) or 4} chains from different realizations {mix['rhat']:.3f} (ESS {mix['ess']:.0f})")
        return [line], {"matrix_chain_rhat": float(mix["rhat"])}

    def widen(decision, posterior) -> dict | None:
        """When the best k is the largest searched (and k was not given), double the range, up to m."""
        if not v.k_default:
            return None
        ks = [int(k) for k in decision.k.values]
        best, top = int(decision.attrs["recommended"]), max(ks)
        if best != top or top >= model.m:
            return None
        return {k: ContributionBoundedCounts(k, eps) for k in range(top + 1, min(model.m, 2 * top) + 1)}

    n_text = f"{lo}" if lo == hi else f"{lo}..{hi}"
    mixture = f": {model.items_prior.describe()}, equal weights" if prior == "mixture" else ""
    auto = f" (auto: n is {'given' if prior == 'mixture' else 'not given'})" if v.items_prior == "auto" else ""
    header = [f"m = {model.m} items, {int(v.column_sums.sum())} reports, n = {n_text} users, "
              f"epsilon = {eps:g}, k = {v.k[0]}..{v.k[-1]}, loss = {v.loss}",
              f"items per user: {prior} prior{auto}" + mixture]
    return Problem(
        kind="user-item", description=v.description, model=model, candidates=candidates,
        task=ItemCounts(v.loss), dim="k", requirements={"users": Guarantee(eps, 0.0, "add-remove")},
        chains=v.fit.chains, tune=TUNE, min_posterior_draws=MIN_DRAWS_PER_CHAIN, datasets=ev.draws,
        trials=1 if v.loss == "squared" else ev.trials,  # the squared loss is exact: no releases
        seed=ev.seed, header=header,
        title=f"Choosing k: {v.loss} error, epsilon = {eps:g} (numbers: P(best k))", diagnostics=diagnostics,
        widen=widen, assumptions=user_item_assumptions(model.m, hi),
        probe=user_item_probe(eps, model.m, ev.plan_share) if ev.plan_share > 0 else None,
    )
