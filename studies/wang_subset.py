"""Wang et al. (2018), Section 5.1 and Figures 4-6: which public subset to release; Algorithm 2 against
budget-free choices.  ``docs/reproduction-wang.md`` describes the setting, the outputs and the seeds.

Per ``p`` and repeat (one draw of :class:`~hybridpriv.families.public_private.wang.Section51Source`): two models of
public knowledge (:data:`MODEL_KNOWLEDGE`), each one's order and budget-free choice
(:func:`~hybridpriv.families.public_private.subset.select_subset_size`).  Then three evaluations on the real datasets with
the orders attached: prediction errors, ``d(D, E_(i))``, the size Algorithm 2 chose.  All Monte Carlo
runs in the engine (its ``client``; its ``checkpoint``: one sub-folder per evaluation, fits kept as
stages; its ``chunk_size``, default one dataset).

The run holds BLAS to one thread (``threadpoolctl``): its matrix products are small (a logistic fit's
Hessian, ``n x 100``), and OpenBLAS's default two threads spent twice the CPU of one on a p = 100
repeat (215 against 106 CPU s) for no shorter wall time (``docs/reproduction-wang.md``, *Run time*).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import xarray as xr
from threadpoolctl import threadpool_limits

from ..core.random import rng, stream
from ..engine.evaluate import evaluate_many
from ..engine.options import Engine, as_engine
from ..families.public_private.subset import select_subset_size
from ..families.public_private.wang import (
    Algorithm1,
    Algorithm2,
    LeiHistogram,
    LogisticContrast,
    OrderedSource,
    PredictionError,
    PublicOnly,
    Released,
    Section51Source,
    SubsetDistance,
)
from ..families.public_private.wang.model import PublishedSummaries, WangPrivateModel, fit_kept
from ._wang_subset_claims import claims
from ._wang_subset_results import assemble, plot

__all__ = ["BUDGET_FREE", "DESCRIPTION", "PAPER", "claims", "EPSILONS", "EPS_SPLIT", "METHODS", "MODEL_KNOWLEDGE", "SELECTORS",
           "USES_PUBLISHED_SUMMARIES", "config", "knowledge", "plot", "run"]

DESCRIPTION = ("Wang et al. Sec. 5.1, Figs. 4-6: prediction error vs released public subset; Algorithm 2 vs "
               "budget-free choices (public-only; assumed-published summaries)")
PAPER = ("Wang, Ji, Kim, Wang, Xiong, Jiang: Selecting Optimal Subset to Release Under Differentially Private "
         "M-Estimators from Hybrid Datasets (IEEE TKDE 2018)")
EPSILONS, EPS_SPLIT, LEI_BINS = (0.5, 1.0, 3.0), (0.8, 0.2, 1.0), 10
METHODS = ("dp_hybrid", "nonprivate_hybrid", "public_only", "lei", "budget_free_public_curve",
           "budget_free_summaries_curve", "algorithm2_candidates")
SELECTORS = ("algorithm2", "algorithm2_as_printed", "budget_free_public", "budget_free_summaries")
#: The selectors that choose from a model of public knowledge (no budget spent on the choice).
BUDGET_FREE = ("budget_free_public", "budget_free_summaries")
#: Whether a selector relies on exact summaries of D assumed published independently before this release.
USES_PUBLISHED_SUMMARIES = {"algorithm2": False, "algorithm2_as_printed": False, "budget_free_public": False,
                            "budget_free_summaries": True}
MODEL_KNOWLEDGE = {
    "budget_free_public": "public records and n_D only (n_D is public under replace-one); no summary of D",
    "budget_free_summaries": ("public records, n_D and D's exact covariate means/variances and outcome rate, ASSUMED "
                              "published independently before this release; not charged to this release's epsilon"),
}


def config(quick: bool = False, ps: tuple[int, ...] | None = None, repeats: int | None = None,
           full: bool = False) -> dict:
    """The run's configuration (sizes, grids, Monte Carlo settings); ``full``: p = 100 on the paper's grid of
    50 sizes (100 to 9,900 by 200) instead of 9."""
    if quick and full:
        raise ValueError("quick and full exclude each other")
    p100 = tuple(range(100, 10_000, 200)) if full else (100, 300, 700, 1500, 2500, 4000, 6000, 8000, 9900)
    n, sizes = (600, {2: (10, 60, 150, 300, 600)}) if quick else (10_000, {2: tuple(range(10, 3000, 50)), 100: p100})
    ps = tuple(int(p) for p in ps) if ps is not None else ((2,) if quick else (2, 100))
    return {"ps": ps, "n": n, "repeats": repeats or (2 if quick else 10),
            "sizes": {p: sizes.get(p, tuple(sorted({max(1, n * k // 20) for k in range(1, 21)}))) for p in ps},
            "model": {"draws": 60 if quick else 300, "tune": 100 if quick else 300, "chains": 2},
            "rate_draws": 200 if quick else 1000,
            "select": {"datasets": 4 if quick else 6, "noise_draws": 2, "order_datasets": 2 if quick else 3}}


def knowledge(selector: str, data) -> PublishedSummaries:
    """What a budget-free selector's model knows about ``D``: its size, and for ``budget_free_summaries``
    its exact covariate means/variances and outcome rate (assumed published beforehand)."""
    X, y = data.covariates(), data.private[:, -1]
    return PublishedSummaries.from_data(X, y) if selector == "budget_free_summaries" else PublishedSummaries(len(y))


def run(quick: bool = False, seed: int = 0, engine: Engine | None = None, *,
        ps: tuple[int, ...] | None = None, repeats: int | None = None, full: bool = False) -> xr.Dataset:
    """Run the study; ``ps`` and ``repeats`` override the dimensions and repeats of the chosen scale
    (``full``: the paper's 50 sizes at p = 100).  BLAS is held to one thread meanwhile (see the module)."""
    cfg = config(quick, ps, repeats, full)
    with threadpool_limits(limits=1, user_api="blas"):
        return _run(cfg, seed, as_engine(engine))


def _run(cfg: dict, seed: int, engine: Engine) -> xr.Dataset:
    c, eps = LogisticContrast(), EPSILONS
    checkpoint = engine.checkpoint
    engine = engine.replace(chunk_size=engine.chunk_size or 1, checkpoint=None)
    stage = lambda name: None if checkpoint is None else Path(checkpoint.folder) / name  # noqa: E731
    key = lambda *k: int(stream(seed, "study", *k).generate_state(1, np.uint32)[0])  # noqa: E731
    runs: dict[str, list] = {"release": [], "distance": [], "size": []}
    choices, fits = {}, {}
    for p, sizes in cfg["sizes"].items():
        src, orders = Section51Source(p, cfg["n"], cfg["n"], cfg["repeats"]), {}
        for r in range(cfg["repeats"]):
            data = src.generate(0, r, rng(seed, "dataset", 0, r))  # the dataset the engine makes
            for sel in BUDGET_FREE:
                # shared_prior=0: the model the recorded numbers were measured with (coefficients always free to
                # differ), not the SPEC's mixture of 2026-11-28
                spec = WangPrivateModel(data.public[:, :-1], data.public[:, -1], knowledge(sel, data),
                                        shared_prior=0.0, rate_draws=cfg["rate_draws"], seed=key("fit", p, r, sel))
                post = fit_kept(spec, **cfg["model"], seed=key("fit", p, r, sel), checkpoint=checkpoint, cores=1)
                chosen = select_subset_size(
                    post, c, sizes, [2 * e for e in eps], seed=key("select", p, r, sel), **cfg["select"],
                    engine=engine.replace(checkpoint=stage(f"select-p{p}-r{r}-{sel}"), progress=False))
                # keep what the results read, not the posterior (its spec holds the public points: 28 MB at p = 100)
                # nor the selection's evaluation
                fits[sel, p, r] = {"max_rhat": post.max_rhat,
                                   "min_ess": min(v["ess_bulk"] for v in post.convergence.values())}
                choices[sel, p, r] = [{"size": ch.size, "expected_error": ch.expected_error, "mcse": ch.mcse,
                                       "privacy_cost": ch.privacy_cost} for ch in chosen]
                orders.setdefault(sel, []).append(chosen[0].order)
                del post, chosen, spec
        source = OrderedSource(src, {s: np.array(o)[None] for s, o in orders.items()},
                               {f"eps1={e:g}": EPS_SPLIT[0] * e for e in eps})
        release, dist, size = {"public_only": PublicOnly(c)}, {}, {}
        for e in eps:
            e1, e2, e3 = (f * e for f in EPS_SPLIT)
            for n in sizes:  # the curves: Algorithm 1 on a public order (epsilon_1-noisy, or a model's); every
                # private curve but the candidates' charges 2 epsilon in all (the order's epsilon_1 included)
                for method, budget, order in (("dp_hybrid", 2 * e - e1, f"eps1={e:g}"),
                                              ("nonprivate_hybrid", np.inf, f"eps1={e:g}"),
                                              ("algorithm2_candidates", e2 / len(sizes), f"eps1={e:g}"),
                                              *((f"{s}_curve", 2 * e, s) for s in BUDGET_FREE)):
                    release[f"{method}|{e:g}|{n}"] = Algorithm1(c, budget, n, order=order)
                dist[f"{e:g}|{n}"] = Algorithm1(c, np.inf, n, order=f"eps1={e:g}")
            if p == 2:
                release[f"lei|{e:g}"] = LeiHistogram(c, 2 * e, LEI_BINS)
            # Algorithm 2 with a proven selection step (Brier criterion, report-noisy-min): 2 epsilon in all
            release[f"algorithm2|{e:g}"] = Algorithm2(c, (e1, e2, e3), sizes, criterion="brier")
            size[f"algorithm2|{e:g}"] = Algorithm2(c, (e1, e2, e3), sizes, criterion="brier", output="size")
            with warnings.catch_warnings():  # as printed: the paper's criterion (sensitivity 1 unproven, see the
                warnings.filterwarnings("ignore", "algorithm2: criterion='paper'", UserWarning)  # docs) and noise
                release[f"algorithm2_as_printed|{e:g}"] = Algorithm2(c, (e1, e2, e3), sizes, selection="paper")
                size[f"algorithm2_as_printed|{e:g}"] = Algorithm2(c, (e1, e2, e3), sizes, selection="paper",
                                                                  output="size")
        for name, cands in (("release", release), ("distance", dist), ("size", size)):
            runs[name].append(({"p": p}, cands, source))
    ev = {name: evaluate_many(runs[name], {"p": list(cfg["sizes"])}, task=task, dim="candidate", seed=seed,
                              engine=engine.replace(checkpoint=stage(name)))
          for name, task in (("release", PredictionError(c)), ("distance", SubsetDistance()), ("size", Released()))}
    return assemble(cfg, ev, choices, fits, EPSILONS, METHODS, SELECTORS, USES_PUBLISHED_SUMMARIES, MODEL_KNOWLEDGE,
                    EPS_SPLIT)
