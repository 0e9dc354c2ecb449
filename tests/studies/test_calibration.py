import numpy as np
import pytest
from hybridpriv.studies import calibration

from hybridpriv.calibration import BINS, regret_to_best, reliability, score, summarize
from hybridpriv.core.random import rng
from hybridpriv.families.grouped.heldout import REAL_GROUPED, grouped_truth, real_grouped_truth
from hybridpriv.families.hybrid_trust.heldout import REAL_HYBRID_TRUST, hybrid_trust_truth, real_hybrid_trust_truth
from hybridpriv.families.user_item.heldout import (
    POPULARITY,
    REAL_USER_ITEM,
    ROW_LAWS,
    real_user_item_truth,
    user_item_truth,
)
from hybridpriv.heldout import RECORD_LAWS as GROUPED_GENERATORS

pytestmark = pytest.mark.slow  # end-to-end runs (minutes on 2 cores)


# --- the scores, against hand computations ------------------------------------------------------------

def test_score_of_a_tiny_decision_by_hand():
    # candidate 2 has the lowest realised risk but is not eligible: the oracle is candidate 1
    s = score(expected=[1.0, 2.0, 3.0], low=[0.5, 1.5, 0.1], high=[1.5, 2.5, 0.2], p_best=[0.6, 0.4, 0.0],
              eligible=[True, True, False], realised=[1.2, 1.0, 0.5], recommended=0)
    assert s["oracle"] == 1
    assert s["regret"] == pytest.approx(0.2)  # 1.2 / 1.0 - 1
    assert s["covered"].tolist() == [True, False, False]  # 0.5<=1.2<=1.5; 1.0 < 1.5; 0.5 > 0.2
    assert s["is_best"].tolist() == [0.0, 1.0, 0.0]
    np.testing.assert_allclose(s["ratio"], [1 / 1.2, 2.0, 6.0])


def test_score_shares_ties_and_falls_back_to_all_candidates_when_none_is_eligible():
    s = score([1, 1, 1], [0, 0, 0], [9, 9, 9], [0.5, 0.5, 0], [True, True, True], [1.0, 1.0, 2.0], recommended=1)
    assert s["regret"] == 0.0 and s["oracle"] == 0 and s["is_best"].tolist() == [0.5, 0.5, 0.0]
    s = score([1, 1], [0, 0], [9, 9], [0.5, 0.5], [False, False], [3.0, 2.0], recommended=0)
    assert s["oracle"] == 1 and s["regret"] == pytest.approx(0.5)
    # the bounds of the range count as inside
    assert score([1], [2.0], [3.0], [1], [True], [3.0], 0)["covered"].tolist() == [True]


def test_regret_to_best_by_hand_one_truth_or_many():
    """Against the best eligible (all when none is): 0 at the best and on 0 / 0, infinite over a best of 0."""
    got = regret_to_best([[1.2, 1.0, 0.5], [3.0, 2.0, 4.0], [0.0, 0.0, 1.0]],
                         [[True, True, False], [False, False, False], [True, True, True]])
    np.testing.assert_allclose(got, [[0.2, 0.0, -0.5], [0.5, 0.0, 1.0], [0.0, 0.0, np.inf]])
    np.testing.assert_allclose(regret_to_best([1.2, 1.0, 0.5], [True, True, False]), [0.2, 0.0, -0.5])


def test_score_refuses_bad_input_naming_it():
    with pytest.raises(ValueError, match=r"low must have one entry per candidate \(2\)"):
        score([1, 2], [1], [1, 2], [1, 0], [True, True], [1.0, 2.0], 0)
    with pytest.raises(ValueError, match=r"recommended must be a candidate index in \[0, 2\), got 5"):
        score([1, 2], [1, 2], [1, 2], [1, 0], [True, True], [1.0, 2.0], 5)
    with pytest.raises(ValueError, match="realised must be finite and >= 0"):
        score([1, 2], [1, 2], [1, 2], [1, 0], [True, True], [np.nan, 2.0], 0)


def test_a_scopes_coverage_counts_the_eligible_candidates_alone():
    """A never-eligible candidate's range is printed but not acted on: the study's coverage leaves it out (K-means'
    local-only candidates lifted its held-out seed 3 from 62.9 to 72.7%)."""
    import xarray as xr

    from hybridpriv.calibration.run import _scope

    ds = xr.Dataset({"family": ("truth", ["kmeans", "kmeans", "grouped"]),
                     "regret": ("truth", [0.0, 0.5, 0.1]), "covered_recommended": ("truth", [1.0, 0.0, 1.0]),
                     "eligible": (("truth", "candidate"), [[1, 0], [1, 0], [1, 1]]),
                     "covered": (("truth", "candidate"), [[1.0, 1.0], [0.0, 1.0], [0.0, 1.0]]),
                     "ratio": (("truth", "candidate"), np.ones((3, 2)))})
    assert summarize(*_scope(ds, "kmeans"))["coverage"] == pytest.approx(1 / 2)  # 3 / 4 with the ineligible ones
    assert summarize(*_scope(ds, "overall"))["coverage"] == pytest.approx(2 / 4)
    assert summarize(*_scope(ds, "grouped"))["coverage"] == pytest.approx(1 / 2)


def test_summary_by_hand():
    s = summarize(regret=[0.0, 0.1, 0.02, 0.5, 0.0, np.nan],
                  covered=[[1, 0, np.nan], [1, 1, 1]], covered_recommended=[1, 0, 1, 1],
                  ratio=[[0.5, np.inf, 3.0], [2.0, np.nan, 1.0]])
    assert s["truths"] == 5 and s["refused"] == pytest.approx(1 / 6)
    assert s["regret_median"] == pytest.approx(0.02)
    # sorted 0, 0, 0.02, 0.1, 0.5: position 0.9 * 4 = 3.6 -> 0.1 + 0.6 * (0.5 - 0.1)
    assert s["regret_p90"] == pytest.approx(0.34)
    assert s["coverage"] == pytest.approx(4 / 5) and s["coverage_recommended"] == pytest.approx(3 / 4)
    assert s["correct"] == pytest.approx(2 / 5)
    assert s["ratio_median"] == pytest.approx(1.5)  # median of 0.5, 3, 2, 1
    assert np.isnan(summarize([], [], [])["regret_median"])


def test_reliability_bins_by_hand():
    pred, obs, n = reliability([0.05, 0.95, 0.5, 0.55, 1.0, np.nan], [0, 1, 1, 0, 1, 1])
    assert len(BINS) == 7 and n.tolist() == [1, 0, 0, 2, 0, 2]  # 0.5 opens the bin 0.5-0.7; 1.0 closes the last
    np.testing.assert_allclose(pred[[0, 3, 5]], [0.05, 0.525, 0.975])
    np.testing.assert_allclose(obs[[0, 3, 5]], [0.0, 0.5, 1.0])
    assert np.isnan(pred[1]) and np.isnan(obs[4])


# --- the truths: public knowledge only, reproducible ----------------------------------------------------

@pytest.mark.parametrize("i", range(len(GROUPED_GENERATORS)))
def test_grouped_truths_publish_only_the_panel(i):
    t = grouped_truth(i, rng(5, "t", i))
    assert t.generator == GROUPED_GENERATORS[i] and t.family == "grouped"
    panel, *private = t.spec["groups"]
    assert panel["data"] == t.data["panel"].tolist() and panel["epsilon"] == np.inf
    for g in private:
        assert "data" not in g and g["size"] == t.data[g["name"]].size
    assert len({g["epsilon"] for g in private}) == 3
    for v in t.data.values():
        assert v.min() >= 0 and v.max() <= 100
    again = grouped_truth(i, rng(5, "t", i))
    for name in t.data:
        np.testing.assert_array_equal(t.data[name], again.data[name])


@pytest.mark.parametrize("i", range(9))
def test_user_item_truths_publish_only_the_margins(i):
    t = user_item_truth(i, rng(5, "u", i), quick=True)
    assert t.generator == f"{ROW_LAWS[i % 3]}+{POPULARITY[i // 3]}"
    x = t.data.toarray()
    assert set(np.unique(x)) <= {0, 1} and (x.sum(1) >= 1).all()
    assert t.spec["column_sums"] == x.sum(0).tolist() and t.spec["n"] == x.shape[0]
    assert t.spec["k"] == [1, min(20, x.shape[1])]


@pytest.mark.parametrize("i", range(2 * len(GROUPED_GENERATORS)))
def test_hybrid_trust_truths_publish_only_pilots_sizes_and_epsilons(i):
    t = hybrid_trust_truth(i, rng(5, "h", i))
    assert t.family == "hybrid-trust" and t.generator == GROUPED_GENERATORS[i % 6] and t.spec["m"] == 100.0
    kn = t.spec["model"]
    assert set(kn) == {"pilot_tcm", "pilot_lm"} and 10 <= len(kn["pilot_tcm"]) <= 40 and 10 <= len(kn["pilot_lm"]) <= 40
    for unit in ("tcm", "lm"):
        assert t.spec[unit]["size"] == t.data[unit].size and set(t.spec[unit]) == {"name", "size", "epsilon"}
        assert t.data[unit].min() >= 0 and t.data[unit].max() <= 100
    n = t.data["tcm"].size + t.data["lm"].size
    assert 300 <= n <= 3000 and 0.02 - 1 / n <= t.data["tcm"].size / n <= 0.5 + 1 / n
    np.testing.assert_array_equal(t.dataset().values[0], t.data["tcm"])
    again = hybrid_trust_truth(i, rng(5, "h", i))
    for unit in ("tcm", "lm"):
        np.testing.assert_array_equal(t.data[unit], again.data[unit])
    assert again.spec == t.spec


def test_real_hybrid_trust_truths_keep_every_record_once():
    totals = {"acs12-income": 894, "boston-medv": 506, "faithful-waiting": 272, "salaries": 397}
    for name, m in REAL_HYBRID_TRUST.items():
        t = real_hybrid_trust_truth(name, rng(0, "r"))
        kn = t.spec["model"]
        n = len(kn["pilot_tcm"]) + len(kn["pilot_lm"]) + t.data["tcm"].size + t.data["lm"].size
        assert n == totals[name] and t.spec["m"] == m
        assert all(v.min() >= 0 and v.max() <= m for v in t.data.values())
    sal = real_hybrid_trust_truth("salaries", rng(0, "r"))
    assert (sal.spec["tcm"]["size"], sal.spec["lm"]["size"]) == (111, 246)  # the built-in example's groups
    # the example's private pooled mean (its header: 114.776)
    assert np.concatenate([sal.data["tcm"], sal.data["lm"]]).mean() == pytest.approx(114.776, abs=5e-4)


def test_real_truths_load_with_their_documented_sizes():
    sizes = {"acs12-hours": 959, "acs12-income": 894, "boston-medv": 506, "faithful-waiting": 272}
    for name, (lo, hi) in REAL_GROUPED.items():
        t = real_grouped_truth(name, rng(0, "r"))
        assert sum(v.size for v in t.data.values()) == sizes[name]
        assert all(v.min() >= lo and v.max() <= hi for v in t.data.values())
    hours = real_grouped_truth("acs12-hours", rng(0, "r"))
    assert [g["size"] for g in hours.spec["groups"]] == [150, 300, 400, 109]
    shape = {"insteval": (2904, 100), "flights-ua": (620, 47), "verbagg": (312, 24)}
    for name in REAL_USER_ITEM:
        assert real_user_item_truth(name).data.shape == shape[name]


# --- the quick study ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def quick():
    # no family ships a plan floor of its own today (user-item's 6% was dropped for the core's 8% on held-out
    # truths), so give user-item one here: the study must read and record the family's floor, not the core's
    from hybridpriv.families import family

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(type(family("user-item")), "plan_gain_floor", 0.06)
        return calibration.run(quick=True, seed=0)


def test_quick_study_structure(quick):
    ds = quick
    # every registered family with held-out truths (the sixth, histogram, joined without editing the study)
    assert ds.sizes["truth"] == 12
    assert list(ds.scope.values) == ["grouped", "user-item", "hybrid-trust", "public-private", "kmeans", "histogram",
                                     "overall"]
    assert ds["realised"].dims == ("truth", "candidate") and ds["reliability_observed"].dims == ("scope", "bin")
    assert sorted(set(ds.source.values)) == ["real", "synthetic"]
    for j in range(ds.sizes["truth"]):
        row = ds.isel(truth=j)
        have = np.isfinite(row.realised.values)
        assert have.sum() >= 2 and (row.realised.values[have] >= 0).all()
        # the scores are recomputed here from the stored numbers
        elig = (row.eligible.values == 1) & have
        names = ds.candidate.values
        best = names[have & elig][np.argmin(row.realised.values[have & elig])]
        prefix = {"user-item": "k", "kmeans": "algorithm", "public-private": "candidate"}.get(row.family.item(), "estimator")
        assert best == f"{prefix}:{row.oracle.item()}"
        rec = f"{prefix}:{row.recommended.item()}"
        r = float(row.realised.sel(candidate=rec)) / float(row.realised.sel(candidate=best)) - 1
        assert float(row.regret) == pytest.approx(r, abs=1e-12)
        inside = (row.risk_low <= row.realised) & (row.realised <= row.risk_high)
        np.testing.assert_array_equal(row.covered.values[have], inside.values[have])
    assert float(ds.truths.sel(scope="overall")) == 12 and not ds.select_refused.any()
    # what select prints of each family's ranges (Family.range_coverage), beside this run's coverage
    from hybridpriv.families import family

    for scope in ds.scope.values[:-1]:
        want = np.mean(list(family(str(scope)).range_coverage.values()))
        assert float(ds.coverage_recorded.sel(scope=scope)) == pytest.approx(want, abs=1e-12)
    assert np.isnan(float(ds.coverage_recorded.sel(scope="overall")))
    # what select's P(best) note reads (Family.p_best_held), bin by bin beside this run's reliability; NaN where never
    # measured (a bin hybrid trust never reached, the kinds not pooled: public-private, histogram) and overall
    assert list(ds.bin.values) == ["0-0.1", "0.1-0.3", "0.3-0.5", "0.5-0.7", "0.7-0.9", "0.9-1"]
    for scope in ds.scope.values:
        held = family(str(scope)).p_best_held if scope != "overall" else {}
        want = [held[b][1] if b in held else np.nan for b in ds.bin.values]
        np.testing.assert_array_equal(ds.reliability_recorded.sel(scope=scope).values, want)
    assert np.isfinite(ds.reliability_recorded.sel(scope="user-item").values).all()
    assert np.isfinite(ds.reliability_recorded.sel(scope="kmeans").values).all()  # pooled since seeds 4-7
    assert np.isnan(ds.reliability_recorded.sel(scope="public-private").values).all()
    assert ds.refused.dims == ("scope",) and float(ds.refused.sel(scope="overall")) == 0
    is_k = ds.family.values == "user-item"
    assert not ds.recommended_at_edge.values[~is_k].any() and not ds.oracle_at_edge.values[~is_k].any()
    assert np.nansum(ds.reliability_count.sel(scope="overall")) == int((ds.eligible == 1).sum())
    # the range a calibrated P(best) gives: present where the bin holds pairs, and holding the bin's mean report
    # within one pair's share of its ends (a share is a count over the bin's pairs)
    n, pred = ds.reliability_count.values, ds.reliability_predicted.values
    lo, hi = ds.reliability_low.values, ds.reliability_high.values
    assert (np.isfinite(lo) == (n > 0)).all() and (lo[n > 0] <= hi[n > 0]).all()
    assert (lo[n > 0] <= pred[n > 0] + 1 / n[n > 0]).all() and (pred[n > 0] <= hi[n > 0] + 1 / n[n > 0]).all()
    # predictive checks recorded beside the warnings, and counted apart from them
    assert ds.checks_flagged.dims == ("truth",) and all(isinstance(v, str) for v in ds.checks_flagged.values)
    flagged = ds.checks_flagged.values != ""
    for scope in ds.scope.values:
        m = np.ones(ds.sizes["truth"], bool) if scope == "overall" else ds.family.values == scope
        big = ds.regret.fillna(0.0).values > 0.25
        assert int(ds.checks_warnings.sel(scope=scope)) == int((flagged & m).sum())
        assert int(ds.regret_over_25pct_checked.sel(scope=scope)) == int((big & flagged & m).sum())
        assert int(ds.regret_over_25pct_warned_any.sel(scope=scope)) <= \
            int(ds.regret_over_25pct_warned_or_checked.sel(scope=scope)) <= int(ds.regret_over_25pct.sel(scope=scope))
    assert not flagged[np.isin(ds.family.values, ["user-item", "kmeans"])].any()  # no checks possible there
    # every truth's chance line recorded (the default), and the counts at other lines (warning_lines) per scope
    assert ds.chance_warning.dims == ("truth",) and np.all(ds.chance_warning.values == 0.25)
    assert list(ds.chance_line.values) == [0.25, 0.2, 0.15, 0.1, 0.05]
    for scope in ds.scope.values:
        row = ds.sel(scope=scope)
        assert int(row.silent_by_line.sel(chance_line=0.25)) == \
            int(row.regret_over_25pct) - int(row.regret_over_25pct_warned_any)
        assert np.all(np.diff(row.silent_by_line.values) <= 0) and np.all(np.diff(row.false_alarms_by_line.values) >= 0)


def test_realised_risk_of_the_public_mean_is_its_squared_bias(quick):
    """The public-only mean has no noise: its risk on a truth is (panel mean - mean of all records)^2."""
    truths = calibration.truths("quick", 0)
    for j, t in enumerate(truths):
        if t.family != "grouped":
            continue
        everything = np.concatenate(list(t.data.values()))
        want = (t.data["panel"].mean() - everything.mean()) ** 2
        got = float(quick.realised.isel(truth=j).sel(candidate="estimator:public-mean"))
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_the_budget_spending_selector_is_charged_the_same_total_and_scored_on_the_same_oracle(quick):
    ds = quick
    with_selector = ["grouped", "user-item", "hybrid-trust", "public-private", "kmeans", "histogram"]  # every kind
    assert sorted(with_selector) == sorted(set(ds.family.values))
    spent = np.isin(ds.family.values, with_selector)
    assert np.isfinite(ds.pythia_regret.values[spent]).all()
    for j in np.flatnonzero(spent):
        row = ds.isel(truth=j)
        prefix = {"user-item": "k", "kmeans": "algorithm", "public-private": "candidate"}.get(row.family.item(), "estimator")
        oracle = float(row.realised.sel(candidate=f"{prefix}:{row.oracle.item()}"))
        assert float(row.pythia_regret) == pytest.approx(float(row.pythia_realised) / oracle - 1, abs=1e-12)
    for scope in with_selector:
        keep = ds.family.values == scope
        wins = np.mean((ds.pythia_realised.values[keep] < ds.recommended_realised.values[keep])
                       + 0.5 * (ds.pythia_realised.values[keep] == ds.recommended_realised.values[keep]))
        assert float(ds.pythia_wins.sel(scope=scope)) == pytest.approx(wins)
        assert float(ds.pythia_regret_median.sel(scope=scope)) == pytest.approx(np.median(ds.pythia_regret.values[keep]))


def test_the_two_stage_plan_is_judged_and_carried_out_on_every_truth_with_a_probe(quick):
    """Every truth's selection judged a plan (every kind has a probe) and the study carried it out on the truth; what
    select recommended is the plan where it paid, else the choice now; the plan is scored on the same oracle."""
    ds = quick
    judged = np.isin(ds.family.values, ["grouped", "user-item", "public-private", "histogram", "kmeans",
                                        "hybrid-trust"])
    assert judged.all()
    assert np.isfinite(ds.plan_regret.values[judged]).all() and np.isnan(ds.plan_regret.values[~judged]).all()
    pays = ds.plan_pays.values
    np.testing.assert_array_equal(ds.final_regret.values[~pays], ds.regret.values[~pays])
    np.testing.assert_array_equal(ds.final_regret.values[pays], ds.plan_regret.values[pays])
    for j in np.flatnonzero(judged):
        row = ds.isel(truth=j)
        prefix = {"user-item": "k", "public-private": "candidate", "kmeans": "algorithm"}.get(row.family.item(),
                                                                                             "estimator")
        oracle = float(row.realised.sel(candidate=f"{prefix}:{row.oracle.item()}"))
        assert float(row.plan_regret) == pytest.approx(float(row.plan_realised) / oracle - 1, abs=1e-12)
        if row.family.item() not in ("public-private", "kmeans"):  # a plan that refits builds its own candidates
            assert f"{prefix}:{row.plan_choice.item()}" in ds.candidate.values
    assert float(ds.plan_truths.sel(scope="overall")) == judged.sum()
    # public-private's and K-means' probes refit, the budget-spending selector's procedure at the same share: run
    # once, both records are the refit's; select recommends neither on held-out evidence
    pp = np.isin(ds.family.values, ["public-private", "kmeans"])
    for v in ("regret", "realised"):
        np.testing.assert_array_equal(ds[f"pythia_{v}"].values[pp], ds[f"plan_{v}"].values[pp])
    np.testing.assert_array_equal(ds.pythia_recommended.values[pp], ds.plan_choice.values[pp])
    assert set(ds.plan_pays_by.values[pp]) <= {"analysis", ""}
    # the floor and the Monte Carlo test as recorded decide "pays" (so a floor can be scored again on stored runs);
    # the floor is the truth's family's own (user-item's, set by the fixture), else the cautious default
    from hybridpriv.engine.plan import PAYS_GAIN
    from hybridpriv.families import family
    gain, significant = ds.plan_gain.values[judged], ds.plan_significant.values[judged]
    assert np.isfinite(gain).all() and np.isnan(ds.plan_gain.values[~judged]).all()
    floor = ds.plan_gain_floor.values[judged]
    want = [0.06 if f == "user-item" else PAYS_GAIN for f in ds.family.values[judged]]
    np.testing.assert_array_equal(floor, want)
    assert family("user-item").plan_gain_floor is None and family("grouped").plan_gain_floor is None
    assert {0.06, PAYS_GAIN} <= set(floor.tolist()) and PAYS_GAIN == 0.08  # both families judged a plan
    by_analysis = significant & (gain >= floor)
    np.testing.assert_array_equal(pays[judged], by_analysis | (ds.plan_pays_by.values[judged] == "held-out"))
    np.testing.assert_array_equal(ds.plan_pays_by.values[judged] == "analysis", by_analysis)
    # only a kind whose refit paid on every held-out seed is recommended it that way: none today
    assert not (ds.plan_pays_by.values == "held-out").any()


def test_a_run_stored_as_records_reads_back_the_same(quick, tmp_path):
    """hybridpriv.calibration_runs keeps a run as CSV tables: every per-truth and per-pair variable of the quick
    study comes back (numbers to 6 digits, text as text, the candidates a truth's family lacks NaN again)."""
    from hybridpriv.calibration_runs import read_records, write_records

    write_records(quick, tmp_path, "quick", {"seed": 0, "scale": "quick"})
    back = read_records(tmp_path, "quick")
    kept = [v for v in quick.data_vars if "scope" not in quick[v].dims]
    assert sorted(back.data_vars) == sorted(kept) and back.attrs["scale"] == "quick"
    assert list(back.candidate.values) == list(quick.candidate.values)
    for v in kept:
        a, b = quick[v].values, back[v].transpose(*quick[v].dims).values
        if a.dtype.kind == "f":
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-12, err_msg=v)
        else:
            assert a.tolist() == b.tolist(), v


def test_one_kind_run_alone_gives_its_numbers_in_the_whole_study(quick, tmp_path):
    """``study run calibration --kinds histogram``: the histogram truths' every per-truth and per-pair number is the
    whole quick study's (each truth has its own seed streams), and a resume folder of another kind is refused."""
    from hybridpriv.cli import main
    from hybridpriv.studies import read_study

    out = tmp_path / "o"
    assert main(["study", "run", "calibration", "--quick", "--kinds", "histogram", "--out", str(out),
                 "--resume", str(tmp_path / "r"), "--quiet"]) == 0
    alone = read_study(out / "calibration.nc")
    assert set(alone.family.values) == {"histogram"} and '"kinds": ["histogram"]' in alone.attrs["config"]
    whole = quick.isel(truth=np.flatnonzero(quick.family.values == "histogram"))
    assert list(alone.truth.values) == list(whole.truth.values)
    cands = [str(c) for c in alone.candidate.values]
    for v in ("regret", "recommended", "p_costly_recommended", "pythia_regret", "realised", "expected_loss", "p_best",
              "risk_low", "risk_high", "eligible"):
        a = alone[v]
        b = whole[v].sel(candidate=cands) if "candidate" in whole[v].dims else whole[v]
        if a.dtype.kind == "f":
            np.testing.assert_array_equal(a.transpose(*b.dims).values, b.values, err_msg=v)
        else:
            assert a.values.tolist() == b.values.tolist(), v
    code = main(["study", "run", "calibration", "--quick", "--kinds", "grouped", "--out", str(out),
                 "--resume", str(tmp_path / "r"), "--quiet"])
    assert code == 2  # the checkpoint holds another configuration (its kinds)


def test_realised_risk_of_tcm_only_is_its_bias_plus_the_laplace_variance(quick):
    """TCM-only releases mean(TCM) + Laplace(m / (n_T epsilon_T)) (replace neighbours): its risk on a
    truth is (mean(TCM) - mean of all records)^2 + 2 b^2; the study's Monte Carlo within 5 of its
    standard errors."""
    truths = calibration.truths("quick", 0)
    checked = 0
    for j, t in enumerate(truths):
        if t.family != "hybrid-trust":
            continue
        tcm, everything = t.data["tcm"], np.concatenate([t.data["tcm"], t.data["lm"]])
        b = t.spec["m"] / (tcm.size * t.spec["tcm"]["epsilon"])
        want = (tcm.mean() - everything.mean()) ** 2 + 2 * b**2
        row = quick.isel(truth=j).sel(candidate="estimator:tcm-only")
        assert abs(float(row.realised) - want) < 5 * float(row.realised_mcse), (t.generator, float(row.realised), want)
        checked += 1
    assert checked == 2  # 1 synthetic + 1 real


def test_pythia_spec_charges_each_private_group_its_epsilon_in_total():
    from hybridpriv.families.grouped.heldout import pythia_spec

    t = calibration.truths("quick", 0)[0]
    draws = [pythia_spec(t.spec, t.data, 0.1, np.random.default_rng(s)) for s in range(4000)]
    spec = draws[0]
    before = {g["name"]: g for g in t.spec["groups"]}
    released = {r["group"]: r for r in spec["model"]["released_means"]}
    assert set(released) == {g["name"] for g in t.spec["groups"] if np.isfinite(g["epsilon"])}
    lo, hi = t.spec["bounds"]
    for g in spec["groups"]:
        eps = before[g["name"]]["epsilon"]
        if not np.isfinite(eps):
            assert g["epsilon"] == eps and g["name"] not in released
            continue
        r = released[g["name"]]
        spent = max(abs(lo), abs(hi)) / (g["size"] * r["noise_scale"])  # its epsilon, from the Laplace scale (add-remove)
        assert spent + g["epsilon"] == pytest.approx(eps) and spent == pytest.approx(0.1 * eps)
        # the released values: the group's mean plus Laplace noise of that scale (mean and sd within 4 s.e.)
        v = np.array([d["model"]["released_means"][list(released).index(g["name"])]["value"] for d in draws])
        truth_mean, sd = float(np.mean(t.data[g["name"]])), np.sqrt(2) * r["noise_scale"]
        assert abs(v.mean() - truth_mean) < 4 * sd / np.sqrt(v.size)
        assert abs(v.std() / sd - 1) < 4 * np.sqrt(5 / 4 / v.size)  # Laplace (kurtosis 6): var(s / sd) ~ (6 - 1) / (4 n)
    # the candidates' neighbouring relation decides the sensitivity: bounds [40, 100] -> 100 (add-remove), 60 (replace)
    shifted = {**t.spec, "bounds": [40.0, 100.0], "groups": [g for g in t.spec["groups"] if g["name"] != "panel"]}
    data = {k: np.clip(v, 40, 100) for k, v in t.data.items()}
    for relation, sens in (("add-remove", 100.0), ("replace", 60.0)):
        out = pythia_spec({**shifted, "relation": relation}, data, 0.1, np.random.default_rng(0))
        g, r = out["groups"][0], out["model"]["released_means"][0]
        assert r["noise_scale"] == pytest.approx(sens / (g["size"] * 0.1 * before[g["name"]]["epsilon"]))
    with pytest.raises(ValueError, match=r"share must be in \(0, 1\), got 1.5"):
        pythia_spec(t.spec, t.data, 1.5, np.random.default_rng(0))


def test_dp_items_histogram_is_the_histogram_plus_laplace_noise_of_scale_one_over_epsilon():
    import scipy.sparse as sp

    from hybridpriv.families.user_item.heldout import dp_items_histogram, pythia_user_item

    rows = [[0], [0, 1], [1, 2], [0, 1, 2], [2]]
    mat = sp.csr_matrix(([1] * 9, [j for r in rows for j in r], np.cumsum([0] * 1 + [len(r) for r in rows])), shape=(5, 3))
    gen = np.random.default_rng(0)
    draws = np.array([dp_items_histogram(mat, 0.5, gen) for _ in range(20000)])
    # counts (2, 2, 1); Laplace(2): sd 2 sqrt(2); mean within 4 s.e., sd within 4 s.e. (var(s/sd) ~ 5 / (4 n))
    np.testing.assert_array_less(np.abs(draws.mean(axis=0) - [2, 2, 1]), 4 * 2 * np.sqrt(2) / np.sqrt(20000))
    np.testing.assert_array_less(np.abs(draws.std(axis=0) / (2 * np.sqrt(2)) - 1), 4 * np.sqrt(5 / 4 / 20000))
    spec, prior = pythia_user_item({"kind": "user-item", "epsilon": 2.0}, mat, 0.1, gen)
    assert spec["epsilon"] == pytest.approx(1.8) and prior.log_pmf.shape == (3,)  # 0.2 + 1.8 = the whole 2.0
    assert np.exp(prior.log_pmf).sum() == pytest.approx(1.0)


def test_the_figure_is_written(quick, tmp_path):
    calibration.plot(quick, tmp_path / "c.png")
    assert (tmp_path / "c.png").stat().st_size > 10_000


# --- K-means truths -----------------------------------------------------------------------------------

@pytest.mark.parametrize("i", range(12))
def test_kmeans_truths_publish_only_the_pilot_the_setting_and_the_start(i):
    from hybridpriv.families.kmeans.heldout import CLUSTER_LAWS, kmeans_truth
    from hybridpriv.families.kmeans.model import pilot_start
    from hybridpriv.spec import parse_spec

    t = kmeans_truth(i, rng(5, "k", i))
    assert t.family == "kmeans" and t.generator.split("+")[0] == CLUSTER_LAWS[i % 6]
    assert t.generator.endswith("+trust-by-cluster") == ((i // 6) % 2 == 1)
    cloud, spec = t.data, t.spec
    assert set(spec["model"]) == {"pilot"} and 20 <= len(spec["model"]["pilot"]) <= 80
    assert spec["n"] == cloud.points.shape[0] and 300 <= spec["n"] <= 3000
    assert round(spec["c"] * spec["n"]) == int(cloud.trusted.sum())  # the model's split has the truth's sizes
    assert cloud.points.min() >= 0 and cloud.points.max() <= 1
    np.testing.assert_array_equal(cloud.init, pilot_start(np.array(spec["model"]["pilot"]), spec["k"]))
    problem = parse_spec(spec).problem()  # a SPEC select runs as it is
    assert problem.dim == "algorithm" and "public-start" in problem.candidates(None)
    again = kmeans_truth(i, rng(5, "k", i))
    np.testing.assert_array_equal(again.data.points, cloud.points) and again.spec == spec


def test_trust_by_cluster_concentrates_the_tcm_users_in_one_cluster():
    """Odd rounds: one cluster's users have 5x the odds of trusting the curator; seen as a TCM share that differs
    between the points nearest each start centre far more than a random split gives."""
    from hybridpriv.families.kmeans.heldout import kmeans_truth

    def spread(t):
        d = ((t.data.points[:, None, :] - t.data.init[None]) ** 2).sum(-1).argmin(1)
        shares = [t.data.trusted[d == j].mean() for j in np.unique(d) if (d == j).sum() >= 30]
        return max(shares) - min(shares)

    by_cluster = [spread(kmeans_truth(i, rng(1, "k", i))) for i in range(6, 12)]
    at_random = [spread(kmeans_truth(i, rng(1, "k", i))) for i in range(6)]
    assert np.median(by_cluster) > 2 * np.median(at_random) + 0.05


def test_real_kmeans_truths_keep_every_point_once_and_split_trust_by_the_attribute():
    from hybridpriv.families.kmeans.heldout import REAL_KMEANS, real_kmeans_truth

    totals = {"faithful": 272, "iris-petals": 150, "quakes-fiji": 1000, "crabs": 200, "penguins-sex": 333}
    # setosa, deep (>= 300 km), blue, male: in the source
    tcm = {"iris-petals": 50, "quakes-fiji": 453, "crabs": 100, "penguins-sex": 168}
    for name, (k, _) in REAL_KMEANS.items():
        t = real_kmeans_truth(name, rng(0, "r"))
        pilot = np.array(t.spec["model"]["pilot"])
        assert pilot.shape[0] + t.data.points.shape[0] == totals[name] and t.spec["k"] == k
        if name in tcm:  # the attribute's users among the private points, the rest in the pilot
            assert pilot.shape[0] == round(0.2 * totals[name])
            assert 0 < t.data.trusted.sum() <= tcm[name]
        else:
            assert pilot.shape[0] == 40 and t.data.trusted.sum() == round(0.25 * 232)


# --- public-private truths ----------------------------------------------------------------------------

def _read(path):
    import csv

    with open(path) as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("i", range(6))
def test_public_private_truths_publish_the_public_records_and_the_cohorts_table_one(i):
    from hybridpriv.families.public_private.heldout import SHIFT_LAWS, public_private_truth
    from hybridpriv.spec import parse_spec

    t = public_private_truth(i, rng(5, "p", i))
    assert t.family == "public-private" and t.generator == SHIFT_LAWS[i]
    spec = t.spec
    private = _read(f"{t.data['folder']}/private.csv")
    assert spec["private"]["n"] == len(private) and "private" not in spec["public_records"]
    for c in spec["columns"]:  # Table 1 recomputed here from the private file
        x = np.array([float(r[c]) for r in private])
        assert spec["private"]["covariate_mean"][c] == pytest.approx(x.mean(), abs=1e-6)
        assert spec["private"]["covariate_variance"][c] == pytest.approx(x.var(ddof=1), rel=1e-6)
    assert spec["private"]["outcome_rate"] == pytest.approx(np.mean([r["y"] == "1" for r in private]), abs=1e-6)
    design = t.dataset()  # read back by the release loader
    problem = parse_spec(spec).problem()
    assert design.private.shape[0] == len(private) and problem.dim == "candidate"
    again = public_private_truth(i, rng(5, "p", i))
    assert again.spec == spec and again.data["folder"] == t.data["folder"]  # content-addressed: the same files


def test_real_public_private_truths_split_by_the_attribute():
    from hybridpriv.families.public_private.heldout import REAL_PUBLIC_PRIVATE, real_public_private_truth

    sizes = {"pima": (200, 332), "swisslabor": (216, 656), "mroz": (212, 541)}  # (public, private) in the sources
    for name in REAL_PUBLIC_PRIVATE:
        t = real_public_private_truth(name)
        public = _read(t.spec["public_records"])
        assert (len(public), t.spec["private"]["n"]) == sizes[name]
    pima = real_public_private_truth("pima")
    # the pima example's published Table 1 (hybridpriv/examples/pima.toml)
    assert pima.spec["private"]["covariate_mean"]["glu"] == pytest.approx(119.259, abs=1e-3)
    assert pima.spec["private"]["covariate_variance"]["glu"] == pytest.approx(930.319, abs=1e-3)
    assert pima.spec["private"]["outcome_rate"] == pytest.approx(0.328, abs=1e-3)


def test_truths_run_as_tasks_of_a_client_give_the_same_numbers():
    from hybridpriv.calibration import calibrate
    from hybridpriv.engine.cluster import local_client
    from hybridpriv.engine.options import Engine
    from hybridpriv.families.histogram.heldout import histogram_truth
    from hybridpriv.families.kmeans.heldout import kmeans_truth

    truths = [kmeans_truth(0, rng(2, "k", 0), quick=True), histogram_truth(1, rng(2, "h", 1), quick=True)]
    settings = {"kmeans": {"evaluation": {"draws": 20, "trials": 3}}, "histogram": {"evaluation": {"draws": 20}}}
    options = {"realised_draws": 2, "realised_trials": 50}
    here = calibrate(truths, 3, settings, **options)
    client = local_client(2)
    try:
        there = calibrate(truths, 3, settings, engine=Engine(client), **options)
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()
    for v in ("realised", "expected_loss", "p_best", "regret"):
        np.testing.assert_array_equal(here[v].values, there[v].values)
