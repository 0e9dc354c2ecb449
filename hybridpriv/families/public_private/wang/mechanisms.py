"""The Wang family as mechanisms: candidates for :func:`hybridpriv.engine.evaluate.evaluate` on a :class:`HybridDesign`.

===================  =====================================================  ===============================
mechanism            release ``(trials, d)``                                 ``"private"`` unit (replace-one)
===================  =====================================================  ===============================
``Algorithm1``       Algorithm 1 on the first ``subset_size`` points of a    ``epsilon``
                     public order (all public points by default)
``Algorithm2``       Algorithm 2's released ``theta`` (or its chosen size)   the accountant's total:
                                                                             ``eps1 + eps2 + eps3`` (``+ k eps3``
                                                                             for ``selection="paper"``)
``LeiHistogram``     Lei's perturbed histogram on ``D`` alone                ``epsilon``
``PublicOnly``       the unweighted public fit                               0 (never reads ``D``)
===================  =====================================================  ===============================

Every mechanism promises the ``"public"`` unit nothing (``inf``): the public records are public.
:class:`HybridMEstimator` is Algorithm 1 for scalar records as a grouped
:class:`~hybridpriv.families.grouped.estimator.Estimator` (a private and a public group).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from ....accounting import Accountant
from ....core import events
from ....core.mechanism import Mechanism
from ....core.privacy import (
    Bounds,
    Group,
    Guarantee,
    check_epsilon,
    check_integer,
    check_positive,
    check_real_array,
)
from ....core.validation import check_rng, check_trials
from ....noise import laplace
from ...grouped.estimator import Estimator
from ._checks import check_bool, check_on_zero
from .algorithm2 import (
    SELECTIONS,
    UNPROVEN_WARNING,
    Algorithm2Result,
    check_epsilons,
    check_subset_sizes,
    counts_function,
    ledger_plan,
    prepare_criterion,
    run_algorithm2,
)
from .contrasts import LogisticContrast, as_contrast
from .criteria import logistic_contrast
from .design import HybridDesign, check_order
from .lei import lei_cells, lei_fit
from .mestimation import fit_rows, m_estimate
from .weights import representation_counts, weights_from_counts

__all__ = ["Algorithm1", "Algorithm2", "HybridMEstimator", "LeiHistogram", "PublicOnly"]

_PUBLIC = Guarantee(math.inf, 0.0, "replace")


def _declaration(epsilon: float) -> dict[str, Guarantee]:
    return {"private": Guarantee(epsilon, 0.0, "replace"), "public": _PUBLIC}


def _count_noise(epsilon: float) -> Any:
    """Laplace(``2 / epsilon``) on a count vector of L1 sensitivity 2 (replacing one private record moves
    one count down and one up); ``epsilon = inf`` (noise-free) is not private."""
    return events.epsilon_delta(math.inf) if math.isinf(epsilon) else events.laplace(2.0 / epsilon, 2.0)


class _PublicPrivate(Mechanism):
    """Shared plumbing: the data check and the contrast's layout."""

    data_kind: ClassVar[str] = "public-private"

    def _design(self, data: Any) -> HybridDesign:
        if not isinstance(data, HybridDesign):
            raise TypeError(f"data must be a HybridDesign (hybridpriv.families.public_private.wang), got {type(data).__name__}")
        c = getattr(self, "contrast", None)
        if isinstance(c, LogisticContrast):
            j = c.outcome_column(data.public.shape[1])
            if data.outcome is not None and data.outcome != j:
                raise ValueError(f"the contrast reads column {j} as the outcome, but the data's outcome "
                                 f"{data.label!r} is column {data.outcome}")
        return data

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


class Algorithm1(_PublicPrivate):
    """Algorithm 1 (Wang et al.) on the first ``subset_size`` public points of a public order.

    Steps 2-4 on the dataset's rescaled points: each private point's nearest point of the subset,
    the counts with ``Laplace(2 / epsilon)`` noise, divided by ``n_D`` and truncated at 0, and the
    weighted contrast minimised over the original public points of the subset.

    Parameters
    ----------
    contrast
        ``"mean"``, ``"median"``, ``"logistic"``, a :class:`~hybridpriv.families.public_private.wang.Contrast`
        or a callable (see :func:`~hybridpriv.families.public_private.wang.as_contrast`).
    epsilon
        The budget of the weights (> 0; ``inf``: noise-free weights, **not private**, the paper's
        black curve).
    subset_size
        How many public points of the order are released (default: all of them).
    order
        The public order: None (the public points as given), a sequence of distinct public
        indices, or the name of one of the dataset's ``orders`` (e.g. from
        :func:`hybridpriv.families.public_private.wang.model.weight_order`).  It must be public: it is not charged.
    truncate
        Truncated weights (Definition 6, default) or signed ones (Definition 5; ``"mean"`` only).
    on_zero_weights
        ``"uniform"`` (default): a run whose truncated weights are all 0 releases the equal-weights
        fit of the subset (post-processing); ``"raise"``.

    Guarantee: ``epsilon``-DP for the private records, replace-one (Proposition 1); the public
    records are promised nothing.  Releases ``(trials, d)``.
    """

    def __init__(
        self,
        contrast: object,
        epsilon: float,
        subset_size: int | None = None,
        order: str | Sequence[int] | np.ndarray | None = None,
        truncate: bool = True,
        on_zero_weights: str = "uniform",
    ) -> None:
        self.contrast = as_contrast(contrast)
        self.epsilon = check_epsilon(epsilon)
        self.subset_size = None if subset_size is None else check_integer(subset_size, "subset_size", 1)
        if order is not None and not isinstance(order, str):
            order = check_order(order, None)
        elif isinstance(order, str) and not order:
            raise ValueError("order must be None, public indices or the name of a dataset's order, got ''")
        self.order = order
        self.truncate = check_bool(truncate, "truncate")
        if not self.truncate and not self.contrast.allows_negative_weights:
            raise ValueError(f"signed weights (truncate=False) need a contrast that allows them (mean), got {self.contrast.name!r}")
        self.on_zero_weights = check_on_zero(on_zero_weights)
        where = "" if self.order is None else (f"-{self.order}" if isinstance(self.order, str) else "-ordered")
        self.label = f"algorithm1{where}" + ("" if self.subset_size is None else f"-n{self.subset_size}")

    @property
    def privacy(self) -> dict[str, Guarantee]:
        return _declaration(self.epsilon)

    @property
    def privacy_events(self) -> dict[str, Any]:
        """The private records: the noisy counts (:func:`_count_noise`); the public ones: not private."""
        return {"private": _count_noise(self.epsilon), "public": events.epsilon_delta(math.inf)}

    def _order(self, design: HybridDesign) -> tuple[np.ndarray | None, int]:
        """The public order this mechanism reads on ``design`` (None: the points as given) and the subset size."""
        n_e = design.n_public
        if self.order is None:
            base = None
        elif isinstance(self.order, str):
            base = design.order(self.order)
        else:
            base = self.order
            if base.max() >= n_e:
                raise ValueError(f"order holds public index {base.max()}, but the data have n_E = {n_e} public points")
        length = n_e if base is None else base.size
        n = length if self.subset_size is None else self.subset_size
        if n > length:
            raise ValueError(f"subset_size must be at most the order's length {length}, got {n}")
        return base, n

    def _subset(self, design: HybridDesign) -> tuple[np.ndarray | None, np.ndarray | None, int]:
        """``(order, released indices or None for all as given, size)`` on ``design``: the order is read once."""
        base, n = self._order(design)
        if base is None:
            return None, (None if n == design.n_public else np.arange(n)), n
        return base, base[:n], n

    def subset(self, data: HybridDesign) -> np.ndarray | None:
        """The public indices this mechanism releases on ``data`` (a public computation); None: all, as given."""
        return self._subset(self._design(data))[1]

    def nearest(self, data: HybridDesign) -> tuple[np.ndarray, np.ndarray]:
        """Each private point's nearest point of the released subset (its position there; ties to the
        earliest) and its distance, on the rescaled points (shared by every candidate on ``data``: one
        pass per public order answers all its sizes, see :meth:`HybridDesign.nearest_prefix`)."""
        design = self._design(data)
        return self._nearest(design, *self._subset(design))

    @staticmethod
    def _nearest(design: HybridDesign, base: np.ndarray | None, idx: np.ndarray | None, n: int):
        return design.nearest(idx) if base is None else design.nearest_prefix(base, n)

    def release(self, data: Any, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
        """``trials`` independent releases of ``theta`` on one dataset: ``(trials, d)``."""
        trials = check_trials(trials)
        design = self._design(data)
        base, idx, n = self._subset(design)
        public = design.public if idx is None else design.public[idx]
        counts = np.bincount(self._nearest(design, base, idx, n)[0], minlength=len(public)).astype(float)
        if math.isinf(self.epsilon):
            theta, _ = fit_rows(public, (counts / design.n_private)[None], self.contrast, self.on_zero_weights)
            return np.repeat(theta, trials, axis=0)
        w = weights_from_counts(counts, design.n_private, self.epsilon, check_rng(rng), self.truncate, size=trials)
        return fit_rows(public, w, self.contrast, self.on_zero_weights)[0]


class Algorithm2(_PublicPrivate):
    """Algorithm 2 (Wang et al.): order, re-weight ``k`` nested subsets, choose one under DP.

    Parameters
    ----------
    contrast
        As for :class:`Algorithm1`; the built-in criteria need the logistic contrast.
    epsilons
        ``(epsilon_1, epsilon_2, epsilon_3)``: the order, the candidates' weights (``epsilon_2 / k``
        each), the selection.
    subset_sizes
        Strictly increasing candidate sizes (at most ``n_E``, checked on the data).
    criterion, criterion_sensitivity, reference_ridge, selection, truncate, on_zero_weights
        As for :func:`~hybridpriv.families.public_private.wang.algorithm2`.  The paper's criterion without
        ``reference_ridge`` has no proven sensitivity: a ``UserWarning`` is raised when the
        mechanism is built and ``sensitivity_proven`` is False.
    output
        ``"theta"`` (default): release the chosen candidate's ``theta`` ``(trials, d)``;
        ``"size"``: release the chosen subset size ``(trials,)`` (part of the same release: with
        the same random stream the two outputs belong to the same run).

    Guarantee (computed by an :class:`~hybridpriv.accounting.Accountant` from :meth:`ledger_plan`):
    ``epsilon_1 + epsilon_2 + epsilon_3`` for the private records, replace-one
    (``epsilon_1 + epsilon_2 + k epsilon_3`` for ``selection="paper"``); public records: nothing.
    :meth:`run` gives one run with everything :class:`~hybridpriv.families.public_private.wang.Algorithm2Result`
    holds.
    """

    label = "algorithm2"

    def __init__(
        self,
        contrast: object,
        epsilons: Sequence[float],
        subset_sizes: Sequence[int],
        criterion: str | Callable[[np.ndarray, np.ndarray], np.ndarray] = "paper",
        criterion_sensitivity: float | None = None,
        reference_ridge: float | None = None,
        selection: str = "noisy_min",
        truncate: bool = True,
        on_zero_weights: str = "uniform",
        output: str = "theta",
    ) -> None:
        self.contrast = as_contrast(contrast)
        self.epsilons = check_epsilons(epsilons)
        self.subset_sizes = check_subset_sizes(subset_sizes, None)
        if isinstance(criterion, str):
            if criterion not in ("paper", "brier"):
                raise ValueError(f"criterion must be 'paper', 'brier' or a callable, got {criterion!r}")
            logistic_contrast(self.contrast)
            if criterion == "brier" and reference_ridge is not None:
                raise ValueError("reference_ridge applies to criterion='paper' only")
        elif not callable(criterion):
            raise TypeError(f"criterion must be 'paper', 'brier' or a callable, got {criterion!r}")
        elif criterion_sensitivity is None:
            raise ValueError("a callable criterion needs criterion_sensitivity (its sensitivity under replace-one)")
        if criterion_sensitivity is not None:
            criterion_sensitivity = check_positive(criterion_sensitivity, "criterion_sensitivity")
        if reference_ridge is not None:
            reference_ridge = check_positive(reference_ridge, "reference_ridge")
        self.criterion, self.criterion_sensitivity, self.reference_ridge = criterion, criterion_sensitivity, reference_ridge
        if not isinstance(selection, str) or selection not in SELECTIONS:
            raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}")
        self.selection = selection
        self.truncate = check_bool(truncate, "truncate")
        self.on_zero_weights = check_on_zero(on_zero_weights)
        if not isinstance(output, str) or output not in ("theta", "size"):
            raise ValueError(f"output must be 'theta' or 'size', got {output!r}")
        self.output = output
        self.sensitivity_proven = not (criterion == "paper" and reference_ridge is None)
        if not self.sensitivity_proven:
            warnings.warn(UNPROVEN_WARNING, UserWarning, stacklevel=2)

    def ledger_plan(self) -> list[tuple[str, float]]:
        """Every release of one run and its epsilon, in order (see :func:`~hybridpriv.families.public_private.wang.ledger_plan`)."""
        return ledger_plan(self.epsilons, self.subset_sizes, self.selection)

    def accountant(self) -> Accountant:
        """An accountant (unit ``"private"``) holding one run's releases."""
        acc = Accountant({"private": (math.inf, 0.0)})
        with acc.transaction():
            for label, eps in self.ledger_plan():
                acc.spend(eps, groups=["private"], label=label)
        return acc

    @property
    def privacy(self) -> dict[str, Guarantee]:
        return _declaration(self.accountant().spent_epsilon()["private"])

    def _runs(self, data: Any, rng: np.random.Generator, trials: int) -> tuple[dict[str, Any], float]:
        design = self._design(data)
        sizes = check_subset_sizes(self.subset_sizes, design.n_public)
        D, E = design.private, design.public
        crit, s, _ = prepare_criterion(self.contrast, D, E, self.criterion, self.criterion_sensitivity,
                                       self.reference_ridge)
        out = run_algorithm2(D, E, self.contrast, self.epsilons, sizes, check_rng(rng), trials, crit, s,
                             self.selection, self.truncate, self.on_zero_weights, counts_function(design))
        return out, s

    def release(self, data: Any, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
        """``trials`` independent runs: the released ``theta`` ``(trials, d)`` (or sizes ``(trials,)``)."""
        trials = check_trials(trials)
        out, _ = self._runs(data, rng, trials)
        if self.output == "size":
            return self.subset_sizes[out["chosen"]].astype(float)
        return out["theta"]

    def run(self, data: Any, rng: np.random.Generator) -> Algorithm2Result:
        """One run with its order, candidates, criteria, choice and ledger."""
        out, s = self._runs(data, rng, 1)
        acc = self.accountant()
        chosen = int(out["chosen"][0])
        order = out["order"][0]
        sizes = self.subset_sizes
        noisy = out["noisy_criterion"]
        return Algorithm2Result(
            subset_sizes=sizes, order=order, chosen_index=chosen, chosen_size=int(sizes[chosen]),
            subset=order[: sizes[chosen]].copy(), theta=out["theta"][0], weights=out["candidate_weights"][chosen][0],
            thetas=out["thetas"][0], criterion=out["criterion"][0], noisy_criterion=None if noisy is None else noisy[0],
            criterion_released=self.selection in ("curve", "paper"), criterion_sensitivity=float(s),
            sensitivity_proven=self.sensitivity_proven, criterion_scale=float(out["scale"]), selection=self.selection,
            epsilons=self.epsilons, total_epsilon=float(acc.spent_epsilon()["private"]), accountant=acc,
            zero_weight_fallback=out["fallback"][0], candidate_weights=[w[0] for w in out["candidate_weights"]],
        )


class LeiHistogram(_PublicPrivate):
    """Lei (2011): the perturbed-histogram M-estimator on the private records alone.

    Parameters
    ----------
    contrast, epsilon, bins, discrete, max_cells
        As for :func:`~hybridpriv.families.public_private.wang.lei_m_estimator`.
    lower, upper
        The box (data-independent); default: the **public** points' range per column (the
        paper's choice), so the box never depends on ``D``.
    on_zero_weights
        ``"uniform"`` (default): a run whose noisy counts are all truncated to 0 releases the
        equal-weights fit of the cell centres (post-processing); ``"raise"``.

    Guarantee: ``epsilon``-DP for the private records, replace-one; public records: nothing
    (they only set the box).  Releases ``(trials, d)``.
    """

    label = "lei"

    def __init__(
        self,
        contrast: object,
        epsilon: float,
        bins: int,
        lower: object = None,
        upper: object = None,
        discrete: dict[int, Sequence[float]] | None = None,
        max_cells: int = 1_000_000,
        on_zero_weights: str = "uniform",
    ) -> None:
        self.contrast = as_contrast(contrast)
        self.epsilon = check_epsilon(epsilon)
        self.bins = check_integer(bins, "bins")
        for name, v in (("lower", lower), ("upper", upper)):
            if v is not None and not np.isfinite(check_real_array(v, name)).all():
                raise ValueError(f"{name} must be finite, got {v!r}")
        self.lower, self.upper = lower, upper
        if discrete is not None and not isinstance(discrete, dict):
            raise TypeError(f"discrete must be a dict {{column: levels}}, got {type(discrete).__name__}")
        self.discrete = discrete
        self.max_cells = check_integer(max_cells, "max_cells")
        self.on_zero_weights = check_on_zero(on_zero_weights)

    @property
    def privacy(self) -> dict[str, Guarantee]:
        return _declaration(self.epsilon)

    @property
    def privacy_events(self) -> dict[str, Any]:
        """The private records: the noisy counts (:func:`_count_noise`); the public ones: not private."""
        return {"private": _count_noise(self.epsilon), "public": events.epsilon_delta(math.inf)}

    def release(self, data: Any, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
        """``trials`` independent releases of ``theta`` on one dataset: ``(trials, d)``."""
        trials = check_trials(trials)
        design = self._design(data)
        lo = design.public.min(axis=0) if self.lower is None else self.lower
        hi = design.public.max(axis=0) if self.upper is None else self.upper
        D = self.contrast.check_points(design.private)
        cells = lei_cells(D, self.contrast, self.bins, lo, hi, self.discrete, self.max_cells)
        if math.isinf(self.epsilon):
            return np.repeat(lei_fit(cells, cells.counts, self.contrast)[None], trials, axis=0)
        noisy = np.maximum(laplace(np.broadcast_to(cells.counts, (trials, cells.counts.size)), 2.0 / self.epsilon,
                                   check_rng(rng)), 0.0)
        if self.on_zero_weights == "raise" and not (noisy.sum(axis=1) > 0).all():
            raise ValueError("every noisy cell count was truncated to 0: the perturbed histogram is empty")
        # empty cells weigh 0 (the same minimiser as leaving them out); every run fitted at once
        return fit_rows(cells.centres, noisy, self.contrast, "uniform")[0]


class PublicOnly(_PublicPrivate):
    """The unweighted fit on the public records (the paper's blue line): no budget.

    Guarantee: the private records are never read (a perfect promise, epsilon 0); the public
    records are promised nothing.  Releases ``(trials, d)`` (the same fit every time).
    """

    label = "public-only"

    def __init__(self, contrast: object) -> None:
        self.contrast = as_contrast(contrast)

    @property
    def privacy(self) -> dict[str, Guarantee]:
        return _declaration(0.0)

    def release(self, data: Any, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
        trials = check_trials(trials)
        design = self._design(data)
        theta = m_estimate(design.public, np.ones(design.n_public), self.contrast)
        return np.repeat(theta[None], trials, axis=0)


class HybridMEstimator(Estimator):
    """Algorithm 1 for scalar records (mean or median), as a toolkit :class:`Estimator`.

    Parameters
    ----------
    groups
        Exactly two groups: one private (finite epsilon) and one public (``epsilon = inf``).
    bounds
        Declared range of every record.
    contrast
        ``"mean"`` (squared loss) or ``"median"`` (absolute loss).
    truncate
        Truncated weights (Definition 6, default) or signed ones (Definition 5; ``"mean"`` only).
    clamp
        Clip records into the bounds instead of raising.

    Notes
    -----
    In one dimension the rescaling of step 1 does not change which public point is nearest
    (an increasing map, and a truncated private value is nearest to the public extreme it is
    truncated to), so the weights are computed on the raw records.  The minimisers are the
    closed forms of the two contrasts (weighted mean ``sum w y / sum w``; the lower weighted
    median, the smallest public value whose cumulative weight reaches half the total), equal to
    :func:`~hybridpriv.families.public_private.wang.m_estimate`'s (tested).  When every truncated weight is 0
    the estimate is the unweighted public mean / median (post-processing).

    Guarantee: ``epsilon``-DP for the private group under replace-one neighbours; the public
    group is public.
    """

    statistic = "mean"

    def __init__(
        self,
        groups: Sequence[Group],
        bounds: Bounds | tuple[float, float],
        contrast: str = "mean",
        truncate: bool = True,
        clamp: bool = False,
    ) -> None:
        super().__init__(groups, bounds, clamp)
        if len(self.groups) != 2 or sum(g.is_public for g in self.groups) != 1:
            raise ValueError(
                "groups must be exactly one private group and one public group (epsilon = inf), got "
                f"{[(g.name, g.epsilon) for g in self.groups]}"
            )
        if not isinstance(contrast, str) or contrast not in ("mean", "median"):
            raise ValueError(f"contrast must be 'mean' or 'median', got {contrast!r}")
        self.truncate = check_bool(truncate, "truncate")
        if contrast == "median" and not self.truncate:
            raise ValueError("the median needs non-negative weights: truncate must be True for contrast='median'")
        self.contrast = contrast
        self.statistic = contrast
        self.label = f"hybrid-{contrast}"
        self._private = 0 if not self.groups[0].is_public else 1
        self.epsilon = self.groups[self._private].epsilon

    @property
    def privacy(self) -> dict[str, Guarantee]:
        return {
            g.name: Guarantee(math.inf if g.is_public else g.epsilon, 0.0, "replace") for g in self.groups
        }

    @property
    def privacy_events(self) -> dict[str, Any]:
        """The private group: the noisy representation counts (:func:`_count_noise`); the public one: not private."""
        return {g.name: events.epsilon_delta(math.inf) if g.is_public else _count_noise(g.epsilon) for g in self.groups}

    def _estimate(self, data: list[np.ndarray], rng: np.random.Generator) -> np.ndarray:
        priv, pub = data[self._private], data[1 - self._private]
        trials = priv.shape[0]
        if (priv.strides[0] == 0 or trials == 1) and (pub.strides[0] == 0 or trials == 1):
            counts = np.broadcast_to(representation_counts(priv[0], pub[0]), pub.shape)
        else:  # different datasets per trial: one KD-tree per trial
            counts = np.stack([representation_counts(priv[t], pub[t]) for t in range(trials)])
        w = laplace(counts, 2.0 / self.epsilon, rng) / priv.shape[1]
        if self.truncate:
            w = np.maximum(w, 0.0)
        total = w.sum(axis=1)
        empty = ~(total > 0)
        if empty.any():
            w = np.where(empty[:, None], 1.0, w)
            total = w.sum(axis=1)
        if self.contrast == "mean":
            if (total <= 0).any():
                raise RuntimeError("signed weights summed to <= 0; use truncate=True")
            return (w * pub).sum(axis=1) / total
        order = np.argsort(pub, axis=1, kind="stable")
        ys = np.take_along_axis(pub, order, axis=1)
        cw = np.cumsum(np.take_along_axis(w, order, axis=1), axis=1)
        k = np.argmax(cw >= 0.5 * total[:, None] * (1 - 1e-12), axis=1)
        return ys[np.arange(trials), k]
