"""Histogram's stored runs (seven candidates on seeds 3-6 and 13-16, the adaptive-1se trial on 17-20) give the
numbers calibration.md and its history quote."""

import numpy as np
import pytest
import xarray as xr

from hybridpriv.calibration_runs import p_best_bins, regret_rules, stored

from _support.stored_runs import synthetic_bins, fixed_regret, regret_summary, above_and_silent


def test_stored_histogram_seed3_gives_the_numbers_the_docs_quote():
    """Histogram's first held-out seed (twenty-fifth session), as calibration.md and its history quote it."""
    ds = stored("histogram-seed3")
    assert ds.attrs["seed"] == 3 and ds.sizes["truth"] == 33 and (ds.source.values == "synthetic").sum() == 30
    covered = ds.covered.values[ds.eligible.values == 1]
    assert (covered.size, covered.sum()) == (231, 220)  # "95.2%": 0.2 points above the 95% the issue allows
    assert regret_summary(ds) == pytest.approx((0.8, 19.6, 53.4), abs=0.05)
    fixed = fixed_regret(ds, "estimator:adaptive")
    assert (fixed.mean(), np.quantile(fixed, 0.9)) == pytest.approx((27.4, 56.4), abs=0.05)
    assert above_and_silent(ds) == (5, 0)  # no silent failure
    bins = synthetic_bins(ds)
    assert bins["0.3-0.5"][1:] == (14, 34) and bins["0.1-0.3"][1:] == (8, 39) and bins["0-0.1"][1:] == (1, 128)


@pytest.mark.parametrize("seed, covered, regret, pythia, above", [
    (3, 220, (0.8, 19.6, 53.4), (23.5, 34.7, 47.0), (5, 0)),
    (4, 217, (4.7, 30.9, 84.8), (16.3, 36.6, 73.2), (8, 1)),
    (5, 215, (2.9, 22.7, 58.7), (20.2, 47.8, 88.0), (6, 3)),
    (6, 222, (4.2, 34.0, 85.2), (19.4, 33.3, 48.6), (10, 2))])
def test_stored_histogram_seeds_3_to_6_with_the_budget_spending_selector(seed, covered, regret, pythia, above):
    """Histogram's held-out seeds 3-6 on 84f5638 (seed 3 run again: the same select bits as its first run), with its
    budget-spending selector and the two-stage plan: ranges (Family.range_coverage), the recommendation's and the
    selector's regret (median, mean, p90), truths above 25% and the silent ones, as calibration.md quotes them."""
    from hybridpriv.families import family

    ds = stored(f"histogram-seed{seed}")
    assert ds.attrs["seed"] == seed and ds.attrs["commit"] == "84f5638" and ds.sizes["truth"] == 33
    eligible = ds.eligible.values == 1
    assert (eligible.sum(), ds.covered.values[eligible].sum()) == (231, covered)
    assert family("histogram").range_coverage[seed] == pytest.approx(covered / 231, abs=5e-4)
    assert regret_summary(ds) == pytest.approx(regret, abs=0.05)
    p = ds.pythia_regret.values * 100
    assert np.isfinite(p).all()
    assert (np.median(p), p.mean(), np.quantile(p, 0.9)) == pytest.approx(pythia, abs=0.05)
    assert above_and_silent(ds) == above
    assert int(ds.plan_pays.sum()) == (2 if seed == 6 else 0)


def test_histogram_seeds_3_to_6_pooled_against_the_fixed_rules_and_the_selector():
    """Pooled (132 truths): the recommendation below always `adaptive` in the mean, not at p90; the budget-spending
    selector below it at p90, not in the mean; each real dataset counted once (123 truths), the recommendation below
    both, mean and p90; the plan paid on 2 truths (seed 6) and helped on both.  Family.p_best_held
    was these runs' synthetic pairs pooled until seeds 13-16 joined them."""
    runs = [stored(f"histogram-seed{seed}") for seed in (3, 4, 5, 6)]
    rules = regret_rules(runs)
    assert tuple(rules.loc["recommendation", ["median", "mean", "p90"]]) == pytest.approx((3.3, 26.8, 87.2), abs=0.05)
    assert tuple(rules.loc["estimator:adaptive", ["median", "mean", "p90"]]) == pytest.approx((8.2, 30.9, 81.4), abs=0.05)
    assert rules.index[1] == "estimator:adaptive"  # the best fixed rule by mean
    p = np.concatenate([ds.pythia_regret.values for ds in runs]) * 100
    assert (np.median(p), p.mean(), np.quantile(p, 0.9)) == pytest.approx((19.8, 38.1, 65.4), abs=0.05)
    six = runs[3]
    paid = six.plan_pays.values.astype(bool)
    assert (six.plan_regret.values[paid] < six.regret.values[paid]).all()
    final = np.concatenate([ds.final_regret.values for ds in runs]) * 100
    assert (final.mean(), np.quantile(final, 0.9)) == pytest.approx((26.4, 87.2), abs=0.05)
    assert tuple(rules.loc["budget-spending selector", ["mean", "p90"]]) == pytest.approx((38.1, 65.4), abs=0.05)
    # each real dataset once (the same data in every seed): below every fixed rule and the selector, mean and p90
    once = regret_rules(runs, real_once=True)
    assert once.loc["recommendation", "truths"] == 123
    assert tuple(once.loc["recommendation", ["mean", "p90"]]) == pytest.approx((21.5, 42.9), abs=0.05)
    assert tuple(once.loc["estimator:adaptive", ["mean", "p90"]]) == pytest.approx((27.1, 48.2), abs=0.05)
    assert tuple(once.loc["budget-spending selector", ["mean", "p90"]]) == pytest.approx((28.3, 49.9), abs=0.05)
    for rule in once.index[1:]:
        assert (once.loc[rule, ["mean", "p90"]] > once.loc["recommendation", ["mean", "p90"]]).all(), rule
    bins = p_best_bins(runs)  # Family.p_best_held until seeds 13-16 were pooled in: 0.5-0.7 came true 7 of 10
    assert bins["0.5-0.7"] == pytest.approx((0.581, 0.7, 10), abs=5e-4)
    assert bins["0.3-0.5"] == pytest.approx((0.375, 0.377, 162), abs=5e-4)


def test_histogram_seeds_13_to_16_held_out():
    """Fresh seeds 13-16 (3eb7163, an AMD machine, with the selector and the plan): ranges 93.5 / 93.5 / 93.1 / 93.9%
    (real pairs 15, 17, 15, 17 of 21), 22 truths above 25% and 7 of them silent (4 on seed 15, mostly synthetic groups
    that differ, and mroz-children twice); the recommendation below always adaptive in median and mean, not at p90
    (94.4 against 81.8%); the selector lower at p90 (70.8%), and with each real dataset counted once lower at p90
    still (33.5 against 43.6%).  P(best) pooled with seeds 3-6 is Family.p_best_held (0.5-0.7 now 12 of 24 best at
    0.557 reported: within 10 points, so select's note no longer names it)."""
    from hybridpriv.families import family

    runs = {seed: stored(f"histogram-seed{seed}") for seed in (13, 14, 15, 16)}
    fam = family("histogram")
    for seed, real, silent in ((13, 15, 1), (14, 17, 1), (15, 15, 4), (16, 17, 1)):
        ds = runs[seed]
        eligible = ds.eligible.values == 1
        assert ds.attrs["seed"] == seed and ds.sizes["truth"] == 33 and np.isfinite(ds.regret.values).all()
        assert fam.range_coverage[seed] == pytest.approx(ds.covered.values[eligible].mean(), abs=5e-4)
        on_real = eligible & (ds.source.values == "real")[:, None]
        assert int(ds.covered.values[on_real].sum()) == real and on_real.sum() == 21
        assert above_and_silent(ds)[1] == silent, seed
    assert sum(above_and_silent(ds)[0] for ds in runs.values()) == 22
    rules = regret_rules(list(runs.values()))
    assert tuple(rules.loc["recommendation", ["median", "mean", "p90"]]) == pytest.approx((2.2, 31.2, 94.4), abs=0.05)
    assert tuple(rules.loc["estimator:adaptive", ["median", "mean", "p90"]]) == pytest.approx((8.5, 38.0, 81.8), abs=0.05)
    assert tuple(rules.loc["budget-spending selector", ["mean", "p90"]]) == pytest.approx((44.2, 70.8), abs=0.05)
    once = regret_rules(list(runs.values()), real_once=True)
    assert tuple(once.loc["recommendation", ["mean", "p90"]]) == pytest.approx((26.3, 43.6), abs=0.05)
    assert tuple(once.loc["budget-spending selector", ["mean", "p90"]]) == pytest.approx((34.7, 33.5), abs=0.05)
    bins = p_best_bins([stored(f"histogram-seed{seed}") for seed in (3, 4, 5, 6, 13, 14, 15, 16)])
    assert bins["0.5-0.7"] == pytest.approx((0.557, 0.5, 24), abs=5e-4)  # Family.p_best_held until seeds 17-20


def _trial_regrets(seven: xr.Dataset, eight: xr.Dataset) -> dict[str, list[float]]:
    """Per truth (a plain loop, not regret_rules): both arms' recommendations and the eight-candidate selector against
    the best eligible of the eight realised risks; a failure is silent without a warning at the 0.25 line."""
    out: dict[str, list[float]] = {"seven": [], "eight": [], "selector": [], "silent_seven": [], "silent_eight": []}
    names = [str(c) for c in eight.candidate.values]
    for t in range(eight.sizes["truth"]):
        risk = {c: float(eight.realised.values[t, j]) for j, c in enumerate(names)}
        best = min(risk[c] for j, c in enumerate(names) if eight.eligible.values[t, j] == 1)
        for arm, ds in (("seven", seven), ("eight", eight)):
            rec = "estimator:" + str(ds.recommended.values[t]).split(":")[-1]
            regret = (risk[rec] / best - 1) * 100
            out[arm].append(regret)
            warned = str(ds.sensitivity_warning.values[t]) != "" or float(ds.p_costly_recommended.values[t]) >= 0.25
            out[f"silent_{arm}"].append(float(regret > 25 and not warned))
        out["selector"].append(float(eight.pythia_regret.values[t]) * 100)
    return out


def test_histogram_seeds_17_to_20_adopted_adaptive_1se_by_the_pre_registered_rule():
    """Fresh seeds 17-20, each run twice on the same truths: on 6f100e4 (seven candidates, stored as
    histogram-seedN-seven) and on 3c75439 (adaptive-1se added).  Against the best of the eight realised risks (the
    shared candidates' realised risks are the same numbers in both arms), the eighth candidate lowers the
    recommendation's mean and p90 (22.6 / 68.1% to 18.7 / 35.8%), above-25% 21 to 20, silent 9 to 7, ranges 94.0%:
    every condition of the rule written before the runs (calibration-history.md).  With eight, the recommendation is
    below every fixed rule and the budget-spending selector (40.0 / 47.9%) in mean and p90, each real dataset once too.
    P(best) pooled over seeds 3-6 and 13-20 is Family.p_best_held."""
    from hybridpriv.families import family

    seven = [stored(f"histogram-seed{seed}-seven") for seed in (17, 18, 19, 20)]
    eight = [stored(f"histogram-seed{seed}") for seed in (17, 18, 19, 20)]
    fam = family("histogram")
    pooled: dict[str, list[float]] = {}
    for a, b in zip(seven, eight):
        assert a.attrs["commit"] == "6f100e4" and b.attrs["commit"] == "3c75439" and a.attrs["arm_of"] == f"histogram-seed{b.attrs['seed']}"
        assert (a.generator.values == b.generator.values).all() and np.isfinite(b.regret.values).all()
        shared = [str(c) for c in a.candidate.values]
        assert len(shared) == 7 and b.sizes["candidate"] == 8
        np.testing.assert_array_equal(a.realised.values, b.realised.sel(candidate=shared).values)
        eligible = b.eligible.values == 1
        assert fam.range_coverage[b.attrs["seed"]] == pytest.approx(b.covered.values[eligible].mean(), abs=5e-4)
        for k, v in _trial_regrets(a, b).items():
            pooled.setdefault(k, []).extend(v)
    seven_r, eight_r, sel = (np.array(pooled[k]) for k in ("seven", "eight", "selector"))
    assert seven_r.size == 132
    assert (seven_r.mean(), np.quantile(seven_r, 0.9)) == pytest.approx((22.6, 68.1), abs=0.05)
    assert (eight_r.mean(), np.quantile(eight_r, 0.9)) == pytest.approx((18.7, 35.8), abs=0.05)
    assert ((seven_r > 25).sum(), (eight_r > 25).sum()) == (21, 20)
    assert (sum(pooled["silent_seven"]), sum(pooled["silent_eight"])) == (9, 7)
    assert (sel.mean(), np.quantile(sel, 0.9)) == pytest.approx((40.0, 47.9), abs=0.05)
    covered = np.concatenate([b.covered.values[b.eligible.values == 1] for b in eight])
    assert covered.mean() == pytest.approx(0.940, abs=5e-4)
    rules = regret_rules(eight)  # the same recommendation row as the loop: the toolkit's own scoring agrees
    assert tuple(rules.loc["recommendation", ["mean", "p90"]]) == pytest.approx((18.7, 35.8), abs=0.05)
    assert rules.index[1] == "estimator:adaptive-1se"
    for rule in rules.index[1:]:
        assert (rules.loc[rule, ["mean", "p90"]] > rules.loc["recommendation", ["mean", "p90"]]).all(), rule
    once = regret_rules(eight, real_once=True)
    assert tuple(once.loc["recommendation", ["mean", "p90"]]) == pytest.approx((12.8, 29.9), abs=0.05)
    for rule in once.index[1:]:
        assert (once.loc[rule, ["mean", "p90"]] > once.loc["recommendation", ["mean", "p90"]]).all(), rule
    assert tuple(fam.p_best_seeds) == (3, 4, 5, 6, 13, 14, 15, 16, 17, 18, 19, 20)
    bins = p_best_bins([stored(f"histogram-seed{seed}") for seed in fam.p_best_seeds])
    assert bins.keys() == fam.p_best_held.keys()
    for label, (reported, came, pairs) in bins.items():
        assert fam.p_best_held[label] == pytest.approx((reported, came, pairs), abs=5e-4), label
        assert pairs < 10 or abs(reported - came) <= 0.10, label
