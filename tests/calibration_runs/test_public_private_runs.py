"""Public-private's stored runs give the numbers calibration.md and its history quote."""

from types import SimpleNamespace

import numpy as np
import pytest

from hybridpriv.calibration_runs import regret_rules, stored

from _support.stored_runs import synthetic_bins, fixed_regret, regret_summary, above_and_silent


def test_stored_public_private_seed3_gives_the_numbers_the_docs_quote():
    """Public-private's first held-out seed (twenty-fifth session), as calibration.md and its history quote it."""
    ds = stored("public-private-seed3")
    assert ds.attrs["seed"] == 3 and ds.sizes["truth"] == 33 and (ds.source.values == "synthetic").sum() == 30
    covered = ds.covered.values[ds.eligible.values == 1]
    assert covered.size == 261 and covered.mean() == pytest.approx(0.908, abs=5e-4)  # "ranges 90.8%"
    assert regret_summary(ds) == pytest.approx((0.0, 9.0, 28.6), abs=0.05)
    fixed = fixed_regret(ds, "candidate:public-only")
    assert (fixed.mean(), np.quantile(fixed, 0.9)) == pytest.approx((144.9, 425.5), abs=0.05)
    assert above_and_silent(ds) == (6, 1)
    silent = (ds.regret.values > 0.25) & (ds.sensitivity_warning.values == "") & (ds.p_costly_recommended.values < 0.25)
    assert list(ds.generator.values[silent]) == ["mean-shift"]
    bins = synthetic_bins(ds)
    assert bins["0.3-0.5"][1:] == (4, 15) and bins["0.3-0.5"][0] == pytest.approx(0.38, abs=0.005)  # 11.7 points
    assert bins["0.7-0.9"][1:] == (7, 10) and bins["0.7-0.9"][0] == pytest.approx(0.79, abs=0.005)  # 9.2 points


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
    assert regret_summary(ds) == pytest.approx((6.3, 21.1, 67.8), abs=0.05)
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
    assert regret_summary(ds) == pytest.approx(regret_summary(first), abs=0.05)
    assert regret_summary(ds) == pytest.approx((0.0, 9.0, 28.6), abs=0.05)
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
    assert regret_summary(ds) == pytest.approx((0.0, 9.7, 26.8), abs=0.05)
    np.testing.assert_array_equal(ds.plan_regret.values, ds.pythia_regret.values)  # the plan is the selector
    for key, values in (("now", ds.regret.values), ("refit", ds.pythia_regret.values)):
        x = values * 100
        assert np.isfinite(x).all()
        assert fam.plan_held_out["seeds"][5][key] == pytest.approx((x.mean(), np.quantile(x, 0.9)), abs=0.05), key
    assert above_and_silent(ds) == (5, 3)


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
    assert regret_summary(amd) == pytest.approx((0.0, 20.8, 62.5), abs=0.05)
    table = regret_rules([amd])
    assert tuple(table.loc["budget-spending selector", ["mean", "p90"]]) == pytest.approx((22.6, 58.9), abs=0.05)
    assert above_and_silent(amd) == (10, 3) and above_and_silent(intel) == (7, 1)
