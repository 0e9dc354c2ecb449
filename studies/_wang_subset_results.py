"""The wang-subset study's output: its dataset assembled from the evaluations, and its two figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

__all__ = ["assemble", "plot"]

DESCRIPTIONS = {
    "prediction_error": (
        "||expit(X_D theta) - expit(X_D theta_hat(D))||_2; dp_hybrid: Algorithm 1 at 2 epsilon - epsilon_1 on an "
        "epsilon_1-noisy order (Algorithm 2's step 2, one order per repeat shared by every size and method; 2 epsilon "
        "in all; its best size is picked in hindsight, an oracle, not a method); nonprivate_hybrid: noise-free "
        "weights; public_only: unweighted public fit; lei: Lei (2011) at 2 epsilon (p = 2); "
        "budget_free_public_curve / budget_free_summaries_curve: Algorithm 1 at 2 epsilon on that model's order (the "
        "summaries model assumes D's covariate means/variances and outcome rate were published independently before "
        "this release; not charged to this release's epsilon); algorithm2_candidates: Algorithm 1 at epsilon_2 / k on "
        "the epsilon_1-noisy order (what Algorithm 2's candidates are). NaN: size not on this p's grid"),
    "distance": "d(D, E_(i)) (eq. 5) on the rescaled points, on the epsilon_1-noisy order of the curves",
    "expected_error": "budget-free selector's expected prediction error (its model's simulated datasets); NaN for algorithm2",
    "expected_error_mcse": "Monte Carlo standard error of expected_error (hybridpriv.engine.decision.decide)",
    "chosen_size": ("released subset size: Algorithm 2 (algorithm2: Brier criterion, report-noisy-min; "
                    "algorithm2_as_printed: the paper's criterion and noise) or the budget-free choice"),
    "chosen_error": ("prediction error of the released estimate: Algorithm 2's chosen candidate (weights at "
                     "epsilon_2/k) or Algorithm 1 at 2 epsilon on the budget-free subset"),
    "release_epsilon": (
        "epsilon charged to THIS release, from the candidates' privacy declarations: algorithm2 the accountant's "
        "epsilon_1+epsilon_2+epsilon_3 = 2 epsilon; algorithm2_as_printed epsilon_1+epsilon_2+k epsilon_3 (the "
        "paper's selection noise Laplace(1/epsilon_3) on each of the k criteria is k epsilon_3-DP, and its criterion's "
        "sensitivity 1 is the paper's unproven claim); budget-free selectors 2 epsilon + 0 (selection cost); "
        "budget_free_summaries also relies on exact summaries of D (see uses_published_summaries) that are free "
        "only if they were published independently before this release"),
    "method_epsilon": ("total epsilon charged by one estimate of each curve of prediction_error (the order's included): "
                       "2 epsilon for every private curve but algorithm2_candidates (epsilon_1 + epsilon_2 / k: one "
                       "candidate of Algorithm 2); 0 public_only; inf nonprivate_hybrid"),
    "uses_published_summaries": ("True if the selector also relies on D's exact covariate means/variances and outcome "
                                 "rate, assumed published independently before this release and not charged to "
                                 "release_epsilon"),
    "model_max_rhat": "largest R-hat of the selector's model fit (shift, log_scale, theta)",
    "model_min_ess": "smallest bulk ESS of the selector's model fit (shift, log_scale, theta)",
}


def _risk(ev: xr.Dataset, p) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Candidate labels, risks ``(candidate, repeat)`` and declared private epsilons at ``p`` (present ones only)."""
    part = ev.sel(p=p)
    risk = part["risk"].isel(chain=0).transpose("candidate", "draw").values
    ok = np.isfinite(risk).all(axis=1)
    eps = part["privacy_epsilon"].sel(unit="private").values
    return [str(x) for x in part["candidate"].values[ok]], risk[ok], eps[ok]


def assemble(cfg: dict, ev: dict, choices: dict, fits: dict, epsilons, methods, selectors, uses, knowledge, split
             ) -> xr.Dataset:
    """The study's variables (see :data:`DESCRIPTIONS`) from the three evaluations and the budget-free choices:
    ``choices[selector, p, repeat]`` one dict per epsilon (``size``, ``expected_error``, ``mcse``,
    ``privacy_cost`` of its :class:`~hybridpriv.families.public_private.subset.SubsetChoice`) and ``fits[selector, p, repeat]``
    the model fit's ``max_rhat`` and ``min_ess``."""
    ps, R = list(cfg["sizes"]), cfg["repeats"]
    sizes_all = sorted({n for p in ps for n in cfg["sizes"][p]})
    col = {n: i for i, n in enumerate(sizes_all)}
    e_ix = {f"{e:g}": i for i, e in enumerate(epsilons)}
    shape = (len(ps), len(epsilons), R)
    err = np.full((len(methods), *shape, len(sizes_all)), np.nan)
    dist = np.full((*shape, len(sizes_all)), np.nan)
    expected, expected_se = (np.full((len(selectors), *shape, len(sizes_all)), np.nan) for _ in range(2))
    size, chosen, release = (np.full((len(selectors), *shape), np.nan) for _ in range(3))
    models = [s for s in selectors if s.startswith("budget_free")]
    rhat, ess = (np.full((len(models), len(ps), R), np.nan) for _ in range(2))
    method_eps = np.full((len(methods), len(ps), len(epsilons)), np.nan)
    declared = {}
    for ip, p in enumerate(ps):
        cols = [col[n] for n in cfg["sizes"][p]]
        labels, risk, eps = _risk(ev["release"], p)
        for lab, row, e_priv in zip(labels, risk, eps):
            parts = lab.split("|")
            declared[p, lab] = e_priv
            if parts[0] == "public_only":
                err[methods.index("public_only"), ip][..., cols] = row[None, :, None]
            elif parts[0] == "lei":
                err[methods.index("lei"), ip, e_ix[parts[1]]][..., cols] = row[:, None]
            elif parts[0] in selectors:  # Algorithm 2's releases
                chosen[selectors.index(parts[0]), ip, e_ix[parts[1]]] = row
                release[selectors.index(parts[0]), ip, e_ix[parts[1]]] = e_priv
            else:
                err[methods.index(parts[0]), ip, e_ix[parts[1]], :, col[int(parts[2])]] = row
            if parts[0] in methods:  # its declaration, plus epsilon_1 for the curves on the noisy order
                noisy = parts[0] in ("dp_hybrid", "nonprivate_hybrid", "algorithm2_candidates")
                where = e_ix[parts[1]] if len(parts) > 1 else slice(None)
                method_eps[methods.index(parts[0]), ip, where] = e_priv + (split[0] * float(parts[1]) if noisy else 0.0)
        for lab, row, _ in zip(*_risk(ev["distance"], p)):
            e, n = lab.split("|")
            dist[ip, e_ix[e], :, col[int(n)]] = row
        for lab, row, _ in zip(*_risk(ev["size"], p)):
            size[selectors.index(lab.split("|")[0]), ip, e_ix[lab.split("|")[1]]] = row
        for im, sel in enumerate(models):
            isel = selectors.index(sel)
            for r in range(R):
                rhat[im, ip, r] = fits[sel, p, r]["max_rhat"]
                ess[im, ip, r] = fits[sel, p, r]["min_ess"]
                for ie, e in enumerate(epsilons):
                    ch = choices[sel, p, r][ie]
                    expected[isel, ip, ie, r, cols] = ch["expected_error"]
                    expected_se[isel, ip, ie, r, cols] = ch["mcse"]
                    size[isel, ip, ie, r] = ch["size"]
                    chosen[isel, ip, ie, r] = err[methods.index(f"{sel}_curve"), ip, ie, r, col[ch["size"]]]
                    release[isel, ip, ie, r] = declared[p, f"{sel}_curve|{e:g}|{ch['size']}"] + ch["privacy_cost"]
    s, k = ("selector", "p", "epsilon", "repeat"), ("p", "epsilon", "repeat", "subset_size")
    ds = xr.Dataset(
        {
            "prediction_error": (("method", *k), err), "distance": (k, dist),
            "expected_error": (("selector", *k), expected), "expected_error_mcse": (("selector", *k), expected_se),
            "chosen_size": (s, size), "chosen_error": (s, chosen), "release_epsilon": (s, release),
            "uses_published_summaries": (("selector",), np.array([uses[x] for x in selectors])),
            "model_max_rhat": (("model", "p", "repeat"), rhat), "model_min_ess": (("model", "p", "repeat"), ess),
            "method_epsilon": (("method", "p", "epsilon"), method_eps),
        },
        coords={"method": list(methods), "p": ps, "epsilon": list(epsilons), "repeat": np.arange(R),
                "subset_size": sizes_all, "selector": list(selectors), "model": models},
    )
    for name, text in DESCRIPTIONS.items():
        ds[name].attrs["description"] = text
    for sel, text in knowledge.items():
        ds.attrs[f"{sel}_model_knowledge"] = text
    config = {"ps": ps, "repeats": R, "n": cfg["n"], "model": {**cfg["model"], "rate_draws": cfg["rate_draws"]},
              "select": cfg["select"], "sizes": {str(p): list(cfg["sizes"][p]) for p in ps}}
    ds.attrs.update({"n_private": cfg["n"], "n_public": cfg["n"], "repeats": R, "epsilon_split": str(tuple(split)),
                     "lei_bins": 10, "config": config})
    return ds


STYLE = {
    "dp_hybrid": ("tab:red", "o-", "DP hybrid (eps1 order + Alg. 1; 2 eps)"),
    "nonprivate_hybrid": ("black", ":", "non-private hybrid"),
    "public_only": ("tab:blue", "-", "public only"),
    "lei": ("tab:pink", "-", "Lei (2 eps)"),
    "budget_free_public_curve": ("tab:olive", "d--", "Alg. 1 at 2 eps, public-only model order"),
    "budget_free_summaries_curve": ("tab:green", "s--", "Alg. 1 at 2 eps, summaries model order*"),
    "algorithm2_candidates": ("0.6", "-", "Alg. 2 candidates (eps1 + eps2/k)"),
}
MARKERS = {
    "algorithm2": ("^", "tab:purple", "Alg. 2, Brier + noisy min (2 eps)"),
    "algorithm2_as_printed": ("v", "tab:brown", "Alg. 2 as printed (charged eps1+eps2+k eps3)"),
    "budget_free_public": ("D", "tab:olive", "budget-free, public only (2 eps)"),
    "budget_free_summaries": ("*", "tab:green", "budget-free + D's summaries* (2 eps)"),
}


def plot(ds: xr.Dataset, path: str | Path) -> None:
    """Error against subset size per (p, epsilon), every release marked; ``*-distance.png`` beside it."""
    from matplotlib.figure import Figure

    pvals, eps_vals = list(ds.p.values), list(ds.epsilon.values)
    fig = Figure(figsize=(4.2 * len(eps_vals), 3.4 * len(pvals) + 0.9))
    axes = fig.subplots(len(pvals), len(eps_vals), squeeze=False)
    for i, p in enumerate(pvals):
        for j, eps in enumerate(eps_vals):
            ax = axes[i, j]
            pe = ds.prediction_error.sel(p=p, epsilon=eps)
            for m in ds.method.values:
                curve = pe.sel({"method": m}).mean("repeat")
                ok = np.isfinite(curve.values)
                if ok.any():
                    color, ls, label = STYLE.get(str(m), ("tab:gray", "-", str(m)))
                    ax.plot(ds.subset_size.values[ok], curve.values[ok], ls, color=color, label=label, ms=2.5, lw=1)
            best = pe.sel({"method": "dp_hybrid"}).mean("repeat")
            if np.isfinite(best.values).any():  # the best size in hindsight: an oracle, not a method
                k = int(np.nanargmin(best.values))
                ax.scatter(ds.subset_size.values[k], best.values[k], marker="o", s=90, facecolor="none",
                           edgecolor="tab:red", lw=1.2, zorder=6, label="oracle: DP hybrid at the best size in hindsight")
            for sel in ds.selector.values:
                marker, color, lab = MARKERS.get(str(sel), ("o", "tab:gray", str(sel)))
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

    path = Path(path)
    fig = Figure(figsize=(4.2 * len(pvals), 3.2))
    axes = fig.subplots(1, len(pvals), squeeze=False)
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
