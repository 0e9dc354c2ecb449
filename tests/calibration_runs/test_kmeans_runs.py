"""K-means' stored runs give the numbers calibration.md and its history quote."""

import dataclasses

import numpy as np
import pytest
import xarray as xr

from hybridpriv.calibration_runs import p_best_bins, regret_rules, stored

from _support.stored_runs import synthetic_bins, fixed_regret, regret_summary, above_and_silent


def test_stored_kmeans_seed3_gives_the_numbers_the_docs_quote():
    """K-means' first held-out seed (twenty-fifth session): its ranges held less than seeds 0-2 said."""
    ds = stored("kmeans-seed3")
    assert ds.attrs["seed"] == 3 and ds.sizes["truth"] == 34 and (ds.source.values == "synthetic").sum() == 30
    covered = ds.covered.values[np.isfinite(ds.covered.values)]  # the study's coverage: every candidate's range
    assert covered.mean() == pytest.approx(0.727, abs=5e-4)
    eligible = ds.covered.values[ds.eligible.values == 1]  # the eligible candidates' alone: lower still
    assert (eligible.size, eligible.sum()) == (442, 278)  # 62.9%: the previous model's, before 31d130f
    assert regret_summary(ds) == pytest.approx((0.0, 3.3, 2.5), abs=0.05)
    fixed = fixed_regret(ds, "algorithm:public-start")
    assert (fixed.mean(), np.quantile(fixed, 0.9)) == pytest.approx((6.2, 15.4), abs=0.05)
    assert above_and_silent(ds) == (2, 0)
    bins = synthetic_bins(ds)
    assert bins["0.1-0.3"][1:] == (9, 63) and bins["0.3-0.5"][1:] == (6, 15)


@pytest.mark.parametrize("seed, commit, covered, real, regret, public_start, above", [
    (4, "31d130f", 387, 31, (0.0, 3.5, 12.5), (6.7, 20.2), (1, 0)),
    (5, "31d130f", 387, 31, (0.0, 6.7, 11.7), (9.1, 19.8), (2, 1)),
    (6, "84721e4", 385, 25, (0.0, 7.4, 1.7), (12.8, 49.2), (3, 1)),
    (7, "84721e4", 398, 32, (0.0, 13.5, 12.8), (15.3, 21.6), (3, 1))])
def test_stored_kmeans_seeds_4_to_7_of_the_new_model(seed, commit, covered, real, regret, public_start, above):
    """K-means' model since 31d130f (trust may follow the clusters, refit spread), held out on seeds 4-7: ranges
    87.1-90.0% of the eligible risks (the real truths' far fewer), regret below every fixed rule, as
    calibration.md, its history and Family.range_coverage say."""
    from hybridpriv.families import family

    ds = stored(f"kmeans-seed{seed}")
    assert ds.attrs["seed"] == seed and ds.attrs["commit"] == commit and ds.sizes["truth"] == 34
    eligible = ds.eligible.values == 1
    assert (eligible.sum(), ds.covered.values[eligible].sum()) == (442, covered)
    assert family("kmeans").range_coverage[seed] == pytest.approx(covered / 442, abs=5e-4)
    on_real = eligible & (ds.source.values == "real")[:, None]
    assert (on_real.sum(), ds.covered.values[on_real].sum()) == (52, real)
    table = regret_rules([ds])
    assert tuple(table.loc["recommendation", ["median", "mean", "p90"]]) == pytest.approx(regret, abs=0.05)
    assert tuple(table.loc["algorithm:public-start", ["mean", "p90"]]) == pytest.approx(public_start, abs=0.05)
    rules = table.drop(index="recommendation")
    assert (rules["mean"] > table.loc["recommendation", "mean"]).all()
    assert (rules["p90"] > table.loc["recommendation", "p90"]).all()
    assert above_and_silent(ds) == above
    if above[1]:  # the silent one: a pilot that over-samples some clusters
        silent = (ds.regret.values > 0.25) & (ds.sensitivity_warning.values == "") & (ds.p_costly_recommended.values < 0.25)
        assert list(ds.generator.values[silent]) == ["pilot-biased"]


def test_kmeans_new_model_pooled_p_best_and_regret():
    """The new K-means model's P(best), seeds 4 and 5 pooled (60 synthetic truths): within 10 points at 0-0.1 and
    0.1-0.3, but 0.3-0.5 reported 0.34 came true on 16% of 25 pairs and 0.9-1 reported 0.985 on 86% of 14; with
    seeds 6 and 7 (120 truths) 10-14 points off in three bins; pooled regret below always public-start's."""
    bins = p_best_bins([stored("kmeans-seed4"), stored("kmeans-seed5")])
    assert bins["0-0.1"][2] == 605 and abs(bins["0-0.1"][0] - bins["0-0.1"][1]) < 0.01
    assert bins["0.1-0.3"] == pytest.approx((0.178, 0.228, 123), abs=5e-4)
    assert bins["0.3-0.5"] == pytest.approx((0.336, 0.16, 25), abs=5e-4)
    assert bins["0.9-1"] == pytest.approx((0.985, 0.857, 14), abs=5e-4)
    pooled = p_best_bins([stored(f"kmeans-seed{seed}") for seed in (4, 5, 6, 7)])  # with seeds 6 and 7
    assert pooled["0.3-0.5"] == pytest.approx((0.342, 0.238, 42), abs=5e-4)
    assert pooled["0.7-0.9"] == pytest.approx((0.804, 0.7, 10), abs=5e-4)
    assert pooled["0.9-1"] == pytest.approx((0.986, 0.848, 33), abs=5e-4)
    rules = regret_rules([stored(f"kmeans-seed{seed}") for seed in (4, 5, 6, 7)])
    assert tuple(rules.loc["recommendation", ["median", "mean", "p90", "above_25pct"]]) == pytest.approx(
        (0.0, 7.8, 13.5, 9), abs=0.05)
    assert tuple(rules.loc["algorithm:public-start", ["median", "mean", "p90"]]) == pytest.approx((1.2, 11.0, 22.1),
                                                                                                   abs=0.05)


def test_kmeans_p_best_held_is_its_stored_seeds_pooled():
    """What select's K-means P(best) note reads is p_best_bins over the stored seeds it names (every stored seed of
    the model, 390 synthetic truths), to three decimals; every bin is within 7 points, so it is printed nowhere.
    Seeds 4-7 alone were 10-14 points too sure from 0.3 up (the note the faithful example printed until the
    forty-fifth session), and seeds 33-34 alone 22 points too modest at 0.3-0.5: both read from bins of 10-42 pairs."""
    from hybridpriv.engine.decision import p_best_line
    from hybridpriv.families import family

    fam = family("kmeans")
    assert tuple(fam.p_best_seeds) == (4, 5, 6, 7, 12, 23, 24, 25, 26, 29, 30, 33, 34)
    bins = p_best_bins([stored(f"kmeans-seed{seed}") for seed in fam.p_best_seeds])
    assert bins.keys() == fam.p_best_held.keys()
    for label, (reported, came, pairs) in bins.items():
        assert fam.p_best_held[label] == (pytest.approx(reported, abs=5e-4), pytest.approx(came, abs=5e-4), pairs)
    assert sum(pairs for _, _, pairs in bins.values()) == 5070  # 390 truths x 13 eligible candidates
    assert max(abs(reported - came) for reported, came, _ in bins.values()) < 0.075
    assert not any(p_best_line(fam.p_best_held, fam.p_best_seeds, p) for p in (0.05, 0.2, 0.4, 0.6, 0.75, 0.8, 0.95))
    early = p_best_bins([stored(f"kmeans-seed{seed}") for seed in (4, 5, 6, 7)])
    assert early["0.3-0.5"][2] == 42 and early["0.3-0.5"][0] - early["0.3-0.5"][1] > 0.10
    assert early["0.9-1"][2] == 33 and early["0.9-1"][0] - early["0.9-1"][1] > 0.13
    late = p_best_bins([stored(f"kmeans-seed{seed}") for seed in (33, 34)])
    assert late["0.3-0.5"][2] == 16 and late["0.3-0.5"][1] - late["0.3-0.5"][0] > 0.2


def _stored_decision(ds: xr.Dataset, i: int) -> xr.Dataset:
    """Truth ``i``'s decision rebuilt from a stored run's columns (what premise_warnings reads)."""
    have = ~np.isnan(ds.expected_loss.values[i])
    names = [str(c).removeprefix("algorithm:") for c in ds.candidate.values[have]]
    return xr.Dataset({"expected_loss": ("algorithm", ds.expected_loss.values[i, have]),
                       "meets_requirements": ("algorithm", ds.eligible.values[i, have] == 1)},
                      coords={"algorithm": names},
                      attrs={"candidate_dim": "algorithm", "recommended": str(ds.recommended.values[i])})


def test_kmeans_pilot_premise_names_every_silent_failure_and_switching_away_does_not_help():
    """The pilot-sample premise warning as first declared (after seeds 4-7 were stored; until the forty-fifth
    session) was printed exactly where public-start is recommended (no truth's SPEC states the premise), so the
    stored runs recount it: 68 of 136 truths warned, the 9 above 25% all warned now (3 silent before, each a
    pilot-biased truth with public-start recommended).  Switching to the best eligible iterated candidate by
    expected loss: worse over the 68 (mean regret 12.3 -> 61.3%), and no better on the 13 pilot-biased ones
    (58.4 -> 60.1%): the advice the warning prints ("none is safe then")."""
    from hybridpriv.engine.decision import premise_warnings
    from hybridpriv.spec import builtin_example_path, load_spec

    (pilot,) = load_spec(builtin_example_path("faithful")).problem().premises  # K-means' own premise, not stated
    pilot = dataclasses.replace(pilot, candidates=("public-start",))  # as first declared: the start alone

    def warns(ds, i):  # the code's rule, on the truth's decision rebuilt from the stored columns
        return bool(premise_warnings(_stored_decision(ds, i), [pilot]))

    above_all, silent_before, silent_after, warned = 0, 0, 0, 0
    kept, switched, kept_biased, switched_biased = [], [], [], []
    for seed in (4, 5, 6, 7):
        ds = stored(f"kmeans-seed{seed}")
        names = [str(c) for c in ds.candidate.values]
        start = names.index("algorithm:public-start")
        eligible = ds.eligible.values == 1
        best = np.min(np.where(eligible, ds.realised.values, np.inf), axis=1)
        premise = np.array([warns(ds, i) for i in range(ds.sizes["truth"])])
        assert (premise == (ds.recommended.values == "public-start")).all()  # exactly where public-start is chosen
        above = ds.regret.values > 0.25
        other = (ds.sensitivity_warning.values != "") | (ds.p_costly_recommended.values >= 0.25)
        above_all += int(above.sum())
        silent_before += int((above & ~other).sum())
        silent_after += int((above & ~other & ~premise).sum())
        warned += int(premise.sum())
        for i in np.flatnonzero(premise):
            loss = np.where(eligible[i] & (np.arange(len(names)) != start), ds.expected_loss.values[i], np.inf)
            alt = ds.realised.values[i, int(np.argmin(loss))] / best[i] - 1
            kept.append(ds.realised.values[i, start] / best[i] - 1)
            switched.append(alt)
            if str(ds.generator.values[i]).startswith("pilot-biased"):
                kept_biased.append(kept[-1])
                switched_biased.append(alt)
    assert (above_all, silent_before, silent_after, warned) == (9, 3, 0, 68)
    assert 100 * np.mean(kept) == pytest.approx(12.3, abs=0.05) and 100 * np.mean(switched) == pytest.approx(61.3, abs=0.05)
    assert len(kept_biased) == 13
    assert 100 * np.mean(kept_biased) == pytest.approx(58.4, abs=0.05)
    assert 100 * np.mean(switched_biased) == pytest.approx(60.1, abs=0.05)


def _regret_row(regret_pct: np.ndarray) -> tuple[float, float, float]:
    return float(np.median(regret_pct)), float(regret_pct.mean()), float(np.quantile(regret_pct, 0.9))


@pytest.mark.parametrize("seed, covered, real, rec, selector, best_rule, above", [
    (23, 389, 31, (0.0, 8.0, 26.1), (0.3, 6.8, 10.5), ("algorithm:tcm-T1", 27.4, 79.0), (4, 2)),
    (24, 396, 34, (0.0, 2.3, 0.9), (0.1, 1.3, 1.0), ("algorithm:public-start", 9.1, 16.7), (2, 1))])
def test_stored_kmeans_seeds_23_and_24_with_the_selector(seed, covered, real, rec, selector, best_rule, above):
    """K-means' first seeds with the budget-spending selector (forty-second session, a rule written before they ran):
    recounted by a plain loop over the truths, not by regret_rules: the recommendation beats every fixed rule, the
    selector (10% of every user's epsilon on the counts per cluster) has the lower mean on both seeds and the lower
    p90 on seed 23, as calibration.md's table and history say."""
    from hybridpriv.families import family

    ds = stored(f"kmeans-seed{seed}")
    assert ds.attrs["seed"] == seed and ds.attrs["commit"] == "6c67590" and ds.sizes["truth"] == 34
    eligible = ds.eligible.values == 1
    assert (eligible.sum(), ds.covered.values[eligible].sum()) == (442, covered)
    assert family("kmeans").range_coverage[seed] == pytest.approx(covered / 442, abs=5e-4)
    on_real = eligible & (ds.source.values == "real")[:, None]
    assert (on_real.sum(), ds.covered.values[on_real].sum()) == (52, real)
    assert _regret_row(ds.regret.values * 100) == pytest.approx(rec, abs=0.05)
    assert _regret_row(ds.pythia_regret.values * 100) == pytest.approx(selector, abs=0.05)
    best = np.min(np.where(eligible, ds.realised.values, np.inf), axis=1)
    names = [str(c) for c in ds.candidate.values]
    rules = {}
    for j, name in enumerate(names):
        if np.isfinite(ds.realised.values[:, j]).all() and eligible[:, j].all():  # eligible on every truth
            rules[name] = (ds.realised.values[:, j] / best - 1) * 100
    lowest = min(rules, key=lambda c: rules[c].mean())
    assert lowest == best_rule[0]
    assert (rules[lowest].mean(), np.quantile(rules[lowest], 0.9)) == pytest.approx(best_rule[1:], abs=0.05)
    for r in rules.values():  # every fixed rule is worse than the recommendation, in mean and at p90
        assert r.mean() > rec[1] and np.quantile(r, 0.9) > rec[2]
    assert above_and_silent(ds) == above
    silent = (ds.regret.values > 0.25) & (ds.sensitivity_warning.values == "") & (ds.p_costly_recommended.values < 0.25)
    assert set(ds.generator.values[silent]) <= {"pilot-biased", "pilot-biased+trust-by-cluster"}


@pytest.mark.parametrize("seed, commit, covered, real, rec, refit, best_rule, above", [
    (25, "ad36d09", 373, 30, (0.0, 16.9, 9.3), (0.1, 17.4, 9.3), ("algorithm:public-start", 48.0, 114.2), (2, 1)),
    (26, "ad36d09", 412, 33, (0.0, 2.7, 2.3), (0.4, 0.8, 2.1), ("algorithm:public-start", 8.1, 15.0), (1, 0)),
    (29, "8dc625e", 397, 32, (0.0, 8.2, 32.0), (0.1, 8.2, 34.1), ("algorithm:public-start", 11.8, 48.8), (4, 0)),
    (30, "8dc625e", 402, 26, (0.0, 1.5, 4.4), (0.1, 3.2, 8.1), ("algorithm:public-start", 9.2, 20.1), (0, 0)),
    (33, "39d4229", 400, 30, (0.0, 3.8, 6.1), (0.3, 3.1, 6.8), ("algorithm:public-start", 7.7, 26.9), (3, 0)),
    (34, "39d4229", 380, 30, (0.0, 3.2, 9.7), (0.3, 3.6, 10.1), ("algorithm:public-start", 18.0, 13.3), (2, 2))])
def test_stored_kmeans_seeds_with_the_plan(seed, commit, covered, real, rec, refit, best_rule, above):
    """K-means' seeds with select judging the two-stage plan (forty-third session, 25-26, and the forty-fourth's
    test of a pooled rule, 29-30, and the forty-fifth's test of direction trust, 33-34 on this model; each written
    before it ran), recounted by a plain loop: the analysis found that the plan pays on no truth, so the
    recommendation is the choice now; it beats every fixed rule; the plan carried out by its refit (the selector)
    was higher in the mean on seed 25 (p90 tied), lower in both on seed 26, lower in the mean by 0.02 points and
    higher at p90 on seed 29, higher in both on seed 30, lower in the mean and higher at p90 on seed 33, higher in
    both on seed 34.  Seed 34 has two silent failures (a `pilot-biased` pilot, an iterating recommendation)."""
    from hybridpriv.families import family

    ds = stored(f"kmeans-seed{seed}")
    assert ds.attrs["seed"] == seed and ds.attrs["commit"] == commit and ds.sizes["truth"] == 34
    assert not ds.plan_pays.values.any() and (ds.final_regret.values == ds.regret.values).all()
    eligible = ds.eligible.values == 1
    assert (eligible.sum(), ds.covered.values[eligible].sum()) == (442, covered)
    assert family("kmeans").range_coverage[seed] == pytest.approx(covered / 442, abs=5e-4)
    on_real = eligible & (ds.source.values == "real")[:, None]
    assert (on_real.sum(), ds.covered.values[on_real].sum()) == (52, real)
    assert family("kmeans").range_coverage_real[seed] == pytest.approx(real / 52, abs=5e-4)
    assert _regret_row(ds.regret.values * 100) == pytest.approx(rec, abs=0.05)
    assert _regret_row(ds.plan_regret.values * 100) == pytest.approx(refit, abs=0.05)
    np.testing.assert_array_equal(ds.pythia_regret.values, ds.plan_regret.values)  # the refit is the selector
    best = np.min(np.where(eligible, ds.realised.values, np.inf), axis=1)
    rules = {str(c): (ds.realised.values[:, j] / best - 1) * 100 for j, c in enumerate(ds.candidate.values)
             if np.isfinite(ds.realised.values[:, j]).all() and eligible[:, j].all()}
    lowest = min(rules, key=lambda c: rules[c].mean())
    assert lowest == best_rule[0]
    assert (rules[lowest].mean(), np.quantile(rules[lowest], 0.9)) == pytest.approx(best_rule[1:], abs=0.05)
    for r in rules.values():
        assert r.mean() > rec[1] and np.quantile(r, 0.9) > rec[2]
    assert above_and_silent(ds) == above


def test_kmeans_plan_held_out_is_its_stored_seeds_and_select_does_not_recommend_it():
    """Family.plan_held_out: choosing now against the refit (the selector's procedure) per seed, equal to the stored
    runs (23-24: the selector; 25-26 and 29-30: the plan carried out); lower in both only on seeds 23 and 26, so the
    held-out rule withholds it and the note says which seeds.  Pooled over seeds 23-26 the refit had the lower mean
    (a paired bootstrap's 90% interval of now minus refit above 0) and p90; the pooled rule that suggested, tested on
    fresh seeds 29-30, failed (the refit higher in both), and over all six seeds the interval holds 0.  Seeds 33-34
    (the same model, run for another test) add one seed lower in the mean only and one higher in both."""
    from hybridpriv.engine.plan import held_out_pays, plan_held_line
    from hybridpriv.families import family
    from hybridpriv.spec import builtin_example_path, load_spec

    held = family("kmeans").plan_held_out
    now_all, refit_all = [], []
    for seed in (23, 24, 25, 26, 29, 30, 33, 34):
        ds = stored(f"kmeans-seed{seed}")
        refit = ds.pythia_regret.values * 100 if seed < 25 else ds.plan_regret.values * 100
        now = ds.regret.values * 100
        assert held["seeds"][seed]["now"] == pytest.approx((now.mean(), np.quantile(now, 0.9)), abs=0.005)
        assert held["seeds"][seed]["refit"] == pytest.approx((refit.mean(), np.quantile(refit, 0.9)), abs=0.005)
        now_all.append(now)
        refit_all.append(refit)
    assert held["truths"] == 34 and set(held["seeds"]) == {23, 24, 25, 26, 29, 30, 33, 34}
    probe = load_spec(builtin_example_path("faithful")).problem().probe
    assert probe.refit is not None and held_out_pays(held, probe) == ""
    line = plan_held_line(held, pays=False)
    assert "better on seeds 23 and 26 but not on seeds 24, 25, 29, 30, 33 and 34" in line and "choosing now stands" in line
    assert "1.4% / 1.1% against 2.2% / 0.9% (seed 24)" in line and "3.2% / 8.1% against 1.6% / 4.4% (seed 30)" in line
    assert "3.1% / 6.8% against 3.8% / 6.1% (seed 33)" in line and "3.6% / 10% against 3.2% / 9.7% (seed 34)" in line
    now, refit = np.concatenate(now_all[:4]), np.concatenate(refit_all[:4])
    assert (now.mean(), np.quantile(now, 0.9)) == pytest.approx((7.46, 8.83), abs=0.005)
    assert (refit.mean(), np.quantile(refit, 0.9)) == pytest.approx((6.59, 5.27), abs=0.005)

    def gain_interval(now, refit):  # a paired bootstrap of mean(now - refit): 2,000 resamples of the truths
        rng = np.random.default_rng(0)
        return np.quantile([(now[i] - refit[i]).mean() for i in rng.integers(0, now.size, (2000, now.size))],
                           [0.05, 0.95])

    assert gain_interval(now, refit)[0] > 0  # on seeds 23-26 the selector's lower mean was not luck at 90% ...
    # ... and the pooled rule it suggested, tested on fresh seeds 29-30 (written before they ran), failed there:
    fresh_now, fresh_refit = np.concatenate(now_all[4:6]), np.concatenate(refit_all[4:6])
    assert (fresh_now.mean(), np.quantile(fresh_now, 0.9)) == pytest.approx((4.88, 8.22), abs=0.005)
    assert (fresh_refit.mean(), np.quantile(fresh_refit, 0.9)) == pytest.approx((5.68, 11.10), abs=0.005)
    now, refit = np.concatenate(now_all[:6]), np.concatenate(refit_all[:6])  # all six seeds, 204 truths: not clear
    assert (now.mean(), np.quantile(now, 0.9)) == pytest.approx((6.60, 9.32), abs=0.005)
    assert (refit.mean(), np.quantile(refit, 0.9)) == pytest.approx((6.29, 7.78), abs=0.005)
    low, high = gain_interval(now, refit)
    assert low < 0 < high


def test_kmeans_real_range_misses_are_iris_and_quakes_above_the_range_and_quakes_trust_drifts_within_cells():
    """calibration.md, "Why the ranges miss on real data": over the stored seeds' real truths, faithful's pairs are
    all covered, crabs' 129 of 143, iris-petals' 42 and quakes-fiji's 25, every miss above the range, public-start
    missing 3 of 44; and quakes-fiji's TCM users (the deep quakes) sit 1.1-1.7 cell sds from the LM users within
    the pilot start's cells on three splits, where faithful's random trust stays within 0.75."""
    from hybridpriv.core.random import rng as stream
    from hybridpriv.families.kmeans.algorithms import nearest_centre
    from hybridpriv.families.kmeans.heldout import real_kmeans_truth
    from hybridpriv.families.kmeans.model import pilot_start

    count: dict[str, list[int]] = {}
    ratios: dict[str, list[float]] = {}
    start = [0, 0]
    for seed in (4, 5, 6, 7, 12, 23, 24, 25, 26, 29, 30):
        ds = stored(f"kmeans-seed{seed}")
        for i in np.flatnonzero(ds.source.values == "real"):
            name = str(ds.generator.values[i])
            for j in np.flatnonzero(ds.eligible.values[i] == 1):
                low, high, got = (float(ds[v].values[i, j]) for v in ("risk_low", "risk_high", "realised"))
                c = count.setdefault(name, [0, 0, 0])
                c[0] += 1
                c[1] += got < low
                c[2] += got > high
                ratios.setdefault(name, []).append(got / float(ds.expected_loss.values[i, j]))
                if str(ds.candidate.values[j]) == "algorithm:public-start":
                    start[0] += 1
                    start[1] += not low <= got <= high
    assert count == {"faithful": [143, 0, 0], "crabs": [143, 8, 6], "iris-petals": [143, 0, 101],
                     "quakes-fiji": [143, 0, 118]}
    assert start == [44, 3]
    assert np.median(ratios["iris-petals"]) == pytest.approx(1.8, abs=0.05)
    assert np.median(ratios["quakes-fiji"]) == pytest.approx(1.6, abs=0.05)

    def gaps(name: str, seed: int) -> list[float]:
        t = real_kmeans_truth(name, stream(seed, "k", name))
        data = t.dataset(None)
        centres = pilot_start(np.asarray(t.spec["model"]["pilot"], dtype=float), t.spec["k"])
        cells = nearest_centre(data.points, centres)[0]
        out = []
        for k in range(centres.shape[0]):
            tcm, lm = data.points[(cells == k) & data.trusted], data.points[(cells == k) & ~data.trusted]
            if len(tcm) >= 5 and len(lm) >= 5:
                out.append(float(np.abs((tcm.mean(0) - lm.mean(0)) / data.points[cells == k].std(0)).max()))
        return out

    quakes = [g for seed in (29, 30, 0) for g in gaps("quakes-fiji", seed)]
    assert len(quakes) == 9 and 1.1 < min(quakes) and max(quakes) < 1.7
    assert max(g for seed in (29, 30, 0) for g in gaps("faithful", seed)) < 0.75



def test_direction_trust_failed_its_preregistered_test_on_seeds_33_and_34():
    """The forty-fifth session's test of a K-means model where trust may follow a direction (3a40810, reverted),
    written before the runs (docs/calibration-history.md): both models on the same 68 truths of fresh seeds 33-34.
    Recounted here by plain loops: it raised the real pairs' range coverage (condition 1) and kept the pooled
    coverage above 85% (2), beat every fixed rule (4) and left no truth silent (5), but its recommendation's mean
    relative regret rose from 3.5 to 11.3% and its p90 from 9.0 to 15.4% (3): it changed the recommendation on 24 of
    the 60 synthetic truths, 18 of them to public-start (none has trust along a direction), which cost 481% on one
    pilot-biased truth."""
    def pooled(suffix):
        runs = [stored(f"kmeans-seed{seed}{suffix}") for seed in (33, 34)]
        eligible = np.concatenate([ds.eligible.values == 1 for ds in runs])
        covered = np.concatenate([ds.covered.values for ds in runs])
        real = eligible & np.concatenate([ds.source.values == "real" for ds in runs])[:, None]
        final = np.concatenate([ds.final_regret.values for ds in runs]) * 100
        realised = np.concatenate([ds.realised.values for ds in runs])
        best = np.min(np.where(eligible, realised, np.inf), axis=1)
        rules = [(realised[:, j] / best - 1) * 100 for j in range(realised.shape[1])
                 if np.isfinite(realised[:, j]).all() and eligible[:, j].all()]
        silent = sum(above_and_silent(ds)[1] for ds in runs)
        recommended = np.concatenate([ds.recommended.values.astype(str) for ds in runs])
        real_rows: dict[str, list] = {}
        for ds in runs:
            for t in np.flatnonzero(ds.source.values == "real"):
                e = ds.eligible.values[t] == 1
                real_rows.setdefault(str(ds.generator.values[t]), []).append(
                    (int(ds.covered.values[t][e].sum()), round(float(ds.final_regret.values[t]) * 100, 1)))
        return dict(all=(covered[eligible].sum(), eligible.sum()), real=(covered[real].sum(), real.sum()),
                    rec=(final.mean(), np.quantile(final, 0.9)), rules=rules, silent=silent, recommended=recommended,
                    final=final, real_rows=real_rows, source=np.concatenate([ds.source.values.astype(str) for ds in runs]))

    old, new = pooled(""), pooled("-direction")
    for seed in (33, 34):
        arm = stored(f"kmeans-seed{seed}-direction")
        assert arm.attrs["commit"] == "3a40810" and arm.attrs["arm_of"] == f"kmeans-seed{seed}"
        assert stored(f"kmeans-seed{seed}").attrs["commit"] == "39d4229"
        np.testing.assert_array_equal(arm.generator.values, stored(f"kmeans-seed{seed}").generator.values)
    assert old["all"] == (780, 884) and new["all"] == (829, 884)
    assert old["real"] == (60, 104) and new["real"] == (84, 104)  # 1: higher
    assert new["all"][0] / new["all"][1] >= 0.85  # 2
    assert old["rec"] == pytest.approx((3.53, 9.01), abs=0.005) and new["rec"] == pytest.approx((11.25, 15.40), abs=0.005)
    assert new["rec"][0] > old["rec"][0]  # 3 fails: the mean rose (and the p90 by more than a point)
    assert all(r.mean() > new["rec"][0] and np.quantile(r, 0.9) > new["rec"][1] for r in new["rules"])  # 4
    assert (old["silent"], new["silent"]) == (2, 0)  # 5
    synthetic = new["source"] == "synthetic"
    changed = synthetic & (old["recommended"] != new["recommended"])
    assert changed.sum() == 24 and (changed & (new["recommended"] == "public-start")).sum() == 18
    worst = int(np.argmax(new["final"]))
    assert new["final"][worst] == pytest.approx(481.5, abs=0.05) and old["final"][worst] == pytest.approx(51.5, abs=0.05)
    others = np.arange(68) != worst
    assert (new["final"][others].mean(), old["final"][others].mean()) == pytest.approx((4.23, 2.82), abs=0.005)
    # per real truth, seeds 33 then 34: eligible pairs covered and the recommendation's regret
    assert old["real_rows"]["quakes-fiji"] == [(1, 34.6), (1, 0.0)] and new["real_rows"]["quakes-fiji"] == [(10, 0.0)] * 2
    assert old["real_rows"]["iris-petals"] == [(3, 0.0)] * 2 and new["real_rows"]["iris-petals"] == [(7, 0.0), (5, 0.0)]
    assert old["real_rows"]["crabs"] == [(13, 7.2), (13, 15.4)] and new["real_rows"]["crabs"] == [(13, 0.0)] * 2


def test_kmeans_pilot_premise_rests_every_built_in_candidate_and_names_the_pilot_biased_failures():
    """Since the forty-fifth session the pilot-sample premise covers every built-in candidate (each starts from the
    pilot's clustering): on the stored seeds after it was first declared, 5 truths above 25% regret had an iterated
    candidate recommended on a pilot-biased pilot and no warning (seeds 23, 24, 25, 34).  Recounted with the
    code's rule on all thirteen stored seeds of the model: it is printed on every truth (none states the premise),
    so every pilot-biased failure is named; the one other failure it now covers (seed 34, elongated, 25.3%) is not
    the pilot's, so it stays silent in substance."""
    from hybridpriv.engine.decision import premise_warnings
    from hybridpriv.spec import builtin_example_path, load_spec

    problem = load_spec(builtin_example_path("faithful")).problem()
    (pilot,) = problem.premises
    assert set(pilot.candidates) == set(problem.candidates(None)) and "public-start" in pilot.candidates
    iterated_silent, other_silent, warned, truths = [], [], 0, 0
    for seed in (4, 5, 6, 7, 12, 23, 24, 25, 26, 29, 30, 33, 34):
        ds = stored(f"kmeans-seed{seed}")
        other = (ds.sensitivity_warning.values != "") | (ds.p_costly_recommended.values >= 0.25)
        for i in range(ds.sizes["truth"]):
            named = bool(premise_warnings(_stored_decision(ds, i), [pilot]))
            warned += named
            truths += 1
            if ds.final_regret.values[i] > 0.25 and not other[i] and ds.recommended.values[i] != "public-start":
                row = (seed, str(ds.generator.values[i]), str(ds.recommended.values[i]))
                assert named, row
                (iterated_silent if row[1].startswith("pilot-biased") else other_silent).append(row)
    assert warned == truths == 442
    assert sorted(iterated_silent) == [(23, "pilot-biased", "hybrid-T1"), (23, "pilot-biased+trust-by-cluster", "hybrid-T2"),
                                       (24, "pilot-biased", "hybrid-T1"), (25, "pilot-biased", "hybrid-T1"),
                                       (34, "pilot-biased", "hybrid-T1")]
    assert other_silent == [(34, "elongated+trust-by-cluster", "hybrid-debiased-T2")]
