"""Public computations on a Wang posterior (part of :mod:`hybridpriv.families.public_private.wang.model`, imported from there):
:func:`weight_order` orders the public points by their expected representation weight, :func:`fit_kept`
keeps a fit in a checkpoint.  The choice of the subset size, which runs the engine, is
:func:`hybridpriv.families.public_private.subset.select_subset_size`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....core.privacy import check_integer
from ....core.random import rng as stream_rng
from .model import WangPosterior

__all__ = ["fit_kept", "weight_order"]


def fit_kept(spec: Any, draws: int, tune: int, chains: int, seed: int, checkpoint: Any = None,
             on_unconverged: str = "warn", **sample_kwargs: Any) -> WangPosterior:
    """``spec.fit(...)``, its posterior kept in ``checkpoint`` (a :class:`~hybridpriv.engine.checkpoint.Checkpoint`)
    as stage ``fit-SEED`` and read back on a resume instead of sampling again.

    The stage's settings are the model's fingerprint and the fit's arguments (other ones are refused by
    the checkpoint).  The convergence check runs on the posterior either way (``on_unconverged``).
    """
    import xarray as xr

    def sample() -> Any:
        post = spec.fit(draws, tune, chains, seed, on_unconverged="ignore", **sample_kwargs)
        return post.idata["posterior"].to_dataset()

    settings = {"model": spec.fingerprint(), "draws": draws, "tune": tune, "chains": chains, "seed": seed}
    post = sample() if checkpoint is None else checkpoint.dataset(f"fit-{seed}", settings, sample)
    posterior = WangPosterior(spec, xr.DataTree.from_dict({"posterior": post}), seed)
    posterior.check_convergence(on_unconverged)
    return posterior


def weight_order(posterior: WangPosterior, datasets: int = 20, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The public points ordered by their expected noise-free representation weight under the model.

    ``datasets`` simulated private datasets (posterior draws spread evenly; generators of stream
    ``("order", chain, draw)`` of ``seed``, independent of the evaluation's ``("dataset", ...)``)
    give every public point its mean share of nearest private points.  A public computation (the
    private records are never read): no budget.

    Returns
    -------
    order, expected_weight
        Public indices, most representative first (ties: lower index first), and the weights.
    """
    if not isinstance(posterior, WangPosterior):
        raise TypeError(f"posterior must be a WangPosterior, got {type(posterior).__name__}")
    seed = check_integer(seed, "seed", 0)
    draws = posterior._spread(datasets, "datasets")
    expected = np.zeros(posterior.spec.public_X.shape[0])
    for c, d in draws:
        data = posterior.generate(c, d, stream_rng(seed, "order", c, d))
        expected += data.counts() / data.n_private
    expected /= len(draws)
    return np.argsort(-expected, kind="stable"), expected
