"""Stored calibration runs: the CSV round trip, and the stored held-out runs give the numbers the docs quote."""
from types import SimpleNamespace

import numpy as np
import pytest
import xarray as xr

from hybridpriv.calibration_runs import (CHANCE_LINES, from_tables, p_best_bins, read_records, regret_rules, stored,
                                         stored_names, to_tables, warning_lines, write_records)


def _run() -> xr.Dataset:
    """A small run shaped as calibrate's: two families, each lacking the other's candidates (NaN), text that
    looks like numbers ("9") or is empty, booleans and per-scope summaries (not kept)."""
    cand = ["k:1", "k:9", "estimator:weighted"]
    nan = np.nan
    return xr.Dataset(
        {"p_best": (("truth", "candidate"), [[0.25, 0.75, nan], [nan, nan, 1.0], [1 / 3, 2 / 3, nan]]),
         "realised": (("truth", "candidate"), [[2.0, 1.0, nan], [nan, nan, 0.5], [1.5, 1.25, nan]]),
         "eligible": (("truth", "candidate"), [[1.0, 1.0, nan], [nan, nan, 1.0], [0.0, 1.0, nan]]),
         "recommended": ("truth", ["9", "weighted", "1"]),
         "sensitivity_warning": ("truth", ["", "between", ""]),
         "plan_pays": ("truth", [True, False, False]),
         "regret": ("truth", [0.0, nan, 0.2]),
         "coverage": ("scope", [0.8, 0.9])},
        coords={"truth": ["user-item-0", "grouped-0", "user-item-1"], "candidate": cand, "scope": ["a", "b"]},
        attrs={"refusals": "", "minutes": np.float64(1.5)})


def test_records_round_trip_keeps_text_nan_and_the_absent_candidates(tmp_path):
    ds = _run()
    truths, pairs = to_tables(ds)
    assert len(truths) == 3 and len(pairs) == 5  # the grouped truth has one candidate, each user-item truth two
    paths = write_records(ds, tmp_path, "run", {"kind": "mixed", "seed": 3})
    assert [p.name for p in paths] == ["run-truths.csv", "run-pairs.csv", "run.json"]
    back = read_records(tmp_path, "run")
    assert set(back.data_vars) == set(ds.data_vars) - {"coverage"}
    assert list(back.truth.values) == list(ds.truth.values) and list(back.candidate.values) == list(ds.candidate.values)
    for v in ("p_best", "realised", "eligible", "regret"):
        np.testing.assert_allclose(back[v].values, ds[v].values, rtol=1e-5)  # NaN where NaN, 6 digits kept
    assert list(back.recommended.values) == ["9", "weighted", "1"]  # text stays text
    assert list(back.sensitivity_warning.values) == ["", "between", ""]  # empty is not missing
    assert back.plan_pays.values.tolist() == [True, False, False]
    assert back.attrs["kind"] == "mixed" and back.attrs["seed"] == 3 and back.attrs["run_minutes"] == 1.5


def test_records_refuse_bad_input(tmp_path):
    with pytest.raises(ValueError, match="ds must be a calibration run with dims 'truth' and 'candidate'"):
        to_tables(xr.Dataset({"x": ("scope", [1.0])}))
    with pytest.raises(ValueError, match="name must be a plain file stem, got 'a/b'"):
        write_records(_run(), tmp_path, "a/b")
    with pytest.raises(FileNotFoundError, match="no calibration records 'gone' in .*gone-truths.csv is missing"):
        read_records(tmp_path, "gone")
    truths, pairs = to_tables(_run())
    with pytest.raises(ValueError, match=r"pairs names truths that truths lacks: \['grouped-0'\]"):
        from_tables(truths[truths.truth != "grouped-0"], pairs)
    with pytest.raises(ValueError, match=r"pairs must have the columns \['truth', 'candidate'\], missing \['candidate'\]"):
        from_tables(truths, pairs.drop(columns="candidate"))
    write_records(_run(), tmp_path, "bad")  # a number column spoiled by hand: refused, naming row and column
    path = tmp_path / "bad-truths.csv"
    path.write_text(path.read_text().replace("0.2", "oops"))
    with pytest.raises(ValueError, match=r"bad-truths.csv row 4 column 'regret' must be a number, got 'oops'"):
        read_records(tmp_path, "bad")
    with pytest.raises(ValueError, match="name must be one of the stored calibration runs .*, got 'nope'"):
        stored("nope")


def _final(ds: xr.Dataset, floor: float) -> np.ndarray:
    """Regret with the two-stage plan carried out where it would have paid at ``floor`` (the recorded Monte Carlo
    test and printed gain, as hybridpriv.engine.plan decides)."""
    pays = ds.plan_significant.values.astype(bool) & (ds.plan_gain.values >= floor)
    return np.where(pays, ds.plan_regret.values, ds.regret.values)


def test_stored_user_item_seed9_gives_the_numbers_the_docs_quote():
    """docs/calibration.md and calibration-history.md quote seed 9 (twenty-third and twenty-fourth sessions); the
    numbers were computed from the run's netCDF then, and are recomputed here from the stored CSV tables."""
    assert "user-item-seed9" in stored_names()
    ds = stored("user-item-seed9")
    assert ds.attrs["seed"] == 9 and ds.sizes["truth"] == 33 and (ds.family.values == "user-item").all()
    assert (ds.source.values == "synthetic").sum() == 30 and np.isfinite(ds.regret.values).all()
    covered = ds.covered.values[ds.eligible.values == 1]
    assert covered.size == 660 and covered.mean() == pytest.approx(0.832, abs=5e-4)  # "ranges 83.2%"
    for floor, (med, mean, p90), above in ((0.08, (1.9, 5.7, 17.0), 0), (0.06, (1.9, 7.5, 19.5), 1)):
        r = _final(ds, floor) * 100
        assert (np.median(r), r.mean(), np.quantile(r, 0.9)) == pytest.approx((med, mean, p90), abs=0.05)
        assert (r > 25).sum() == above
    paid = ds.plan_significant.values.astype(bool) & (ds.plan_gain.values >= 0.06)
    assert paid.sum() == 1 and ds.plan_gain.values[paid][0] < 0.08  # the one plan 6% let pay, 8% refuses
    assert (ds.regret.values[paid][0], ds.plan_regret.values[paid][0]) == pytest.approx((0.173, 0.765), abs=5e-4)
    py = ds.pythia_regret.values * 100
    assert (py.mean(), np.quantile(py, 0.9)) == pytest.approx((15.9, 24.1), abs=0.05)  # the budget-spending selector
    # P(best) on the synthetic truths, eligible pairs: 0.5-0.7 "0.57 -> 3 of 7", 0.3-0.5 "0.40 -> 6 of 19"
    bins = _synthetic_bins(ds)
    for label, reported, came, pairs in (("0.5-0.7", 0.57, 3, 7), ("0.3-0.5", 0.40, 6, 19), ("0.1-0.3", 0.22, 15, 64)):
        assert bins[label][1:] == (came, pairs) and bins[label][0] == pytest.approx(reported, abs=0.005)


def _synthetic_bins(ds: xr.Dataset) -> dict[str, tuple[float, int, int]]:
    """P(best) on the synthetic truths' eligible pairs, by bin: (mean reported, best, pairs)."""
    return {b: (m, round(o * n), n) for b, (m, o, n) in p_best_bins([ds]).items()}


def test_p_best_bins_pools_runs_pair_by_pair_and_refuses_bad_input():
    """Pooling two runs equals binning their pairs together by hand (an independent count, bin edges included:
    a report of exactly 0.5 belongs to 0.5-0.7, 1.0 to the last bin)."""
    a, b = _run(), _run()
    for ds, src in ((a, ["synthetic", "real", "synthetic"]), (b, ["synthetic", "synthetic", "real"])):
        ds["source"] = ("truth", src)
        ds["is_best"] = (("truth", "candidate"), [[0, 1, np.nan], [np.nan, np.nan, 1], [1, 0, np.nan]])
    b["p_best"] = (("truth", "candidate"), [[0.5, 0.5, np.nan], [np.nan, np.nan, 1.0], [0.8, 0.2, np.nan]])
    # eligible synthetic pairs: a's truths 0 and 2 (2 with k:1 ineligible), b's truths 0 and 1
    hand = {"0.1-0.3": [(0.25, 0)], "0.5-0.7": [(2 / 3, 0), (0.5, 0), (0.5, 1)], "0.7-0.9": [(0.75, 1)],
            "0.9-1": [(1.0, 1)]}
    got = p_best_bins([a, b])
    assert set(got) == set(hand)
    for label, pairs in hand.items():
        assert got[label] == pytest.approx((np.mean([p for p, _ in pairs]), np.mean([w for _, w in pairs]), len(pairs)))
    real = p_best_bins([a, b], source="real")
    assert set(real) == {"0.1-0.3", "0.9-1"}
    assert real["0.9-1"] == (1.0, 1.0, 1) and real["0.1-0.3"] == pytest.approx((0.2, 0.0, 1))
    assert sum(n for *_, n in p_best_bins([a, b], source="any").values()) == 8
    with pytest.raises(ValueError, match="source must be 'synthetic', 'real' or 'any', got 'held'"):
        p_best_bins([a], source="held")
    with pytest.raises(ValueError, match=r"runs must be a list of calibration runs, got one Dataset: pass \[ds\]"):
        p_best_bins(a)
    with pytest.raises(ValueError, match="runs must hold at least one calibration run, got none"):
        p_best_bins([])
    with pytest.raises(ValueError, match=r"runs\[0\] lacks the variables \['source', 'is_best'\]"):
        p_best_bins([_run()])


def _one_family(realised, eligible, regret) -> xr.Dataset:
    cand = ["k:1", "k:2", "k:3"]
    return xr.Dataset({"realised": (("truth", "candidate"), realised), "eligible": (("truth", "candidate"), eligible),
                       "regret": ("truth", regret)},
                      coords={"truth": [f"t-{i}" for i in range(len(regret))], "candidate": cand})


def test_regret_rules_pool_runs_against_a_hand_count_and_refuse_bad_input():
    """Two runs of one family: k:3 is ineligible on one truth (no rule), a refused truth is left out of every
    rule; each rule's regrets written out by hand."""
    nan = np.nan
    a = _one_family([[1.0, 2.0, 4.0], [3.0, 1.5, 1.0], [2.0, 2.0, 2.0]], [[1, 1, 1], [1, 1, 1], [1, 1, 1]],
                    [0.0, 0.5, nan])
    b = _one_family([[2.0, 1.0, 0.5], [4.0, 5.0, 1.0]], [[1, 1, 0], [1, 1, 1]], [1.0, 0.25])
    got = regret_rules([a, b])
    # best eligible: a0 1, a1 1, b0 1 (k:3 ineligible), b1 1
    hand = {"recommendation": [0, 50, 100, 25], "k:1": [0, 200, 100, 300], "k:2": [100, 50, 0, 400]}
    assert list(got.index) == ["recommendation", "k:2", "k:1"] and got.attrs["left_out"] == 1  # by mean: 137.5, 150
    for rule, v in hand.items():
        v = np.array(v, dtype=float)
        row = got.loc[rule]
        assert (row["median"], row["mean"], row["p90"]) == pytest.approx((np.median(v), v.mean(), np.quantile(v, 0.9)))
        assert row["above_25pct"] == (v > 25).sum() and row["truths"] == 4
    with pytest.raises(ValueError, match=r"runs must be a list of calibration runs, got one Dataset: pass \[ds\]"):
        regret_rules(a)
    with pytest.raises(ValueError, match="runs must hold at least one calibration run, got none"):
        regret_rules([])
    with pytest.raises(ValueError, match=r"runs\[0\] lacks the variables \['regret'\]"):
        regret_rules([a.drop_vars("regret")])
    with pytest.raises(ValueError, match=r"runs\[1\] has the candidates \['k:1', 'k:9', 'estimator:weighted'\], "
                                         r"runs\[0\] \['k:1', 'k:2', 'k:3'\]: pool one family's runs"):
        regret_rules([a, _run()])
    with pytest.raises(ValueError, match=r"runs\[1\] brings the families to \['grouped', 'kmeans'\]"):
        regret_rules([a.assign(family=("truth", ["kmeans"] * 3)), b.assign(family=("truth", ["grouped"] * 2))])
    with pytest.raises(ValueError, match="runs hold no truth where select chose"):
        regret_rules([a.assign(regret=("truth", [nan] * 3))])


def test_regret_rules_count_a_real_dataset_once_and_add_the_selector_against_a_hand_count():
    """Two seeds of one family, each a synthetic truth and the same real dataset: ``real_once`` averages the real
    dataset's regrets over the seeds (three truths, not four); the budget-spending selector's row is over the truths
    where it chose."""
    nan = np.nan
    a = _one_family([[1.0, 2.0, 4.0], [2.0, 1.0, 4.0]], [[1, 1, 1], [1, 1, 1]], [0.0, 1.0])
    b = _one_family([[3.0, 1.0, 1.5], [2.0, 1.0, 4.0]], [[1, 1, 1], [1, 1, 1]], [0.5, 0.0])
    for ds, sel in ((a, [0.5, 3.0]), (b, [nan, 1.0])):
        ds["source"] = ("truth", ["synthetic", "real"])
        ds["generator"] = ("truth", ["zipf", "mroz"])
        ds["pythia_regret"] = ("truth", sel)
    pooled, once = regret_rules([a, b]), regret_rules([a, b], real_once=True)
    # by hand, percent: a0, a1 (mroz), b0, b1 (mroz); real_once: a0, mroz (mean of a1 and b1), b0
    hand = {"recommendation": ([0, 100, 50, 0], [0, 50, 50]), "k:1": ([0, 100, 200, 100], [0, 100, 200]),
            "k:2": ([100, 0, 0, 0], [100, 0, 0]), "k:3": ([300, 300, 50, 300], [300, 300, 50]),
            "budget-spending selector": ([50, 300, 100], [50, 200])}  # b0 refused: (300 + 100) / 2 for mroz
    assert list(once.index) == ["recommendation", "k:2", "k:1", "k:3", "budget-spending selector"]
    for rule, (p4, p3) in hand.items():
        for got, v in ((pooled, p4), (once, p3)):
            v = np.array(v, dtype=float)
            row = got.loc[rule]
            assert (row["mean"], row["p90"], row["truths"]) == pytest.approx((v.mean(), np.quantile(v, 0.9), v.size))
    assert "budget-spending selector" not in regret_rules([a.drop_vars("pythia_regret"), b]).index
    with pytest.raises(ValueError, match=r"runs\[0\] lacks the variables \['generator'\]"):
        regret_rules([a.drop_vars("generator"), b], real_once=True)


def test_stored_user_item_seed10_and_grouped_seed2_give_the_numbers_the_docs_quote():
    """The twenty-fourth session's runs, as calibration.md and its history quote them."""
    ui = stored("user-item-seed10")
    assert ui.attrs["seed"] == 10 and ui.sizes["truth"] == 33 and ui.attrs["commit"] == "7d9f11b"
    assert (ui.plan_gain_floor.values == 0.08).all() and not ui.plan_pays.values.any()
    r = _final(ui, 0.08) * 100
    assert (np.median(r), r.mean(), np.quantile(r, 0.9)) == pytest.approx((6.0, 11.8, 35.9), abs=0.05)
    assert (r > 25).sum() == 5 and ((ui.sensitivity_warning.values != "") | (ui.p_costly_recommended.values >= 0.25))[r > 25].all()
    assert ui.covered.values[ui.eligible.values == 1].mean() == pytest.approx(0.826, abs=5e-4)
    py = ui.pythia_regret.values * 100
    assert (py.mean(), np.quantile(py, 0.9)) == pytest.approx((17.1, 24.0), abs=0.05)
    r4 = _final(ui, 0.04) * 100  # the 4% floor scored on the stored run: 3 paid, 10.6 / 24.9%
    assert (r4 != r).sum() == 3 and (r4.mean(), np.quantile(r4, 0.9)) == pytest.approx((10.6, 24.9), abs=0.05)
    bins = _synthetic_bins(ui)
    assert bins["0.5-0.7"][1:] == (5, 10) and bins["0.5-0.7"][0] == pytest.approx(0.52, abs=0.005)
    assert bins["0.3-0.5"][1:] == (6, 22) and bins["0.1-0.3"][1:] == (7, 61)

    gr = stored("grouped-seed2")
    assert gr.attrs["seed"] == 2 and gr.sizes["truth"] == 34 and not gr.plan_pays.values.any()
    assert gr.covered.values[gr.eligible.values == 1].mean() == pytest.approx(0.868, abs=5e-4)
    reg = gr.regret.values * 100
    assert (np.median(reg), reg.mean(), np.quantile(reg, 0.9)) == pytest.approx((0.0, 3382.3, 770.7), abs=0.05)
    above = reg > 25
    silent = above & (gr.sensitivity_warning.values == "") & (gr.p_costly_recommended.values < 0.25)
    assert (above.sum(), silent.sum()) == (13, 5)
    bins = _synthetic_bins(gr)
    assert bins["0.7-0.9"][1:] == (7, 13) and bins["0.5-0.7"][1:] == (6, 12) and bins["0-0.1"][1:] == (5, 50)


def test_stored_hybrid_trust_seed3_gives_the_numbers_the_docs_quote():
    """Hybrid trust's first held-out seed (twenty-fifth session), as calibration.md and its history quote it."""
    ds = stored("hybrid-trust-seed3")
    assert ds.attrs["seed"] == 3 and ds.sizes["truth"] == 34 and (ds.family.values == "hybrid-trust").all()
    assert (ds.source.values == "synthetic").sum() == 30 and np.isfinite(ds.regret.values).all()
    covered = ds.covered.values[ds.eligible.values == 1]
    assert covered.size == 272 and covered.mean() == pytest.approx(0.893, abs=5e-4)  # "ranges 89.3%"
    assert _regret(ds) == pytest.approx((4.0, 203.5, 587.5), abs=0.05)
    for name, (mean, p90) in (("hkvh", (196.3, 509.1)), ("bayes", (200.1, 331.5))):  # the fixed rules
        fixed = _fixed(ds, f"estimator:hybrid-{name}")
        assert (fixed.mean(), np.quantile(fixed, 0.9)) == pytest.approx((mean, p90), abs=0.05)
    assert _above_and_silent(ds) == (10, 1)
    silent = (ds.regret.values > 0.25) & (ds.sensitivity_warning.values == "") & (ds.p_costly_recommended.values < 0.25)
    assert list(ds.generator.values[silent]) == ["acs12-income"]
    bins = _synthetic_bins(ds)
    assert bins["0.1-0.3"][1:] == (21, 134) and bins["0.1-0.3"][0] == pytest.approx(0.19, abs=0.005)
    assert bins["0-0.1"][1:] == (6, 99) and bins["0.3-0.5"][1:] == (3, 7)


def _fixed(ds: xr.Dataset, candidate: str) -> np.ndarray:
    """Regret (%) of always choosing ``candidate``, relative to each truth's best eligible candidate."""
    eligible = ds.eligible.values == 1
    best = np.min(np.where(eligible, ds.realised.values, np.inf), axis=1)
    return (ds.realised.values[:, [str(c) for c in ds.candidate.values].index(candidate)] / best - 1) * 100


def _regret(ds: xr.Dataset) -> tuple[float, float, float]:
    """The recommendation's regret (%) over the run's truths: median, mean, 90th percentile."""
    r = ds.regret.values * 100
    return float(np.median(r)), float(r.mean()), float(np.quantile(r, 0.9))


def _silent(ds: xr.Dataset) -> np.ndarray:
    """Per truth: regret above 25% without any warning (an assumption's, a branch's, the free candidate's or the
    chance line, p_costly >= 0.25)."""
    warned = (ds.sensitivity_warning.values != "") | (ds.p_costly_recommended.values >= 0.25)
    return (ds.regret.values > 0.25) & ~warned


def _above_and_silent(ds: xr.Dataset) -> tuple[int, int]:
    """Truths whose regret exceeds 25%, and of those the silent ones (:func:`_silent`)."""
    return int((ds.regret.values > 0.25).sum()), int(_silent(ds).sum())


def test_stored_public_private_seed3_gives_the_numbers_the_docs_quote():
    """Public-private's first held-out seed (twenty-fifth session), as calibration.md and its history quote it."""
    ds = stored("public-private-seed3")
    assert ds.attrs["seed"] == 3 and ds.sizes["truth"] == 33 and (ds.source.values == "synthetic").sum() == 30
    covered = ds.covered.values[ds.eligible.values == 1]
    assert covered.size == 261 and covered.mean() == pytest.approx(0.908, abs=5e-4)  # "ranges 90.8%"
    assert _regret(ds) == pytest.approx((0.0, 9.0, 28.6), abs=0.05)
    fixed = _fixed(ds, "candidate:public-only")
    assert (fixed.mean(), np.quantile(fixed, 0.9)) == pytest.approx((144.9, 425.5), abs=0.05)
    assert _above_and_silent(ds) == (6, 1)
    silent = (ds.regret.values > 0.25) & (ds.sensitivity_warning.values == "") & (ds.p_costly_recommended.values < 0.25)
    assert list(ds.generator.values[silent]) == ["mean-shift"]
    bins = _synthetic_bins(ds)
    assert bins["0.3-0.5"][1:] == (4, 15) and bins["0.3-0.5"][0] == pytest.approx(0.38, abs=0.005)  # 11.7 points
    assert bins["0.7-0.9"][1:] == (7, 10) and bins["0.7-0.9"][0] == pytest.approx(0.79, abs=0.005)  # 9.2 points


def test_stored_histogram_seed3_gives_the_numbers_the_docs_quote():
    """Histogram's first held-out seed (twenty-fifth session), as calibration.md and its history quote it."""
    ds = stored("histogram-seed3")
    assert ds.attrs["seed"] == 3 and ds.sizes["truth"] == 33 and (ds.source.values == "synthetic").sum() == 30
    covered = ds.covered.values[ds.eligible.values == 1]
    assert (covered.size, covered.sum()) == (231, 220)  # "95.2%": 0.2 points above the 95% the issue allows
    assert _regret(ds) == pytest.approx((0.8, 19.6, 53.4), abs=0.05)
    fixed = _fixed(ds, "estimator:adaptive")
    assert (fixed.mean(), np.quantile(fixed, 0.9)) == pytest.approx((27.4, 56.4), abs=0.05)
    assert _above_and_silent(ds) == (5, 0)  # no silent failure
    bins = _synthetic_bins(ds)
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
    assert _regret(ds) == pytest.approx(regret, abs=0.05)
    p = ds.pythia_regret.values * 100
    assert np.isfinite(p).all()
    assert (np.median(p), p.mean(), np.quantile(p, 0.9)) == pytest.approx(pythia, abs=0.05)
    assert _above_and_silent(ds) == above
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
        assert _above_and_silent(ds)[1] == silent, seed
    assert sum(_above_and_silent(ds)[0] for ds in runs.values()) == 22
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


def test_stored_kmeans_seed3_gives_the_numbers_the_docs_quote():
    """K-means' first held-out seed (twenty-fifth session): its ranges held less than seeds 0-2 said."""
    ds = stored("kmeans-seed3")
    assert ds.attrs["seed"] == 3 and ds.sizes["truth"] == 34 and (ds.source.values == "synthetic").sum() == 30
    covered = ds.covered.values[np.isfinite(ds.covered.values)]  # the study's coverage: every candidate's range
    assert covered.mean() == pytest.approx(0.727, abs=5e-4)
    eligible = ds.covered.values[ds.eligible.values == 1]  # the eligible candidates' alone: lower still
    assert (eligible.size, eligible.sum()) == (442, 278)  # 62.9%: the previous model's, before 31d130f
    assert _regret(ds) == pytest.approx((0.0, 3.3, 2.5), abs=0.05)
    fixed = _fixed(ds, "algorithm:public-start")
    assert (fixed.mean(), np.quantile(fixed, 0.9)) == pytest.approx((6.2, 15.4), abs=0.05)
    assert _above_and_silent(ds) == (2, 0)
    bins = _synthetic_bins(ds)
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
    assert _above_and_silent(ds) == above
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


def test_every_familys_real_coverage_is_its_stored_runs():
    """Family.range_coverage_real (what select's ranges note says of real data) is, seed by seed, the share of the
    eligible real (truth, candidate) pairs covered in the stored run of that family and seed, for every stored seed
    the family's range_coverage names (K-means' seed 3 was the previous model: not named)."""
    from hybridpriv.families import registry

    stored_seeds: dict = {}
    for name in stored_names():
        ds = stored(name)
        if "other_machine_of" in ds.attrs or "arm_of" in ds.attrs:  # the same truths on another machine or with
            continue  # other candidates: select's notes quote the first run
        on_real = (ds.eligible.values == 1) & (ds.source.values == "real")[:, None]
        stored_seeds.setdefault(str(ds.family.values[0]), {})[int(ds.attrs["seed"])] = (
            int(ds.covered.values[on_real].sum()), int(on_real.sum()))
    for name, fam in registry().items():
        want = {seed: hits for seed, hits in stored_seeds.get(name, {}).items() if seed in fam.range_coverage}
        assert sorted(fam.range_coverage_real) == sorted(want), name
        for seed, (covered, pairs) in want.items():
            assert fam.range_coverage_real[seed] == pytest.approx(covered / pairs, abs=5e-4), (name, seed)
    assert {seed: stored_seeds["kmeans"][seed] for seed in (4, 5, 6, 7)} == {4: (31, 52), 5: (31, 52), 6: (25, 52),
                                                                           7: (32, 52)}  # 119 of 208: 57.2%


def test_kmeans_p_best_held_is_its_stored_seeds_pooled():
    """What select's K-means P(best) note reads is p_best_bins over the stored seeds it names, to three decimals,
    and it is printed where the pooled table says so (0.3-0.5, 0.7-0.9, 0.9-1) and nowhere else."""
    from hybridpriv.engine.decision import p_best_line
    from hybridpriv.families import family

    fam = family("kmeans")
    assert tuple(fam.p_best_seeds) == (4, 5, 6, 7)
    bins = p_best_bins([stored(f"kmeans-seed{seed}") for seed in fam.p_best_seeds])
    assert bins.keys() == fam.p_best_held.keys()
    for label, (reported, came, pairs) in bins.items():
        assert fam.p_best_held[label] == (pytest.approx(reported, abs=5e-4), pytest.approx(came, abs=5e-4), pairs)
    noted = {p: bool(p_best_line(fam.p_best_held, fam.p_best_seeds, p)) for p in (0.05, 0.2, 0.4, 0.6, 0.8, 0.95)}
    assert noted == {0.05: False, 0.2: False, 0.4: True, 0.6: False, 0.8: True, 0.95: True}
    assert "seeds 4-7" in p_best_line(fam.p_best_held, fam.p_best_seeds, 0.75)


def test_kmeans_pilot_premise_names_every_silent_failure_and_switching_away_does_not_help():
    """The pilot-sample premise warning (after seeds 4-7 were stored) is printed exactly where public-start is
    recommended (no truth's SPEC states the premise; public-start is the one candidate resting on it alone), so the
    stored runs recount it: 68 of 136 truths warned, the 9 above 25% all warned now (3 silent before, each a
    pilot-biased truth with public-start recommended).  Switching to the best eligible iterated candidate by
    expected loss: worse over the 68 (mean regret 12.3 -> 61.3%), and no better on the 13 pilot-biased ones
    (58.4 -> 60.1%): the advice the warning prints ("none is safe then")."""
    from hybridpriv.engine.decision import premise_warnings
    from hybridpriv.spec import builtin_example_path, load_spec

    (pilot,) = load_spec(builtin_example_path("faithful")).problem().premises  # K-means' own premise, not stated

    def warns(ds, i):  # the code's rule, on the truth's decision rebuilt from the stored columns
        have = ~np.isnan(ds.expected_loss.values[i])
        names = [str(c).removeprefix("algorithm:") for c in ds.candidate.values[have]]
        dec = xr.Dataset({"expected_loss": ("algorithm", ds.expected_loss.values[i, have]),
                          "meets_requirements": ("algorithm", ds.eligible.values[i, have] == 1)},
                         coords={"algorithm": names},
                         attrs={"candidate_dim": "algorithm", "recommended": str(ds.recommended.values[i])})
        return bool(premise_warnings(dec, [pilot]))

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
    assert _regret(ds) == pytest.approx(regret, abs=0.05)
    fixed = _fixed(ds, "estimator:hybrid-hkvh")
    assert (fixed.mean(), np.quantile(fixed, 0.9)) == pytest.approx(hkvh, abs=0.05)
    assert _above_and_silent(ds) == (above, 0)


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
        hkvh.append(_fixed(ds, "estimator:hybrid-hkvh"))
        bayes.append(_fixed(ds, "estimator:hybrid-bayes"))
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
    rec = _regret(ds)
    assert rec == pytest.approx((6.2, 486.6, 935.6), abs=0.05)
    rules = [str(c) for c in ds.candidate.values if (ds.eligible.sel(candidate=c).values == 1).all()]
    for rule in rules:  # every fixed rule does worse on this seed, in the mean and at p90
        fixed = _fixed(ds, rule)
        assert fixed.mean() > rec[1] and np.quantile(fixed, 0.9) > rec[2], rule
    assert (_fixed(ds, "estimator:hybrid-hkvh").mean(), np.quantile(_fixed(ds, "estimator:hybrid-kvh"), 0.9)) == \
        pytest.approx((600.6, 1615.5), abs=0.05)
    assert _above_and_silent(ds) == (11, 1)
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
        assert _regret(ds) == pytest.approx(regret, abs=0.05)
        assert _above_and_silent(ds) == above
    assert (_fixed(runs[5], "estimator:hybrid-hkvh").mean(), np.quantile(_fixed(runs[5], "estimator:hybrid-bayes"), 0.9)) \
        == pytest.approx((562.3, 591.7), abs=0.05)  # seed 5: a fixed rule did better, in the mean and at p90
    for seed in (4, 6):  # seeds 4 and 6: every fixed rule did worse, in both
        ds, rec = runs[seed], _regret(runs[seed])
        for rule in [str(c) for c in ds.candidate.values if (ds.eligible.sel(candidate=c).values == 1).all()]:
            assert _fixed(ds, rule).mean() > rec[1] and np.quantile(_fixed(ds, rule), 0.9) > rec[2], (seed, rule)
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
    assert _above_and_silent(ds.isel(truth=np.flatnonzero(np.isfinite(ds.regret.values)))) == above


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
    silent = _silent(ds)
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


def _public_private_run(name: str, seed: int, commit: str, covered: int):
    """A stored public-private run of 33 truths, its seed and commit, and its eligible ranges (of 261) covering
    ``covered`` as Family.range_coverage says; returns the run and the family."""
    from hybridpriv.families import family

    ds = stored(name)
    assert ds.attrs["seed"] == seed and ds.attrs["commit"] == commit and ds.sizes["truth"] == 33
    hits = ds.covered.values[ds.eligible.values == 1]
    assert (hits.size, hits.sum()) == (261, covered)
    fam = family("public-private")
    assert fam.range_coverage[seed] == pytest.approx(covered / 261, abs=5e-4)
    return ds, fam


def test_stored_public_private_seed4_with_the_selector_and_the_plan():
    """Public-private's held-out seed 4 (thirty-second session, e3173e6): ranges (Family.range_coverage), the
    recommendation against its budget-spending selector and its plan carried out on every truth, as
    Family.plan_held_out (select's plan note) and calibration.md quote them."""
    ds, fam = _public_private_run("public-private-seed4", 4, "e3173e6", 228)
    assert _regret(ds) == pytest.approx((6.3, 21.1, 67.8), abs=0.05)
    held = fam.plan_held_out
    assert held["truths"] == 33 and sorted(held["seeds"]) == [3, 4, 5]
    for key, values in (("now", ds.regret.values), ("plan", ds.plan_regret.values), ("refit", ds.pythia_regret.values)):
        x = values * 100
        assert np.isfinite(x).all()
        assert held["seeds"][4][key] == pytest.approx((x.mean(), np.quantile(x, 0.9)), abs=0.05), key
    assert int(ds.plan_pays.sum()) == 0


def test_stored_public_private_seed3_with_the_refitting_plan_carried_out():
    """Seed 3 again on 5f95424 (thirty-fifth session): select then recommended the refitting plan on seed 4's
    evidence and it was carried out on every truth; it did worse than choosing now in the mean and at p90, as
    Family.plan_held_out records (with seed 5, below), so select no longer recommends it.  The
    choice now is seed 3's first run's (59c5e4f) again: the same ranges and regrets."""
    from hybridpriv.engine.plan import held_out_pays
    from hybridpriv.families import family

    ds = stored("public-private-seed3-plan")
    first = stored("public-private-seed3")
    assert ds.attrs["seed"] == 3 and ds.attrs["commit"] == "5f95424" and ds.attrs["rerun_of"] == "public-private-seed3"
    assert ds.sizes["truth"] == 33 and list(ds.generator.values) == list(first.generator.values)
    covered = ds.covered.values[ds.eligible.values == 1]
    assert (covered.size, covered.sum()) == (261, 237)  # 90.8%, as the first run
    assert _regret(ds) == pytest.approx(_regret(first), abs=0.05)
    assert _regret(ds) == pytest.approx((0.0, 9.0, 28.6), abs=0.05)
    assert (ds.plan_pays_by.values == "held-out").sum() == 32 and (ds.plan_pays_by.values == "analysis").sum() == 1
    np.testing.assert_array_equal(ds.final_regret.values, ds.pythia_regret.values)  # the plan is the selector
    fam = family("public-private")
    for key, values in (("now", ds.regret.values), ("refit", ds.pythia_regret.values)):
        x = values * 100
        assert np.isfinite(x).all()
        assert fam.plan_held_out["seeds"][3][key] == pytest.approx((x.mean(), np.quantile(x, 0.9)), abs=0.05), key
    assert fam.plan_held_out["seeds"][3]["refit"] == pytest.approx((19.3, 53.5), abs=0.05)
    refitting = SimpleNamespace(refit=lambda raw, observed: raw)  # all held_out_pays reads of a probe
    assert held_out_pays(fam.plan_held_out, refitting) == ""  # worse on seeds 3 and 5: no recommendation
    assert held_out_pays({"truths": 33, "seeds": {4: fam.plan_held_out["seeds"][4]}}, refitting)  # seed 4 alone: yes


def test_stored_public_private_seed5_repeats_what_the_thirty_fourth_session_printed():
    """Held-out seed 5, run on a8fe8bd (its records lost with /tmp) and again on 086dd42 (thirty-sixth session,
    stored): every number printed then is repeated (ranges 246 of 261, real 18 of 21; choosing now 9.7 / 26.8%, the
    refit 12.3 / 41.7%; 5 truths above 25%, 3 with no warning), as Family.plan_held_out and range_coverage say."""
    ds, fam = _public_private_run("public-private-seed5", 5, "086dd42", 246)
    assert _regret(ds) == pytest.approx((0.0, 9.7, 26.8), abs=0.05)
    np.testing.assert_array_equal(ds.plan_regret.values, ds.pythia_regret.values)  # the plan is the selector
    for key, values in (("now", ds.regret.values), ("refit", ds.pythia_regret.values)):
        x = values * 100
        assert np.isfinite(x).all()
        assert fam.plan_held_out["seeds"][5][key] == pytest.approx((x.mean(), np.quantile(x, 0.9)), abs=0.05), key
    assert _above_and_silent(ds) == (5, 3)


@pytest.mark.parametrize("kind, ranges, regret, rule, selector, above", [
    ("grouped", (136, 117), (0.0, 238.2, 195.0), ("estimator:pdp-opt-expected", 238.2, 195.0), (748.2, 543.4), (8, 0)),
    ("user-item", (660, 558), (3.9, 9.4, 22.4), ("k:10", 205.5, 480.9), (17.0, 24.1), (3, 0)),
    ("hybrid-trust", (272, 262), (3.4, 69.1, 213.8), ("estimator:hybrid-hkvh", 54.2, 91.7), (69.8, 205.8), (10, 0)),
    ("public-private", (261, 244), (0.0, 18.2, 63.4), ("candidate:public-only", 146.8, 411.3), (18.1, 38.7), (7, 1)),
    ("kmeans", (442, 417), (0.0, 1.1, 3.1), ("algorithm:public-start", 8.7, 22.4), None, (0, 0)),
    ("histogram", (231, 206), (1.2, 18.5, 39.1), ("estimator:adaptive", 25.4, 62.6), (33.5, 29.9), (6, 0)),
])
def test_stored_seed12_of_every_kind_gives_the_table_the_docs_quote(kind, ranges, regret, rule, selector, above):
    """Seed 12, every kind held out on 3113b9a (thirty-sixth session): calibration.md's "Latest" table, recounted
    from the stored truths and pairs (ranges over the eligible pairs; the rules and the selector by regret_rules)."""
    ds = stored(f"{kind}-seed12")
    assert ds.attrs["seed"] == 12 and ds.attrs["commit"] == "3113b9a"
    covered = ds.covered.values[ds.eligible.values == 1]
    assert (covered.size, int(covered.sum())) == ranges
    assert _regret(ds) == pytest.approx(regret, abs=0.05)
    table = regret_rules([ds])
    assert table.index[1] == rule[0]  # the best fixed rule by mean
    assert tuple(table.loc[rule[0], ["mean", "p90"]]) == pytest.approx(rule[1:], abs=0.05)
    if selector is None:
        assert "budget-spending selector" not in table.index
    else:
        assert tuple(table.loc["budget-spending selector", ["mean", "p90"]]) == pytest.approx(selector, abs=0.05)
    assert _above_and_silent(ds) == above


def test_stored_public_private_seed12_on_another_machine_gives_the_numbers_the_docs_quote():
    """Seed 12's public-private truths run again on an AMD machine (thirty-seventh session, 6834785): the same truths
    as the stored Intel run, other NUTS draws, and the numbers calibration.md quotes for both."""
    amd, intel = stored("public-private-seed12-amd"), stored("public-private-seed12")
    assert amd.attrs["other_machine_of"] == "public-private-seed12" and amd.attrs["commit"] == "6834785"
    assert "AMD" in amd.attrs["machine"] and "Intel" in intel.attrs["machine"]
    for v in ("truth", "generator", "source"):
        np.testing.assert_array_equal(amd[v].values, intel[v].values)
    assert not np.allclose(amd.expected_loss.values, intel.expected_loss.values, equal_nan=True)  # other draws
    covered = amd.covered.values[amd.eligible.values == 1]
    assert (covered.size, int(covered.sum())) == (261, 229)  # 87.7% against 244 of 261
    on_real = (amd.eligible.values == 1) & (amd.source.values == "real")[:, None]
    assert (int(amd.covered.values[on_real].sum()), int(on_real.sum())) == (17, 21)
    assert _regret(amd) == pytest.approx((0.0, 20.8, 62.5), abs=0.05)
    table = regret_rules([amd])
    assert tuple(table.loc["budget-spending selector", ["mean", "p90"]]) == pytest.approx((22.6, 58.9), abs=0.05)
    assert _above_and_silent(amd) == (10, 3) and _above_and_silent(intel) == (7, 1)


def test_warning_lines_recount_the_chance_warning_by_hand():
    """Five truths, counted by hand: failures are regrets above 25%; a truth is warned by its recorded warning or by
    a p_costly at or above the line; a refused truth (NaN regret) is left out."""
    ds = xr.Dataset({"regret": ("truth", [0.5, 0.3, 0.1, 0.0, np.nan, 2.0]),
                     "p_costly_recommended": ("truth", [0.3, 0.12, 0.2, 0.05, np.nan, 0.01]),
                     "sensitivity_warning": ("truth", ["", "", "", "", "", "gap"])})
    table = warning_lines([ds], lines=(0.25, 0.12, 0.05))
    assert table.attrs["left_out"] == 1 and list(table.index) == [0.25, 0.12, 0.05]
    assert table.loc[0.25].to_dict() == {"failures": 3, "silent": 1, "warned": 2, "false_alarms": 0, "fine": 2,
                                         "truths": 5}
    assert table.loc[0.12].to_dict() == {"failures": 3, "silent": 0, "warned": 4, "false_alarms": 1, "fine": 2,
                                         "truths": 5}  # the line itself warns (p_costly 0.12)
    assert table.loc[0.05, "warned"] == 5 and table.loc[0.05, "false_alarms"] == 2
    assert list(warning_lines([ds, ds]).index) == list(CHANCE_LINES)
    assert warning_lines([ds, ds]).loc[0.25, "failures"] == 6  # runs pool truth by truth


def test_warning_lines_refuse_bad_input():
    ds = xr.Dataset({"regret": ("truth", [0.5]), "p_costly_recommended": ("truth", [0.3]),
                     "sensitivity_warning": ("truth", [""])})
    with pytest.raises(ValueError, match="runs must be a list of calibration runs, got one Dataset"):
        warning_lines(ds)
    with pytest.raises(ValueError, match="runs must hold at least one calibration run, got none"):
        warning_lines([])
    with pytest.raises(ValueError, match=r"lines must be chance lines in \(0, 1\], got \[0.0, 1.5\]"):
        warning_lines([ds], lines=(0.25, 0.0, 1.5))
    with pytest.raises(ValueError, match=r"runs\[1\] lacks the variables \['p_costly_recommended'\]"):
        warning_lines([ds, ds.drop_vars("p_costly_recommended")])
    with pytest.raises(ValueError, match="recorded no p_costly"):
        warning_lines([ds.assign(p_costly_recommended=("truth", [np.nan]))])


#: One stored run per seed of each family's current model (docs/calibration.md, "How many warnings a lower chance
#: line costs"): the runs the table there counts.
WARNING_LINE_RUNS = {"grouped": (2, 12), "histogram": (3, 4, 5, 6, 12, 13, 14, 15, 16),
                     "hybrid-trust": (7, 8, 9, 10, 12, 13, 14, 15, 16), "kmeans": (4, 5, 6, 7, 12),
                     "public-private": (3, 4, 5, 12), "user-item": (9, 10, 12)}


def test_the_calibration_pages_chance_line_table_is_the_stored_runs():
    """The table of docs/calibration.md: per family, silent failures and false alarms at each chance line, recounted
    from the stored runs; checked against a plain loop over the truths (not warning_lines) and against the page."""
    import re
    from pathlib import Path

    page = (Path(__file__).parents[1] / "docs" / "calibration.md").read_text()
    section = page.split("## How many warnings a lower chance line costs", 1)[1].split("\n## ", 1)[0]
    silent_all = failures_all = 0
    for fam, seeds in WARNING_LINE_RUNS.items():
        runs = [stored(f"{fam}-seed{s}") for s in seeds]
        table = warning_lines(runs)
        silent_all += table.loc[0.25, "silent"]
        failures_all += table.loc[0.25, "failures"]
        for line in CHANCE_LINES:  # by hand: every kept truth of every run
            silent = alarms = fails = 0
            for ds in runs:
                for r, p, w in zip(ds.regret.values, ds.p_costly_recommended.values, ds.sensitivity_warning.values):
                    if np.isnan(r):
                        continue
                    warned = w != "" or p >= line
                    fails += r > 0.25
                    silent += r > 0.25 and not warned
                    alarms += r <= 0.25 and warned
            assert (table.loc[line, "failures"], table.loc[line, "silent"], table.loc[line, "false_alarms"]) == (
                fails, silent, alarms)
        row = f"| {fam} | " + " | ".join(f"{table.loc[x, 'silent']} / {table.loc[x, 'false_alarms']}"
                                         for x in CHANCE_LINES)
        assert re.search(re.escape(row) + r" \| " + re.escape(f"{table.loc[0.25, 'failures']} of "
                                                              f"{table.loc[0.25, 'truths']}"), section), row
        # the truths with no warning at 0.25: how many failures their p_costly expected, and how many came
        quiet = [(p, r) for ds in runs for r, p, w in zip(ds.regret.values, ds.p_costly_recommended.values,
                                                            ds.sensitivity_warning.values)
                 if np.isfinite(r) and w == "" and p < 0.25]
        expected, came = sum(p for p, _ in quiet), sum(r > 0.25 for _, r in quiet)
        said = {"grouped": f"grouped {expected:.1f} expected, {came} came ({len(quiet)} truths)",
                "kmeans": f"with {expected:.1f} failures expected on its {len(quiet)} unwarned truths"}.get(
            fam, f"{'hybrid trust' if fam == 'hybrid-trust' else fam} {expected:.1f}, {came} ({len(quiet)})")
        assert said in " ".join(section.split()), said
    # K-means' runs predate its premise warning, which fires wherever public-start is recommended: it names them
    named = sum(int((_silent(ds) & (ds.recommended.values == "public-start")).sum())
                for ds in (stored(f"kmeans-seed{s}") for s in WARNING_LINE_RUNS["kmeans"]))
    assert named == 3
    said = (f"{silent_all} silent of {failures_all} failures at the default chance line with the warnings each run "
            f"printed, {silent_all - named} with today's (K-means' premise warning names its {named})")
    assert said in " ".join(page.split()), said
