"""Calibration: how far today's recommendations can be trusted, on truths the models do not contain.

For every family that makes held-out truths (today ``grouped`` means, ``user-item`` counts, ``hybrid-trust`` means) the study draws held-out truths from generators outside the models (each family's held-out generators, :mod:`hybridpriv.heldout`:
skewed, bimodal, heavy-tailed, clamped, shifted groups, heaped -- for the hybrid-trust kind with
the TCM and LM groups sharing a law or not; mixture / heavy-tailed row sums with
structured item popularity) plus real datasets shipped in ``hybridpriv/examples``, runs the select
path on the public knowledge only, and scores every candidate on the private truth
(:mod:`hybridpriv.calibration`): the regret of the recommendation, the coverage of the reported
5-95% range, and the reliability of P(best); beside it a budget-spending (Pythia-style) selector
that spends 10% of the budget on DP features of the private data before choosing (a Laplace mean per
private group; a Laplace histogram of items per user; hybrid trust's TCM mean and its LM users' local
reports; a Laplace histogram of each private group's counts; public-private's cohort cross-moments, the model
fitted again on them; none yet for K-means), at the same total budget; and for grouped means, user-item counts,
histograms and public-private the two-stage plan `select` judges (:mod:`hybridpriv.engine.plan`) is carried out on
every truth (``plan_*``, ``final_regret``; public-private's plan refits, so it is its selector too).
Scales: ``--quick`` 1 synthetic + 1 real truth per family (small settings), default 30 synthetic + every real dataset per family, ``--full`` 100 synthetic + every real one.
"""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from ..calibration import calibrate, plot_calibration
from ..core.random import rng
from ..engine.options import Engine, as_engine
from ..families import family, registry

__all__ = ["DESCRIPTION", "SCALES", "SCALE_IN_ALL", "plot", "run"]


def _families() -> list:
    """Every registered family that makes held-out truths, in the registry's order."""
    return [f for f in registry().values() if f.has_truths]


DESCRIPTION = "Calibration: regret, interval coverage and P(best) reliability of select on held-out truths"
#: per scale: synthetic truths per family, real datasets per family, select settings, realised-risk releases
#: (the families are every registered one with held-out truths; each gives its quick real datasets and settings)
SCALES = {
    "quick": {"synthetic": 1, "real": {f.name: list(f.quick_calibration.get("real", [])) for f in _families()},
              "settings": {f.name: dict(f.quick_calibration.get("settings", {})) for f in _families()},
              "realised_draws": 4, "realised_trials": 2000, "pythia_share": 0.1},
    "default": {"synthetic": 30, "real": {f.name: list(f.real_datasets) for f in _families()},
                "settings": {f.name: {} for f in _families()}, "realised_draws": 8, "realised_trials": 5000,
                "pythia_share": 0.1},
}
SCALES["full"] = {**SCALES["default"], "synthetic": 100}
#: ``study run all`` runs this study at its quick scale (every path once): it reproduces no paper,
#: and its default scale alone takes about an hour on one core, its ``--full`` several; run it on
#: its own (``study run calibration``) for the numbers of docs/calibration.md
SCALE_IN_ALL = "quick"


def truths(scale: str, seed: int) -> list:
    """The held-out truths of ``scale``, made by each family: stream ``("calibration", family, i, "truth")``
    for truth ``i``."""
    cfg, quick = SCALES[scale], scale == "quick"
    out = []
    for name in cfg["real"]:
        fam, n = family(name), cfg["synthetic"]
        out += [fam.synthetic_truth(i, rng(seed, "calibration", name, i, "truth"), quick=quick) for i in range(n)]
        for j, real in enumerate(cfg["real"][name]):
            out.append(fam.real_truth(real, rng(seed, "calibration", name, n + j, "truth")))
    return out


def run(quick: bool = False, seed: int = 0, engine: Engine | None = None, full: bool = False) -> xr.Dataset:
    """Run the study at ``--quick``, default or ``full`` scale (100 synthetic truths per family).

    The ``engine``'s checkpoint: one resume sub-folder per evaluation (the select run's and the realised risks').
    """
    scale = "full" if full else ("quick" if quick else "default")
    cfg = SCALES[scale]
    engine = as_engine(engine)
    checkpoint = engine.checkpoint
    stage = (lambda name: None) if checkpoint is None else (lambda name: Path(checkpoint.folder) / name)
    ds = calibrate(truths(scale, seed), seed, cfg["settings"], stage=stage, engine=engine.replace(checkpoint=None),
                   realised_draws=cfg["realised_draws"], realised_trials=cfg["realised_trials"],
                   pythia_share=cfg["pythia_share"])
    ds.attrs.update({"scale": scale, "config": {"scale": scale, "synthetic": cfg["synthetic"], "real": cfg["real"],
                                                "settings": cfg["settings"], "pythia_share": cfg["pythia_share"]}})
    return ds


def plot(ds: xr.Dataset, path: str | Path) -> None:
    from ..report import save_figure

    save_figure(plot_calibration(ds), path)
