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
  figure is stored in ``total_epsilon``).
* Curves against the released subset size on Algorithm 2's order: ``dp_hybrid`` (Algorithm 1 with
  ``epsilon`` on the subset's weights: the paper's red curve), ``nonprivate_hybrid`` (noise-free
  weights, black), ``public_only`` (blue, constant) and ``lei`` (Lei 2011, ``p = 2`` only, 10 bins
  per covariate on the public range, budget ``epsilon_1 + epsilon_2`` as in the paper; pink).
* **Budget-free choice** (:func:`hybridpriv.models.wang.select_subset_size`): a PyMC model of the
  public records plus published summaries of ``D`` (covariate means and variances, outcome rate),
  simulated private datasets, the size with the lowest expected prediction error with the whole
  ``2 epsilon`` on the weights; then Algorithm 1 at ``2 epsilon`` on that subset of the model's
  (public) order is released.  Equal total epsilon with Algorithm 2.  ``budget_free_curve`` is
  that release at every size (not available to the method; it shows what the choice aimed at),
  ``expected_error`` the model's prediction of it.
* ``distance``: ``d(D, E_(i))`` (eq. 5) on the rescaled points (covariates and label) for Algorithm
  2's order (Figure 4).

Prediction error: ``|| expit(X_D theta) - expit(X_D theta_hat(D)) ||_2`` over the private rows
(:func:`~hybridpriv.estimators.wang.prediction_error`).

Seeds (``p_index`` = :data:`P_INDEX`: 0 for p = 2, 1 for p = 100, whatever ``ps`` is run):
``SeedSequence(seed, spawn_key=(p_index, repeat))`` draws the data, fits the model and runs
the budget-free simulation (shared by the three epsilons: common random numbers);
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
    distance,
    lei_m_estimator,
    m_estimate,
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
    "P_INDEX",
    "SELECTORS",
    "config",
    "plot",
    "run",
    "simulate",
]

DESCRIPTION = "Wang et al. Sec. 5.1, Figs. 4-6: prediction error vs released public subset; Algorithm 2 vs budget-free choice"
EPSILONS = (0.5, 1.0, 3.0)
EPS_SPLIT = (0.8, 0.2, 1.0)
METHODS = ("dp_hybrid", "nonprivate_hybrid", "public_only", "lei", "budget_free_curve", "algorithm2_candidates")
SELECTORS = ("algorithm2", "budget_free")
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
    expected = np.full((*shape, len(all_sizes)), np.nan)
    expected_se = np.full((*shape, len(all_sizes)), np.nan)
    chosen_size = np.full((len(SELECTORS), *shape), np.nan)
    chosen_error = np.full((len(SELECTORS), *shape), np.nan)
    total_eps = np.full((len(SELECTORS), *shape), np.nan)
    alg2_best = np.full(shape, np.nan)  # the oracle best size of Algorithm 2's candidates
    seconds = np.zeros((len(pvals), R))

    for ip, p in enumerate(pvals):
        sizes = np.asarray(cfg["sizes"][p])
        cols = [pos[s] for s in sizes]
        for r in range(R):
            t0 = time.perf_counter()
            key = P_INDEX.get(p, p)
            base = np.random.SeedSequence(seed, spawn_key=(key, r))
            ss_data, ss_model, ss_select = base.spawn(3)
            sim = simulate(p, cfg["n_private"], cfg["n_public"], np.random.default_rng(ss_data))
            D = np.column_stack([sim["Xd"], sim["yd"]])
            E = np.column_stack([sim["Xe"], sim["ye"]])
            Xd = sim["Xd"]
            ref = private_fit(D, c)
            err_of = lambda th: prediction_error(th, Xd, reference=ref, contrast=c)  # noqa: E731
            d01, e01, _ = rescale(D, E)
            pub_err = err_of(public_only(E, c))

            # budget-free: model of public knowledge (public records + published summaries of D)
            model_seed = int(ss_model.generate_state(1)[0] % (2**31))
            select_seed = int(ss_select.generate_state(1)[0] % (2**31))
            summaries = PublishedSummaries.from_data(sim["Xd"], sim["yd"])
            mcfg = cfg["model"]
            post = WangPrivateModel(sim["Xe"], sim["ye"], summaries, rate_draws=mcfg["rate_draws"], seed=model_seed).fit(
                draws=mcfg["draws"], tune=mcfg["tune"], chains=mcfg["chains"], seed=model_seed, cores=1
            )
            cached = None
            bf_counts = None  # counts of the real D on the model-ordered subsets (for the oracle curve)
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
                total_eps[0, ip, ie, r] = res.total_epsilon
                cand = err_of(res.thetas)
                err[METHODS.index("algorithm2_candidates"), ip, ie, r, cols] = cand
                alg2_best[ip, ie, r] = sizes[int(np.argmin(res.criterion))]
                # curves on Algorithm 2's order
                for k, n in enumerate(sizes):
                    idx = res.order[:n]
                    cnt = representation_counts(d01, e01[idx])
                    th_np = _fit(E[idx], cnt / D.shape[0], c)
                    th_dp = _fit(E[idx], noisy_weights(cnt, D.shape[0], eps, rng), c)
                    err[METHODS.index("nonprivate_hybrid"), ip, ie, r, cols[k]] = err_of(th_np)
                    err[METHODS.index("dp_hybrid"), ip, ie, r, cols[k]] = err_of(th_dp)
                    dist[ip, ie, r, cols[k]] = distance(d01, e01[idx])
                err[METHODS.index("public_only"), ip, ie, r, cols] = pub_err
                if p == 2:
                    lo, hi = E.min(axis=0), E.max(axis=0)
                    th_lei = lei_m_estimator(D, c, e1 + e2, LEI_BINS, rng, lower=lo, upper=hi)
                    err[METHODS.index("lei"), ip, ie, r, cols] = err_of(th_lei)
                # budget-free choice at the same total epsilon, all of it on the weights
                choice = select_subset_size(
                    post, E, c, sizes, total, seed=select_seed, counts=cached, **cfg["select"]
                )
                cached = choice.counts
                expected[ip, ie, r, cols] = choice.expected_error
                expected_se[ip, ie, r, cols] = choice.mcse
                if bf_counts is None:
                    bf_counts = [representation_counts(d01, e01[choice.order[:n]]) for n in sizes]
                curve = [
                    err_of(_fit(E[choice.order[:n]], noisy_weights(bf_counts[k], D.shape[0], total, rng), c))
                    for k, n in enumerate(sizes)
                ]
                err[METHODS.index("budget_free_curve"), ip, ie, r, cols] = curve
                k_star = choice.subset_sizes.index(choice.size)
                chosen_size[1, ip, ie, r] = choice.size
                chosen_error[1, ip, ie, r] = curve[k_star]  # the release: Algorithm 1 at 2 eps on that subset
                total_eps[1, ip, ie, r] = total + choice.privacy_cost
            seconds[ip, r] = time.perf_counter() - t0
            if progress:
                print(f"wang-subset: p={p} repeat={r} done in {seconds[ip, r]:.1f} s", flush=True)

    coords = {"method": list(METHODS), "p": list(pvals), "epsilon": list(eps_vals), "repeat": np.arange(R),
              "subset_size": all_sizes, "selector": list(SELECTORS)}
    ds = xr.Dataset(
        {
            "prediction_error": (("method", "p", "epsilon", "repeat", "subset_size"), err),
            "distance": (("p", "epsilon", "repeat", "subset_size"), dist),
            "expected_error": (("p", "epsilon", "repeat", "subset_size"), expected),
            "expected_error_mcse": (("p", "epsilon", "repeat", "subset_size"), expected_se),
            "chosen_size": (("selector", "p", "epsilon", "repeat"), chosen_size),
            "chosen_error": (("selector", "p", "epsilon", "repeat"), chosen_error),
            "total_epsilon": (("selector", "p", "epsilon", "repeat"), total_eps),
            "algorithm2_oracle_size": (("p", "epsilon", "repeat"), alg2_best),
            "seconds": (("p", "repeat"), seconds),
        },
        coords=coords,
    )
    ds["prediction_error"].attrs["description"] = (
        "||expit(X_D theta) - expit(X_D theta_hat(D))||_2; dp_hybrid: Algorithm 1 at epsilon on Algorithm 2's "
        "order; nonprivate_hybrid: noise-free weights; public_only: unweighted public fit; lei: Lei (2011) at "
        "epsilon_1 + epsilon_2 (p = 2); budget_free_curve: Algorithm 1 at 2 epsilon on the model's order; "
        "algorithm2_candidates: Algorithm 2's candidates at epsilon_2 / k. NaN: size not on this p's grid"
    )
    ds["distance"].attrs["description"] = "d(D, E_(i)) (eq. 5) on the rescaled points, Algorithm 2's order"
    ds["expected_error"].attrs["description"] = "budget-free method's expected prediction error (simulated datasets)"
    ds["chosen_size"].attrs["description"] = "released subset size: Algorithm 2 (noisy min) or the budget-free choice"
    ds["chosen_error"].attrs["description"] = (
        "prediction error of the released estimate: Algorithm 2's chosen candidate (weights at epsilon_2/k) or "
        "Algorithm 1 at 2 epsilon on the budget-free subset"
    )
    ds["total_epsilon"].attrs["description"] = "total budget: the accountant's epsilon_1+epsilon_2+epsilon_3; budget-free: 2 epsilon + 0"
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
    fig, axes = plt.subplots(len(pvals), len(eps_vals), figsize=(4.2 * len(eps_vals), 3.4 * len(pvals)), squeeze=False)
    style = {
        "dp_hybrid": ("tab:red", "o-", "DP hybrid (Alg. 1, eps)"),
        "nonprivate_hybrid": ("black", ":", "non-private hybrid"),
        "public_only": ("tab:blue", "-", "public only"),
        "lei": ("tab:pink", "-", "Lei (eps1+eps2)"),
        "budget_free_curve": ("tab:green", "s--", "Alg. 1 at 2 eps, model order"),
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
            for sel, marker, color in (("algorithm2", "^", "tab:purple"), ("budget_free", "*", "tab:green")):
                x = ds.chosen_size.sel(selector=sel, p=p, epsilon=eps).values
                y = ds.chosen_error.sel(selector=sel, p=p, epsilon=eps).values
                lab = "Alg. 2 choice (2 eps total)" if sel == "algorithm2" else "budget-free choice (2 eps)"
                ax.scatter(x, y, marker=marker, s=45, color=color, edgecolor="k", lw=0.4, zorder=5, label=lab)
            ax.set_yscale("log")
            ax.set_title(f"p = {p}, eps = {eps:g} (total {2 * eps:g})", fontsize=9)
            ax.set_xlabel("released public points", fontsize=8)
            ax.tick_params(labelsize=7)
            if j == 0:
                ax.set_ylabel("prediction error", fontsize=8)
    axes[0, 0].legend(fontsize=6, loc="best")
    fig.suptitle(
        f"Wang et al. Sec. 5.1: n_D = {ds.attrs['n_private']}, n_E = {ds.attrs['n_public']}, "
        f"{ds.attrs['repeats']} repeats (curves: means; markers: each repeat's release)",
        fontsize=9,
    )
    fig.tight_layout()
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
