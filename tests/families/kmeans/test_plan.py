"""The K-means two-stage plan (hybridpriv.families.kmeans.plan): the cell-count probe, its simulated releases, the
SPEC of its second stage, and how select and release treat it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hybridpriv.core.random import rng as stream
from hybridpriv.families.kmeans.algorithms import PointCloud
from hybridpriv.families.kmeans.cells import randomized_response_counts, rr_count_sd
from hybridpriv.families.kmeans.heldout import kmeans_truth
from hybridpriv.families.kmeans.model import pilot_start
from hybridpriv.families.kmeans.plan import CellCountsProbe, kmeans_probe, refit_spec

CENTRES = np.array([[0.2, 0.2], [0.8, 0.3], [0.5, 0.8]])


def _cloud(rng, n_tcm=40, n_lm=160):
    points = np.clip(CENTRES[rng.integers(0, 3, n_tcm + n_lm)] + 0.1 * rng.standard_normal((n_tcm + n_lm, 2)), 0, 1)
    return PointCloud(points, np.arange(n_tcm + n_lm) < n_tcm, (0.0, 1.0))


def test_exact_counts_are_each_groups_users_per_nearest_centre_by_brute_force():
    rng = np.random.default_rng(0)
    data = _cloud(rng)
    probe = CellCountsProbe(CENTRES, 40, 160, 2.0)
    want = np.zeros(6)
    for x, trusted in zip(data.points, data.trusted):
        j = min(range(3), key=lambda c: sum((x[i] - CENTRES[c][i]) ** 2 for i in range(2)))
        want[j + (0 if trusted else 3)] += 1
    np.testing.assert_array_equal(probe.exact(data), want)


def test_simulated_releases_follow_the_law_of_one_report_per_user():
    """20,000 simulated releases of fixed exact counts against 4,000 releases by one randomized response per user
    (randomized_response_counts) and the Laplace law: every count unbiased (within 4 standard errors), every sd
    within 5% of the formula's (rr_count_sd; sqrt 2 / (share eps)) in both, so a 5% bias in either is seen."""
    rng = np.random.default_rng(1)
    probe = CellCountsProbe(CENTRES, 40, 160, 2.0, share=0.25)  # 0.5 spent
    exact = np.array([10.0, 12.0, 18.0, 90.0, 50.0, 20.0])
    sims = probe.simulate(np.tile(exact, (20_000, 1)), rng)
    tcm_sd = math.sqrt(2) / 0.5
    lm_sd = rr_count_sd(exact[3:], 160, 0.5, 3)
    sd = np.concatenate([np.full(3, tcm_sd), lm_sd])
    assert np.all(np.abs(sims.mean(0) - exact) < 4 * sd / math.sqrt(20_000))
    np.testing.assert_allclose(sims.std(0), sd, rtol=0.05)
    cells = np.repeat(np.arange(3), exact[3:].astype(int))
    per_user = np.array([randomized_response_counts(cells, 3, 0.5, rng).counts for _ in range(4000)])
    np.testing.assert_allclose(per_user.std(0), lm_sd, rtol=0.05)
    assert np.all(np.abs(per_user.mean(0) - exact[3:]) < 4 * lm_sd / math.sqrt(4000))
    np.testing.assert_allclose(sims[:, 3:].sum(1), 160)  # debiasing keeps the group's size


def test_release_and_simulate_agree_on_a_dataset():
    """The release (one report per user) and the simulation from its exact counts: the same mean and sd per count
    (3,000 each; means within 4 standard errors of the difference, sds within 8%)."""
    rng = np.random.default_rng(2)
    data = _cloud(rng)
    probe = CellCountsProbe(CENTRES, 40, 160, 1.0)
    released = probe.release(data, rng, trials=3000)
    simulated = probe.simulate(np.tile(probe.exact(data), (3000, 1)), rng)
    se = np.sqrt(released.var(0) / 3000 + simulated.var(0) / 3000)
    assert np.all(np.abs(released.mean(0) - simulated.mean(0)) < 4 * se)
    np.testing.assert_allclose(released.std(0), simulated.std(0), rtol=0.08)


def test_the_probe_charges_share_of_epsilon_under_each_groups_relation():
    from hybridpriv.core import events

    probe = CellCountsProbe(CENTRES, 40, 160, 2.0, share=0.1)
    g = probe.privacy
    assert (g["tcm"].epsilon, g["tcm"].relation, g["tcm"].trust) == (pytest.approx(0.2), "add-remove", "central")
    assert (g["lm"].epsilon, g["lm"].relation, g["lm"].trust) == (pytest.approx(0.2), "replace", "local")
    ev = probe.privacy_events
    assert events.epsilon(ev["tcm"]) == pytest.approx(0.2, rel=1e-6)
    assert events.epsilon(ev["lm"], relation="replace") == pytest.approx(0.2, rel=1e-3)
    # the weights' scales: Laplace 1 / 0.2 for TCM, the LM sd at an even spread over sqrt 2
    np.testing.assert_allclose(probe.scales[:3], 5.0)
    np.testing.assert_allclose(probe.scales[3:], rr_count_sd(np.full(3, 160 / 3), 160, 0.2, 3) / math.sqrt(2))


@pytest.mark.parametrize("kw, match", [
    ({"share": 0.0}, r"share must be in \(0, 1\), got 0.0"),
    ({"share": 1}, r"share must be in \(0, 1\), got 1"),
    ({"epsilon": math.inf}, "epsilon must be finite"),
    ({"n_lm": 0}, "n_lm"),
    ({"centres": [[0.5, 0.5]]}, r"centres must be \(k >= 2, d\)"),
])
def test_the_probe_refuses_bad_settings_naming_them(kw, match):
    args = {"centres": CENTRES, "n_tcm": 40, "n_lm": 160, "epsilon": 1.0, "share": 0.1, **kw}
    with pytest.raises(ValueError, match=match):
        CellCountsProbe(**args)


def test_the_probe_refuses_data_of_other_group_sizes_without_showing_private_values():
    rng = np.random.default_rng(3)
    probe = CellCountsProbe(CENTRES, 41, 159, 1.0)
    with pytest.raises(ValueError, match="public group sizes: 41 TCM users and 159 LM users") as err:
        probe.exact(_cloud(rng))
    assert "40" not in str(err.value)
    with pytest.raises(ValueError, match="exact LM counts must be >= 0 and sum to n_lm"):
        probe.simulate(np.array([[1.0, 2.0, 3.0, 100.0, 10.0, 10.0]]), rng)


def test_refit_spec_adds_the_release_at_the_rest_of_the_budget_and_parses():
    from hybridpriv.spec import parse_spec

    t = kmeans_truth(0, stream(0, "k", 0))
    k, eps = t.spec["k"], t.spec["epsilon"]
    trusted = np.asarray(t.data.trusted)
    probe = CellCountsProbe(pilot_start(np.asarray(t.spec["model"]["pilot"]), k), int(trusted.sum()),
                            int((~trusted).sum()), eps, 0.1)
    observed = probe.release(t.data, np.random.default_rng(0))[0]
    raw = refit_spec(t.spec, probe.released_cells(observed), 0.1)
    assert raw["epsilon"] == pytest.approx(0.9 * eps)
    assert raw["evaluation"]["plan_share"] == 0.0
    cells = {r["group"]: r for r in raw["model"]["released_cells"]}
    assert cells["tcm"]["counts"] == pytest.approx(list(observed[:k]))
    assert cells["lm"]["counts"] == pytest.approx(list(observed[k:]))
    assert cells["tcm"]["noise_sd"] == pytest.approx(math.sqrt(2) / (0.1 * eps))
    problem = parse_spec(raw).problem()
    assert problem.probe is None  # no plan of its own
    assert "released_cells" not in t.spec["model"]
    with pytest.raises(ValueError, match="already has model.released_cells"):
        refit_spec(raw, probe.released_cells(observed), 0.1)
    with pytest.raises(ValueError, match=r"observed must hold \d+ finite released counts"):
        probe.released_cells(observed[:-1])


def test_a_kmeans_spec_judges_the_plan_by_default_and_only_where_cells_exist():
    from hybridpriv.spec import parse_spec

    t = kmeans_truth(0, stream(0, "k", 0))
    problem = parse_spec(t.spec).problem()
    assert problem.probe is not None and problem.probe.share == pytest.approx(0.1)
    assert problem.probe.by_hand == "" and "randomized response" in problem.probe.noise  # release carries it out
    later = problem.probe.later(problem.candidates(None), None)
    assert set(later) == set(problem.candidates(None))
    assert all(m.epsilon == pytest.approx(0.9 * t.spec["epsilon"]) for m in later.values() if m.epsilon > 0)
    v = parse_spec(t.spec).values
    assert kmeans_probe(v.replace(model=v.model.replace(start="uniform")), 0.1, None) is None
    assert kmeans_probe(v.replace(k=1), 0.1, None) is None
    off = parse_spec({**t.spec, "evaluation": {**t.spec.get("evaluation", {}), "plan_share": 0}}).problem()
    assert off.probe is None
