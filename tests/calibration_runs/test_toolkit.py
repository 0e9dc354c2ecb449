"""The stored-runs toolkit (hybridpriv.calibration_runs): the CSV round trip, P(best) bins, regret against the
fixed rules and warning lines, each against a hand count on a small run, and their refusals of bad input."""

import numpy as np
import pytest
import xarray as xr

from hybridpriv.calibration_runs import (CHANCE_LINES, from_tables, p_best_bins, read_records, regret_rules, stored,
                                         to_tables, warning_lines, write_records)

from _support.stored_runs import small_run, one_family_run


def test_records_round_trip_keeps_text_nan_and_the_absent_candidates(tmp_path):
    ds = small_run()
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
        write_records(small_run(), tmp_path, "a/b")
    with pytest.raises(FileNotFoundError, match="no calibration records 'gone' in .*gone-truths.csv is missing"):
        read_records(tmp_path, "gone")
    truths, pairs = to_tables(small_run())
    with pytest.raises(ValueError, match=r"pairs names truths that truths lacks: \['grouped-0'\]"):
        from_tables(truths[truths.truth != "grouped-0"], pairs)
    with pytest.raises(ValueError, match=r"pairs must have the columns \['truth', 'candidate'\], missing \['candidate'\]"):
        from_tables(truths, pairs.drop(columns="candidate"))
    write_records(small_run(), tmp_path, "bad")  # a number column spoiled by hand: refused, naming row and column
    path = tmp_path / "bad-truths.csv"
    path.write_text(path.read_text().replace("0.2", "oops"))
    with pytest.raises(ValueError, match=r"bad-truths.csv row 4 column 'regret' must be a number, got 'oops'"):
        read_records(tmp_path, "bad")
    with pytest.raises(ValueError, match="name must be one of the stored calibration runs .*, got 'nope'"):
        stored("nope")


def test_p_best_bins_pools_runs_pair_by_pair_and_refuses_bad_input():
    """Pooling two runs equals binning their pairs together by hand (an independent count, bin edges included:
    a report of exactly 0.5 belongs to 0.5-0.7, 1.0 to the last bin)."""
    a, b = small_run(), small_run()
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
        p_best_bins([small_run()])


def test_regret_rules_pool_runs_against_a_hand_count_and_refuse_bad_input():
    """Two runs of one family: k:3 is ineligible on one truth (no rule), a refused truth is left out of every
    rule; each rule's regrets written out by hand."""
    nan = np.nan
    a = one_family_run([[1.0, 2.0, 4.0], [3.0, 1.5, 1.0], [2.0, 2.0, 2.0]], [[1, 1, 1], [1, 1, 1], [1, 1, 1]],
                    [0.0, 0.5, nan])
    b = one_family_run([[2.0, 1.0, 0.5], [4.0, 5.0, 1.0]], [[1, 1, 0], [1, 1, 1]], [1.0, 0.25])
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
        regret_rules([a, small_run()])
    with pytest.raises(ValueError, match=r"runs\[1\] brings the families to \['grouped', 'kmeans'\]"):
        regret_rules([a.assign(family=("truth", ["kmeans"] * 3)), b.assign(family=("truth", ["grouped"] * 2))])
    with pytest.raises(ValueError, match="runs hold no truth where select chose"):
        regret_rules([a.assign(regret=("truth", [nan] * 3))])


def test_regret_rules_count_a_real_dataset_once_and_add_the_selector_against_a_hand_count():
    """Two seeds of one family, each a synthetic truth and the same real dataset: ``real_once`` averages the real
    dataset's regrets over the seeds (three truths, not four); the budget-spending selector's row is over the truths
    where it chose."""
    nan = np.nan
    a = one_family_run([[1.0, 2.0, 4.0], [2.0, 1.0, 4.0]], [[1, 1, 1], [1, 1, 1]], [0.0, 1.0])
    b = one_family_run([[3.0, 1.0, 1.5], [2.0, 1.0, 4.0]], [[1, 1, 1], [1, 1, 1]], [0.5, 0.0])
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
