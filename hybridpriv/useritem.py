"""Choosing k for contribution-bounded item counts from sampled user-item matrices.

The flow of the grouped case, specialised: matrices consistent with the public column sums
(:class:`hybridpriv.models.UserItemModel`) stream through :func:`risk_over_matrices`, which
keeps one number per (k, matrix): the exact conditional risk
(:func:`hybridpriv.theory.user_item_risk`) for the squared loss, or a Monte Carlo estimate for
losses without a closed form (``"max"``: the largest absolute error over items; ``"top10"``:
the squared error over the 10 most reported items).  :func:`decide_k` turns that into the
decision (expected loss per k, Monte Carlo error, 5-95% interval over matrices, P(best k),
the recommended k) with :func:`hybridpriv.select.decide`.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence

import numpy as np
import scipy.sparse as sp
import xarray as xr

from .select import decide

__all__ = ["USER_ITEM_LOSSES", "decide_k", "plot_k", "posterior_risks", "risk_over_matrices"]

#: Losses of the user-item selection: the exact one and the Monte Carlo ones.
USER_ITEM_LOSSES = ("squared", "max", "top10")


def _check_ks(ks: Sequence[int]) -> np.ndarray:
    k = np.asarray(ks)
    if k.ndim != 1 or k.size == 0 or not np.issubdtype(k.dtype, np.integer) or (k < 1).any():
        raise ValueError(f"ks must be a non-empty sequence of integers >= 1, got {list(np.atleast_1d(ks))!r}")
    if np.unique(k).size != k.size:
        raise ValueError(f"ks must not repeat a value, got {list(k)!r}")
    return k.astype(np.int64)


def _check_risk_args(ks: Sequence[int], epsilon: float, loss: str) -> tuple[np.ndarray, float]:
    """The candidate ``ks`` (int64) and ``epsilon`` checked, and ``loss`` one of :data:`USER_ITEM_LOSSES`."""
    from .privacy import check_epsilon

    k = _check_ks(ks)
    eps = check_epsilon(epsilon, allow_inf=False)
    if loss not in USER_ITEM_LOSSES:
        raise ValueError(f"loss must be one of {USER_ITEM_LOSSES}, got {loss!r}")
    return k, eps


def _matrix_risks(mat, ks: np.ndarray, epsilon: float, loss: str, trials: int, seed: int, chain: int,
                  draw: int) -> np.ndarray:
    """The risk of every k on one matrix: exact for ``"squared"``, else Monte Carlo with a
    generator keyed by ``(seed, k, chain, draw)``."""
    from .estimators.useritem import monte_carlo_user_item_loss
    from .theory import user_item_risk

    if loss == "squared":
        return user_item_risk(mat, ks, epsilon)
    out = np.empty(len(ks))
    for j, kk in enumerate(ks):
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(3, int(kk), chain, draw)))
        out[j] = monte_carlo_user_item_loss(mat, int(kk), epsilon, rng, trials, loss=loss)[0]
    return out


def _risk_array(out: np.ndarray, ks: np.ndarray, epsilon: float, loss: str, trials: int) -> xr.DataArray:
    """Risks ``(k, chain, draw)`` with their coordinates and attributes."""
    chains, draws = out.shape[1:]
    da = xr.DataArray(out, dims=("k", "chain", "draw"),
                      coords={"k": ks, "chain": np.arange(chains), "draw": np.arange(draws)})
    da.attrs.update({"loss": loss, "epsilon": epsilon, "exact": int(loss == "squared"),
                     "mc_trials": 0 if loss == "squared" else trials})
    return da


def risk_over_matrices(
    matrices: Iterable[sp.csr_matrix],
    shape: tuple[int, int],
    ks: Sequence[int],
    epsilon: float,
    loss: str = "squared",
    trials: int = 200,
    seed: int = 0,
) -> xr.DataArray:
    """The per-matrix risk of every k, as ``(k, chain, draw)``.

    Parameters
    ----------
    matrices
        Users x items CSR matrices in ``(draw, chain)`` order: matrix ``i`` is chain
        ``i % chains`` and draw ``i // chains`` (the order of ``UserItemModel.sample_datasets``).
    shape
        ``(chains, draws)``.
    ks, epsilon
        Candidate bounds and the privacy parameter.
    loss
        ``"squared"`` (exact conditional risk, no Monte Carlo) or ``"max"`` / ``"top10"``
        (Monte Carlo with ``trials`` runs of the mechanism per matrix).
    """
    k, eps = _check_risk_args(ks, epsilon, loss)
    if (
        isinstance(shape, (str, bytes))
        or not isinstance(shape, Sequence)
        or len(shape) != 2
        or not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x >= 1 for x in shape)
    ):
        raise ValueError(f"shape must be a pair (chains, draws) of integers >= 1, got {shape!r}")
    chains, draws = (int(x) for x in shape)
    out = np.full((k.size, chains, draws), np.nan)
    seen = 0
    for i, mat in enumerate(matrices):
        c, d = i % chains, i // chains
        if d >= draws:
            raise ValueError(f"more matrices than shape {shape} allows")
        out[:, c, d] = _matrix_risks(mat, k, eps, loss, trials, seed, c, d)
        seen += 1
    if seen != chains * draws:
        raise ValueError(f"expected {chains * draws} matrices for shape {shape}, got {seen}")
    return _risk_array(out, k, eps, loss, trials)


def _risks_chunk(job: tuple, task: tuple) -> dict[str, np.ndarray]:
    """Task: risks ``(k, items)`` of the matrices of items ``start..stop`` (item ``i`` is
    ``(chain, draw) = divmod(i, draws)``); ``hs`` holds their posterior row-sum histograms."""
    model, ks, epsilon, loss, trials, seed, draws = job
    start, stop, hs = task
    k = np.asarray(ks)
    out = np.empty((len(ks), stop - start))
    for j, i in enumerate(range(start, stop)):
        chain, d = divmod(i, draws)
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2, chain, d)))
        mat = model.matrix_for(hs[j].astype(np.int64), rng)
        out[:, j] = _matrix_risks(mat, k, epsilon, loss, trials, seed, chain, d)
    return {"risk": out}


def posterior_risks(
    model,
    idata,
    ks: Sequence[int],
    epsilon: float,
    loss: str = "squared",
    trials: int = 200,
    seed: int = 0,
    client=None,
    checkpoint=None,
    chunk_size: int | None = None,
    progress=False,
) -> xr.DataArray:
    """Per-matrix risk of every k over the posterior draws of ``idata`` (``(k, chain, draw)``).

    Every posterior draw ``(chain, draw)`` of the row sums gets its matrix from
    ``UserItemModel.matrix_for`` with a generator keyed by ``(seed, chain, draw)`` (the same
    matrices as ``UserItemModel.matrices_from``).  Matrices are made and scored in chunks
    (``chunk_size`` draws; default: measured, see :mod:`hybridpriv.chunks`), in this process or
    as tasks on the cluster of a ``dask.distributed`` ``client``; a task receives its item range
    (which keys the matrices' generators) and its draws' row-sum histograms (``m`` small integers
    per draw; the model is sent once per worker) and returns only the risks.  ``checkpoint``: a
    :class:`~hybridpriv.checkpoint.Checkpoint` that keeps finished chunks (resume).  The numbers
    do not depend on the chunking or on where the chunks run.
    """
    from .chunks import Section, check_chunk_size, check_client, run_sections
    from .evaluate import Progress

    k, eps = _check_risk_args(ks, epsilon, loss)
    chunk_size = check_chunk_size(chunk_size)
    check_client(client)
    if not (isinstance(progress, bool) or callable(progress)):
        raise TypeError(f"progress must be True, False or a callable f(done), got {progress!r}")
    hs = np.asarray(idata["posterior"]["h"].values)
    chains, draws = hs.shape[0], hs.shape[1]
    flat = hs.reshape(chains * draws, *hs.shape[2:])
    ks_list = [int(x) for x in k]
    job = (model, ks_list, eps, loss, int(trials), int(seed), draws)
    engine = {"ks": ks_list, "epsilon": eps, "loss": loss, "trials": int(trials), "seed": int(seed),
              "shape": [chains, draws], "row_sums_sum": int(flat.sum()),
              "row_sums_crc32": zlib.crc32(np.ascontiguousarray(flat, dtype=np.int64).tobytes())}
    # a task carries its draws' row-sum histograms in the smallest integer type that holds them
    # (uint16 for n < 65,536: 2 bytes per level, m levels per matrix); the matrix is made from it
    # in the task (exactly as from int64)
    payload = flat.astype(np.min_scalar_type(int(flat.max()))) if flat.size and flat.min() >= 0 else flat
    section = Section("risks", _risks_chunk, job, chains * draws, engine, extra=lambda a, b: (payload[a:b],))
    report = Progress(chains * draws, "scoring matrices") if progress is True else (progress or None)
    parts = run_sections([section], chunk_size, client=client, checkpoint=checkpoint, progress=report)[0]
    out = np.concatenate([p["risk"] for p in parts], axis=1).reshape(len(ks_list), chains, draws)
    return _risk_array(out, k, eps, loss, trials)


def decide_k(risk: xr.DataArray) -> xr.Dataset:
    """Expected loss per k, MC error, 5-95% interval over matrices, P(best k), recommended k."""
    dec = decide(xr.Dataset({"risk": risk}), dim="k")
    best = int(dec.attrs["recommended"])
    dec["recommended"] = best
    dec.attrs.update(risk.attrs)
    dec.attrs["recommended"] = best
    return dec.drop_vars("meets_requirements")


def plot_k(decision: xr.Dataset, path, title: str | None = None):
    """Expected loss against k with its 5-95% band over matrices and +-2 MC s.e."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    k = decision.k.values
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.fill_between(k, decision.risk_low, decision.risk_high, color="tab:blue", alpha=0.2,
                    label="5-95% over sampled matrices")
    ax.errorbar(k, decision.expected_loss, yerr=2 * decision.mcse, fmt="o-", color="tab:blue", capsize=3,
                label="expected loss ± 2 MC s.e.")
    best = int(decision.attrs["recommended"])
    ax.axvline(best, color="tab:green", ls="--", lw=1, label=f"recommended k = {best}")
    for kk, pb in zip(k, decision.p_best.values):
        if pb > 0.005:
            ax.annotate(f"{pb:.2f}", (kk, float(decision.risk_high.sel(k=kk))), xytext=(0, 4),
                        textcoords="offset points", ha="center", fontsize=7)
    ax.set_xlabel("k (items kept per user)")
    ax.set_ylabel(f"{decision.attrs.get('loss', 'squared')} error of the released counts")
    ax.set_xticks(k[:: max(1, len(k) // 15)])
    ax.set_title(title or "Choosing k (numbers above the band: P(best k))")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

