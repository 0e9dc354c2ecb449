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

Levels 1-2 are a PyMC model sampled by ``pm.sample`` with a custom step method
(:class:`RowSumStep`, a compiled Metropolis-Hastings kernel over ``(n, h)``, ``h`` the
histogram of row sums, ``h[k-1] = #{users with k items}``); hyperpriors of the parametric
prior are sampled by PyMC's own samplers beside it.  Level 3 is a compiled Curveball chain
(Strona et al. 2014) started from a realization of the margins, with ``trades_per_row * n``
trades (default 5 n) before each kept matrix.

With a uniform prior on ``r`` given ``n``, the marginal of ``n`` needs the number of feasible
``r`` for every ``n`` (``log_count_row_sums``, an exact dynamic programme); see
``docs/user-item.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import field
from numbers import Integral

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import scipy.sparse as sp
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator

from . import _useritem_kernels as kern

__all__ = [
    "MAX_COUNT_CELLS",
    "NegativeBinomialItems",
    "RowSumStep",
    "UserItemModel",
    "negative_binomial_items",
]

#: Largest dynamic programme (cells) the uniform prior on r given unknown n may run.
MAX_COUNT_CELLS = 200_000_000


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

    def __call__(self) -> pt.TensorVariable:
        log_mu = pm.Normal("log_mu_items", self.mu[0], self.mu[1])
        a = pm.Exponential("alpha_items", self.alpha)
        k = np.arange(1, self.m + 1)
        lp = pm.logp(pm.NegativeBinomial.dist(mu=pt.exp(log_mu), alpha=a), k)
        return lp - pt.logsumexp(lp)


def negative_binomial_items(m: int, mu: tuple[float, float] = (1.0, 1.0), alpha: float = 1.0) -> NegativeBinomialItems:
    """The default parametric prior on items per user (see :class:`NegativeBinomialItems`)."""
    return NegativeBinomialItems(m, mu, alpha)


def _initial_histogram(c: np.ndarray, n: int) -> np.ndarray:
    """A feasible row-sum histogram with n users: the conjugate of c, then split rows.

    The conjugate ``c*`` (``c*_i = #{j: c_j >= i}``) meets the Gale-Ryser conditions with
    equality; moving one item of a row with >= 2 items into a new row of 1 item never lowers
    ``sum_i min(r_i, p)``, so every split keeps feasibility.
    """
    m = c.size
    r = [int((c >= i).sum()) for i in range(1, int(c.max()) + 1)]
    r = [x for x in r if x > 0]
    while len(r) < n:
        r.sort(reverse=True)
        r[0] -= 1
        r.append(1)
    h = np.zeros(m, dtype=np.int64)
    for x in r:
        h[x - 1] += 1
    return h


@dataclass_state
class RowSumStepState(StepMethodState):
    steps: int = field(default=0)


class RowSumStep(BlockedStep):
    """Custom PyMC step: compiled Metropolis-Hastings over (n, row-sum histogram h).

    Parameters
    ----------
    vars
        ``[h]`` or ``[n, h]`` (value variables of the :class:`UserItemModel` PyMC model).
    column_sums
        The public column sums.
    n_range
        ``(low, high)`` of ``n``.
    log_target_n
        ``log P(n)`` (plus ``-log count(n)`` for the uniform prior on r), for ``n = low..high``.
    log_f_fn
        ``None`` (uniform r given n) or a function of the current point returning the log pmf
        of items per user, ``k = 1..m``.
    moves
        Kernel moves per PyMC draw.
    """

    name = "row_sum_mh"
    default_blocked = True
    stats_dtypes_shapes = {"accept_rate": (np.float64, [])}
    _state_class = RowSumStepState

    def __init__(
        self,
        vars,
        column_sums: np.ndarray,
        n_range: tuple[int, int],
        log_target_n: np.ndarray,
        log_f_fn: Callable | None = None,
        moves: int = 200,
        model=None,
        rng=None,
        blocked: bool = True,
    ) -> None:
        model = pm.modelcontext(model)
        self.vars = [model.rvs_to_values.get(v, v) for v in vars]
        self.names = [v.name for v in self.vars]
        self.c = np.asarray(column_sums, dtype=np.int64)
        self.n_lo, self.n_hi = n_range
        self.log_target_n = np.asarray(log_target_n, dtype=np.float64)
        self.log_f_fn = log_f_fn
        self.moves = int(moves)
        self.rng = get_random_generator(rng)  # replaced per chain by setup_chain
        self.steps = 0

    @staticmethod
    def competence(var, has_grad):
        return Competence.INCOMPATIBLE

    def step(self, point):
        h = np.asarray(point["h"], dtype=np.int64).copy()
        n = int(point["n"]) if "n" in self.names else self.n_lo
        log_f = np.asarray(self.log_f_fn(point), dtype=np.float64) if self.log_f_fn is not None else np.empty(0)
        h, n, accepted = kern.h_chain(
            h, n, self.c, self.log_target_n, log_f, self.moves, self.rng, self.n_lo, self.n_hi
        )
        new = dict(point)
        new["h"] = np.asarray(h, dtype=point["h"].dtype)
        if "n" in self.names:
            new["n"] = np.asarray(n, dtype=np.asarray(point["n"]).dtype)
        self.steps += 1
        return new, [{"accept_rate": accepted / max(self.moves, 1)}]


class UserItemModel:
    """Binary user-item matrices consistent with public column sums.

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
        ``None`` (uniform over sorted row sums given ``n``, the seed's default), ``"negative-binomial"``
        (:func:`negative_binomial_items` with default hyperpriors) or a callable that, inside
        the model, creates hyperpriors and returns the log pmf of ``k = 1..m`` items per user.
    trades_per_row
        Curveball trades between kept matrices, per row (default 5, i.e. 5 n trades).

    Raises
    ------
    ValueError
        Before any sampling, for infeasible knowledge: a column sum above ``n``, ``n`` above
        ``sum(c)``, bounds outside ``[max(c), sum(c)]``, malformed sums.
    """

    def __init__(
        self,
        column_sums: Sequence[int] | np.ndarray,
        n: int | tuple[int, int] | None = None,
        n_prior: object = None,
        items_prior: str | Callable | None = None,
        trades_per_row: int = 5,
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
        elif isinstance(items_prior, str):
            raise ValueError(f"items_prior must be None, 'negative-binomial' or a callable, got {items_prior!r}")
        elif items_prior is not None and not callable(items_prior):
            raise TypeError(f"items_prior must be None, 'negative-binomial' or a callable, got {items_prior!r}")
        self.items_prior = items_prior
        if not isinstance(trades_per_row, Integral) or isinstance(trades_per_row, bool) or trades_per_row < 1:
            raise ValueError(f"trades_per_row must be an integer >= 1, got {trades_per_row!r}")
        self.trades_per_row = int(trades_per_row)
        # order columns by decreasing sum for the kernels; matrices are returned in the given order
        self._order = np.argsort(-self.column_sums, kind="stable")
        self._c_sorted = self.column_sums[self._order]
        self._log_target_n = self._n_log_target()

    # -- level 1: n ---------------------------------------------------------------
    def _n_log_target(self) -> np.ndarray:
        lo, hi = self.n_range
        ns = np.arange(lo, hi + 1)
        log_prior = np.zeros(ns.size)
        if self.n_prior is not None:
            log_prior = np.asarray(pm.logp(self.n_prior, ns).eval(), dtype=float)
            if not np.isfinite(log_prior).any():
                raise ValueError(f"n_prior gives zero probability to every feasible n in [{lo}, {hi}]")
        if self.items_prior is None and lo < hi:
            cells = kern.log_count_cost(self._c_sorted, hi)
            if cells > MAX_COUNT_CELLS:
                raise ValueError(
                    f"n unknown in [{lo}, {hi}] with a uniform prior on row sums needs the number of feasible row "
                    f"sums for every n ({cells:.2g} DP cells > {MAX_COUNT_CELLS:.0g}); give n, narrow its bounds, "
                    "or use items_prior='negative-binomial'"
                )
            log_prior = log_prior - kern.log_count_row_sums(self._c_sorted, ns)
        return log_prior

    # -- the PyMC model -------------------------------------------------------------
    def build(self) -> pm.Model:
        """The PyMC model of levels 1-2 (its log density is the target of :class:`RowSumStep`)."""
        lo, hi = self.n_range
        m, c = self.m, self._c_sorted
        k = np.arange(1, m + 1)
        min_kp = np.minimum.outer(k, k)  # min(k, p)
        cum_c = np.cumsum(c)
        with pm.Model(coords={"items": np.arange(1, m + 1)}) as model:
            if self.n_known:
                n = pt.constant(lo, dtype="int64")
            else:
                n = pm.DiscreteUniform("n", lo, hi)
                pm.Potential("n_target", pt.as_tensor(self._log_target_n)[n - lo])
            h = pm.DiscreteUniform("h", 0, hi, dims="items")
            gr = pt.all(pt.dot(h, min_kp) >= cum_c) & pt.eq(pt.sum(h), n) & pt.eq(pt.dot(h, k), self.total)
            pm.Potential("feasible", pt.switch(gr, 0.0, -np.inf))
            if self.items_prior is not None:
                log_f = self.items_prior()
                pm.Deterministic("log_f_items", log_f)
                pm.Potential("items_prior", pt.gammaln(n + 1) - pt.sum(pt.gammaln(h + 1)) + pt.dot(h, log_f))
            # summaries of r
            pm.Deterministic("mean_items", self.total / n)
            pm.Deterministic("share_one_item", h[0] / n)
            pm.Deterministic("max_items", pt.max(pt.switch(h > 0, k, 0)))
        return model

    def sample(
        self,
        draws: int = 500,
        tune: int = 200,
        chains: int = 4,
        seed: int = 0,
        cores: int = 1,
        moves: int | None = None,
        progressbar: bool = False,
    ):
        """Sample levels 1-2 with ``pm.sample``; returns the DataTree (posterior of n, h, summaries).

        ``moves`` kernel moves per draw (default ``max(300, 25 * sum(c))``: the fraction of
        users with one item, which only a random walk of single-item moves can change, needs
        that many to mix; check R-hat and ESS of ``share_one_item``).
        """
        model = self.build()
        lo, hi = self.n_range
        moves = moves or max(300, 25 * self.total)
        h0 = _initial_histogram(self._c_sorted, lo)
        with model:
            vars_ = [model["h"]] if self.n_known else [model["n"], model["h"]]
            log_f_fn = None
            if self.items_prior is not None:
                log_f_fn = _PointFunction(model, "log_f_items")
            step = RowSumStep(vars_, self._c_sorted, self.n_range, self._log_target_n, log_f_fn, moves=moves)
            init = {"h": h0} if self.n_known else {"n": np.int64(lo), "h": h0}
            idata = pm.sample(
                draws=draws, tune=tune, chains=chains, cores=cores, step=[step], initvals=init,
                random_seed=int(np.random.SeedSequence(seed).generate_state(1)[0]),
                progressbar=progressbar, compute_convergence_checks=False,
                # not fork: the parent may hold threads (numba, BLAS), and fork would copy their locks
                mp_ctx="forkserver" if cores > 1 else None,
            )
        return idata

    # -- level 3: matrices ---------------------------------------------------------
    def matrix_for(self, h: np.ndarray, rng: np.random.Generator) -> sp.csr_matrix:
        """A uniform draw (after ``trades_per_row * n`` Curveball trades) of a matrix with row-sum
        histogram ``h`` and the column sums; rows sorted by decreasing row sum, columns in the
        given order."""
        h = np.asarray(h, dtype=np.int64)
        r = np.repeat(np.arange(self.m, 0, -1), h[::-1])
        indptr, indices = kern.realize_greedy(r, self._c_sorted)
        kern.curveball(indptr, indices, self.trades_per_row * r.size, rng)
        cols = self._order[indices]  # back to the caller's item order
        mat = sp.csr_matrix((np.ones(cols.size, dtype=np.int8), cols, indptr), shape=(r.size, self.m))
        mat.sort_indices()
        return mat

    def matrices_from(self, idata, seed: int = 0, draws: int | None = None) -> Iterator[sp.csr_matrix]:
        """Yield one matrix per posterior draw of ``idata`` (from :meth:`sample`), in
        ``(draw, chain)`` order: draw 0 of every chain, then draw 1, ...; the matrix of
        ``(chain, draw)`` uses a generator keyed by ``(seed, chain, draw)``, so the result does
        not depend on the order in which matrices are made."""
        hs = idata["posterior"]["h"].values
        chains, per_chain = hs.shape[:2]
        total = chains * per_chain if draws is None else draws
        produced = 0
        for d in range(per_chain):
            for ch in range(chains):
                if produced == total:
                    return
                rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2, ch, d)))
                yield self.matrix_for(hs[ch, d], rng)
                produced += 1

    def sample_datasets(self, draws: int, seed: int = 0, chains: int = 2, **sample_kwargs) -> Iterator[sp.csr_matrix]:
        """Yield ``draws`` matrices (users x items, ``scipy.sparse`` CSR) from the full hierarchy.

        Levels 1-2 come from :meth:`sample` (``ceil(draws / chains)`` draws per chain, seeded
        from ``seed``); level 3 from :meth:`matrices_from`.
        """
        if not isinstance(draws, Integral) or isinstance(draws, bool) or draws < 1:
            raise ValueError(f"draws must be an integer >= 1, got {draws!r}")
        per_chain = math.ceil(draws / chains)
        idata = self.sample(draws=per_chain, chains=chains, seed=seed, **sample_kwargs)
        yield from self.matrices_from(idata, seed=seed, draws=int(draws))


class _PointFunction:
    """Evaluate a model deterministic at a point (compiled lazily, picklable)."""

    def __init__(self, model: pm.Model, name: str) -> None:
        self.model, self.name, self._fn = model, name, None

    def __call__(self, point):
        if self._fn is None:
            self._fn = self.model.compile_fn(self.model[self.name], inputs=self.model.value_vars, on_unused_input="ignore")
        return self._fn(point)

    def __getstate__(self):
        return {"model": self.model, "name": self.name, "_fn": None}
