"""Released cell counts of the K-means family (hybridpriv.families.kmeans.cells) and the model that reads them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hybridpriv.families.kmeans.cells import (ReleasedCells, draw_cell_shares, laplace_cell_counts, pythia_kmeans,
                                              randomized_response_counts)
from hybridpriv.noise import rr_probabilities
from hybridpriv.families.kmeans.model import KMeansPilotModel, pilot_start


def _cells(rng, n=600, k=3):
    return rng.choice(k, size=n, p=[0.5, 0.3, 0.2][:k] if k == 3 else None)


def test_laplace_counts_are_unbiased_with_the_stated_sd():
    """4,000 releases: the mean count within 4 standard errors of the truth, the sd within 5% of sqrt(2) / eps."""
    rng = np.random.default_rng(0)
    cells = _cells(rng)
    true = np.bincount(cells, minlength=3)
    eps = 0.4
    draws = np.array([laplace_cell_counts(cells, 3, eps, rng).counts for _ in range(4000)])
    sd = math.sqrt(2) / eps
    assert np.all(np.abs(draws.mean(0) - true) < 4 * sd / math.sqrt(4000))
    np.testing.assert_allclose(draws.std(0), sd, rtol=0.05)
    assert laplace_cell_counts(cells, 3, eps, rng).noise_sd == pytest.approx(sd)


def test_randomized_response_is_eps_ldp_by_its_probabilities():
    """Second derivation: a report's likelihood ratio between any two true cells is p / q, which must be e^eps, and
    the k probabilities of a user's report sum to 1."""
    for k, eps in ((2, 0.1), (3, 1.0), (5, 2.5)):
        p, q = rr_probabilities(eps, k)
        assert p / q == pytest.approx(math.exp(eps), rel=1e-12)
        assert p + (k - 1) * q == pytest.approx(1.0, abs=1e-12)


def test_randomized_response_reports_follow_their_law_and_the_debiased_counts_are_unbiased():
    """4,000 releases of 600 users in 3 cells at eps 0.5: the debiased counts' means within 4 standard errors of the
    truth (a 5% bias of the smallest count, 6 users, is 3.5 of them), their sds within 5% of the formula's at the
    truth, and the stated noise_sd their largest (computed at the clipped estimates: within 10%)."""
    rng = np.random.default_rng(1)
    cells = _cells(rng)
    n, k, eps = cells.size, 3, 0.5
    true = np.bincount(cells, minlength=k).astype(float)
    rel = [randomized_response_counts(cells, k, eps, rng) for _ in range(4000)]
    draws = np.array([r.counts for r in rel])
    p, q = rr_probabilities(eps, k)
    want_sd = np.sqrt(true * p * (1 - p) + (n - true) * q * (1 - q)) / (p - q)
    assert np.all(np.abs(draws.mean(0) - true) < 4 * want_sd / math.sqrt(4000))
    np.testing.assert_allclose(draws.std(0), want_sd, rtol=0.05)
    stated = np.array([r.noise_sd for r in rel])
    assert abs(np.median(stated) / want_sd.max() - 1) < 0.10
    assert np.allclose(draws.sum(1), n)  # the debiasing keeps the group's size
    one = randomized_response_counts(cells, 1, eps, rng)
    assert one.counts == (float(n),) and one.noise_sd == 0.0


def test_cell_shares_are_the_counts_normalised_and_uniform_when_nothing_is_left():
    rng = np.random.default_rng(2)
    exact = draw_cell_shares(ReleasedCells("tcm", (30.0, 10.0, 0.0), 0.0), 5, rng)
    np.testing.assert_allclose(exact, np.tile([0.75, 0.25, 0.0], (5, 1)))
    gone = draw_cell_shares(ReleasedCells("lm", (-5.0, -1.0), 0.0), 3, rng)
    np.testing.assert_allclose(gone, 0.5)
    noisy = draw_cell_shares(ReleasedCells("lm", (300.0, 100.0), 20.0), 20000, rng)
    assert (noisy >= 0).all() and np.allclose(noisy.sum(1), 1)
    # the share of the first cell is 300 / 400 to first order; its sd by the delta method: 20 sqrt(100^2 + 300^2) / 400^2
    assert noisy[:, 0].mean() == pytest.approx(0.75, abs=0.002)
    assert noisy[:, 0].std() == pytest.approx(20 * math.sqrt(100**2 + 300**2) / 400**2, rel=0.05)


@pytest.mark.parametrize("bad, match", [
    (dict(group="all", counts=(1.0,), noise_sd=1.0), "group must be one of"),
    (dict(group="tcm", counts=(), noise_sd=1.0), "counts of group 'tcm'"),
    (dict(group="tcm", counts=(1.0, float("nan")), noise_sd=1.0), "counts of group 'tcm'"),
    (dict(group="lm", counts=(1.0,), noise_sd=-1.0), "noise_sd of group 'lm'"),
    (dict(group="lm", counts=(1.0,), noise_sd=float("inf")), "noise_sd of group 'lm'"),
])
def test_released_cells_refuse_bad_values_naming_them(bad, match):
    with pytest.raises(ValueError, match=match):
        ReleasedCells(**bad)


def _pilot(rng):
    centres = np.array([[0.2, 0.2], [0.8, 0.3], [0.5, 0.8]])
    return np.clip(np.vstack([c + 0.03 * rng.standard_normal((15, 2)) for c in centres]), 0, 1)


def test_the_model_draws_each_groups_users_cell_by_cell_from_the_released_shares():
    """With exact counts (noise_sd 0) the TCM users of every dataset come from cells in the released shares up to
    the multinomial's noise (400 datasets: the mean share within 4 standard errors), the LM users from theirs,
    every user a pilot point of its cell; the weights are the model's without cells, bit for bit."""
    rng = np.random.default_rng(3)
    pilot = _pilot(rng)
    k, n, c = 3, 1000, 0.2
    tcm, lm = np.array([180.0, 10.0, 10.0]), np.array([100.0, 400.0, 300.0])
    cells = [ReleasedCells("tcm", tuple(tcm), 0.0), ReleasedCells("lm", tuple(lm), 0.0)]
    plain = KMeansPilotModel(pilot, (0, 1), n, c, k, smoothing=0.0).fit(draws=200, chains=2, seed=4)
    post = KMeansPilotModel(pilot, (0, 1), n, c, k, smoothing=0.0, released_cells=cells).fit(draws=200, chains=2, seed=4)
    np.testing.assert_array_equal(plain.weights, post.weights)
    assert post.branches() == []  # trust follows the release: no branch left to check
    from hybridpriv.families.kmeans.algorithms import nearest_centre

    centres = pilot_start(pilot, k)
    pilot_cell = nearest_centre(pilot, centres)[0]
    got = {"tcm": [], "lm": []}
    for b in range(400):
        ds = post.generate(b % 2, b // 2, np.random.default_rng(b))
        assert ds.trusted.sum() == 200 and ds.points.shape == (n, 2)
        where = nearest_centre(ds.points, centres)[0]
        got["tcm"].append(np.bincount(where[ds.trusted], minlength=k) / 200)
        got["lm"].append(np.bincount(where[~ds.trusted], minlength=k) / 800)
    for group, want, size in (("tcm", tcm, 200), ("lm", lm, 800)):
        share = want / want.sum()
        se = np.sqrt(share * (1 - share) / size / 400)
        assert np.all(np.abs(np.mean(got[group], 0) - share) <= 4 * se + 1e-12), group
    assert set(map(tuple, ds.points)) <= set(map(tuple, pilot))  # smoothing 0: users are pilot points
    assert set(np.unique(pilot_cell)) == {0, 1, 2}


def test_a_group_without_a_release_follows_the_draws_own_cell_masses():
    rng = np.random.default_rng(5)
    pilot = _pilot(rng)
    post = KMeansPilotModel(pilot, (0, 1), 300, 0.3, 3, smoothing=0.0,
                            released_cells=[ReleasedCells("tcm", (90.0, 0.0, 0.0), 0.0)]).fit(draws=200, chains=2, seed=1)
    cell = post.model_spec.pilot_cells()
    masses = post.weights[0] @ np.eye(3)[cell]
    np.testing.assert_allclose(post.idata["posterior"]["cells_lm"].values[0], masses)
    ds = post.generate(0, 3, np.random.default_rng(0))
    from hybridpriv.families.kmeans.algorithms import nearest_centre

    assert (nearest_centre(ds.points[ds.trusted], pilot_start(pilot, 3))[0] == 0).all()


def test_the_model_refuses_cells_that_do_not_fit():
    rng = np.random.default_rng(6)
    pilot = _pilot(rng)
    with pytest.raises(ValueError, match=r"released_cells\[0\] \(group 'tcm'\) has 2 counts; .* k = 3"):
        KMeansPilotModel(pilot, (0, 1), 300, 0.3, 3, released_cells=[ReleasedCells("tcm", (1.0, 2.0), 1.0)])
    with pytest.raises(ValueError, match="names a group twice"):
        KMeansPilotModel(pilot, (0, 1), 300, 0.3, 3, released_cells=[ReleasedCells("lm", (1.0, 2.0, 3.0), 1.0)] * 2)
    with pytest.raises(TypeError, match=r"released_cells\[0\] must be a ReleasedCells, got dict"):
        KMeansPilotModel(pilot, (0, 1), 300, 0.3, 3, released_cells=[{"group": "tcm"}])


def test_the_selector_charges_every_user_the_same_total_and_releases_both_groups():
    from hybridpriv.core.random import rng as stream
    from hybridpriv.families.kmeans.heldout import kmeans_truth

    t = kmeans_truth(1, stream(0, "k", 1))
    spec = pythia_kmeans(t.spec, t.data, 0.1, np.random.default_rng(0))
    assert spec["epsilon"] == pytest.approx(0.9 * t.spec["epsilon"])
    released = {r["group"]: r for r in spec["model"]["released_cells"]}
    assert set(released) == {"tcm", "lm"}
    from hybridpriv.families.kmeans.algorithms import nearest_centre

    k = t.spec["k"]
    cells = nearest_centre(t.data.points, pilot_start(np.asarray(t.spec["model"]["pilot"]), k))[0]
    true_tcm = np.bincount(cells[t.data.trusted], minlength=k)
    assert np.all(np.abs(np.array(released["tcm"]["counts"]) - true_tcm) < 12 * released["tcm"]["noise_sd"])
    assert released["tcm"]["noise_sd"] == pytest.approx(math.sqrt(2) / (0.1 * t.spec["epsilon"]))
    assert "released_cells" not in t.spec["model"]  # the truth's SPEC is not changed
    with pytest.raises(ValueError, match="share must be in"):
        pythia_kmeans(t.spec, t.data, 1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="already has model.released_cells"):
        pythia_kmeans(spec, t.data, 0.1, np.random.default_rng(0))


def test_a_spec_with_released_cells_parses_and_says_where_trust_comes_from(tmp_path):
    from hybridpriv.core.random import rng as stream
    from hybridpriv.families.kmeans.heldout import kmeans_truth
    from hybridpriv.spec import SpecError, parse_spec

    t = kmeans_truth(0, stream(0, "k", 0))
    spec = pythia_kmeans(t.spec, t.data, 0.1, np.random.default_rng(0))
    problem = parse_spec(spec).problem()
    assert any(line.startswith("trust: from the released counts per cluster (tcm, lm)") for line in problem.header)
    k = t.spec["k"]
    bad = {**spec, "model": {**spec["model"], "released_cells": [{"group": "tcm", "counts": [1.0] * (k + 1),
                                                                   "noise_sd": 1.0}]}}
    with pytest.raises(SpecError, match=rf"model.released_cells\[0\].counts has {k + 1} numbers; .* k = {k}"):
        parse_spec(bad)
    twice = {**spec, "model": {**spec["model"], "released_cells": [spec["model"]["released_cells"][0]] * 2}}
    with pytest.raises(SpecError, match="model.released_cells names a group twice"):
        parse_spec(twice)
    neg = {**spec, "model": {**spec["model"], "released_cells": [{"group": "tcm", "counts": [1.0] * k,
                                                                   "noise_sd": -1.0}]}}
    with pytest.raises(SpecError, match=r"model.released_cells\[0\].noise_sd"):
        parse_spec(neg)
