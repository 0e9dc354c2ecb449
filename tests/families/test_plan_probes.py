"""The families' two-stage plan probes: their features, their noise scales against a brute-force sensitivity, and
the second stage's candidates at the rest of the budget (the two stages charge each unit its whole epsilon)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from hybridpriv.spec import parse_spec

GROUPED = {"kind": "grouped", "bounds": [-20, 100], "relation": "add-remove",
           "groups": [{"name": "panel", "size": 30, "epsilon": "inf", "data": list(np.linspace(0, 90, 30))},
                      {"name": "a", "size": 50, "epsilon": 1.0},
                      {"name": "b", "size": 20, "epsilon": 0.2, "trust": "local"},
                      {"name": "c", "size": 40, "epsilon": 0.5}],
           "model": {"family": "normal"}}


def _grouped(**kw):
    raw = {**GROUPED, **kw}
    raw["groups"] = [{**g, "epsilon": math.inf} if g["epsilon"] == "inf" else g for g in raw["groups"]]
    return parse_spec(raw)


def test_grouped_probe_features_scales_and_later_budget():
    from hybridpriv.families.grouped import GroupedDataset

    spec = _grouped()
    problem = spec.problem()
    probe = problem.probe
    assert probe.share == 0.1 and "a, c" in probe.what  # the local group b is not probed
    # add-remove: one record more or less moves a group's sum by at most max(|lower|, |upper|) = 100
    np.testing.assert_allclose(probe.scales, [100 / (50 * 0.1 * 1.0), 100 / (40 * 0.1 * 0.5)])
    rng = np.random.default_rng(0)
    values = (np.linspace(0, 90, 30), rng.uniform(-20, 100, 50), rng.uniform(-20, 100, 20), rng.uniform(-20, 100, 40))
    data = GroupedDataset(values)
    np.testing.assert_allclose(probe.exact(data), [values[1].sum() / 50, values[3].sum() / 40])
    # brute force: the largest move of a feature over adding or removing one extreme record
    for j, (k, size) in enumerate(((1, 50), (3, 40))):
        base = values[k].sum() / size
        moves = [abs((values[k].sum() + x) / size - base) for x in (-20.0, 100.0)]
        moves += [abs((values[k].sum() - v) / size - base) for v in values[k]]
        assert max(moves) <= probe.scales[j] * 0.1 * spec.groups[k].epsilon + 1e-12
    post = problem.model.fit(draws=50, tune=50, chains=1, seed=0, on_unconverged="ignore")
    now = problem.candidates(post)
    later = probe.later(now, post)
    assert set(later) == set(now)
    eps = {g.name: g.epsilon for g in spec.groups}
    for label, mech in later.items():
        for unit, g in mech.privacy.items():
            if unit in ("a", "c") and g.relation == "add-remove":
                # the probe's share plus the second stage's charge fit in the unit's epsilon
                assert 0.1 * eps[unit] + g.epsilon <= eps[unit] * (1 + 1e-12), (label, unit)
            elif unit in ("a", "c"):  # Jorgensen's estimators declare under replace (never eligible here)
                assert g.epsilon <= now[label].privacy[unit].epsilon * (1 + 1e-12), (label, unit)
            else:  # a unit the probe does not read is charged no more than choosing now charges it
                assert g.epsilon <= now[label].privacy[unit].epsilon * (1 + 1e-12), (label, unit)
    for unit in ("a", "c"):  # the weighted mean spends each group's whole epsilon: 90% of it after the probe
        assert later["weighted"].privacy[unit].epsilon == pytest.approx(0.9 * now["weighted"].privacy[unit].epsilon)
    assert later["weighted"].privacy["b"].epsilon == pytest.approx(now["weighted"].privacy["b"].epsilon)


def test_grouped_no_probe_when_switched_off_or_nothing_to_probe():
    assert _grouped(evaluation={"plan_share": 0}).problem().probe is None
    only_local = {**GROUPED, "groups": [GROUPED["groups"][0] | {"epsilon": math.inf}, GROUPED["groups"][2]]}
    assert parse_spec(only_local).problem().probe is None


def test_plan_share_refused_out_of_range():
    from hybridpriv.spec import SpecError

    with pytest.raises(SpecError, match="plan_share must be <= 0.9, got 0.95"):
        _grouped(evaluation={"plan_share": 0.95})


def test_user_item_bins_histogram_and_sensitivity():
    from hybridpriv.families.user_item.plan import item_bins, items_histogram

    assert item_bins(1).tolist() == [1]
    assert item_bins(8).tolist() == [1, 2, 3, 5]
    assert item_bins(9).tolist() == [1, 2, 3, 5, 9]
    rng = np.random.default_rng(1)
    dense = (rng.uniform(size=(60, 12)) < rng.uniform(0, 0.6, (60, 1))).astype(np.int8)
    edges = item_bins(12)
    hist = items_histogram(sp.csr_matrix(dense), edges)
    counts = dense.sum(1)
    brute = [sum(1 for c in counts if lo <= c < hi) for lo, hi in zip(edges, [*edges[1:], 13])]
    assert hist.tolist() == brute
    # a user more or less moves the histogram by exactly 1 in L1 (or 0 for a user with no item)
    for u in range(dense.shape[0]):
        less = items_histogram(sp.csr_matrix(np.delete(dense, u, axis=0)), edges)
        assert np.abs(hist - less).sum() == (1 if counts[u] else 0)


def test_user_item_probe_scales_and_later_budget():
    spec = parse_spec({"kind": "user-item", "column_sums": [30, 20, 10, 5], "n": 40, "epsilon": 2.0,
                       "evaluation": {"plan_share": 0.25}})
    probe = spec.problem().probe
    np.testing.assert_allclose(probe.scales, np.full(3, 1 / (0.25 * 2.0)))
    from hybridpriv.families.user_item.mechanisms import ContributionBoundedCounts

    later = probe.later({1: ContributionBoundedCounts(1, 2.0), 3: ContributionBoundedCounts(3, 2.0)}, None)
    assert {k: m.epsilon for k, m in later.items()} == {1: 1.5, 3: 1.5}


HISTOGRAM = {"kind": "histogram", "categories": ["a", "b", "c"], "relation": "add-remove",
             "groups": [{"name": "panel", "size": 6, "epsilon": math.inf, "data": ["a", "b", "a", "c", "a", "b"]},
                        {"name": "opt-in", "size": 80, "epsilon": 1.0},
                        {"name": "strict", "size": 30, "epsilon": 0.2}],
             "evaluation": {"draws": 20, "trials": 5}}


@pytest.mark.parametrize("relation, moved", [("add-remove", 1.0), ("replace", 2.0)])
def test_histogram_probe_features_scales_and_later_budget(relation, moved):
    from hybridpriv.families.histogram.data import CategoryCounts

    spec = parse_spec({**HISTOGRAM, "relation": relation})
    problem = spec.problem()
    probe = problem.probe
    assert probe.share == 0.1 and "opt-in, strict" in probe.what  # the panel is not read
    counts = np.array([[3, 2, 1], [40, 30, 10], [5, 5, 20]])
    np.testing.assert_array_equal(probe.exact(CategoryCounts(counts)), [40, 30, 10, 5, 5, 20])
    # brute force: the L1 move of a group's features over every record added, removed or moved between categories
    for g, eps in ((1, 1.0), (2, 0.2)):
        moves = []
        for j in range(3):
            for sign in (1, -1):
                other = counts.copy()
                other[g, j] += sign
                moves.append((other, "add-remove"))
            for k in range(3):
                other = counts.copy()
                other[g, j] -= 1
                other[g, k] += 1
                moves.append((other, "replace"))
        l1 = max(np.abs(probe.exact(CategoryCounts(o)) - probe.exact(CategoryCounts(counts))).sum()
                 for o, rel in moves if rel == relation)
        assert l1 == moved
        at = slice(3 * (g - 1), 3 * g)
        np.testing.assert_allclose(probe.scales[at], l1 / (0.1 * eps))  # share x epsilon of the group's
        assert probe.mechanism.privacy[spec.groups[g].name].epsilon == pytest.approx(0.1 * eps)
    assert probe.mechanism.privacy["panel"].epsilon == 0.0
    post = problem.model.fit(draws=200, chains=2, seed=0)
    now = problem.candidates(post)
    later = probe.later(now, post)
    assert set(later) == set(now)
    for label, mech in later.items():
        for unit, eps in (("opt-in", 1.0), ("strict", 0.2)):
            assert 0.1 * eps + mech.privacy[unit].epsilon <= eps * (1 + 1e-12), (label, unit)
    assert later["weighted"].privacy["strict"].epsilon == pytest.approx(0.9 * now["weighted"].privacy["strict"].epsilon)
    with pytest.raises(ValueError, match=r"data must hold \(3 groups, 3 categories\) counts, got shape \(2, 3\)"):
        probe.exact(CategoryCounts(counts[:2]))


def test_histogram_probe_switched_off_and_its_release_law():
    assert parse_spec({**HISTOGRAM, "evaluation": {"plan_share": 0}}).problem().probe is None
    probe = parse_spec(HISTOGRAM).problem().probe
    counts = np.array([[3, 2, 1], [40, 30, 10], [5, 5, 20]])
    out = probe.mechanism.release(counts, np.random.default_rng(1), trials=20_000)
    sd = np.sqrt(2) * probe.scales
    assert np.all(np.abs(out.mean(axis=0) - probe.exact(counts)) < 4 * sd / np.sqrt(20_000))
    assert np.all(np.abs(out.std(axis=0) / sd - 1) < 4 * np.sqrt(5 / 4 / 20_000))  # a 5% error in a scale fails


HYBRID = {"format": 2, "kind": "hybrid-trust", "m": 250.0, "tcm": {"name": "junior", "size": 40, "epsilon": 1.0},
          "lm": {"name": "professors", "size": 60, "epsilon": 0.5},
          "model": {"pilot_tcm": [80.0, 95.0, 110.0, 70.0, 99.0], "pilot_lm": [120.0, 140.0, 160.0, 130.0, 150.0]},
          "fit": {"chains": 1, "tune": 100}, "evaluation": {"draws": 20, "trials": 2}}


@pytest.mark.parametrize("relation", ["replace", "add-remove"])
def test_hybrid_trust_probe_reads_the_tcm_group_alone_with_the_brute_force_sensitivity(relation):
    """The TCM group's mean (the LM group, local, is never read), on the model's datasets and on a release's data;
    its scale against the largest move of the mean over one record replaced, added or removed (brute force)."""
    from hybridpriv.families.grouped import GroupedDataset
    from hybridpriv.families.hybrid_trust.data import HybridReports

    probe = parse_spec({**HYBRID, "relation": relation}).problem().probe
    assert probe.share == 0.1 and probe.what == "the mean of group junior" and probe.by_hand == ""
    rng = np.random.default_rng(0)
    tcm, lm = rng.uniform(0, 250, 40), rng.uniform(0, 250, 60)
    np.testing.assert_allclose(probe.exact(GroupedDataset((tcm, lm))), [tcm.sum() / 40])
    np.testing.assert_allclose(probe.exact(HybridReports(tcm, lm + rng.laplace(0, 50, 60))), [tcm.sum() / 40])
    base = tcm.sum() / 40
    if relation == "replace":
        moves = [abs((tcm.sum() - v + x) / 40 - base) for v in tcm for x in (0.0, 250.0)]
    else:
        moves = [abs((tcm.sum() + x) / 40 - base) for x in (0.0, 250.0)] + [abs((tcm.sum() - v) / 40 - base)
                                                                            for v in tcm]
    assert max(moves) <= probe.scales[0] * 0.1 * 1.0 + 1e-12
    assert max(moves) >= 0.9 * probe.scales[0] * 0.1 * 1.0  # tight: no more noise than the sensitivity needs
    g = probe.mechanism.privacy
    assert g["junior"].epsilon == pytest.approx(0.1) and g["professors"].epsilon == 0.0


def test_hybrid_trust_probe_later_candidates_charge_the_tcm_group_the_rest():
    problem = parse_spec(HYBRID).problem()
    post = problem.model.fit(draws=30, tune=30, chains=1, seed=0, on_unconverged="ignore")
    now = problem.candidates(post)
    later = problem.probe.later(now, post)
    assert set(later) == set(now)
    for label, mech in later.items():
        for unit, g in mech.privacy.items():
            if unit == "junior":
                assert 0.1 * 1.0 + g.epsilon <= 1.0 + 1e-12, label
                if now[label].privacy[unit].epsilon > 0:
                    assert g.epsilon == pytest.approx(0.9 * now[label].privacy[unit].epsilon), label
            else:  # the LM group is not probed: charged what choosing now charges it
                assert g.epsilon == pytest.approx(now[label].privacy[unit].epsilon), (label, unit)


def test_hybrid_trust_no_probe_when_switched_off_or_not_pure_dp():
    assert parse_spec({**HYBRID, "evaluation": {**HYBRID["evaluation"], "plan_share": 0}}).problem().probe is None
    gauss = {**HYBRID, "noise": "gaussian", "tcm": {**HYBRID["tcm"], "delta": 1e-6},
             "lm": {**HYBRID["lm"], "delta": 1e-6}}
    assert parse_spec(gauss).problem().probe is None
