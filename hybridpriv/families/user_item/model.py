"""User-item matrices consistent with public column sums (Zeber & Lopatka), as a PyMC model.

What is public: the number of items ``m`` and each item's count (column sums ``c``), and the
number of users ``n`` or only bounds on it.  The generative hierarchy follows the seed:

1. ``n``: known, or unknown in ``[max(c), sum(c)]`` (narrowed by optional bounds) with a prior,
   uniform by default (any PyMC distribution can be passed);
2. the sorted row sums ``r`` given ``n``: each in ``[1, m]``, ``sum(r) = sum(c)``, satisfying
   the Gale-Ryser conditions with ``c``; uniform by default, or ``r_i`` i.i.d. from a
   parametric prior on items per user (a truncated negative binomial with hyperpriors), the
   feasibility of ``r`` acting as evidence;
3. the matrix given both margins: uniform over binary matrices with those margins.

Levels 1-2 are a PyMC model sampled by ``pm.sample`` (:meth:`UserItemModel.fit`) with a custom
step method (:class:`RowSumStep`, a compiled Metropolis-Hastings kernel over ``(n, h)``, ``h``
the histogram of row sums, ``h[k-1] = #{users with k items}``); hyperpriors of the parametric
prior are sampled by PyMC's own samplers beside it.  Level 3 is
:meth:`UserItemPosterior.generate`: one continuing compiled Curveball chain (Strona et al. 2014)
per block of ``block`` consecutive draws (default :data:`BLOCK`): the block's first matrix starts
from a random matrix with the draw's margins (``random_start``), each later one moves items between
users to its draw's row sums and continues; every matrix gets ``trades_per_row * n`` trades
(default 10 n, a measured choice: ``benchmarks/user_item_thinning.py``).  The randomness of a draw
is the stream the engine passes for it (``("dataset", chain, draw)`` in
:func:`hybridpriv.engine.evaluate.evaluate`), so a matrix depends on the seed and the draw, not on the
chunk or worker (:class:`~hybridpriv.families.user_item.model_block.BlockChain`); ``block=1`` is the
sampler before issue 13 (a fresh random start per matrix).

With a uniform prior on ``r`` given ``n``, the marginal of ``n`` needs the number of feasible
``r`` for every ``n`` (``log_count_row_sums``, an exact dynamic programme); see
``docs/user-item.md``.  The compiled core is split by seam: ``model_feasibility``
(Gale-Ryser, counting), ``model_realize``, ``model_chains`` (Curveball and the row-sum
kernel), ``model_bits`` (bit rows, their trades, the row-sum move), ``model_block``
(the continuing chain: blocks, streams, cache), ``model_mixing``, ``model_step`` (the PyMC step).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from numbers import Integral
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import scipy.sparse as sp

from ...core.params import describe
from ...core.random import as_generator
from ...core.model import KnowledgeModel, Posterior, _strict_sample_kwargs
from .model_block import BlockChain, draw_streams
from .model_chains import curveball, random_start
from .model_feasibility import log_count_cost, log_count_row_sums, start_histogram
from .model_mixing import mixing_check
from .model_mixture import ItemsMixture, fit_mixture
from .model_realize import realize_greedy
from .model_step import PointFunction, RowSumStep

__all__ = [
    "BLOCK",
    "FixedItems",
    "ItemsMixture",
    "MAX_COUNT_CELLS",
    "MAX_N_VALUES",
    "STARTS",
    "TRADES_PER_ROW",
    "NegativeBinomialItems",
    "RowSumStep",
    "UserItemModel",
    "UserItemPosterior",
    "negative_binomial_items",
]

#: Default Curveball trades per matrix, per row (measured: ``benchmarks/user_item_thinning.py``).
TRADES_PER_ROW = 10
#: Default draws per block of the continuing matrix chain (see :class:`UserItemModel`).
BLOCK = 100
#: Stands for ``items_prior="mixture"`` when ``n`` is not known, until the refusal that names it.
_NEEDS_N = object()
#: Where a matrix's Curveball chain starts (see :class:`UserItemModel`).
STARTS = ("random", "greedy")

#: Default row-sum kernel moves per draw: ``max(MIN_MOVES, MOVES_PER_REPORT * sum(c))`` (see ``_sample``).
MOVES_PER_REPORT = 25
MIN_MOVES = 300
#: The same with a fixed items prior (:class:`FixedItems`: exchangeable, a mixture's components, a histogram):
#: those chains mix faster than the uniform prior's.  Measured (``docs/user-item.md``, *Row-sum moves with a fixed prior*): on
#: four calibration truths and InstEval, 8-10 moves per report gave the bulk ESS of ``share_one_item``,
#: ``max_items`` and the row sums' sum of squares that 25 gave (177-435 of 400 draws at 10, InstEval's
#: heaviest component the lowest), in 40% of the time.
FIXED_MOVES_PER_REPORT = 10

#: Largest dynamic programme (cells) the uniform prior on r given unknown n may run.
MAX_COUNT_CELLS = 200_000_000
#: Largest memory of that programme (bytes).
MAX_COUNT_BYTES = 2 * 2**30
#: Most candidate values of an unknown n (the log target of n holds one float per value: 80 MB).
MAX_N_VALUES = 10_000_000
#: Largest sum of the column sums (int64 arithmetic on reports, users and counts stays exact).
MAX_TOTAL = 2**62


def _check_column_sums(column_sums: object) -> np.ndarray:
    try:
        c = np.asarray(column_sums)
    except Exception as exc:  # pragma: no cover - exotic input
        raise TypeError(f"column_sums must be a 1-D sequence of integers: {exc}") from None
    if c.ndim != 1 or c.size == 0:
        raise ValueError(f"column_sums must be a non-empty 1-D sequence of integers, got shape {c.shape}")
    if not np.issubdtype(c.dtype, np.number) or np.issubdtype(c.dtype, np.complexfloating):
        raise TypeError(f"column_sums must hold integers, got dtype {c.dtype}")
    if np.issubdtype(c.dtype, np.floating):
        if np.isnan(c).any():
            raise ValueError("column_sums must not contain NaN")
        if not np.isfinite(c).all() or (c != np.round(c)).any():
            bad = c[~np.isfinite(c) | (c != np.round(c))][0]
            raise ValueError(f"column_sums must be whole numbers, got {float(bad)!r}")
    size = float(np.abs(c).sum(dtype=np.float64))  # no int64 overflow (values or their sum)
    if not size < MAX_TOTAL:
        raise ValueError(f"column_sums: the counts sum to {size:.3g}, above the limit of 2**62 = {MAX_TOTAL:.3g}")
    c = c.astype(np.int64)
    if (c < 0).any():
        raise ValueError(f"column_sums must be >= 0, got {int(c[c < 0][0])}")
    if c.sum() == 0:
        raise ValueError("column_sums must not all be 0 (no user reported any item)")
    return c


def _n_range(n: object, c: np.ndarray) -> tuple[int, int]:
    """The feasible range of n: max(c) <= n <= sum(c), intersected with what is given."""
    lo_feasible, hi_feasible = int(c.max()), int(c.sum())
    if n is None:
        return lo_feasible, hi_feasible
    if isinstance(n, Integral) and not isinstance(n, bool):
        n = int(n)
        if n < lo_feasible:
            raise ValueError(f"n = {n} is infeasible: an item has column sum {lo_feasible} > n (each user reports an item once)")
        if n > hi_feasible:
            raise ValueError(f"n = {n} is infeasible: n > sum(column_sums) = {hi_feasible} (every user reports at least one item)")
        return n, n
    if isinstance(n, Sequence) and not isinstance(n, (str, bytes)) and len(n) == 2:
        lo, hi = n
        for name, v in (("n low", lo), ("n high", hi)):
            if not isinstance(v, Integral) or isinstance(v, bool):
                raise TypeError(f"{name} must be an integer, got {v!r}")
        if lo > hi:
            raise ValueError(f"n bounds must satisfy low <= high, got ({lo}, {hi})")
        a, b = max(int(lo), lo_feasible), min(int(hi), hi_feasible)
        if a > b:
            raise ValueError(
                f"n bounds ({lo}, {hi}) are infeasible: the column sums need max(c) = {lo_feasible} <= n <= "
                f"sum(c) = {hi_feasible}"
            )
        return a, b
    raise TypeError(f"n must be an int, None or a (low, high) pair, got {n!r}")


class NegativeBinomialItems:
    """A parametric prior on items per user: NegativeBinomial(mu, alpha) truncated to ``1..m``.

    Hyperpriors: ``log(mu_items) ~ Normal(mu[0], mu[1])`` and ``alpha_items ~ Exponential(alpha)``.
    Calling it inside a model creates the hyperpriors and returns the log pmf of ``k = 1..m``
    (normalised over ``1..m``).  A class (not a closure) so models pickle across processes.
    """

    def __init__(self, m: int, mu: tuple[float, float] = (1.0, 1.0), alpha: float = 1.0) -> None:
        self.m, self.mu, self.alpha = int(m), (float(mu[0]), float(mu[1])), float(alpha)

    def describe_params(self) -> dict:
        """Its parameters (for :func:`hybridpriv.core.params.describe`: no object address in fingerprints)."""
        return {"class": type(self).__name__, "m": self.m, "mu": list(self.mu), "alpha": self.alpha}

    def __call__(self) -> pt.TensorVariable:
        log_mu = pm.Normal("log_mu_items", self.mu[0], self.mu[1])
        a = pm.Exponential("alpha_items", self.alpha)
        k = np.arange(1, self.m + 1)
        lp = pm.logp(pm.NegativeBinomial.dist(mu=pt.exp(log_mu), alpha=a), k)
        return lp - pt.logsumexp(lp)


def negative_binomial_items(m: int, mu: tuple[float, float] = (1.0, 1.0), alpha: float = 1.0) -> NegativeBinomialItems:
    """The default parametric prior on items per user (see :class:`NegativeBinomialItems`)."""
    return NegativeBinomialItems(m, mu, alpha)


class FixedItems:
    """A fixed prior on items per user: the log pmf of ``k = 1..m`` given as numbers (normalised
    here), e.g. from a DP histogram of items per user.  No hyperpriors; pickles across processes."""

    def __init__(self, log_pmf: Sequence[float] | np.ndarray) -> None:
        lp = np.asarray(log_pmf, dtype=float)
        if lp.ndim != 1 or lp.size == 0 or not np.all(np.isfinite(lp)):
            raise ValueError(f"log_pmf must be a non-empty 1-D array of finite numbers, got {log_pmf!r}")
        self.log_pmf = lp - np.logaddexp.reduce(lp)

    def describe_params(self) -> dict:
        """Its parameters (for :func:`hybridpriv.core.params.describe`)."""
        return {"class": type(self).__name__, "log_pmf": [float(x) for x in self.log_pmf]}

    def __call__(self) -> pt.TensorVariable:
        return pt.as_tensor(self.log_pmf)


class UserItemPosterior(Posterior):
    """A fitted :class:`UserItemModel`: a :class:`hybridpriv.core.data.DatasetSource` of user-item matrices.

    Parameters
    ----------
    model
        The :class:`UserItemModel` that was fitted.
    idata
        The ``DataTree`` ``pm.sample`` returned, or anything whose ``["posterior"]`` holds the
        draws of ``h`` (``(chain, draw, items)``) -- e.g. ``{"posterior": dataset}`` read back from
        a file.
    seed
        The fit's seed.

    Notes
    -----
    ``convergence_vars`` are the row-sum summaries the model records (``share_one_item``,
    ``max_items``; with ``n`` unknown also ``n`` and ``mean_items``; the hyperpriors of a
    parametric prior).  Pickled (as the engine sends it to dask workers) a posterior carries the
    model and the row-sum histograms in the smallest integer type that holds them (``m`` small
    integers per draw), not ``idata``: an unpickled copy can :meth:`generate` and
    :meth:`describe_params`, and its ``idata`` is ``None``.
    """

    data_kind = "user-item"
    convergence_advice = ("raise draws (--draws: longer chains; the row-sum sampler has no tuning steps), or give n "
                          "if the number of users is public (n unknown mixes slowly)")

    def __init__(self, model: UserItemModel, idata: Any, seed: int = 0) -> None:
        if not isinstance(model, UserItemModel):
            raise TypeError(f"model must be a UserItemModel, got {type(model).__name__}")
        super().__init__(model, idata, seed)
        self.model = model
        post = idata["posterior"]
        if "h" not in post:
            raise ValueError("idata['posterior'] must hold the row-sum histograms 'h' (chain, draw, items)")
        h = np.asarray(post["h"].transpose("chain", "draw", ...).values)
        if h.ndim != 3 or h.shape[2] != model.m:
            raise ValueError(f"idata['posterior']['h'] must have shape (chains, draws, {model.m}), got {h.shape}")
        if h.size and (h.min() < 0 or np.ptp((h * np.arange(1, model.m + 1)).sum(axis=2)) != 0):
            raise ValueError("idata['posterior']['h'] must hold row-sum histograms of the model's reports")
        self._h = h.astype(np.min_scalar_type(int(h.max()) if h.size else 0))
        names = ["share_one_item", "max_items"] + ([] if model.n_known else ["n", "mean_items"])
        names += ["log_mu_items", "alpha_items"]
        self.convergence_vars = tuple(v for v in names if v in post)
        self._described: dict[str, Any] | None = None
        #: A mixture's per-component summaries (set by its fit; ``None`` otherwise).
        self.component_summaries: Any = None

    def summary(self, var_names: Sequence[str] | None = None, **kwargs: Any) -> Any:
        """The base class's; a mixture's (``items_prior="mixture"``) is every component's, each variable named
        with its component (R-hat over pooled components would mix nothing)."""
        if self.component_summaries is not None and var_names is None and not kwargs:
            return self.component_summaries
        return super().summary(var_names, **kwargs)

    def histogram(self, chain: int, draw: int) -> np.ndarray:
        """The row-sum histogram of posterior draw ``(chain, draw)``: ``h[k - 1]`` users report ``k`` items."""
        c, d = self._check_index(chain, draw)
        return self._h[c, d].astype(np.int64)

    def generate(self, chain: int, draw: int, rng: np.random.Generator) -> sp.csr_matrix:
        """The matrix of posterior draw ``(chain, draw)``: users x items, SciPy CSR (int8 ones), rows
        sorted by decreasing row sum, columns in the given order.

        With ``model.block > 1`` and ``rng`` the stream of ``(chain, draw)`` (a generator on a
        ``SeedSequence`` whose spawn key ends with ``(chain, draw)``, as the engine passes:
        ``hybridpriv.core.random.rng(seed, "dataset", chain, draw)``), the matrix continues the block's
        chain (:class:`~hybridpriv.families.user_item.model_block.BlockChain`): it is a function of the
        seed, the chain, the draw and the posterior, whatever the order of calls, and ``rng``'s
        state is not used (the draw's stream is rebuilt from its key).  Otherwise (``block=1``, or
        any other generator) it is :meth:`UserItemModel.matrix_for` made with ``rng`` (a fresh
        start; ``rng``'s state advances).
        """
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {rng!r}")
        c, d = self._check_index(chain, draw)
        key = draw_streams(rng, c, d) if self.model.block > 1 else None
        if key is None:
            return self.model.matrix_for(self.histogram(c, d), rng)
        chain_ = self.__dict__.get("_chain")
        if chain_ is None:
            chain_ = self.__dict__["_chain"] = BlockChain(self.model, self.histogram)
        indptr, indices = chain_.matrix(c, d, key)
        return sp.csr_matrix((np.ones(indices.size, dtype=np.int8), indices, indptr), shape=(indptr.size - 1, self.model.m))

    def branches(self) -> list[Any]:
        """With the mixture prior (``items_prior="mixture"``): one alternative per component, "items per user follow
        <the component>" against the others; the components' draws are the posterior's strata.  None otherwise."""
        mixture = self.model.items_prior
        if self.strata is None or not isinstance(mixture, ItemsMixture):
            return []
        from ...core.assumptions import Branch

        return [Branch(f"items-{mixture.label(j).replace(' ', '-')}",
                       f"the items per user follow the {mixture.describe_one(j)}",
                       "they follow one of the other components", self.strata == j,
                       advice="the published counts cannot tell the components apart: a DP histogram of items per user "
                              "can (the two-stage plan), or set model.items_prior if you know the spread")
                for j in range(len(mixture.shapes))]

    def mixing_check(self, chain: int = 0, draw: int | None = None, rng: object = 0, chains: int = 4,
                     samples: int = 100, trades_between: int | None = None) -> dict[str, Any]:
        """Does the matrix chain mix?  R-hat and ESS of Curveball chains over the matrices with the
        margins of posterior draw ``(chain, draw)`` (default: the last draw of ``chain``), started
        from ``chains`` different realizations, ``trades_between`` trades apart (default: the
        model's ``trades_per_row * n``, what :meth:`generate` runs).

        ``rng``: SPEC 7 (an integer seed, a ``SeedSequence`` or a ``Generator``).  Returns the dict
        of :func:`hybridpriv.families.user_item.model_mixing.mixing_check` (``rhat``, ``ess``, ``draws``,
        ``trades_between``, ``starts``); R-hat below 1.01-1.05 says the trades suffice.
        """
        gen = as_generator(rng)
        h = self.histogram(chain, self.shape[1] - 1 if draw is None else draw)
        indptr, indices = self.model._realize(h)
        n = indptr.size - 1
        trades = self.model.trades_per_row * n if trades_between is None else trades_between
        return mixing_check(indptr, indices, trades, gen, chains=chains, samples=samples, n_items=self.model.m)

    def describe_params(self) -> dict[str, Any]:
        """The model's parameters, the fit's seed and a checksum of every posterior variable."""
        if self._described is None:
            self._described = super().describe_params()
        return self._described

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_described"] = self.describe_params()
        state["idata"] = None  # the draws the datasets need are in _h (compact)
        state.pop("_chain", None)  # the matrix chain's cache (and its lock) stay in this process
        return state

    def __repr__(self) -> str:
        lo, hi = self.model.n_range
        return (f"UserItemPosterior(m={self.model.m}, n={lo if lo == hi else f'{lo}..{hi}'}, "
                f"shape={self.shape})")


class UserItemModel(KnowledgeModel):
    """Binary user-item matrices consistent with public column sums.

    Fitted with :meth:`fit` (the one ``fit`` of :class:`~hybridpriv.core.model.KnowledgeModel`),
    it gives a :class:`UserItemPosterior`: a dataset source whose dataset at ``(chain, draw)`` is
    the matrix of that posterior draw of the row sums.

    Parameters
    ----------
    column_sums
        Each item's count (the public knowledge), non-negative integers, not all 0.
    n
        The number of users: an int (known), ``None`` (unknown: ``max(c) <= n <= sum(c)``) or
        a ``(low, high)`` pair of bounds.
    n_prior
        Prior on ``n`` when unknown: ``None`` (uniform) or an unnamed PyMC distribution
        (e.g. ``pm.Poisson.dist(2000)``), restricted to the feasible range.
    items_prior
        ``None`` (uniform over sorted row sums given ``n``, the seed's default), ``"exchangeable"``
        (every split of the reports among the labelled users equally likely; needs ``n``), ``"mixture"``
        (:class:`ItemsMixture`: the exchangeable prior beside a power law of heavy users and a tighter spread,
        fitted apart and pooled with equal weights; needs ``n``; or an instance for other shapes), ``"negative-binomial"``
        (:func:`negative_binomial_items` with default hyperpriors), a :class:`FixedItems` or a callable that,
        inside the model, creates hyperpriors and returns the log pmf of ``k = 1..m`` items per user.
    trades_per_row
        Curveball trades per matrix, per row (default :data:`TRADES_PER_ROW`, i.e. 10 n trades),
        chosen by a measured criterion (``benchmarks/user_item_thinning.py``, ``docs/user-item.md``).
    start
        Where each matrix's Curveball chain starts: ``"random"`` (default; :func:`random_start`, a
        fresh random matrix with the margins, drawn from the matrix's own generator) or
        ``"greedy"`` (the one greedy realization of the margins, the same for every matrix with
        those margins: the sampler before issue 12, which needs far more trades to forget it).
        With ``block > 1`` this is where each block's chain starts.
    block
        Consecutive posterior draws per continuing matrix chain (default :data:`BLOCK`).  Draw
        ``d``'s matrix continues from draw ``d - 1``'s when both are in the same block
        ``[b * block, (b + 1) * block)``: items move between users to the new row sums (several at
        once where the histogram changed), then the ``trades_per_row * n`` trades; the first
        draw of a block starts afresh from ``start``.  ``1``: every matrix starts afresh (the
        sampler before issue 13, same numbers).  Larger blocks save the fresh starts; a request out
        of order replays at most ``block - 1`` draws.  Matrices are continued only when
        :meth:`UserItemPosterior.generate` is given the stream of ``(chain, draw)`` (as the engine
        passes it); see :class:`~hybridpriv.families.user_item.model_block.BlockChain` for the invariants.

    Raises
    ------
    ValueError
        Before any sampling, for infeasible knowledge: a column sum above ``n``, ``n`` above
        ``sum(c)``, bounds outside ``[max(c), sum(c)]``, malformed sums; and, in at most O(m), for
        knowledge too large to sample: counts summing to ``2**62`` or more, more than
        :data:`MAX_N_VALUES` candidate values of an unknown ``n``, a uniform prior on row sums whose
        counting programme exceeds :data:`MAX_COUNT_CELLS` cells or ``MAX_COUNT_BYTES`` of memory.

    Notes
    -----
    ``fit(draws, tune, chains, seed, progressbar, on_unconverged, **kw)`` is the base class's: one
    seed per chain from stream ``("fit", chain)``, then the convergence check of the row-sum
    summaries.  Here ``tune`` is burn-in (the row-sum step has no tuning: those draws are run and
    discarded), and ``kw`` may hold ``moves`` (kernel moves per draw, default
    ``max(300, 25 * sum(c))``) and ``cores`` (chains run in parallel processes, default 1) beside
    other ``pm.sample`` arguments.

    Examples
    --------
    >>> posterior = UserItemModel([4, 2, 2, 1], 6).fit(draws=20, tune=0, seed=1, on_unconverged="ignore")
    >>> posterior.shape, posterior.data_kind
    ((2, 20), 'user-item')
    >>> posterior.generate(0, 0, np.random.default_rng(0)).shape
    (6, 4)
    """

    posterior_class = UserItemPosterior  # what fit() returns

    def __init__(
        self,
        column_sums: Sequence[int] | np.ndarray,
        n: int | tuple[int, int] | None = None,
        n_prior: object = None,
        items_prior: str | Callable | None = None,
        trades_per_row: int = TRADES_PER_ROW,
        start: str = "random",
        block: int = BLOCK,
    ) -> None:
        self.column_sums = _check_column_sums(column_sums)
        self.m = int(self.column_sums.size)
        self.total = int(self.column_sums.sum())
        self.n_range = _n_range(n, self.column_sums)
        self.n_known = self.n_range[0] == self.n_range[1]
        if n_prior is not None and self.n_known:
            raise ValueError("n_prior was given but n is known")
        if n_prior is not None and not (isinstance(n_prior, pt.TensorVariable) and n_prior.owner is not None):
            raise TypeError(
                f"n_prior must be None or an unnamed PyMC distribution (e.g. pm.Poisson.dist(2000)), got {n_prior!r}"
            )
        self.n_prior = n_prior
        if items_prior == "negative-binomial":
            items_prior = negative_binomial_items(self.m)
        elif items_prior == "exchangeable":
            if not self.n_known:
                raise ValueError(f"items_prior='exchangeable' needs n (the number of users), got n in "
                                 f"[{self.n_range[0]}, {self.n_range[1]}]: without it the split of the reports "
                                 "would decide n too; give n, or use the uniform prior (None)")
            items_prior = FixedItems(np.zeros(self.m))
        elif items_prior == "mixture":  # its power law is matched to the known mean sum(c) / n (needs n: below)
            items_prior = ItemsMixture(self.m, mean=self.total / self.n_range[0]) if self.n_known else _NEEDS_N
        elif isinstance(items_prior, str):
            raise ValueError(f"items_prior must be None, 'negative-binomial', 'exchangeable', 'mixture' or a callable, "
                             f"got {items_prior!r}")
        elif items_prior is not None and not callable(items_prior) and not isinstance(items_prior, ItemsMixture):
            raise TypeError(f"items_prior must be None, 'negative-binomial', 'exchangeable', 'mixture' or a callable, "
                            f"got {items_prior!r}")
        if (items_prior is _NEEDS_N or isinstance(items_prior, ItemsMixture)) and not self.n_known:
            raise ValueError(f"items_prior='mixture' needs n (the number of users), got n in "
                             f"[{self.n_range[0]}, {self.n_range[1]}]: its components are exchangeable-type priors, "
                             "which would decide n too; give n, or use the uniform prior (None)")
        if isinstance(items_prior, ItemsMixture) and items_prior.m != self.m:
            raise ValueError(f"items_prior: an ItemsMixture needs m = {self.m} (the number of items), got {items_prior.m}")
        if isinstance(items_prior, FixedItems) and items_prior.log_pmf.size != self.m:
            raise ValueError(f"items_prior: a FixedItems log pmf needs one entry per item count 1..m = {self.m}, "
                             f"got {items_prior.log_pmf.size}")
        self.items_prior = items_prior
        if not isinstance(trades_per_row, Integral) or isinstance(trades_per_row, bool) or trades_per_row < 1:
            raise ValueError(f"trades_per_row must be an integer >= 1, got {trades_per_row!r}")
        self.trades_per_row = int(trades_per_row)
        if start not in STARTS:
            raise ValueError(f"start must be one of {list(STARTS)}, got {start!r}")
        self.start = start
        if not isinstance(block, Integral) or isinstance(block, bool) or block < 1:
            raise ValueError(f"block must be an integer >= 1, got {block!r}")
        self.block = int(block)
        # order columns by decreasing sum for the kernels; matrices are returned in the given order
        self._order = np.argsort(-self.column_sums, kind="stable")
        self._c_sorted = self.column_sums[self._order]
        self._log_target_n = self._n_log_target()

    # -- level 1: n ---------------------------------------------------------------
    def _n_log_target(self) -> np.ndarray:
        lo, hi = self.n_range
        # the guards first: each is O(1) or O(m), before any array over n or any programme
        if hi - lo + 1 > MAX_N_VALUES:
            raise ValueError(
                f"n unknown in [{lo}, {hi}]: {hi - lo + 1:,} candidate values of n exceed the limit of "
                f"{MAX_N_VALUES:,} (the log target of n holds one number per value); give n or narrow its bounds"
            )
        if self.items_prior is None and lo < hi:
            total = self.total
            memory = 16 * (min(hi, total // 2) + 1) * (total + 1)  # bytes (log_count_cost's docstring)
            # with a limit the count stops as soon as it exceeds it (then a lower bound): O(1) to O(m)
            cells = 0 if memory > MAX_COUNT_BYTES else log_count_cost(self._c_sorted, hi, limit=MAX_COUNT_CELLS)
            if cells > MAX_COUNT_CELLS or memory > MAX_COUNT_BYTES:
                need = f"{memory / 2**30:.3g} GiB" if memory > MAX_COUNT_BYTES else f"at least {cells:.2g} DP cells"
                raise ValueError(
                    f"n unknown in [{lo}, {hi}] with a uniform prior on row sums needs the number of feasible row "
                    f"sums for every n ({need}; limits {MAX_COUNT_CELLS:.0g} cells, {MAX_COUNT_BYTES / 2**30:g} GiB); "
                    "give n, narrow its bounds, or use items_prior='negative-binomial'"
                )
        ns = np.arange(lo, hi + 1)
        log_prior = np.zeros(ns.size)
        if self.n_prior is not None:
            log_prior = np.asarray(pm.logp(self.n_prior, ns).eval(), dtype=float)
            if not np.isfinite(log_prior).any():
                raise ValueError(f"n_prior gives zero probability to every feasible n in [{lo}, {hi}]")
        if self.items_prior is None and lo < hi:
            log_prior = log_prior - log_count_row_sums(self._c_sorted, ns)
        return log_prior

    # -- the PyMC model -------------------------------------------------------------
    def build(self) -> pm.Model:
        """The PyMC model of levels 1-2 (its log density is the target of :class:`RowSumStep`); with an
        :class:`ItemsMixture`, levels 1-2 without the items prior (each component's fit adds its own)."""
        lo, hi = self.n_range
        m, c = self.m, self._c_sorted
        k = np.arange(1, m + 1)
        cum_c = np.cumsum(c)
        with pm.Model(coords={"items": np.arange(1, m + 1)}) as model:
            if self.n_known:
                n = pt.constant(lo, dtype="int64")
            else:
                n = pm.DiscreteUniform("n", lo, hi)
                pm.Potential("n_target", pt.as_tensor(self._log_target_n)[n - lo])
            h = pm.DiscreteUniform("h", 0, hi, dims="items")
            # Gale-Ryser: sum_k h_k min(k, p) >= C_p for p = 1..m; that sum is x_1 + ... + x_p with
            # x_q = #{users with >= q items} = h_q + ... + h_m, two cumulative sums: O(m), not an
            # m x m matrix of min(k, p) (the same integers)
            at_least = pt.cumsum(h[::-1])[::-1]  # x_q, q = 1..m
            gr = pt.all(pt.cumsum(at_least) >= cum_c) & pt.eq(pt.sum(h), n) & pt.eq(pt.dot(h, k), self.total)
            pm.Potential("feasible", pt.switch(gr, 0.0, -np.inf))
            if self.items_prior is not None and not isinstance(self.items_prior, ItemsMixture):
                log_f = self.items_prior()
                pm.Deterministic("log_f_items", log_f)
                pm.Potential("items_prior", pt.gammaln(n + 1) - pt.sum(pt.gammaln(h + 1)) + pt.dot(h, log_f))
            # summaries of r
            pm.Deterministic("mean_items", self.total / n)
            pm.Deterministic("share_one_item", h[0] / n)
            pm.Deterministic("max_items", pt.max(pt.switch(h > 0, k, 0)))
        return model

    def describe_params(self) -> dict[str, Any]:
        """The model's parameters for results and fingerprints; ``n_prior`` (a PyMC variable, whose
        text does not show its parameters) is described by the log target of ``n`` it implies."""
        params = self.get_params()
        params["n_prior"] = None if self.n_prior is None else {"log_target_n": describe(self._log_target_n)}
        return {"class": f"{type(self).__module__}.{type(self).__qualname__}", "params": describe(params)}

    def fit(self, draws: int = 500, tune: int = 500, chains: int = 2, seed: int = 0, progressbar: bool = False,
            on_unconverged: str = "raise", **sample_kwargs: Any) -> UserItemPosterior:
        """:meth:`KnowledgeModel.fit <hybridpriv.core.model.KnowledgeModel.fit>`; with an :class:`ItemsMixture`,
        every component fitted with ``draws`` per chain and pooled
        (:func:`~hybridpriv.families.user_item.model_mixture.fit_mixture`)."""
        if isinstance(self.items_prior, ItemsMixture):
            return fit_mixture(self, self.items_prior, draws, tune, chains, seed, progressbar, on_unconverged,
                               **sample_kwargs)
        return super().fit(draws, tune, chains, seed, progressbar, on_unconverged, **sample_kwargs)

    # -- sampling levels 1-2 ----------------------------------------------------------
    def _sample(self, model: pm.Model, draws: int, tune: int, chains: int, random_seed: list[int],
                progressbar: bool, moves: int | None = None, cores: int = 1, **sample_kwargs: Any) -> Any:
        """``pm.sample`` with :class:`RowSumStep` over ``(n, h)`` (see :meth:`fit`).

        ``moves``: kernel moves per draw (default ``max(300, 25 * sum(c))``: the fraction of users
        with one item, which only a random walk of single-item moves can change, needs that many
        to mix under the uniform prior; ``max(300, 10 * sum(c))`` with a :class:`FixedItems` prior,
        :data:`FIXED_MOVES_PER_REPORT`; check R-hat and ESS of ``share_one_item``).  ``cores``: chains run in parallel
        processes (``forkserver``: the parent may hold numba or BLAS threads whose locks a fork
        would copy).  The step has no tuning: ``tune`` draws are run and discarded (burn-in).
        PyTensor compiles in the base class's strict mode (``_strict_sample_kwargs``: fast-math off),
        which matters for the NUTS-sampled hyperpriors of a parametric prior.
        """
        if moves is not None and (isinstance(moves, bool) or not isinstance(moves, Integral) or moves < 1):
            raise ValueError(f"moves must be an integer >= 1, got {moves!r}")
        if isinstance(cores, bool) or not isinstance(cores, Integral) or cores < 1:
            raise ValueError(f"cores must be an integer >= 1, got {cores!r}")
        lo, _ = self.n_range
        per_report = FIXED_MOVES_PER_REPORT if isinstance(self.items_prior, FixedItems) else MOVES_PER_REPORT
        moves = int(moves) if moves is not None else max(MIN_MOVES, per_report * self.total)
        h0 = start_histogram(self._c_sorted, lo)  # model_step.initial_histogram's, in O(m log m)
        with model:
            vars_ = [model["h"]] if self.n_known else [model["n"], model["h"]]
            log_f_fn = PointFunction(model, "log_f_items") if self.items_prior is not None else None
            step = RowSumStep(vars_, self._c_sorted, self.n_range, self._log_target_n, log_f_fn, moves=moves)
            init = {"h": h0} if self.n_known else {"n": np.int64(lo), "h": h0}
            return pm.sample(
                draws=draws, tune=tune, chains=chains, cores=int(cores), step=[step], initvals=init,
                random_seed=random_seed, progressbar=progressbar, compute_convergence_checks=False,
                mp_ctx="forkserver" if cores > 1 else None, **_strict_sample_kwargs(sample_kwargs),
            )

    # -- level 3: the matrix given its margins -------------------------------------------
    def _realize(self, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A realization (CSR, columns by decreasing sum) of row-sum histogram ``h``; rows sorted
        by decreasing row sum."""
        h = np.asarray(h, dtype=np.int64)
        r = np.repeat(np.arange(self.m, 0, -1), h[::-1])
        return realize_greedy(r, self._c_sorted)

    def matrix_for(self, h: np.ndarray, rng: np.random.Generator) -> sp.csr_matrix:
        """A draw of a matrix with row-sum histogram ``h`` and the column sums, uniform up to the
        chain's burn-in: ``trades_per_row * n`` Curveball trades from the model's ``start`` (a
        random matrix by default, made with ``rng`` too); rows sorted by decreasing row sum,
        columns in the given order.  Level 3 of the model (:meth:`UserItemPosterior.generate`)."""
        if self.start == "random":
            h = np.asarray(h, dtype=np.int64)
            indptr, indices = random_start(np.repeat(np.arange(self.m, 0, -1), h[::-1]), self._c_sorted, rng)
        else:
            indptr, indices = self._realize(h)
        n = indptr.size - 1
        curveball(indptr, indices, self.trades_per_row * n, rng)
        cols = self._order[indices]  # back to the caller's item order
        mat = sp.csr_matrix((np.ones(cols.size, dtype=np.int8), cols, indptr), shape=(n, self.m))
        mat.sort_indices()
        return mat
