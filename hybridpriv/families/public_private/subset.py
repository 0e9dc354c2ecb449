"""The budget-free choice of the public subset (Wang et al.): a public order, then evaluate + decide.

:func:`select_subset_size` is :func:`hybridpriv.engine.evaluate.evaluate` of
:class:`~hybridpriv.families.public_private.wang.Algorithm1` at every candidate size of the public order
(:func:`hybridpriv.families.public_private.wang.model.weight_order`) on a :class:`~hybridpriv.families.public_private.wang.model.WangPosterior`'s
simulated datasets, then :func:`hybridpriv.engine.decision.decide` -- no Monte Carlo loop of its own.
It lives with the family, not with the models: a model of public knowledge never runs the engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from numbers import Real
from typing import Any

import numpy as np

from ...core.privacy import check_epsilon, check_integer
from .wang.model import WangPosterior, weight_order

__all__ = ["SubsetChoice", "select_subset_size"]


@dataclass(frozen=True)
class SubsetChoice:
    """Result of :func:`select_subset_size` for one budget.

    Attributes
    ----------
    size
        The candidate size with the lowest expected prediction error (``decision.recommended``).
    subset_sizes
        The candidate sizes, in the order given.
    expected_error, mcse
        Expected prediction error per size and its Monte Carlo standard error (from
        :func:`hybridpriv.engine.decision.decide`: ``arviz_stats`` over the simulated datasets).
    order
        Indices of the public points, most representative first (by expected weight); the subset
        of size ``n`` is ``order[:n]``.
    expected_weight
        The expected noise-free representation weight of every public point under the model
        (None when the order was given).
    epsilon
        The budget assumed for the weights (all of it; the selection itself spends none).
    public_only_error, public_only_mcse
        Expected prediction error of the unweighted public fit (no budget at all) on the same
        simulated datasets, and its standard error: if it is not clearly above the best size's,
        releasing the public-only fit is the better deal.
    evaluation, decision
        The evaluation over sizes (``risk (subset_size, chain, draw)``, ``loss``, the candidates'
        parameters and privacy declarations) and :func:`~hybridpriv.engine.decision.decide`'s summary.
    privacy_cost
        0: the selection reads public information only.
    """

    size: int
    subset_sizes: tuple[int, ...]
    expected_error: np.ndarray
    mcse: np.ndarray
    order: np.ndarray
    expected_weight: np.ndarray | None
    epsilon: float
    public_only_error: float
    public_only_mcse: float
    evaluation: Any = field(repr=False)
    decision: Any = field(repr=False)
    #: Budget spent by the selection: none (only public information is used).
    privacy_cost: float = 0.0


def _epsilons(epsilon: object) -> tuple[list[float], bool]:
    if isinstance(epsilon, Real) and not isinstance(epsilon, bool):
        return [check_epsilon(epsilon)], True
    if isinstance(epsilon, (str, bytes)) or not isinstance(epsilon, Sequence | np.ndarray) or len(epsilon) == 0:
        raise TypeError(f"epsilon must be a number > 0 or a non-empty sequence of them, got {epsilon!r}")
    eps = [check_epsilon(e, "epsilon") for e in epsilon]
    if len(set(eps)) != len(eps):
        raise ValueError(f"epsilon must not repeat a value, got {list(epsilon)!r}")
    return eps, False


def select_subset_size(
    posterior: WangPosterior,
    contrast: Any,
    subset_sizes: Sequence[int],
    epsilon: float | Sequence[float],
    *,
    datasets: int = 20,
    noise_draws: int = 4,
    order_datasets: int | None = None,
    seed: int = 0,
    truncate: bool = True,
    order: Sequence[int] | np.ndarray | None = None,
    task: Any = None,
    engine: Any = None,
) -> SubsetChoice | list[SubsetChoice]:
    """Choose how many public points to release, from public information only (no privacy cost).

    1. The public order: :func:`weight_order` on ``order_datasets`` simulated datasets (default
       ``datasets``), unless ``order`` is given.  The candidate subset of size ``n`` is its first ``n``.
    2. ``evaluate``: :class:`~hybridpriv.families.public_private.wang.Algorithm1` with the whole ``epsilon`` on
       every candidate subset, ``noise_draws`` releases on each of ``datasets`` simulated private
       datasets (the posterior's draws thinned evenly, every chain kept), scored by ``task``
       (default :class:`~hybridpriv.families.public_private.wang.PredictionError`: the Section 5.1 criterion
       against the non-private fit on the simulated dataset); the public-only fit beside them.
    3. ``decide`` over ``subset_size``: the size with the lowest expected error, with Monte Carlo
       standard errors, P(best) and paired differences.

    Parameters
    ----------
    posterior
        A :class:`WangPosterior` (its simulated datasets have ``summaries.n`` records).
    contrast
        ``"logistic"`` or a :class:`~hybridpriv.families.public_private.wang.LogisticContrast` (label last); with
        another contrast pass a ``task`` (e.g. :class:`~hybridpriv.families.public_private.wang.ParameterError`).
    subset_sizes
        Strictly increasing candidate sizes in ``[1, n_E]``.
    epsilon
        The budget that will be spent on the weights (all of it); a sequence of budgets gives one
        :class:`SubsetChoice` per budget from one evaluation (each subset searched once per dataset).
    datasets, noise_draws, order_datasets, seed
        Monte Carlo sizes and the seed of the evaluation (streams ``("dataset", chain, draw)`` and
        ``("mechanism", label, chain, draw)``) and of the order (``("order", chain, draw)``).
    truncate
        Truncated weights (Definition 6).
    order
        A public order to use instead of :func:`weight_order`'s.
    task
        The task scoring the releases (default ``PredictionError(contrast)``).
    engine
        Passed to :func:`hybridpriv.engine.evaluate.evaluate` (an :class:`~hybridpriv.engine.options.Engine`:
        a dask cluster, a folder to resume from, datasets per chunk).

    Returns
    -------
    SubsetChoice, or a list of them (one per budget) when ``epsilon`` is a sequence.

    Notes
    -----
    Privacy: the inputs are the posterior (built from public records and published summaries),
    the sizes, the contrast and ``epsilon``.  The private dataset is not an input, so the returned
    size and ordering are public information and the selection costs no budget; releasing
    Algorithm 1 on the chosen subset at ``epsilon`` is then ``epsilon``-DP in total (versus
    ``epsilon_1 + epsilon_2 + epsilon_3`` for Algorithm 2).
    """
    from ...core.data import ThinnedSource
    from ...engine.decision import decide
    from ...engine.evaluate import evaluate
    from .wang import Algorithm1, PredictionError, PublicOnly, as_contrast
    from .wang.algorithm2 import check_subset_sizes
    from .wang.design import check_order

    if not isinstance(posterior, WangPosterior):
        raise TypeError(f"posterior must be a WangPosterior, got {type(posterior).__name__}")
    c = as_contrast(contrast)
    task = PredictionError(c) if task is None else task
    n_e = posterior.spec.public_X.shape[0]
    sizes = check_subset_sizes(subset_sizes, n_e)
    eps, single = _epsilons(epsilon)
    datasets = check_integer(datasets, "datasets", 2)
    noise_draws = check_integer(noise_draws, "noise_draws", 1)
    seed = check_integer(seed, "seed", 0)
    if order is None:
        order_datasets = datasets if order_datasets is None else check_integer(order_datasets, "order_datasets", 1)
        order_, weight = weight_order(posterior, order_datasets, seed)
    else:
        order_, weight = check_order(order, n_e), None
    chains, draws = posterior.shape
    per_chain = min(draws, -(-datasets // chains))
    source = ThinnedSource(posterior, per_chain)
    cands: dict[str, Any] = {"public-only": PublicOnly(c)}
    for e in eps:
        cands.update({f"epsilon={e:g}, n={n}": Algorithm1(c, e, int(n), order=order_, truncate=truncate) for n in sizes})
    ev = evaluate(cands, source, task, trials=noise_draws, seed=seed, dim="candidate",
                  engine=engine)
    pub = decide(ev.isel(candidate=[0, 1]), dim="candidate").sel(candidate="public-only")
    out = []
    for i, e in enumerate(eps):
        part = ev.isel(candidate=slice(1 + i * sizes.size, 1 + (i + 1) * sizes.size))
        part = part.assign_coords(subset_size=("candidate", sizes)).swap_dims(candidate="subset_size").drop_vars("candidate")
        part.attrs["candidate_dim"] = "subset_size"
        dec = decide(part, dim="subset_size")
        out.append(SubsetChoice(
            size=int(dec.attrs["recommended"]), subset_sizes=tuple(int(s) for s in sizes),
            expected_error=dec["expected_loss"].values, mcse=dec["mcse"].values, order=order_,
            expected_weight=weight, epsilon=e, public_only_error=float(pub["expected_loss"]),
            public_only_mcse=float(pub["mcse"]), evaluation=part, decision=dec,
        ))
    return out[0] if single else out
