"""Wang et al. (2018), Section 5.1 and Figures 4-6: which public subset to release.

Simulation (as the paper writes it): ``n_D = n_E = 10,000``; private covariates ``N(0, I_p)``,
public covariates ``N(0, diag(0.5, 1))`` (``p = 2``) or ``N(0, 0.5 I_p)`` (``p = 100``); outcomes
``Bernoulli(expit(x . beta))`` without intercept, ``beta_D ~ U(-1, 1)^p``, ``beta_E ~ U(0, 1/2)^p``
drawn afresh in every repeat.  Logistic contrast without intercept (the paper's model).
``(epsilon_1, epsilon_2, epsilon_3) = (0.8, 0.2, 1) x epsilon`` for ``epsilon`` in ``{0.5, 1, 3}``.

For every ``(p, epsilon, repeat)``:

* **Algorithm 2** (:func:`hybridpriv.estimators.wang.algorithm2`, paper criterion with the paper's
  claimed sensitivity 1 -- not proven, its warning is silenced here -- and report-noisy-min selection): its order of the public points (by ``epsilon_1``-noisy weights), its candidates'
  estimates (``epsilon_2 / k`` each; method ``algorithm2_candidates``), its chosen size and the
  released estimate.  Total budget ``epsilon_1 + epsilon_2 + epsilon_3 = 2 epsilon`` (the accountant's
  figure is stored in ``release_epsilon``).
* Curves against the released subset size on Algorithm 2's order: ``dp_hybrid`` (Algorithm 1 with
  ``epsilon`` on the subset's weights: the paper's red curve), ``nonprivate_hybrid`` (noise-free
  weights, black), ``public_only`` (blue, constant) and ``lei`` (Lei 2011, ``p = 2`` only, 10 bins
  per covariate on the public range, budget ``epsilon_1 + epsilon_2`` as in the paper; pink).
* **Budget-free choices** (:func:`hybridpriv.models.wang.select_subset_size`): a PyMC model
  (:class:`~hybridpriv.models.wang.WangPrivateModel`), simulated private datasets, the size with the
  lowest expected prediction error with the whole ``2 epsilon`` on the weights; then Algorithm 1 at
  ``2 epsilon`` on that subset of the model's order is released.  Two selectors, differing only in
  what the model knows about ``D``:

  - ``budget_free_public``: the public records and ``n_D`` only (``n_D`` is public under
    replace-one neighbours); no summary of ``D`` (:func:`public_knowledge`).  The selection never
    reads ``D``, so this release is ``2 epsilon``-DP in total: **equal privacy cost with
    Algorithm 2**.
  - ``budget_free_summaries``: also ``D``'s exact covariate means and variances and outcome rate
    (``PublishedSummaries.from_data(X_D, y_D)``, un-noised).  This ASSUMES those summaries were
    published independently before this release (a census, an earlier publication) and are
    therefore not charged to this release's epsilon.  If they were computed from ``D`` for this
    purpose they are releases of ``D`` and would need budget (``docs/wang-workflow.md``); the study
    does not charge them, so this selector is NOT at equal privacy cost with Algorithm 2 unless
    that assumption holds.

  Both record ``release_epsilon = 2 epsilon + 0`` (the epsilon charged to this release);
  ``uses_published_summaries`` (per selector) flags the reliance on exact summaries of ``D``.
  ``budget_free_public_curve`` / ``budget_free_summaries_curve`` are each release at every size
  (not available to the method; it shows what the choice aimed at), ``expected_error`` (per
  selector) the model's prediction of it.
* ``distance``: ``d(D, E_(i))`` (eq. 5) on the rescaled points (covariates and label) for Algorithm
  2's order (Figure 4).

Prediction error: ``|| expit(X_D theta) - expit(X_D theta_hat(D)) ||_2`` over the private rows
(:func:`~hybridpriv.estimators.wang.prediction_error`).

Seeds (``p_index`` = :data:`P_INDEX`: 0 for p = 2, 1 for p = 100, whatever ``ps`` is run):
``SeedSequence(seed, spawn_key=(p_index, repeat)).spawn(5)`` gives the data (child 0), the summaries
model and its simulation (children 1, 2) and the public-only model and its simulation (children 3, 4),
shared by the three epsilons (common random numbers);
``SeedSequence(seed, spawn_key=(p_index, repeat, 1 + epsilon_index))`` is the one seed of all DP
noise of the cell ``(p, epsilon, repeat)``.

A pure simulation study: ``client``, ``checkpoint`` and ``chunk_size`` are accepted and ignored.
Default scale: p = 2 on the paper's grid (10 to 2960 by 50) and p = 100 on a coarser grid than the
paper's (100 to 9900 by 200) because every candidate needs a 100-dimensional KD-tree query; see
``docs/reproduction-wang.md`` for run times.
"""

from __future__ import annotations

import math
import time
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

from hybridpriv.estimators.wang import (
    LogisticContrast,
    algorithm2,
    lei_m_estimator,
    m_estimate,
    nearest_public,
    prediction_error,
    private_fit,
    public_only,
    representation_counts,
    rescale,
)
from hybridpriv.models.wang import (
    PublishedSummaries,
    WangPrivateModel,
    noisy_weights,
    select_subset_size,
)

__all__ = [
    "DESCRIPTION",
    "EPSILONS",
    "EPS_SPLIT",
    "METHODS",
    "MODEL_KNOWLEDGE",
    "P_INDEX",
    "SELECTORS",
    "USES_PUBLISHED_SUMMARIES",
    "config",
    "plot",
    "public_knowledge",
    "run",
    "simulate",
]

DESCRIPTION = "Wang et al. Sec. 5.1, Figs. 4-6: prediction error vs released public subset; Algorithm 2 vs budget-free choices (public-only; assumed-published summaries)"
EPSILONS = (0.5, 1.0, 3.0)
EPS_SPLIT = (0.8, 0.2, 1.0)
METHODS = (
    "dp_hybrid",
    "nonprivate_hybrid",
    "public_only",
    "lei",
    "budget_free_public_curve",
    "budget_free_summaries_curve",
    "algorithm2_candidates",
)
SELECTORS = ("algorithm2", "budget_free_public", "budget_free_summaries")
#: Whether a selector also relies on exact summaries of ``D`` (covariate means/variances, outcome
#: rate) that it assumes were published independently before this release (not charged to its epsilon).
USES_PUBLISHED_SUMMARIES = {"algorithm2": False, "budget_free_public": False, "budget_free_summaries": True}
#: The model's knowledge for each budget-free selector.
MODEL_KNOWLEDGE = {
    "budget_free_public": "public records and n_D only (n_D is public under replace-one); no summary of D",
    "budget_free_summaries": (
        "public records, n_D and D's exact covariate means/variances and outcome rate, ASSUMED published "
        "independently before this release; not charged to this release's epsilon"
    ),
}
LEI_BINS = 10
#: Seed index of each dimension (fixed, so a run with ``ps=(100,)`` reproduces the default run's p = 100 cells).
P_INDEX = {2: 0, 100: 1}


def config(quick: bool = False, ps: tuple[int, ...] | None = None, repeats: int | None = None) -> dict:
    """The run's configuration (sizes, grids, Monte Carlo settings)."""
    if quick:
        cfg = {
            "ps": (2,), "n_private": 600, "n_public": 600, "repeats": 2, "epsilons": EPSILONS,
            "sizes": {2: (10, 60, 150, 300, 600)},
            "model": {"draws": 60, "tune": 100, "chains": 1, "rate_draws": 200},
            "select": {"datasets": 4, "noise_draws": 2, "order_datasets": 2},
        }
    else:
        cfg = {
            "ps": (2, 100), "n_private": 10_000, "n_public": 10_000, "repeats": 10, "epsilons": EPSILONS,
            "sizes": {2: tuple(range(10, 3000, 50)), 100: (100, 300, 700, 1500, 2500, 4000, 6000, 8000, 9900)},
            "model": {"draws": 300, "tune": 300, "chains": 2, "rate_draws": 1000},
            "select": {"datasets": 6, "noise_draws": 2, "order_datasets": 3},
        }
    if ps is not None:
        cfg["ps"] = tuple(int(p) for p in ps)
        for p in cfg["ps"]:
            if p not in cfg["sizes"]:
                cfg["sizes"][p] = tuple(sorted({max(1, cfg["n_public"] * k // 20) for k in range(1, 21)}))
    if repeats is not None:
        cfg["repeats"] = int(repeats)
    return cfg


def simulate(p: int, n_private: int, n_public: int, rng: np.random.Generator) -> dict:
    """One draw of the Section 5.1 setting: ``D``, ``E`` (label last) and both coefficient vectors."""
    beta_d = rng.uniform(-1.0, 1.0, p)
    beta_e = rng.uniform(0.0, 0.5, p)
    sd_e = np.array([math.sqrt(0.5), 1.0]) if p == 2 else np.full(p, math.sqrt(0.5))
    Xd = rng.standard_normal((n_private, p))
    Xe = rng.standard_normal((n_public, p)) * sd_e
    yd = (rng.random(n_private) < 1.0 / (1.0 + np.exp(-Xd @ beta_d))).astype(float)
    ye = (rng.random(n_public) < 1.0 / (1.0 + np.exp(-Xe @ beta_e))).astype(float)
    return {"Xd": Xd, "yd": yd, "Xe": Xe, "ye": ye, "beta_d": beta_d, "beta_e": beta_e}


def _fit(points: np.ndarray, w: np.ndarray, c: LogisticContrast) -> np.ndarray:
    return m_estimate(points, w if w.sum() > 0 else np.ones(len(w)), c)


def _seed(ss: np.random.SeedSequence) -> int:
    return int(ss.generate_state(1)[0] % (2**31))


def public_knowledge(n_private: int) -> PublishedSummaries:
    """What ``budget_free_public`` knows about ``D``: its size only (public under replace-one), no summaries."""
    return PublishedSummaries(n_private)


def _fit_model(Xe: np.ndarray, ye: np.ndarray, summaries: PublishedSummaries, mcfg: dict, seed: int):
    spec = WangPrivateModel(Xe, ye, summaries, rate_draws=mcfg["rate_draws"], seed=seed)
    return spec.fit(draws=mcfg["draws"], tune=mcfg["tune"], chains=mcfg["chains"], seed=seed, cores=1)


def run(
    quick: bool = False,
    seed: int = 0,
    progress: bool = False,
    client=None,
    checkpoint=None,
    chunk_size=None,
    *,
    ps: tuple[int, ...] | None = None,
    repeats: int | None = None,
) -> xr.Dataset:
    """Run the study (``client``/``checkpoint``/``chunk_size`` are ignored: no engine is used).

    ``ps`` and ``repeats`` override the dimensions and the number of repeats of the chosen scale.
    """
    cfg = config(quick, ps, repeats)
    started = time.perf_counter()
    c = LogisticContrast()
    pvals, eps_vals, R = cfg["ps"], cfg["epsilons"], cfg["repeats"]
    all_sizes = sorted({s for p in pvals for s in cfg["sizes"][p]})
    pos = {s: i for i, s in enumerate(all_sizes)}
    shape = (len(pvals), len(eps_vals), R)
    err = np.full((len(METHODS), *shape, len(all_sizes)), np.nan)
    dist = np.full((*shape, len(all_sizes)), np.nan)
    expected = np.full((len(SELECTORS), *shape, len(all_sizes)), np.nan)
    expected_se = np.full((len(SELECTORS), *shape, len(all_sizes)), np.nan)
    chosen_size = np.full((len(SELECTORS), *shape), np.nan)
    chosen_error = np.full((len(SELECTORS), *shape), np.nan)
    release_eps = np.full((len(SELECTORS), *shape), np.nan)
    alg2_best = np.full(shape, np.nan)  # the oracle best size of Algorithm 2's candidates
    seconds = np.zeros((len(pvals), R))

    for ip, p in enumerate(pvals):
        sizes = np.asarray(cfg["sizes"][p])
        cols = [pos[s] for s in sizes]
        for r in range(R):
            t0 = time.perf_counter()
            key = P_INDEX.get(p, p)
            base = np.random.SeedSequence(seed, spawn_key=(key, r))
            # children 0-2 as in earlier versions (the summaries variant reproduces them); 3-4 public-only model
            ss_data, ss_model, ss_select, ss_model_pub, ss_select_pub = base.spawn(5)
            sim = simulate(p, cfg["n_private"], cfg["n_public"], np.random.default_rng(ss_data))
            D = np.column_stack([sim["Xd"], sim["yd"]])
            E = np.column_stack([sim["Xe"], sim["ye"]])
            Xd = sim["Xd"]
            ref = private_fit(D, c)
            err_of = lambda th: prediction_error(th, Xd, reference=ref, contrast=c)  # noqa: E731
            d01, e01, _ = rescale(D, E)
            pub_err = err_of(public_only(E, c))

            # budget-free models.  budget_free_public: public records + n_D only (never reads D).
            # budget_free_summaries: + D's exact means/variances/outcome rate, ASSUMED published
            # independently before this release (not charged here; see the module docstring).
            mcfg = cfg["model"]
            models = {
                "budget_free_public": _fit_model(
                    sim["Xe"], sim["ye"], public_knowledge(cfg["n_private"]), mcfg, _seed(ss_model_pub)
                ),
                "budget_free_summaries": _fit_model(
                    sim["Xe"], sim["ye"], PublishedSummaries.from_data(sim["Xd"], sim["yd"]), mcfg, _seed(ss_model)
                ),
            }
            select_seeds = {"budget_free_public": _seed(ss_select_pub), "budget_free_summaries": _seed(ss_select)}
            cached = dict.fromkeys(models)  # evaluation counts and ordering weights: reused across epsilons
            cached_weight = dict.fromkeys(models)
            bf_counts = dict.fromkeys(models)  # counts of the real D on each model-ordered subset (oracle curve)
            for ie, eps in enumerate(eps_vals):
                rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(key, r, 1 + ie)))
                e1, e2, e3 = (f * eps for f in EPS_SPLIT)
                total = e1 + e2 + e3
                # Algorithm 2
                with warnings.catch_warnings():  # the paper's unproven sensitivity 1: see the docs
                    warnings.filterwarnings("ignore", message="algorithm2: criterion='paper'", category=UserWarning)
                    res = algorithm2(D, E, c, (e1, e2, e3), sizes, rng)
                chosen_size[0, ip, ie, r] = res.chosen_size
                chosen_error[0, ip, ie, r] = err_of(res.theta)
                release_eps[0, ip, ie, r] = res.total_epsilon
                cand = err_of(res.thetas)
                err[METHODS.index("algorithm2_candidates"), ip, ie, r, cols] = cand
                alg2_best[ip, ie, r] = sizes[int(np.argmin(res.criterion))]
                # curves on Algorithm 2's order
                for k, n in enumerate(sizes):
                    idx = res.order[:n]
                    # one nearest-point search gives the counts and d(D, E_(i))
                    near, dmin = nearest_public(d01, e01[idx], return_distance=True)
                    cnt = np.bincount(near, minlength=n).astype(float)
                    th_np = _fit(E[idx], cnt / D.shape[0], c)
                    th_dp = _fit(E[idx], noisy_weights(cnt, D.shape[0], eps, rng), c)
                    err[METHODS.index("nonprivate_hybrid"), ip, ie, r, cols[k]] = err_of(th_np)
                    err[METHODS.index("dp_hybrid"), ip, ie, r, cols[k]] = err_of(th_dp)
                    dist[ip, ie, r, cols[k]] = float(dmin.mean())
                err[METHODS.index("public_only"), ip, ie, r, cols] = pub_err
                if p == 2:
                    lo, hi = E.min(axis=0), E.max(axis=0)
                    th_lei = lei_m_estimator(D, c, e1 + e2, LEI_BINS, rng, lower=lo, upper=hi)
                    err[METHODS.index("lei"), ip, ie, r, cols] = err_of(th_lei)
                # budget-free choices: the same release epsilon, all of it on the weights.  The
                # summaries variant first (its noise draws come first, as in earlier versions).
                for sel in ("budget_free_summaries", "budget_free_public"):
                    isel = SELECTORS.index(sel)
                    choice = select_subset_size(
                        models[sel], E, c, sizes, total, seed=select_seeds[sel], counts=cached[sel],
                        expected_weight=cached_weight[sel], **cfg["select"],
                    )
                    cached[sel], cached_weight[sel] = choice.counts, choice.expected_weight
                    expected[isel, ip, ie, r, cols] = choice.expected_error
                    expected_se[isel, ip, ie, r, cols] = choice.mcse
                    if bf_counts[sel] is None:
                        bf_counts[sel] = [representation_counts(d01, e01[choice.order[:n]]) for n in sizes]
                    curve = [
                        err_of(_fit(E[choice.order[:n]], noisy_weights(bf_counts[sel][k], D.shape[0], total, rng), c))
                        for k, n in enumerate(sizes)
                    ]
                    err[METHODS.index(f"{sel}_curve"), ip, ie, r, cols] = curve
                    k_star = choice.subset_sizes.index(choice.size)
                    chosen_size[isel, ip, ie, r] = choice.size
                    chosen_error[isel, ip, ie, r] = curve[k_star]  # the release: Algorithm 1 at 2 eps on that subset
                    release_eps[isel, ip, ie, r] = total + choice.privacy_cost
            seconds[ip, r] = time.perf_counter() - t0
            if progress:
                print(f"wang-subset: p={p} repeat={r} done in {seconds[ip, r]:.1f} s", flush=True)

    coords = {"method": list(METHODS), "p": list(pvals), "epsilon": list(eps_vals), "repeat": np.arange(R),
              "subset_size": all_sizes, "selector": list(SELECTORS)}
    ds = xr.Dataset(
        {
            "prediction_error": (("method", "p", "epsilon", "repeat", "subset_size"), err),
            "distance": (("p", "epsilon", "repeat", "subset_size"), dist),
            "expected_error": (("selector", "p", "epsilon", "repeat", "subset_size"), expected),
            "expected_error_mcse": (("selector", "p", "epsilon", "repeat", "subset_size"), expected_se),
            "chosen_size": (("selector", "p", "epsilon", "repeat"), chosen_size),
            "chosen_error": (("selector", "p", "epsilon", "repeat"), chosen_error),
            "release_epsilon": (("selector", "p", "epsilon", "repeat"), release_eps),
            "uses_published_summaries": (("selector",), np.array([USES_PUBLISHED_SUMMARIES[s] for s in SELECTORS])),
            "algorithm2_oracle_size": (("p", "epsilon", "repeat"), alg2_best),
            "seconds": (("p", "repeat"), seconds),
        },
        coords=coords,
    )
    ds["prediction_error"].attrs["description"] = (
        "||expit(X_D theta) - expit(X_D theta_hat(D))||_2; dp_hybrid: Algorithm 1 at epsilon on Algorithm 2's "
        "order; nonprivate_hybrid: noise-free weights; public_only: unweighted public fit; lei: Lei (2011) at "
        "epsilon_1 + epsilon_2 (p = 2); budget_free_public_curve / budget_free_summaries_curve: Algorithm 1 at "
        "2 epsilon on that model's order (the summaries model assumes D's covariate means/variances and outcome "
        "rate were published independently before this release; not charged to this release's epsilon); "
        "algorithm2_candidates: Algorithm 2's candidates at epsilon_2 / k. NaN: size not on this p's grid"
    )
    ds["distance"].attrs["description"] = "d(D, E_(i)) (eq. 5) on the rescaled points, Algorithm 2's order"
    ds["expected_error"].attrs["description"] = (
        "budget-free selector's expected prediction error (its model's simulated datasets); NaN for algorithm2"
    )
    ds["chosen_size"].attrs["description"] = "released subset size: Algorithm 2 (noisy min) or the budget-free choice"
    ds["chosen_error"].attrs["description"] = (
        "prediction error of the released estimate: Algorithm 2's chosen candidate (weights at epsilon_2/k) or "
        "Algorithm 1 at 2 epsilon on the budget-free subset"
    )
    ds["release_epsilon"].attrs["description"] = (
        "epsilon charged to THIS release: algorithm2 the accountant's epsilon_1+epsilon_2+epsilon_3; "
        "budget-free selectors 2 epsilon + 0 (selection cost). Equal for all selectors, but budget_free_summaries "
        "also relies on exact summaries of D (see uses_published_summaries) that are free only if they were "
        "published independently before this release"
    )
    ds["uses_published_summaries"].attrs["description"] = (
        "True if the selector also relies on D's exact covariate means/variances and outcome rate, assumed "
        "published independently before this release and not charged to release_epsilon"
    )
    for sel, text in MODEL_KNOWLEDGE.items():
        ds.attrs[f"{sel}_model_knowledge"] = text
    ds["algorithm2_oracle_size"].attrs["description"] = "size with the smallest exact (non-private) criterion among Algorithm 2's candidates"
    ds.attrs.update(
        {
            "n_private": cfg["n_private"],
            "n_public": cfg["n_public"],
            "repeats": R,
            "epsilon_split": str(EPS_SPLIT),
            "lei_bins": LEI_BINS,
            "run_seconds": round(time.perf_counter() - started, 1),
            "config": {
                "ps": list(pvals), "repeats": R, "n": cfg["n_private"],
                "sizes": {str(p): list(cfg["sizes"][p]) for p in pvals},
                "model": cfg["model"], "select": cfg["select"],
            },
        }
    )
    return ds


def plot(ds: xr.Dataset, path: str | Path) -> None:
    """Error against subset size per (p, epsilon), both choices marked; ``*-distance.png`` beside it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pvals, eps_vals = list(ds.p.values), list(ds.epsilon.values)
    fig, axes = plt.subplots(len(pvals), len(eps_vals), figsize=(4.2 * len(eps_vals), 3.4 * len(pvals) + 0.9), squeeze=False)
    style = {
        "dp_hybrid": ("tab:red", "o-", "DP hybrid (Alg. 1, eps)"),
        "nonprivate_hybrid": ("black", ":", "non-private hybrid"),
        "public_only": ("tab:blue", "-", "public only"),
        "lei": ("tab:pink", "-", "Lei (eps1+eps2)"),
        "budget_free_public_curve": ("tab:olive", "d--", "Alg. 1 at 2 eps, public-only model order"),
        "budget_free_summaries_curve": ("tab:green", "s--", "Alg. 1 at 2 eps, summaries model order*"),
        "algorithm2_candidates": ("0.6", "-", "Alg. 2 candidates (eps2/k)"),
    }
    for i, p in enumerate(pvals):
        for j, eps in enumerate(eps_vals):
            ax = axes[i, j]
            pe = ds.prediction_error.sel(p=p, epsilon=eps)
            for m in ds.method.values:
                curve = pe.sel({"method": m}).mean("repeat")
                ok = np.isfinite(curve.values)
                if not ok.any():
                    continue
                color, ls, label = style.get(str(m), ("tab:gray", "-", str(m)))
                ax.plot(ds.subset_size.values[ok], curve.values[ok], ls, color=color, label=label, ms=2.5, lw=1)
            markers = {
                "algorithm2": ("^", "tab:purple", "Alg. 2 release (2 eps)"),
                "budget_free_public": ("D", "tab:olive", "budget-free, public only (2 eps)"),
                "budget_free_summaries": ("*", "tab:green", "budget-free + D's summaries* (2 eps)"),
                "budget_free": ("*", "tab:green", "budget-free + D's summaries* (2 eps)"),  # older runs
            }
            for sel in ds.selector.values:
                marker, color, lab = markers.get(str(sel), ("o", "tab:gray", str(sel)))
                x = ds.chosen_size.sel(selector=sel, p=p, epsilon=eps).values
                y = ds.chosen_error.sel(selector=sel, p=p, epsilon=eps).values
                ax.scatter(x, y, marker=marker, s=40, color=color, edgecolor="k", lw=0.4, zorder=5, label=lab)
            ax.set_yscale("log")
            ax.set_title(f"p = {p}, eps = {eps:g} (total {2 * eps:g})", fontsize=9)
            ax.set_xlabel("released public points", fontsize=8)
            ax.tick_params(labelsize=7)
            if j == 0:
                ax.set_ylabel("prediction error", fontsize=8)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="lower center", ncol=5, frameon=False)
    fig.suptitle(
        f"Wang et al. Sec. 5.1: n_D = {ds.attrs['n_private']}, n_E = {ds.attrs['n_public']}, "
        f"{ds.attrs['repeats']} repeats (curves: means; markers: each repeat's release)\n"
        "*assumes D's covariate means/variances and outcome rate were published independently before this "
        "release; not charged to its epsilon",
        fontsize=9,
    )
    fig.tight_layout(rect=(0, 0.06 + 0.04 / len(pvals), 1, 1))
    fig.savefig(path, dpi=70)
    plt.close(fig)

    path = Path(path)
    fig, axes = plt.subplots(1, len(pvals), figsize=(4.2 * len(pvals), 3.2), squeeze=False)
    for i, p in enumerate(pvals):
        ax = axes[0, i]
        for eps in eps_vals:
            d = ds.distance.sel(p=p, epsilon=eps).mean("repeat")
            ok = np.isfinite(d.values)
            ax.plot(ds.subset_size.values[ok], d.values[ok], "-", lw=1, label=f"order from eps1 = {0.8 * eps:g}")
        ax.set_title(f"d(D, E_(i)), p = {p}", fontsize=9)
        ax.set_xlabel("size of E_(i)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path.with_name(f"{path.stem}-distance{path.suffix}"), dpi=70)
    plt.close(fig)
