"""Algorithm 2: choose the public subset to release under DP, vectorised over independent runs.

1. Rescale; 2. noisy weights of every public point at ``epsilon_1`` and the order by them;
3. for every candidate size ``n_i`` the first ``n_i`` ordered points, re-weighted at
``epsilon_2 / k`` and fitted (Algorithm 1); 4. a criterion per candidate, noisy at ``epsilon_3``;
the candidate with the smallest noisy criterion is released.  :func:`algorithm2` is one run with its
ledger (:class:`Algorithm2Result`); :func:`run_algorithm2` is the core, ``trials`` runs at once (the
mechanism :class:`~hybridpriv.families.public_private.wang.Algorithm2` releases through it).  The budget is
added up by an :class:`~hybridpriv.accounting.Accountant` from :func:`ledger_plan`, not asserted.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

from ....accounting import Accountant
from ....core.privacy import check_epsilon, check_positive
from ....core.validation import check_rng
from ....noise import exponential_mechanism, laplace
from ._checks import check_on_zero, same_width
from .contrasts import Contrast, LogisticContrast, as_contrast
from .criteria import (
    brier_criterion,
    criterion_sensitivity_bound,
    logistic_contrast,
    prediction_error,
)
from .mestimation import fit_rows, m_estimate
from .weights import weights_from_counts

__all__ = ["Algorithm2Result", "SELECTIONS", "algorithm2", "check_epsilons", "check_subset_sizes", "ledger_plan",
           "noisy_order", "prepare_criterion", "run_algorithm2"]

#: Selection mechanisms of :func:`algorithm2` for the ``epsilon_3`` step.
SELECTIONS = ("noisy_min", "curve", "paper", "exponential")

#: The warning of the paper's criterion without a ridge reference (its sensitivity 1 is not proven).
UNPROVEN_WARNING = (
    "algorithm2: criterion='paper' without reference_ridge uses the paper's sensitivity 1, which "
    "ignores that beta_hat(D) moves with the data (docs/wang-estimators.md has a counterexample); "
    "epsilon_3 is then not a proven guarantee. Pass reference_ridge=... or criterion='brier' for one."
)


@dataclass
class Algorithm2Result:
    """What :func:`algorithm2` returns.

    Released (DP): ``chosen_size``, ``subset`` (public indices), ``weights`` (the chosen
    candidate's noisy weights), ``theta``; the ``order`` and every candidate's ``thetas`` and
    weights are DP too (post-processing of the ``epsilon_1`` and ``epsilon_2`` releases).
    ``noisy_criterion`` is a release only when ``criterion_released`` (selection ``"curve"`` or
    ``"paper"``); with ``"noisy_min"`` only its arg-min is released and the values are kept for
    diagnostics.  ``criterion`` (the exact ``t_i``) is **not private**: for simulations only.
    """

    subset_sizes: np.ndarray
    order: np.ndarray
    chosen_index: int
    chosen_size: int
    subset: np.ndarray
    theta: np.ndarray
    weights: np.ndarray
    thetas: np.ndarray
    criterion: np.ndarray
    noisy_criterion: np.ndarray | None
    criterion_released: bool
    criterion_sensitivity: float
    sensitivity_proven: bool
    criterion_scale: float
    selection: str
    epsilons: tuple[float, float, float]
    total_epsilon: float
    accountant: Accountant
    zero_weight_fallback: np.ndarray
    candidate_weights: list[np.ndarray] = field(repr=False, default_factory=list)

    @property
    def ledger(self) -> xr.Dataset:
        """The accountant's budgets, totals and releases as an xarray Dataset."""
        return self.accountant.to_xarray()


def check_subset_sizes(subset_sizes: object, n_e: int | None) -> np.ndarray:
    """Strictly increasing integer sizes in ``[1, n_E]`` as an ``intp`` array (``n_e=None``: no upper limit)."""
    if isinstance(subset_sizes, (str, bytes)):
        raise TypeError(f"subset_sizes must be integers, got {subset_sizes!r}")
    try:
        arr = np.asarray(subset_sizes)
    except (TypeError, ValueError):
        raise TypeError(f"subset_sizes must be a 1-D sequence of integers, got {subset_sizes!r}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"subset_sizes must be a non-empty 1-D sequence of integers, got {subset_sizes!r}")
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(int)
        else:
            raise TypeError(f"subset_sizes must be integers, got {subset_sizes!r}")
    if arr.min() < 1 or (n_e is not None and arr.max() > n_e):
        where = "[1, n_E]" if n_e is None else f"[1, n_E={n_e}]"
        raise ValueError(f"subset_sizes must lie in {where}, got min {arr.min()}, max {arr.max()}")
    if np.any(np.diff(arr) <= 0):
        raise ValueError(f"subset_sizes must be strictly increasing, got {arr.tolist()}")
    return arr.astype(np.intp)


def check_epsilons(epsilons: object) -> tuple[float, float, float]:
    """``(epsilon_1, epsilon_2, epsilon_3)``, each > 0 and finite."""
    if isinstance(epsilons, (str, bytes)) or not isinstance(epsilons, Sequence | np.ndarray) or len(epsilons) != 3:
        raise ValueError(f"epsilons must be (epsilon_1, epsilon_2, epsilon_3), got {epsilons!r}")
    e1, e2, e3 = (check_epsilon(e, f"epsilons[{i}]", allow_inf=False) for i, e in enumerate(epsilons))
    return e1, e2, e3


def ledger_plan(epsilons: tuple[float, float, float], subset_sizes: Sequence[int], selection: str
                ) -> list[tuple[str, float]]:
    """Every release of one run, in order: ``(label, epsilon)``.

    ``epsilon_1`` (the order), ``epsilon_2 / k`` per candidate, and ``epsilon_3`` for the selection
    (``k`` times ``epsilon_3`` for ``selection="paper"``: ``k`` noisy values each at
    ``Laplace(S / epsilon_3)``, by sequential composition).
    """
    e1, e2, e3 = epsilons
    k = len(subset_sizes)
    plan = [("Algorithm 2 step 2: weights of all public points (ordering)", e1)]
    plan += [(f"Algorithm 2 step 4: weights of candidate {i} (size {n})", e2 / k) for i, n in enumerate(subset_sizes)]
    if selection == "paper":
        plan += [(f"Algorithm 2 step 5 (paper): noisy criterion {i}", e3) for i in range(k)]
    elif selection == "exponential":
        plan.append(("Algorithm 2 step 5: exponential mechanism on -criterion", e3))
    else:
        plan.append((f"Algorithm 2 step 5: noisy criterion ({selection})", e3))
    return plan


def prepare_criterion(
    contrast: Contrast,
    private: np.ndarray,
    public: np.ndarray,
    criterion: object,
    criterion_sensitivity: float | None,
    reference_ridge: float | None,
) -> tuple[Callable[[np.ndarray], np.ndarray], float, bool]:
    """``(criterion(thetas (m, d)) -> (m,), sensitivity S, proven)`` on validated points.

    The built-in criteria use the private covariates clipped to the public range (so a design
    row's norm is bounded by the public range, what the ridge bound needs).
    """
    if isinstance(criterion, str):
        if criterion not in ("paper", "brier"):
            raise ValueError(f"criterion must be 'paper', 'brier' or a callable, got {criterion!r}")
        lc = logistic_contrast(contrast)
        lab = lc.label % private.shape[1]
        lo, hi = np.delete(public.min(axis=0), lab), np.delete(public.max(axis=0), lab)
        Xd = np.clip(np.delete(private, lab, axis=1), lo, hi)  # covariates clipped to the public range
        yd = private[:, lab]
        proven = True
        if criterion == "brier":
            if reference_ridge is not None:
                raise ValueError("reference_ridge applies to criterion='paper' only")
            fn = lambda th: brier_criterion(th, Xd, yd, lc)  # noqa: E731
            default_s = 1.0
        else:
            ridge = None if reference_ridge is None else check_positive(reference_ridge, "reference_ridge")
            ref_c = LogisticContrast(lc.intercept, lc.l2 + (ridge or 0.0), lc.label)
            reference = m_estimate(np.column_stack([Xd, yd]), np.ones(len(yd)), ref_c)
            fn = lambda th: prediction_error(th, Xd, reference=reference, contrast=lc)  # noqa: E731
            if ridge is None:
                default_s, proven = 1.0, False
            else:
                radius = math.sqrt(float(np.sum(np.maximum(lo**2, hi**2))) + lc.intercept)
                default_s = criterion_sensitivity_bound(private.shape[0], max(radius, 1e-300), ref_c.l2)
        s = default_s if criterion_sensitivity is None else check_positive(criterion_sensitivity, "criterion_sensitivity")
        if criterion_sensitivity is not None and criterion == "paper" and reference_ridge is None:
            proven = False
        return fn, s, proven
    if callable(criterion):
        if criterion_sensitivity is None:
            raise ValueError("a callable criterion needs criterion_sensitivity (its sensitivity under replace-one)")
        s = check_positive(criterion_sensitivity, "criterion_sensitivity")
        return (lambda th: np.asarray(criterion(th, private), dtype=float)), s, True  # type: ignore[operator]
    raise TypeError(f"criterion must be 'paper', 'brier' or a callable, got {criterion!r}")


#: The runs' subsets are fitted together in blocks of at most this many numbers of stacked points (16 MB).
_STACK_NUMBERS = 1 << 21


def noisy_order(counts: np.ndarray, n_private: int, epsilon: float, rng: np.random.Generator, trials: int | None = None
                ) -> np.ndarray:
    """Algorithm 2, step 2: the public points ordered by ``epsilon``-noisy (untruncated) weights,
    decreasing, ties to the lower index.  ``epsilon``-DP (replace-one).  ``(n_E,)``, or
    ``(trials, n_E)`` when ``trials`` is given."""
    w = weights_from_counts(counts, n_private, epsilon, rng, truncate=False, size=trials)
    return np.argsort(-w, axis=-1, kind="stable")


def run_algorithm2(
    private: np.ndarray,
    public: np.ndarray,
    contrast: Contrast,
    epsilons: tuple[float, float, float],
    sizes: np.ndarray,
    rng: np.random.Generator,
    trials: int,
    criterion: Callable[[np.ndarray], np.ndarray],
    sensitivity: float,
    selection: str,
    truncate: bool,
    on_zero_weights: str,
    counts_on: Callable[[np.ndarray | None, int | None], np.ndarray],
) -> dict[str, object]:
    """``trials`` independent runs of Algorithm 2 on validated inputs (no accounting).

    ``counts_on(order, n)`` gives the noise-free counts of the private points on the public points
    ``order[:n]`` (in that order; ties to the earliest; ``None, None``: all public points).  Random draws,
    in this order: the order's noise ``(trials, n_E)``, each candidate's ``(trials, n_i)``, the
    selection's ``(trials, k)`` -- one run draws exactly what the earlier one-run code drew.
    Returns the arrays of :class:`Algorithm2Result` with a leading trial axis.
    """
    e1, e2, e3 = epsilons
    k, n_d = len(sizes), private.shape[0]
    order = noisy_order(counts_on(None, None), n_d, e1, rng, trials)
    d = contrast.n_params(public.shape[1])
    thetas = np.empty((trials, k, d))
    fallback = np.zeros((trials, k), dtype=bool)
    cand_w = []
    for i, n in enumerate(sizes):  # k candidates, not records
        if trials == 1:
            first, inv = np.zeros(1, dtype=np.intp), np.zeros(1, dtype=np.intp)
        else:  # runs sharing a subset share its search
            _, first, inv = np.unique(order[:, :n], axis=0, return_index=True, return_inverse=True)
            inv = np.asarray(inv).reshape(-1)
        counts = np.stack([counts_on(order[t], n) for t in first])[inv]
        w = weights_from_counts(counts, n_d, e2 / k, rng, truncate)
        # the runs' fits together, each on its own subset (one vectorised Newton loop per block of at most
        # _STACK_NUMBERS numbers of stacked points)
        block = max(1, _STACK_NUMBERS // (n * public.shape[1]))
        for lo in range(0, trials, block):
            b = slice(lo, lo + block)
            thetas[b, i], fallback[b, i] = fit_rows(public[order[b, :n]], w[b], contrast, on_zero_weights)
        cand_w.append(w)
    t = np.asarray(criterion(thetas.reshape(trials * k, d)), dtype=float)
    if t.shape != (trials * k,) or not np.isfinite(t).all():
        raise ValueError(f"criterion must return one finite value per candidate ({k}), got {t!r}")
    t = t.reshape(trials, k)
    if selection == "exponential":
        chosen = np.asarray(exponential_mechanism(-t, e3, sensitivity, rng)).reshape(trials)
        noisy, scale = None, float("nan")
    else:
        scale = {"noisy_min": 2.0 * sensitivity / e3, "curve": k * sensitivity / e3, "paper": sensitivity / e3}[selection]
        noisy = laplace(t, scale, rng)
        chosen = np.argmin(noisy, axis=1)
    rows = np.arange(trials)
    return {"order": order, "thetas": thetas, "candidate_weights": cand_w, "fallback": fallback, "criterion": t,
            "noisy_criterion": noisy, "scale": scale, "chosen": chosen, "theta": thetas[rows, chosen]}


def counts_function(design: Any, method: str = "auto") -> Callable[[np.ndarray | None, int | None], np.ndarray]:
    """``counts_on(order, n)`` for :func:`run_algorithm2` on a :class:`~hybridpriv.families.public_private.wang.HybridDesign`'s
    rescaled points: every size of one order from one search
    (:meth:`~hybridpriv.families.public_private.wang.HybridDesign.prefix_search`), kept for this run only (each
    run draws its own noisy orders; the design keeps only the full set's counts)."""

    searches: dict[bytes, Callable[[int], tuple[np.ndarray, np.ndarray]]] = {}  # this run's orders only

    def counts_on(order: np.ndarray | None, n: int | None) -> np.ndarray:
        if order is None:
            return design.counts(None, method)
        key = np.asarray(order, dtype=np.intp).tobytes()
        if key not in searches:
            searches[key] = design.prefix_search(order, method)
        return np.bincount(searches[key](n)[0], minlength=n).astype(float)

    return counts_on


def algorithm2(
    private: object,
    public: object,
    contrast: object,
    epsilons: Sequence[float],
    subset_sizes: Sequence[int],
    rng: np.random.Generator,
    *,
    categorical: Sequence[int] | None = None,
    truncate: bool = True,
    criterion: str | Callable[[np.ndarray, np.ndarray], np.ndarray] = "paper",
    criterion_sensitivity: float | None = None,
    reference_ridge: float | None = None,
    selection: str = "noisy_min",
    on_zero_weights: str = "uniform",
    accountant: Accountant | None = None,
    group: str = "private",
) -> Algorithm2Result:
    """Algorithm 2: choose the public subset to release under DP.

    1. Rescale (:func:`~hybridpriv.families.public_private.wang.rescale`).
    2. Noisy weights of every public point at ``epsilon_1``; order the public points by them,
       decreasing (ties: lower index first).
    3. For every candidate size ``n_i`` (the first ``n_i`` ordered points), recompute the
       weights on that subset (every private point re-assigned to its nearest point *in the
       subset*) at ``epsilon_2 / k`` and fit ``theta_i`` (Algorithm 1).
    4. Criterion ``t_i`` of every candidate on the private data, noisy at ``epsilon_3``; the
       candidate with the smallest noisy criterion is released with its weights.

    The mechanism form (a candidate for :func:`hybridpriv.engine.evaluate.evaluate`) is
    :class:`~hybridpriv.families.public_private.wang.Algorithm2`.

    Parameters
    ----------
    private, public, contrast, categorical, truncate
        As for :func:`~hybridpriv.families.public_private.wang.algorithm1`.
    epsilons
        ``(epsilon_1, epsilon_2, epsilon_3)``, each > 0 and finite.
    subset_sizes
        Strictly increasing candidate sizes in ``[1, n_E]``.
    rng
        The random generator.
    criterion
        ``"paper"``: the prediction error of Section 5.1 (logistic contrast;
        :func:`~hybridpriv.families.public_private.wang.prediction_error` on the private covariates **clipped
        to the public range**, reference ``beta_hat(D)`` fitted with the contrast's settings, plus
        ``reference_ridge``).  ``"brier"``: :func:`~hybridpriv.families.public_private.wang.brier_criterion`
        (sensitivity 1, proven).  Or a callable ``criterion(thetas (m, d), private (n_D, p)) ->
        (m,)`` (one value per row; it may be called with the candidates of several runs at once),
        with ``criterion_sensitivity``.
    criterion_sensitivity
        ``S``, the sensitivity of one criterion value under replace-one.  Default: 1 for
        ``"brier"``; for ``"paper"``, the paper's claimed 1 without ``reference_ridge`` (the claim
        ignores the change of ``beta_hat(D)``: ``sensitivity_proven`` is then False), and
        :func:`~hybridpriv.families.public_private.wang.criterion_sensitivity_bound` with it.  Required for a
        callable.
    reference_ridge
        Ridge ``lambda`` of the reference fit of the ``"paper"`` criterion (makes the
        sensitivity provable).
    selection
        How ``epsilon_3`` is spent (``S`` the sensitivity, ``k`` the number of candidates):

        * ``"noisy_min"`` (default): ``t_i + Laplace(2 S / epsilon_3)``, release the arg-min only
          (report noisy min; the factor 2 because the ``t_i`` can move in opposite directions).
          Costs ``epsilon_3``.
        * ``"curve"``: ``t_i + Laplace(k S / epsilon_3)``, release the whole noisy curve (its L1
          sensitivity is ``k S``).  Costs ``epsilon_3``.
        * ``"paper"``: ``t_i + Laplace(S / epsilon_3)`` as written in the paper, whole curve
          released.  Costs ``k epsilon_3`` by sequential composition, and the ledger says so.
        * ``"exponential"``: the exponential mechanism with score ``-t_i`` (the paper's
          suggestion in Section 6).  Costs ``epsilon_3``.
    on_zero_weights
        ``"uniform"`` (default): a candidate whose truncated weights are all 0 is fitted with
        equal weights (post-processing; flagged in ``zero_weight_fallback``); ``"raise"``.
    accountant
        An :class:`~hybridpriv.accounting.Accountant` to record the releases on (its group
        ``group``); default: a new one with an unlimited budget, so the total is computed.  Every
        release is recorded (all or nothing) before the data are read.
    group
        The accountant's group of the private records.

    Returns
    -------
    Algorithm2Result
        ``total_epsilon`` is the accountant's total for this call:
        ``epsilon_1 + epsilon_2 + epsilon_3`` (``epsilon_1 + epsilon_2 + k epsilon_3`` for
        ``selection="paper"``).
    """
    c = as_contrast(contrast)
    rng = check_rng(rng)
    eps = check_epsilons(epsilons)
    if not isinstance(selection, str) or selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}")
    mode = check_on_zero(on_zero_weights)
    D = c.check_points(private)
    E = c.check_points(public)
    same_width(D, E, "private", "public")
    sizes = check_subset_sizes(subset_sizes, E.shape[0])
    crit_fn, s, proven = prepare_criterion(c, D, E, criterion, criterion_sensitivity, reference_ridge)
    if not proven:
        warnings.warn(UNPROVEN_WARNING, UserWarning, stacklevel=2)
    acc = Accountant({group: (math.inf, 0.0)}) if accountant is None else accountant
    if not isinstance(acc, Accountant):
        raise TypeError(f"accountant must be an Accountant or None, got {type(acc).__name__}")
    if group not in acc.budgets:
        raise ValueError(f"group {group!r} is not a group of the accountant ({list(acc.budgets)})")
    from .design import HybridDesign  # Algorithm 1's step 1 and the searches, as the mechanism form keeps them

    design = HybridDesign(D, E, categorical=categorical)  # categorical checked before any budget is spent
    spent_before = acc.spent_epsilon()[group]
    with acc.transaction():
        for label, e in ledger_plan(eps, sizes, selection):
            acc.spend(e, groups=[group], label=label)
    out = run_algorithm2(D, E, c, eps, sizes, rng, 1, crit_fn, s, selection, bool(truncate), mode,
                         counts_function(design))
    chosen = int(out["chosen"][0])  # type: ignore[index]
    order = out["order"][0]  # type: ignore[index]
    noisy = out["noisy_criterion"]
    return Algorithm2Result(
        subset_sizes=sizes,
        order=order,
        chosen_index=chosen,
        chosen_size=int(sizes[chosen]),
        subset=order[: sizes[chosen]].copy(),
        theta=out["theta"][0],  # type: ignore[index]
        weights=out["candidate_weights"][chosen][0],  # type: ignore[index]
        thetas=out["thetas"][0],  # type: ignore[index]
        criterion=out["criterion"][0],  # type: ignore[index]
        noisy_criterion=None if noisy is None else noisy[0],  # type: ignore[index]
        criterion_released=selection in ("curve", "paper"),
        criterion_sensitivity=float(s),
        sensitivity_proven=proven,
        criterion_scale=float(out["scale"]),  # type: ignore[arg-type]
        selection=selection,
        epsilons=eps,
        total_epsilon=float(acc.spent_epsilon()[group] - spent_before),
        accountant=acc,
        zero_weight_fallback=out["fallback"][0],  # type: ignore[index]
        candidate_weights=[w[0] for w in out["candidate_weights"]],  # type: ignore[union-attr]
    )


__all__ += ["UNPROVEN_WARNING", "counts_function"]
