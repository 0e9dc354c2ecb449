"""Hybrid trust's stored runs give the numbers calibration.md and its history quote."""

import numpy as np
import pytest
import xarray as xr

from hybridpriv.calibration_runs import p_best_bins, regret_rules, stored

from _support.stored_runs import synthetic_bins, fixed_regret, regret_summary, silent_truths, above_and_silent


def test_stored_hybrid_trust_seed3_gives_the_numbers_the_docs_quote():
    """Hybrid trust's first held-out seed (twenty-fifth session), as calibration.md and its history quote it."""
    ds = stored("hybrid-trust-seed3")
    assert ds.attrs["seed"] == 3 and ds.sizes["truth"] == 34 and (ds.family.values == "hybrid-trust").all()
    assert (ds.source.values == "synthetic").sum() == 30 and np.isfinite(ds.regret.values).all()
    covered = ds.covered.values[ds.eligible.values == 1]
    assert covered.size == 272 and covered.mean() == pytest.approx(0.893, abs=5e-4)  # "ranges 89.3%"
    assert regret_summary(ds) == pytest.approx((4.0, 203.5, 587.5), abs=0.05)
    for name, (mean, p90) in (("hkvh", (196.3, 509.1)), ("bayes", (200.1, 331.5))):  # the fixed rules
        fixed = fixed_regret(ds, f"estimator:hybrid-{name}")
        assert (fixed.mean(), np.quantile(fixed, 0.9)) == pytest.approx((mean, p90), abs=0.05)
    assert above_and_silent(ds) == (10, 1)
    silent = (ds.regret.values > 0.25) & (ds.sensitivity_warning.values == "") & (ds.p_costly_recommended.values < 0.25)
    assert list(ds.generator.values[silent]) == ["acs12-income"]
    bins = synthetic_bins(ds)
    assert bins["0.1-0.3"][1:] == (21, 134) and bins["0.1-0.3"][0] == pytest.approx(0.19, abs=0.005)
    assert bins["0-0.1"][1:] == (6, 99) and bins["0.3-0.5"][1:] == (3, 7)


@pytest.mark.parametrize("seed, coverage, regret, hkvh, above", [
    (0, 0.941, (3.0, 118.7, 390.5), (219.0, 838.3), 8),
    (2, 0.875, (0.8, 153.1, 288.8), (130.6, 193.9), 9)])
def test_stored_hybrid_trust_seeds_run_again_repeat_the_table(seed, coverage, regret, hkvh, above):
    """Hybrid trust's seeds 0 and 2 run again on 59c5e4f (to score decision rules across seeds): within a point of
    the three-seed table's row (seed 0: 94%, 3 / 119 / 391%, hkvh 219 / 838%; seed 2: 88%, 1 / 153 / 289%, hkvh
    131 / 194%), and no silent failure."""
    ds = stored(f"hybrid-trust-seed{seed}")
    assert ds.attrs["seed"] == seed and ds.sizes["truth"] == 34 and np.isfinite(ds.regret.values).all()
    assert ds.covered.values[ds.eligible.values == 1].mean() == pytest.approx(coverage, abs=5e-4)
    assert regret_summary(ds) == pytest.approx(regret, abs=0.05)
    fixed = fixed_regret(ds, "estimator:hybrid-hkvh")
    assert (fixed.mean(), np.quantile(fixed, 0.9)) == pytest.approx(hkvh, abs=0.05)
    assert above_and_silent(ds) == (above, 0)


def test_hybrid_trust_seeds_0_to_3_pooled_against_the_fixed_rules():
    """calibration.md's pooled comparison (135 truths, seed 1's refused one left out): the recommendation has the
    lowest median and the fewest truths above 25%, a p90 below always hkvh's and within 4 points of always
    bayes's, and a mean above hkvh's (seed 1's one truth at 10,910%)."""
    table = regret_rules([stored(f"hybrid-trust-seed{seed}") for seed in range(4)])
    assert table.attrs["left_out"] == 1 and list(table.index[:3]) == ["recommendation", "estimator:hybrid-hkvh",
                                                                       "estimator:hybrid-bayes"]
    rec, hkvh, bayes = [], [], []
    for seed in range(4):
        ds = stored(f"hybrid-trust-seed{seed}")
        ds = ds.isel(truth=np.flatnonzero(np.isfinite(ds.regret.values)))
        rec.append(ds.regret.values * 100)
        hkvh.append(fixed_regret(ds, "estimator:hybrid-hkvh"))
        bayes.append(fixed_regret(ds, "estimator:hybrid-bayes"))
    stats = {name: (np.median(r), r.mean(), np.quantile(r, 0.9), int((r > 25).sum()))
             for name, r in (("rec", np.concatenate(rec)), ("hkvh", np.concatenate(hkvh)),
                             ("bayes", np.concatenate(bayes)))}
    assert sum(r.size for r in rec) == 135
    assert stats["rec"] == pytest.approx((2.8, 214.5, 405.1, 36), abs=0.05)
    assert stats["hkvh"] == pytest.approx((4.2, 180.9, 465.3, 40), abs=0.05)
    assert stats["bayes"] == pytest.approx((3.1, 330.9, 401.8, 45), abs=0.05)
    for rule, name in (("recommendation", "rec"), ("estimator:hybrid-hkvh", "hkvh"), ("estimator:hybrid-bayes", "bayes")):
        row = table.loc[rule]  # the helper agrees with the computation above
        assert (row["median"], row["mean"], row["p90"], row["above_25pct"]) == pytest.approx(stats[name], abs=1e-9)


def test_hybrid_trust_seed_4_held_out_and_seeds_0_to_4_pooled():
    """calibration.md's seed 4 (held out, after the LM noise became one sum per trial): ranges 83.5%, the
    recommendation below every fixed rule in the mean and at p90 on this seed, 11 truths above 25% with one silent
    (heavy-tailed); pooled over seeds 0-4 (169 truths) it still loses narrowly: to always hkvh in the mean, to
    always bayes at p90."""
    ds = stored("hybrid-trust-seed4")
    assert ds.attrs["seed"] == 4 and ds.sizes["truth"] == 34 and np.isfinite(ds.regret.values).all()
    assert ds.covered.values[ds.eligible.values == 1].mean() == pytest.approx(0.835, abs=5e-4)
    rec = regret_summary(ds)
    assert rec == pytest.approx((6.2, 486.6, 935.6), abs=0.05)
    rules = [str(c) for c in ds.candidate.values if (ds.eligible.sel(candidate=c).values == 1).all()]
    for rule in rules:  # every fixed rule does worse on this seed, in the mean and at p90
        fixed = fixed_regret(ds, rule)
        assert fixed.mean() > rec[1] and np.quantile(fixed, 0.9) > rec[2], rule
    assert (fixed_regret(ds, "estimator:hybrid-hkvh").mean(), np.quantile(fixed_regret(ds, "estimator:hybrid-kvh"), 0.9)) == \
        pytest.approx((600.6, 1615.5), abs=0.05)
    assert above_and_silent(ds) == (11, 1)
    silent = (ds.regret.values > 0.25) & (ds.sensitivity_warning.values == "") & (ds.p_costly_recommended.values < 0.25)
    assert list(ds.generator.values[silent]) == ["heavy-tailed"]
    pooled = regret_rules([stored(f"hybrid-trust-seed{seed}") for seed in range(5)])
    assert pooled.attrs["left_out"] == 1 and int(pooled.loc["recommendation", "truths"]) == 169
    got = {rule: (pooled.loc[rule, "mean"], pooled.loc[rule, "p90"]) for rule in
           ("recommendation", "estimator:hybrid-hkvh", "estimator:hybrid-bayes")}
    assert got["recommendation"] == pytest.approx((269.2, 488.9), abs=0.05)
    assert got["estimator:hybrid-hkvh"] == pytest.approx((265.4, 591.9), abs=0.05)
    assert got["estimator:hybrid-bayes"] == pytest.approx((407.1, 462.8), abs=0.05)


def test_hybrid_trust_seeds_5_and_6_held_out_and_seeds_0_to_6_pooled():
    """calibration.md's seeds 5 and 6 (on e7cbeb7, the predictive checks recorded), the three seeds of today's code
    (4-6) against the fixed rules, the pooled seeds 0-6, and the failed checks beside the silent failures."""
    runs = {seed: stored(f"hybrid-trust-seed{seed}") for seed in (4, 5, 6)}
    want = {5: (0.890, (21.1, 692.2, 1257.7), (16, 1)), 6: (0.945, (4.6, 67.2, 209.9), (9, 0))}
    for seed, (coverage, regret, above) in want.items():
        ds = runs[seed]
        assert ds.attrs["seed"] == seed and ds.sizes["truth"] == 34 and np.isfinite(ds.regret.values).all()
        assert ds.covered.values[ds.eligible.values == 1].mean() == pytest.approx(coverage, abs=5e-4)
        assert regret_summary(ds) == pytest.approx(regret, abs=0.05)
        assert above_and_silent(ds) == above
    assert (fixed_regret(runs[5], "estimator:hybrid-hkvh").mean(), np.quantile(fixed_regret(runs[5], "estimator:hybrid-bayes"), 0.9)) \
        == pytest.approx((562.3, 591.7), abs=0.05)  # seed 5: a fixed rule did better, in the mean and at p90
    for seed in (4, 6):  # seeds 4 and 6: every fixed rule did worse, in both
        ds, rec = runs[seed], regret_summary(runs[seed])
        for rule in [str(c) for c in ds.candidate.values if (ds.eligible.sel(candidate=c).values == 1).all()]:
            assert fixed_regret(ds, rule).mean() > rec[1] and np.quantile(fixed_regret(ds, rule), 0.9) > rec[2], (seed, rule)
    today = regret_rules(list(runs.values()))
    assert (today.loc["recommendation", "mean"], today.loc["recommendation", "p90"]) == pytest.approx((415.3, 456.0),
                                                                                                     abs=0.05)
    others = today.drop("recommendation")
    assert (others["mean"] > 415.3).all() and (others["p90"] > 456.0).all()
    pooled = regret_rules([stored(f"hybrid-trust-seed{seed}") for seed in range(7)])
    assert int(pooled.loc["recommendation", "truths"]) == 237 and pooled.attrs["left_out"] == 1
    assert tuple(pooled.loc["recommendation", ["median", "mean", "p90"]]) == pytest.approx((4.6, 300.9, 446.6), abs=0.05)
    assert tuple(pooled.loc["estimator:hybrid-hkvh", ["mean", "p90"]]) == pytest.approx((285.9, 573.5), abs=0.05)
    assert tuple(pooled.loc["estimator:hybrid-bayes", ["mean", "p90"]]) == pytest.approx((410.9, 586.0), abs=0.05)
    # the failed predictive checks (not counted as warnings): 14, 13, 17 truths; the silent failures of seeds 4-6
    # (two) are seed 4's heavy-tailed one, with a failed check, and seed 5's skewed one, without
    flagged = {seed: ds.checks_flagged.values != "" for seed, ds in runs.items()}
    assert {seed: int(f.sum()) for seed, f in flagged.items()} == {4: 14, 5: 13, 6: 17}
    for seed, ds in runs.items():
        silent = (ds.regret.values > 0.25) & (ds.sensitivity_warning.values == "") & (ds.p_costly_recommended.values < 0.25)
        got = [(str(g), bool(f)) for g, f in zip(ds.generator.values[silent], flagged[seed][silent])]
        assert got == {4: [("heavy-tailed", True)], 5: [("skewed", False)], 6: []}[seed]


def _check_moments_seed(ds: xr.Dataset, seed: int, coverage: float, real_covered: int, refused: int,
                        above: tuple[int, int]) -> None:
    """One stored hybrid-trust seed of the moments likelihood: its seed, 34 truths, the eligible pairs' coverage (and
    Family.range_coverage's), the real pairs covered (of 32), refusals, and (above 25%, silent) among the rest."""
    from hybridpriv.families import family

    assert ds.attrs["seed"] == seed and ds.attrs["pilot_likelihood"] == "moments" and ds.sizes["truth"] == 34
    eligible = ds.eligible.values == 1
    assert ds.covered.values[eligible].mean() == pytest.approx(coverage, abs=5e-4)
    assert family("hybrid-trust").range_coverage[seed] == pytest.approx(coverage, abs=5e-4)
    on_real = eligible & (ds.source.values == "real")[:, None]
    assert int(ds.covered.values[on_real].sum()) == real_covered and on_real.sum() == 32
    assert int(np.isnan(ds.regret.values).sum()) == refused
    assert above_and_silent(ds.isel(truth=np.flatnonzero(np.isfinite(ds.regret.values)))) == above


def test_hybrid_trust_seeds_7_and_8_of_the_moments_likelihood():
    """The hybrid-trust SPEC's model since 2026-11-30 (model.pilot_likelihood = "moments"), on fresh held-out seeds
    7 and 8 (calibration.md): ranges 92.4 / 90.4% (every real pair covered), one refused truth (seed 7, a
    shifted-groups truth whose fit did not converge in three attempts), one silent failure (seed 8, clamped, 76%),
    and the recommendation below every fixed rule but two: always hybrid-hkvh and always hybrid-bayes do better
    in the mean, hkvh at p90 too.  Against the Beta likelihood's recommendation on the same truths (those runs
    not stored; calibration-history.md) it is lower in mean and p90, the rule set before these runs."""
    runs = {seed: stored(f"hybrid-trust-seed{seed}") for seed in (7, 8)}
    _check_moments_seed(runs[7], 7, 0.924, 32, 1, (11, 0))
    _check_moments_seed(runs[8], 8, 0.904, 32, 0, (6, 1))
    refused = runs[7].isel(truth=np.flatnonzero(np.isnan(runs[7].regret.values)))
    assert list(refused.generator.values) == ["shifted-groups"]
    table = regret_rules(list(runs.values()))
    assert table.attrs["left_out"] == 1 and int(table.loc["recommendation", "truths"]) == 67
    got = {rule: tuple(table.loc[rule, ["median", "mean", "p90"]]) for rule in
           ("recommendation", "estimator:hybrid-hkvh", "estimator:hybrid-bayes")}
    assert got["recommendation"] == pytest.approx((2.3, 195.8, 240.8), abs=0.05)
    assert got["estimator:hybrid-hkvh"] == pytest.approx((2.4, 108.0, 176.4), abs=0.05)
    assert got["estimator:hybrid-bayes"] == pytest.approx((2.3, 145.3, 359.9), abs=0.05)
    others = table.drop(index=["recommendation", "estimator:hybrid-hkvh", "estimator:hybrid-bayes"])
    assert (others["mean"] > 195.8).all() and (others["p90"] > 240.8).all()
    bins = p_best_bins(list(runs.values()))  # seeds 7-8 alone missed at 0.3-0.5 (20% of 20); 7-10 pooled hold
    assert abs(bins["0.3-0.5"][0] - bins["0.3-0.5"][1]) > 0.10 and bins["0.3-0.5"][2] == 20


def test_hybrid_trust_seeds_9_and_10_held_out_and_seeds_7_to_10_pooled():
    """Fresh seeds 9 and 10 of the same model (code of 1fb3275; the baseline arm of the centred-shared-law experiment,
    calibration-history.md): no refusal, ranges 93.8 / 93.4%, one silent failure each (bimodal pilots), and the
    recommendation below every fixed rule in mean and p90 over the two pooled (1.3 / 47.3 / 112.1% against always
    hybrid-hkvh's 1.7 / 69.4 / 121.5%; not on each alone).  Seeds 7-10 pooled: always hybrid-hkvh is lower (88.6 / 129.4% against 121.0 / 156.7%, seeds
    7-8 carry it), and P(best) holds within 10 points in every bin (Family.p_best_held was these bins until seeds
    13-16 were pooled in)."""
    runs = {seed: stored(f"hybrid-trust-seed{seed}") for seed in (7, 8, 9, 10)}
    for seed, coverage, real in ((9, 0.9375, 32), (10, 0.9338, 27)):
        ds = runs[seed]
        _check_moments_seed(ds, seed, coverage, real, 0, (9, 1))
        above = ds.regret.values > 0.25
        silent = above & (ds.sensitivity_warning.values == "") & (ds.p_costly_recommended.values < 0.25)
        assert list(ds.generator.values[silent]) == ["bimodal"]
    missed = runs[10].isel(truth=np.flatnonzero(runs[10].source.values == "real"))
    assert [str(g) for g, c, e in zip(missed.generator.values, missed.covered.values, missed.eligible.values)
            if not c[e == 1].all()] == ["boston-medv"]
    fresh = regret_rules([runs[9], runs[10]])
    assert fresh.attrs["left_out"] == 0 and int(fresh.loc["recommendation", "truths"]) == 68
    assert tuple(fresh.loc["recommendation", ["median", "mean", "p90"]]) == pytest.approx((1.3, 47.3, 112.1), abs=0.05)
    assert tuple(fresh.loc["estimator:hybrid-hkvh", ["median", "mean", "p90"]]) == pytest.approx((1.7, 69.4, 121.5),
                                                                                                  abs=0.05)
    rules = fresh.drop(index="recommendation")
    assert (rules["mean"] > 47.3).all() and (rules["p90"] > 112.1).all()
    # the budget-spending selector (10% of each group's epsilon on its mean, pythia_hybrid_trust) on the same truths,
    # scored against the same oracle at the full budget: behind in the mean and at p90, on each seed
    for seed, rec, pythia in ((9, (68.9, 210.1), (74.5, 210.5)), (10, (25.7, 102.0), (91.1, 139.4))):
        ds = runs[seed]
        r, p = ds.regret.values * 100, ds.pythia_regret.values * 100
        assert np.isfinite(p).all() and (r.mean(), np.quantile(r, 0.9)) == pytest.approx(rec, abs=0.05)
        assert (p.mean(), np.quantile(p, 0.9)) == pytest.approx(pythia, abs=0.05)
    both = np.concatenate([runs[s].pythia_regret.values for s in (9, 10)]) * 100
    assert (both.mean(), np.quantile(both, 0.9)) == pytest.approx((82.8, 158.5), abs=0.05)
    pooled = regret_rules(list(runs.values()))
    assert pooled.attrs["left_out"] == 1 and int(pooled.loc["recommendation", "truths"]) == 135
    assert tuple(pooled.loc["recommendation", ["mean", "p90"]]) == pytest.approx((121.0, 156.7), abs=0.05)
    assert tuple(pooled.loc["estimator:hybrid-hkvh", ["mean", "p90"]]) == pytest.approx((88.6, 129.4), abs=0.05)
    bins = p_best_bins(list(runs.values()))  # Family.p_best_held until seeds 13-16 were pooled in
    assert bins == {"0-0.1": pytest.approx((0.021, 0.034, 416), abs=5e-4),
                    "0.1-0.3": pytest.approx((0.193, 0.181, 491), abs=5e-4),
                    "0.3-0.5": pytest.approx((0.339, 0.356, 45), abs=5e-4)}


def test_hybrid_trust_seeds_13_to_16_held_out():
    """Fresh seeds 13-16 (3eb7163, an AMD machine; no budget-spending selector): ranges 89.0 / 91.5 / 93.2 / 94.1%
    (every real pair covered), one refused truth (seed 15, heavy-tailed), 26 truths above 25% and one silent
    (seed 14, clamped, 31.7%, its predictive checks failed); over the 135 the recommendation has the lowest median,
    p90 and count above 25% of every rule, but always hybrid-hkvh the lower mean (142.5 against 153.8%; mostly
    one skewed truth of seed 13, where the recommendation's error was 48 times the best one's and hkvh's 6 times).
    P(best) within 10 points in every bin, alone and pooled with seeds 7-10 (Family.p_best_held is the pooled
    table).  calibration-history.md: decision criteria scored on these runs."""
    from hybridpriv.families import family

    runs = {seed: stored(f"hybrid-trust-seed{seed}") for seed in (13, 14, 15, 16)}
    for seed, coverage, refused, above in ((13, 0.8897, 0, (7, 0)), (14, 0.9154, 0, (6, 1)), (15, 0.9318, 1, (7, 0)),
                                           (16, 0.9412, 0, (6, 0))):
        _check_moments_seed(runs[seed], seed, coverage, 32, refused, above)
        assert np.isnan(runs[seed].pythia_regret.values).all()  # run without the selector
    assert list(runs[15].generator.values[np.isnan(runs[15].regret.values)]) == ["heavy-tailed"]
    ds = runs[14]
    silent = silent_truths(ds)
    assert list(ds.generator.values[silent]) == ["clamped"] and ds.regret.values[silent] == pytest.approx([0.317], abs=5e-4)
    assert (ds.checks_flagged.values[silent] != "").all()
    table = regret_rules(list(runs.values()))
    assert table.attrs["left_out"] == 1 and int(table.loc["recommendation", "truths"]) == 135
    assert tuple(table.loc["recommendation", ["median", "mean", "p90"]]) == pytest.approx((1.5, 153.8, 147.4), abs=0.05)
    assert tuple(table.loc["estimator:hybrid-hkvh", ["median", "mean", "p90"]]) == pytest.approx((2.4, 142.5, 183.9),
                                                                                                  abs=0.05)
    rules = table.drop(index="recommendation")
    assert (rules["p90"] > 147.4).all() and (rules["median"] > 1.5).all() and (rules["above_25pct"] > 26).all()
    assert (rules.drop(index="estimator:hybrid-hkvh")["mean"] > 153.8).all()
    for seed, below in ((13, (False, True)), (14, (True, True)), (15, (False, False)), (16, (True, True))):
        one = regret_rules([runs[seed]])  # below every fixed rule in (mean, p90)?
        others = one.drop(index="recommendation")
        assert tuple(bool((others[k] > one.loc["recommendation", k]).all()) for k in ("mean", "p90")) == below, seed
    fam = family("hybrid-trust")
    assert tuple(fam.p_best_seeds) == (7, 8, 9, 10, 13, 14, 15, 16)
    for pool in ((13, 14, 15, 16), fam.p_best_seeds):
        bins = p_best_bins([stored(f"hybrid-trust-seed{seed}") for seed in pool])
        assert all(abs(reported - came) <= 0.10 for reported, came, _ in bins.values()), pool
    assert bins.keys() == fam.p_best_held.keys()
    for label, (reported, came, pairs) in bins.items():
        assert fam.p_best_held[label] == pytest.approx((reported, came, pairs), abs=5e-4), label
    assert bins["0.3-0.5"][2] == 82


def _loop_regrets(ds, candidate: str | None = None) -> list[float]:
    """Per truth select did not refuse, by a plain loop: the recommendation's (or always ``candidate``'s) regret in
    percent against the best eligible realised risk."""
    names = [str(c) for c in ds.candidate.values]
    out = []
    for t in range(ds.sizes["truth"]):
        if not np.isfinite(ds.regret.values[t]):
            continue
        risk = ds.realised.values[t]
        best = min(risk[j] for j in range(len(names)) if ds.eligible.values[t, j] == 1)
        pick = candidate or f"estimator:{ds.recommended.values[t]}"
        out.append(0.0 if risk[names.index(pick)] == best else 100 * (risk[names.index(pick)] / best - 1))
    return out


def test_hybrid_trust_fresh_seeds_21_and_22_with_the_selector():
    """Fresh seeds 21 and 22 (9479b26, forty-first session, with the budget-spending selector): ranges 96.0 / 99.6%
    (wide; every real pair covered), nothing refused, 5 and 6 truths above 25% and none silent; on each seed and
    pooled below every fixed rule and the selector in the mean and at p90; with seeds 13-16 (203 truths) below every
    rule by 0.4 points of mean.  The paired bootstrap of calibration-history.md: over the 609 stored truths the
    recommendation's mean minus always hybrid-hkvh's is +13.8 points, its 90% interval straddling 0."""
    runs = {seed: stored(f"hybrid-trust-seed{seed}") for seed in (21, 22)}
    summary = {}
    for seed, coverage, above in ((21, 0.9596, (5, 0)), (22, 0.9963, (6, 0))):
        _check_moments_seed(runs[seed], seed, coverage, 32, 0, above)
        ds = runs[seed]
        assert ds.attrs["commit"] == "9479b26"
        rec, hkvh = _loop_regrets(ds), _loop_regrets(ds, "estimator:hybrid-hkvh")
        sel = list(ds.pythia_regret.values * 100)
        summary[seed] = rec, hkvh, sel
        table = regret_rules([ds])
        assert tuple(table.loc["recommendation", ["mean", "p90"]]) == pytest.approx((np.mean(rec), np.quantile(rec, 0.9)),
                                                                                     rel=1e-5)
        others = table.drop(index="recommendation")
        assert (others["mean"] > np.mean(rec)).all() and (others["p90"] > np.quantile(rec, 0.9)).all(), seed
    rec, hkvh, sel = (summary[21][k] + summary[22][k] for k in range(3))
    assert (np.median(rec), np.mean(rec), np.quantile(rec, 0.9)) == pytest.approx((2.7, 46.0, 64.0), abs=0.05)
    assert (np.mean(hkvh), np.quantile(hkvh, 0.9)) == pytest.approx((69.6, 223.8), abs=0.05)
    assert (np.mean(sel), np.quantile(sel, 0.9)) == pytest.approx((65.1, 83.9), abs=0.05)
    six = [stored(f"hybrid-trust-seed{seed}") for seed in (13, 14, 15, 16, 21, 22)]
    table = regret_rules(six)
    assert tuple(table.loc["recommendation", ["mean", "p90"]]) == pytest.approx((117.7, 129.3), abs=0.05)
    assert tuple(table.loc["estimator:hybrid-hkvh", ["mean", "p90"]]) == pytest.approx((118.1, 216.3), abs=0.05)
    rules = table.drop(index=["recommendation", "budget-spending selector"])  # the selector's row: seeds 21-22 only
    assert int(table.loc["budget-spending selector", "truths"]) == 68
    assert (rules[["mean", "p90"]] > table.loc["recommendation", ["mean", "p90"]]).all().all()
    # the paired bootstrap over every stored hybrid-trust truth (a plain resampling of the loop's regrets)
    every = [stored(f"hybrid-trust-seed{seed}") for seed in (*range(11), *range(12, 17), 21, 22)]
    rec = np.concatenate([_loop_regrets(ds) for ds in every])
    hkvh = np.concatenate([_loop_regrets(ds, "estimator:hybrid-hkvh") for ds in every])
    assert rec.size == 609 and rec.mean() - hkvh.mean() == pytest.approx(13.8, abs=0.05)
    idx = np.random.default_rng(20261203).integers(0, rec.size, (4000, rec.size))
    low, high = np.quantile(rec[idx].mean(1) - hkvh[idx].mean(1), [0.05, 0.95])
    assert low == pytest.approx(-16.8, abs=1.5) and high == pytest.approx(48.3, abs=1.5) and low < 0 < high


def test_hybrid_trust_fresh_seeds_27_and_28_with_the_plan():
    """Fresh seeds 27 and 28 (fae6115, forty-third session, the first with select judging the two-stage plan: the
    TCM group's mean first, the choice by the plan's weights): ranges 92.4 / 89.7% (every real pair covered), one
    truth refused on seed 27 (non-convergence), 4 and 7 above 25% with one silent (seed 28, bimodal); the analysis
    said the plan pays on one truth a seed, and there it did worse (0% -> 8.8%, 0% -> 5.5%).  Carried out on every
    truth the plan was worse than choosing now on seed 27 and better in both on seed 28 (Family.plan_held_out, kept
    equal here).  The recommendation as scored (the plan where it paid) is below every fixed rule in mean and p90 on
    each seed and pooled, and below the budget-spending selector in the mean on each, at p90 only on seed 27."""
    from hybridpriv.families import family

    held = family("hybrid-trust").plan_held_out
    final_all, sel_all = [], []
    for seed, coverage, above, refused in ((27, 0.9242, (4, 0), 1), (28, 0.8971, (7, 1), 0)):
        ds = stored(f"hybrid-trust-seed{seed}")
        _check_moments_seed(ds, seed, coverage, 32, refused, above)
        assert ds.attrs["commit"] == "fae6115"
        ok = np.isfinite(ds.regret.values)
        now, plan = ds.regret.values[ok] * 100, ds.plan_regret.values[ok] * 100
        assert held["seeds"][seed]["now"] == pytest.approx((now.mean(), np.quantile(now, 0.9)), abs=0.005)
        assert held["seeds"][seed]["plan"] == pytest.approx((plan.mean(), np.quantile(plan, 0.9)), abs=0.005)
        pays = ds.plan_pays.values[ok].astype(bool)
        assert pays.sum() == 1 and now[pays][0] == 0.0 and plan[pays][0] > 5
        final = np.where(pays, plan, now)
        np.testing.assert_allclose(final, ds.final_regret.values[ok] * 100)
        assert np.allclose(now, _loop_regrets(ds), rtol=1e-4, atol=1e-3)  # choosing now, by the plain loop (6 digits)
        names = [str(c) for c in ds.candidate.values]
        for c in names:
            if np.isfinite(ds.realised.values[ok][:, names.index(c)]).all() and (ds.eligible.values[ok][:, names.index(c)] == 1).all():
                rule = np.array(_loop_regrets(ds, c))
                assert rule.mean() > final.mean() and np.quantile(rule, 0.9) > np.quantile(final, 0.9), (seed, c)
        sel = ds.pythia_regret.values[ok] * 100
        assert sel.mean() > final.mean()
        assert (np.quantile(sel, 0.9) > np.quantile(final, 0.9)) == (seed == 27)
        final_all.append(final)
        sel_all.append(sel)
    final, sel = np.concatenate(final_all), np.concatenate(sel_all)
    assert (np.median(final), final.mean(), np.quantile(final, 0.9)) == pytest.approx((1.5, 84.5, 66.6), abs=0.05)
    assert (np.median(sel), sel.mean(), np.quantile(sel, 0.9)) == pytest.approx((22.4, 130.5, 69.7), abs=0.05)
    assert held["truths"] == "33-34"
