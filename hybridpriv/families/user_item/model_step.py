"""The custom PyMC step of :class:`hybridpriv.models.UserItemModel`: compiled Metropolis-Hastings
over the number of users and their row-sum histogram (levels 1-2 of the model).

:class:`RowSumStep` wraps :func:`hybridpriv.families.user_item.model_chains.h_chain` (every Hastings ratio
is in its docstring) as a PyMC ``BlockedStep``; :func:`initial_histogram` is the feasible start
the model's ``_sample`` hands it; :class:`PointFunction` evaluates the parametric prior's log pmf
at the current point (picklable, for PyMC's chain processes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field

import numpy as np
import pymc as pm
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator

from .model_chains import _h_chain_continue, h_chain
from .model_feasibility import _c_prefix

__all__ = ["PointFunction", "RowSumStep", "initial_histogram"]


def initial_histogram(c: np.ndarray, n: int) -> np.ndarray:
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
        # the state the kernel returned last (h, n): a step from exactly that state skips h_chain's
        # checks (margins, log target and feasibility of h were checked when it was reached)
        self._last: tuple[np.ndarray, int] | None = None
        self._Cpref = _c_prefix(self.c)
        self._lt = np.ascontiguousarray(self.log_target_n)

    @staticmethod
    def competence(var, has_grad):
        return Competence.INCOMPATIBLE

    def step(self, point):
        h = np.asarray(point["h"], dtype=np.int64).copy()
        n = int(point["n"]) if "n" in self.names else self.n_lo
        last = self._last
        if self.log_f_fn is None and last is not None and n == last[1] and np.array_equal(h, last[0]):
            h, n, accepted = _h_chain_continue(h, n, self._Cpref, self._lt, self.moves, self.rng, self.n_lo, self.n_hi)
        else:
            log_f = np.asarray(self.log_f_fn(point), dtype=np.float64) if self.log_f_fn is not None else np.empty(0)
            h, n, accepted = h_chain(h, n, self.c, self.log_target_n, log_f, self.moves, self.rng, self.n_lo, self.n_hi)
        self._last = (h.copy(), n)
        new = dict(point)
        new["h"] = np.asarray(h, dtype=point["h"].dtype)
        if "n" in self.names:
            new["n"] = np.asarray(n, dtype=np.asarray(point["n"]).dtype)
        self.steps += 1
        return new, [{"accept_rate": accepted / max(self.moves, 1)}]


class PointFunction:
    """Evaluate a model deterministic at a point: a function of that point's values only.

    The deterministic's graph (e.g. ``log_f_items``, a function of the hyperpriors) is compiled
    with every random variable replaced by its value variable (``model.replace_rvs_by_values``,
    which also undoes transforms: ``alpha_items`` is ``exp(alpha_items_log__)`` of the point).
    Compiling ``model[name]`` itself would leave the random variables in the graph: each call
    would draw the hyperpriors afresh from their priors with an unseeded shared generator,
    ignoring the point (issue 23, item 12).  Compiled lazily with :func:`sampling_mode`
    (fast-math off), and picklable (the compiled function is not pickled), for PyMC's chain
    processes.
    """

    def __init__(self, model: pm.Model, name: str) -> None:
        self.model, self.name, self._fn = model, name, None

    def _compile(self) -> Callable:
        from pymc.pytensorf import rvs_in_graph

        from ...core.model import sampling_mode  # strict floating point: the same bits whatever the cache

        (out,) = self.model.replace_rvs_by_values([self.model[self.name]])
        left = rvs_in_graph(out)
        if left:  # e.g. a pm.X.dist(...) inside the graph, not a model variable: it would be drawn per call
            raise ValueError(f"{self.name} depends on random variables that are not model variables "
                             f"({', '.join(str(v) for v in left)}): it would not be a function of the point")
        return self.model.compile_fn(out, inputs=self.model.value_vars, on_unused_input="ignore",
                                     mode=sampling_mode())

    def __call__(self, point):
        if self._fn is None:
            self._fn = self._compile()
        return self._fn(point)

    def __getstate__(self):
        return {"model": self.model, "name": self.name, "_fn": None}
