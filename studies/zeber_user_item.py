"""Zeber & Lopatka: expected error of contribution-bounded item counts against k.

The seed's setting: n = 2,000 users, m = 100 items, k = 1..10 (we show 1..20), epsilon = 1 (the slides do not
state epsilon; we take 1), matrices sampled from the hierarchy of
:class:`hybridpriv.models.UserItemModel` given the column sums.  The seed does not publish its
counts, so the study uses the documented Zipf-like vector of the ``favorite-sites`` example
(``c_j = round(1200 / j)``).  Scales: ``--quick`` 100 matrices, default 2,000, ``--full``
100,000 as in the seed.
"""

from __future__ import annotations

import math
import zlib
from pathlib import Path

import numpy as np
import xarray as xr

from hybridpriv.spec import builtin_example_path, load_spec
from hybridpriv.useritem import decide_k, plot_k, posterior_risks

__all__ = ["DESCRIPTION", "SCALES", "plot", "run"]

DESCRIPTION = "Zeber & Lopatka: expected squared error of DP item counts against k (n=2000, m=100)"
#: matrices sampled at each scale
SCALES = {"quick": 100, "default": 2_000, "full": 100_000}
EPSILON = 1.0
#: the seed's k = 1..10, extended to 20 so the minimum of the curve is inside the range
KS = list(range(1, 21))
CHAINS = 2


def run(quick: bool = False, seed: int = 0, progress: bool = False, full: bool = False, **engine) -> xr.Dataset:
    """``engine``: ``client``, ``checkpoint``, ``chunk_size`` for :func:`~hybridpriv.useritem.posterior_risks`.

    With a ``checkpoint`` the sampled row-sum posterior (``h`` and its summaries) is kept in the
    resume folder (``stages/row-sums.nc``) once sampled, and read back on resume instead of
    sampling PyMC's chain again; the scored matrices are kept chunk by chunk.
    """
    from hybridpriv.models import UserItemModel

    scale = "full" if full else ("quick" if quick else "default")
    draws = SCALES[scale]
    spec = load_spec(builtin_example_path("favorite-sites"))
    model = UserItemModel(spec.column_sums, 2000)
    per_chain = math.ceil(draws / CHAINS)
    # the row-sum chain: sum(c) single-item moves between kept draws at the large scales
    # (25 sum(c) at the small ones, where the row-sum level should be close to independent)
    moves = model.total if scale == "full" else 25 * model.total
    settings = {"column_sums_crc32": zlib.crc32(np.asarray(model.column_sums, dtype=np.int64).tobytes()),
                "n": 2000, "draws_per_chain": per_chain, "tune": 200, "chains": CHAINS, "seed": int(seed),
                "moves": moves}

    def sample() -> xr.Dataset:
        idata = model.sample(draws=per_chain, tune=200, chains=CHAINS, seed=seed, cores=CHAINS, moves=moves)
        return idata["posterior"].to_dataset()[["h", "share_one_item", "max_items"]]

    checkpoint = engine.get("checkpoint")
    # with a resume folder the sampled row-sum levels are kept in it and read back on resume
    post = sample() if checkpoint is None else checkpoint.dataset("row-sums", settings, sample)
    risk = posterior_risks(model, {"posterior": post}, KS, EPSILON, "squared", seed=seed, progress=progress,
                           **engine)
    dec = decide_k(risk)
    ds = xr.Dataset(
        {
            "mse": dec["expected_loss"],
            "mse_mcse": dec["mcse"],
            "mse_low": dec["risk_low"],
            "mse_high": dec["risk_high"],
            "p_best": dec["p_best"],
            "mse_by_matrix": risk,
        }
    )
    for name in ("share_one_item", "max_items"):
        ds[f"posterior_{name}"] = post[name]
    ds["mse"].attrs["description"] = "posterior expected total squared error over items (exact conditional risk)"
    ds.attrs.update({
        "recommended_k": int(dec.attrs["recommended"]), "scale": scale, "matrices": CHAINS * per_chain,
        "epsilon": EPSILON, "n": 2000, "m": model.m, "row_sum_moves_per_draw": moves,
        "trades_per_matrix": model.trades_per_row * 2000,
        "config": {"scale": scale, "draws": CHAINS * per_chain, "k": KS, "epsilon": EPSILON},
    })
    return ds


def plot(ds: xr.Dataset, path: str | Path) -> None:
    dec = xr.Dataset({"expected_loss": ds.mse, "mcse": ds.mse_mcse, "risk_low": ds.mse_low,
                      "risk_high": ds.mse_high, "p_best": ds.p_best})
    dec.attrs.update({"recommended": int(ds.attrs["recommended_k"]), "loss": "squared"})
    plot_k(dec, path, title=f"Error against k: {int(ds.attrs['matrices']):,} matrices, n=2000, m=100, "
                            f"eps={ds.attrs['epsilon']:g}")



