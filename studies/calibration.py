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
fitted again on them; K-means' counts of each group's users per cluster of the pilot start), at the same total budget; and for grouped means, user-item counts,
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

__all__ = ["DESCRIPTION", "SCALES", "SCALE_IN_ALL", "check_kinds", "plot", "run", "truths"]


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


def check_kinds(kinds, what: str = "kinds") -> list[str]:
    """``kinds`` as the registry's names in the registry's order; refused, naming ``what`` (``--kinds`` from the
    command line) and the value, unless each is a registered kind with held-out truths, given once."""
    known = [f.name for f in _families()]
    if isinstance(kinds, str) or not hasattr(kinds, "__iter__"):
        raise TypeError(f"{what} must be a list of kinds, got {kinds!r}")
    kinds = list(kinds)
    if not kinds or kinds == [""]:
        raise ValueError(f"{what} must name at least one kind (of {', '.join(known)}), got none")
    for k in kinds:
        if k not in known:
            raise ValueError(f"{what}: {k!r} is not a kind with held-out truths; known: {', '.join(known)}")
    if len(set(kinds)) != len(kinds):
        raise ValueError(f"{what} names a kind twice: {', '.join(kinds)}")
    return [k for k in known if k in kinds]


def truths(scale: str, seed: int, kinds=None) -> list:
    """The held-out truths of ``scale``, made by each family (``kinds``: these only, :func:`check_kinds`): stream
    ``("calibration", family, i, "truth")`` for truth ``i``, so a kind's truths are the same run alone or with
    the others."""
    cfg, quick = SCALES[scale], scale == "quick"
    names = list(cfg["real"]) if kinds is None else check_kinds(kinds)
    out = []
    for name in names:
        fam, n = family(name), cfg["synthetic"]
        out += [fam.synthetic_truth(i, rng(seed, "calibration", name, i, "truth"), quick=quick) for i in range(n)]
        for j, real in enumerate(cfg["real"][name]):
            out.append(fam.real_truth(real, rng(seed, "calibration", name, n + j, "truth")))
    return out


def run(quick: bool = False, seed: int = 0, engine: Engine | None = None, full: bool = False,
        kinds=None) -> xr.Dataset:
    """Run the study at ``--quick``, default or ``full`` scale (100 synthetic truths per family).

    ``kinds`` (``--kinds``): run these kinds' truths only (:func:`check_kinds`); each truth's numbers are the ones
    the whole study gives it (its own seed streams), so one kind's seed can be run, or run again, alone.
    The ``engine``'s checkpoint: one resume sub-folder per evaluation (the select run's and the realised risks').
    """
    scale = "full" if full else ("quick" if quick else "default")
    cfg = SCALES[scale]
    kinds = None if kinds is None else check_kinds(kinds)
    engine = as_engine(engine)
    checkpoint = engine.checkpoint
    stage = (lambda name: None) if checkpoint is None else (lambda name: Path(checkpoint.folder) / name)
    ds = calibrate(truths(scale, seed, kinds), seed, cfg["settings"], stage=stage, engine=engine.replace(checkpoint=None),
                   realised_draws=cfg["realised_draws"], realised_trials=cfg["realised_trials"],
                   pythia_share=cfg["pythia_share"])
    names = list(cfg["real"]) if kinds is None else kinds
    ds.attrs.update({"scale": scale, "config": {"scale": scale, "synthetic": cfg["synthetic"],
                                                "real": {k: cfg["real"][k] for k in names},
                                                "settings": {k: cfg["settings"][k] for k in names},
                                                "pythia_share": cfg["pythia_share"]}})
    return ds


def plot(ds: xr.Dataset, path: str | Path) -> None:
    from ..report import save_figure

    save_figure(plot_calibration(ds), path)
