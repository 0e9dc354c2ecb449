"""The sixth family, histograms over public categories (issue 24): its formulas against Monte Carlo, its
privacy audited on its own pairs, its model against the conjugate posterior, and the whole path (select,
audit, release, calibrate) through the core, which it reached without a core edit."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from hybridpriv.core.privacy import Group
from hybridpriv.families.histogram.data import CATEGORY_DATA, CategoryCounts
from hybridpriv.families.histogram.mechanisms import (
    LaplaceHistograms,
    PooledHistogram,
    PublicHistogram,
    SampleHistogram,
)
from hybridpriv.families.histogram.model import CategoryModel
from hybridpriv.families.histogram.task import HistogramError
from hybridpriv.testing import audit_estimator

GROUPS = [Group("panel", 40, math.inf), Group("a", 300, 1.0), Group("b", 120, 0.25)]
CATS = ("x", "y", "z", "w")
COUNTS = CategoryCounts(np.array([[10, 20, 5, 5], [100, 90, 60, 50], [30, 30, 40, 20]]))


def mechanisms(relation="add-remove"):
    return [LaplaceHistograms(GROUPS, CATS, relation, "inverse-variance", 0.2),
            LaplaceHistograms(GROUPS, CATS, relation, "size"), PooledHistogram(GROUPS, CATS, relation),
            SampleHistogram(GROUPS, CATS, relation, "avg"), SampleHistogram(GROUPS, CATS, relation, "max"),
            PublicHistogram(GROUPS, CATS, relation)]


@pytest.mark.parametrize("k", range(3))
def test_exact_risk_agrees_with_monte_carlo(k):
    """||mean - shares||^2 + variance, against 20,000 releases (the sample mean of the loss within 5 s.e.)."""
    mech = mechanisms()[k]
    task = HistogramError()
    exact = task.exact_risk([mech], COUNTS, task.truth(COUNTS))[0]
    losses = task.loss(mech, mech.release(COUNTS, np.random.default_rng(k), 20_000), COUNTS, task.truth(COUNTS))
    assert abs(losses.mean() - exact) < 5 * losses.std() / math.sqrt(losses.size), (losses.mean(), exact)
    assert np.isnan(task.exact_risk([mechanisms()[3]], COUNTS, task.truth(COUNTS))[0])  # Sample: run, not exact


def test_inverse_variance_weights_by_hand_and_the_pooled_mean_is_unbiased():
    mech = LaplaceHistograms(GROUPS, CATS, "add-remove", "inverse-variance", 0.2)
    n, eps = np.array([40, 300, 120.0]), np.array([np.inf, 1.0, 0.25])
    v = 0.2 / n + np.where(np.isinf(eps), 0.0, 2.0 / np.where(np.isinf(eps), 1, eps) ** 2) / n ** 2
    assert np.allclose(mech.group_weights, (1 / v) / (1 / v).sum())
    mean, _ = PooledHistogram(GROUPS, CATS).mean_and_variance(COUNTS.counts.astype(float))
    assert np.allclose(mean, HistogramError.shares(COUNTS))


def test_sample_keeps_each_group_at_its_rate_and_divides_by_the_public_expected_count():
    """Keep probability (e^eps - 1)/(e^t - 1): the mean release is sum_g pi_g x_g / E[M] (20,000 releases, 5 s.e.)."""
    mech = SampleHistogram(GROUPS, CATS, "add-remove", "max")
    assert mech.t == 1.0 and mech.keep[1] == 1.0 and mech.keep[2] == pytest.approx(math.expm1(0.25) / math.expm1(1))
    rel = mech.release(COUNTS, np.random.default_rng(3), 20_000)
    expected = (mech.keep @ COUNTS.counts) / mech.expected_records
    se = rel.std(axis=0) / math.sqrt(rel.shape[0])
    assert np.all(np.abs(rel.mean(axis=0) - expected) < 5 * se)
    assert {u: g.epsilon for u, g in mech.privacy.items()} == {"panel": math.inf, "a": 1.0, "b": 0.25}
    half = SampleHistogram(GROUPS, CATS, "replace", "max")  # replace: eps/2 under add/remove, eps when charged
    assert half.privacy["b"].charge_to(GROUPS[2].requirement("replace")).epsilon == pytest.approx(0.25)


@pytest.mark.parametrize("relation", ["add-remove", "replace"])
def test_every_candidate_passes_its_audit_on_the_familys_own_pairs(relation):
    for mech in mechanisms(relation):
        data, _ = CATEGORY_DATA.base(mech, COUNTS), None
        for unit, report in audit_estimator(mech, data, samples=20_000, seed=1).items():
            assert report.verdict == "pass", (mech.label, unit, report.epsilon_lower_bound, report.epsilon)


def test_the_audit_catches_a_histogram_with_too_little_noise():
    class Leaky(LaplaceHistograms):
        def __init__(self, groups, categories, relation="add-remove"):
            super().__init__(groups, categories, relation, "size")
            self.scales = self.scales / 4.0
            self.label = "leaky"

    reports = audit_estimator(Leaky(GROUPS, CATS), COUNTS, samples=20_000, seed=2)
    assert reports["b"].verdict == "violation"


def test_the_model_is_the_conjugate_dirichlet_and_generates_the_groups_sizes():
    public = {"panel": np.array([10, 20, 5, 5])}
    post = CategoryModel(GROUPS, CATS, public, prior=0.5).fit(draws=2000, chains=2, seed=4)
    alpha = 0.5 + public["panel"]
    mean = post.p.reshape(-1, 4).mean(axis=0)
    sd = np.sqrt(alpha * (alpha.sum() - alpha) / (alpha.sum() ** 2 * (alpha.sum() + 1)))
    assert np.all(np.abs(mean - alpha / alpha.sum()) < 5 * sd / math.sqrt(4000))
    data = post.generate(1, 7, np.random.default_rng(0))
    assert data.counts.sum(axis=1).tolist() == [40, 300, 120] and data.counts[0].tolist() == [10, 20, 5, 5]
    again = post.generate(1, 7, np.random.default_rng(0))
    assert np.array_equal(data.counts, again.counts)


@pytest.mark.slow
def test_select_audit_release_and_a_second_release_refused(tmp_path, capsys):
    """The template as printed, from the command line: select, audit, release, then over budget."""
    import random

    from hybridpriv.cli import main
    from hybridpriv.spec import template

    spec = tmp_path / "h.toml"
    spec.write_text(template("histogram"))
    assert main(["select", str(spec), "--out", str(tmp_path / "sel"), "--draws", "50", "--quiet"]) == 0
    assert main(["audit", str(spec), "--candidate", "weighted", "--samples", "5000", "--quiet"]) == 0
    data = tmp_path / "data"
    data.mkdir()
    rnd = random.Random(1)
    (data / "opt-in.csv").write_text("answer\n" + "".join(rnd.choice("abc") + "\n" for _ in range(800)))
    (data / "strict.csv").write_text("".join(rnd.choice("abc") + "\n" for _ in range(300)))
    capsys.readouterr()
    argv = ["release", str(spec), "--data", str(data), "--selection", str(tmp_path / "sel" / "selection.nc")]
    assert main([*argv, "--out", str(tmp_path / "r1")]) == 0
    rec = json.loads((tmp_path / "r1" / "release.json").read_text())
    assert len(rec["released"]) == 3 and abs(sum(rec["released"]) - 1) < 0.2
    assert set(rec["charged"]) == {"panel", "opt-in", "strict"} and rec["randomness"]["laplace"]["calls"] >= 1
    capsys.readouterr()
    assert main([*argv, "--out", str(tmp_path / "r2")]) == 2
    assert "over its budget" in capsys.readouterr().err
    (data / "strict.csv").write_text("".join(rnd.choice("abc") + "\n" for _ in range(299)) + "secret-q\n")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "opt-in.csv").write_text((data / "opt-in.csv").read_text())
    (fresh / "strict.csv").write_text((data / "strict.csv").read_text())
    assert main([*argv[:3], str(fresh), *argv[4:], "--out", str(tmp_path / "r3")]) == 2
    err = capsys.readouterr().err
    assert "data row 300 of strict.csv is not one of the SPEC's categories" in err and "secret-q" not in err


@pytest.mark.slow
def test_calibration_runs_on_the_familys_truths():
    from hybridpriv.calibration import calibrate
    from hybridpriv.core.random import rng
    from hybridpriv.families import family

    fam = family("histogram")
    truths = [fam.synthetic_truth(0, rng(0, "calibration", "histogram", 0, "truth"), quick=True),
              fam.real_truth("acs12-hours-bands", None)]
    ds = calibrate(truths, 0, {"histogram": {"evaluation": {"draws": 60, "trials": 10}}}, realised_draws=2,
                   realised_trials=200)
    assert list(ds.family.values) == ["histogram", "histogram"] and np.isfinite(ds.regret.values).all()
    assert "estimator:weighted" in ds.candidate.values and np.isfinite(ds.realised.sel(candidate="estimator:weighted")).all()
