"""User-item's stored runs (and grouped's seed 2, stored beside user-item's seed 10) give the numbers the docs quote."""

import numpy as np
import pytest

from hybridpriv.calibration_runs import stored, stored_names

from _support.stored_runs import final_regret, synthetic_bins


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
        r = final_regret(ds, floor) * 100
        assert (np.median(r), r.mean(), np.quantile(r, 0.9)) == pytest.approx((med, mean, p90), abs=0.05)
        assert (r > 25).sum() == above
    paid = ds.plan_significant.values.astype(bool) & (ds.plan_gain.values >= 0.06)
    assert paid.sum() == 1 and ds.plan_gain.values[paid][0] < 0.08  # the one plan 6% let pay, 8% refuses
    assert (ds.regret.values[paid][0], ds.plan_regret.values[paid][0]) == pytest.approx((0.173, 0.765), abs=5e-4)
    py = ds.pythia_regret.values * 100
    assert (py.mean(), np.quantile(py, 0.9)) == pytest.approx((15.9, 24.1), abs=0.05)  # the budget-spending selector
    # P(best) on the synthetic truths, eligible pairs: 0.5-0.7 "0.57 -> 3 of 7", 0.3-0.5 "0.40 -> 6 of 19"
    bins = synthetic_bins(ds)
    for label, reported, came, pairs in (("0.5-0.7", 0.57, 3, 7), ("0.3-0.5", 0.40, 6, 19), ("0.1-0.3", 0.22, 15, 64)):
        assert bins[label][1:] == (came, pairs) and bins[label][0] == pytest.approx(reported, abs=0.005)


def test_stored_user_item_seed10_and_grouped_seed2_give_the_numbers_the_docs_quote():
    """The twenty-fourth session's runs, as calibration.md and its history quote them."""
    ui = stored("user-item-seed10")
    assert ui.attrs["seed"] == 10 and ui.sizes["truth"] == 33 and ui.attrs["commit"] == "7d9f11b"
    assert (ui.plan_gain_floor.values == 0.08).all() and not ui.plan_pays.values.any()
    r = final_regret(ui, 0.08) * 100
    assert (np.median(r), r.mean(), np.quantile(r, 0.9)) == pytest.approx((6.0, 11.8, 35.9), abs=0.05)
    assert (r > 25).sum() == 5 and ((ui.sensitivity_warning.values != "") | (ui.p_costly_recommended.values >= 0.25))[r > 25].all()
    assert ui.covered.values[ui.eligible.values == 1].mean() == pytest.approx(0.826, abs=5e-4)
    py = ui.pythia_regret.values * 100
    assert (py.mean(), np.quantile(py, 0.9)) == pytest.approx((17.1, 24.0), abs=0.05)
    r4 = final_regret(ui, 0.04) * 100  # the 4% floor scored on the stored run: 3 paid, 10.6 / 24.9%
    assert (r4 != r).sum() == 3 and (r4.mean(), np.quantile(r4, 0.9)) == pytest.approx((10.6, 24.9), abs=0.05)
    bins = synthetic_bins(ui)
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
    bins = synthetic_bins(gr)
    assert bins["0.7-0.9"][1:] == (7, 13) and bins["0.5-0.7"][1:] == (6, 12) and bins["0-0.1"][1:] == (5, 50)
