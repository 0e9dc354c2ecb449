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
from pathlib import Path

import xarray as xr

from hybridpriv.estimators import ContributionBoundedCounts, ItemCounts
from hybridpriv.evaluate import evaluate
from hybridpriv.select import decide

__all__ = ["DESCRIPTION", "SCALES", "plot", "run"]

DESCRIPTION = "Zeber & Lopatka: expected squared error of DP item counts against k (n=2000, m=100)"
#: matrices sampled at each scale
SCALES = {"quick": 100, "default": 2_000, "full": 100_000}
EPSILON = 1.0
#: the seed's k = 1..10, extended to 20 so the minimum of the curve is inside the range
KS = list(range(1, 21))
CHAINS = 2


def run(quick: bool = False, seed: int = 0, progress: bool = False, full: bool = False, **engine) -> xr.Dataset:
    """``engine``: ``client``, ``checkpoint``, ``chunk_size`` for :func:`~hybridpriv.evaluate.evaluate`.

    With a ``checkpoint`` the sampled row sums (``h`` and its summaries) are kept in the resume
    folder (``stages/row-sums.nc``) and read back on resume instead of sampling again; the scored
    matrices are kept chunk by chunk.
    """
    from hybridpriv.models import UserItemModel, UserItemPosterior
    from hybridpriv.spec import builtin_example_path, load_spec

    scale = "full" if full else ("quick" if quick else "default")
    per_chain = math.ceil(SCALES[scale] / CHAINS)
    model = UserItemModel(load_spec(builtin_example_path("favorite-sites")).column_sums, 2000)
    # the row-sum chain: sum(c) single-item moves between kept draws at the full scale (25 sum(c)
    # at the others, where the row-sum level should be close to independent)
    moves = model.total if scale == "full" else 25 * model.total
    fit = {"draws": per_chain, "tune": 200, "chains": CHAINS, "seed": int(seed), "moves": moves}

    def sample() -> xr.Dataset:
        posterior = model.fit(**fit, cores=CHAINS, on_unconverged="ignore")
        return posterior.idata["posterior"].to_dataset()[["h", "share_one_item", "max_items"]]

    checkpoint = engine.get("checkpoint")
    rows = sample() if checkpoint is None else checkpoint.dataset("row-sums", {**fit, "model": model.describe_params()},
                                                                  sample)
    posterior = UserItemPosterior(model, {"posterior": rows}, seed)
    posterior.check_convergence("warn")
    ev = evaluate({k: ContributionBoundedCounts(k, EPSILON) for k in KS}, posterior, ItemCounts("squared"), dim="k",
                  seed=seed, progress=progress, **engine)
    dec = decide(ev, dim="k")
    ds = xr.Dataset({"mse": dec["expected_loss"], "mse_mcse": dec["mcse"], "mse_low": dec["risk_low"],
                     "mse_high": dec["risk_high"], "p_best": dec["p_best"], "mse_by_matrix": ev["risk"]})
    ds = ds.drop_vars([c for c in ("label", "mechanism", "params", "exact", "privacy") if c in ds.coords])
    for name in ("share_one_item", "max_items"):
        ds[f"posterior_{name}"] = rows[name]
    ds["mse"].attrs["description"] = "posterior expected total squared error over items (exact conditional risk)"
    ds.attrs.update({
        "recommended_k": int(dec.attrs["recommended"]), "scale": scale, "matrices": CHAINS * per_chain,
        "epsilon": EPSILON, "n": 2000, "m": model.m, "row_sum_moves_per_draw": moves,
        "trades_per_matrix": model.trades_per_row * 2000, "row_sum_max_rhat": posterior.max_rhat,
        "config": {"scale": scale, "draws": CHAINS * per_chain, "k": KS, "epsilon": EPSILON},
    })
    return ds


def plot(ds: xr.Dataset, path: str | Path) -> None:
    from hybridpriv.report import plot_decision, save_figure

    dec = xr.Dataset({"expected_loss": ds.mse, "mcse": ds.mse_mcse, "risk_low": ds.mse_low, "risk_high": ds.mse_high,
                      "p_best": ds.p_best},
                     attrs={"candidate_dim": "k", "recommended": int(ds.attrs["recommended_k"]),
                            "loss": "total squared error over items"})
    save_figure(plot_decision(dec, title=f"{int(ds.attrs['matrices']):,} matrices, n=2000, m=100, "
                                         f"eps={ds.attrs['epsilon']:g} (numbers: P(best k))"), path)
