"""groups_may_differ: each private group's law moved by its own shift (GroupedDataModel(group_shift=...)), checked
against independent computations: the prior's second moment, the records a draw generates, the population mean they
move, and a released group mean pulling its own group's shift."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hybridpriv.core.privacy import Bounds, Group
from hybridpriv.models import GroupedDataModel, ReleasedMean

BOUNDS = Bounds(0.0, 100.0)
GROUPS = (Group("panel", 200, math.inf), Group("a", 300, 1.0), Group("b", 100, 0.1))
FIT = dict(draws=1000, tune=500, chains=2)


@pytest.fixture(scope="module")
def panel() -> np.ndarray:
    return np.clip(np.random.default_rng(0).normal(40.0, 10.0, 200), 0, 100)


def _model(panel, **kw) -> GroupedDataModel:
    return GroupedDataModel(GROUPS, BOUNDS, family="normal", public_data={"panel": panel}, **kw)


def test_no_shift_without_the_option(panel):
    post = _model(panel).fit(draws=200, tune=200, chains=2, seed=1)
    assert "group_shift" not in post.idata["posterior"]
    assert post.shifts(0, 0) == {}
    with pytest.raises(ValueError, match="group_shift must be a number in \\[0, 1\\].*got 2"):
        _model(panel, group_shift=2)


@pytest.mark.slow
def test_shift_prior_second_moment(panel):
    """shift = sd x z with sd ~ HalfNormal(s), z ~ N(0, 1): E[shift^2] = E[sd^2] = s^2 (no data on the private
    groups).  4,000 draws; the tolerance is 4 standard errors of the mean of shift^2 (ESS over the chains)."""
    from arviz_stats import ess

    post = _model(panel, group_shift=0.05).fit(**FIT, seed=2)
    s = 0.05 * BOUNDS.width
    shift = post.idata["posterior"]["group_shift"]
    sq = shift**2
    for j in range(shift.shape[-1]):
        x = sq.isel({shift.dims[-1]: j})
        n_eff = float(ess(x.to_dataset(name="x"), method="mean")["x"])
        se = float(x.std()) / math.sqrt(n_eff)
        assert abs(float(x.mean()) - s**2) < 4 * se, (j, float(x.mean()), s**2, se)


@pytest.mark.slow
def test_generated_records_are_the_law_moved_by_the_draws_shift(panel):
    # the identity checked below holds for any draw, converged or not; one chain of 100 draws gave R-hat 1.111 for
    # mu on one machine (refused at 1.1) and passed on another (NUTS's draws differ in the last bits between
    # machines), so convergence is not judged here (the other tests of this file judge it)
    post = _model(panel, group_shift=0.05).fit(draws=100, tune=200, chains=1, seed=3, on_unconverged="ignore")
    c, d = 0, 37
    data = post.generate(c, d, np.random.default_rng(5))
    shifts = post.shifts(c, d)
    assert set(shifts) == {"a", "b"}
    # independent: the same generator replayed by hand
    rng = np.random.default_rng(5)
    p = post.params(c, d)
    moved = 0.0
    for g, values in zip(GROUPS, data.values):
        if g.name == "panel":
            np.testing.assert_array_equal(values, panel)
            continue
        x = np.clip(rng.normal(p["mu"], p["sigma"], g.size), 0, 100)
        y = np.clip(x + shifts[g.name], 0, 100)
        np.testing.assert_allclose(values, y)
        moved += y.sum() - x.sum()
    law_mean = post.family.population(p)["mean"]
    assert data.population["mean"] == pytest.approx(law_mean + moved / sum(g.size for g in GROUPS))
    assert set(data.population) == {"mean"}


@pytest.mark.slow
def test_a_released_mean_pulls_its_groups_shift(panel):
    """Group a's mean released at 55 (noise 0.2) beside a panel centred near 40: a's shift must explain the gap,
    a's released mean = mu + shift_a up to the Laplace noise and the records' sampling error (sd 10 / sqrt(300)),
    while b's shift keeps its prior (E[shift_b^2] far below the gap squared)."""
    # 200 draws after 300 tuning steps (400 / 400 until 2026-11-28, twice the time): at seeds 4, 5, 6 the three
    # checks below held with margins of at most 0.07 against 1.5 and a ratio of at most 0.07 against 0.5
    post = _model(panel, group_shift=0.2, released_means=[ReleasedMean(55.0, 0.2, "a")]).fit(draws=200, tune=300, chains=2,
                                                                                        seed=4)
    mu = np.asarray(post.idata["posterior"]["mu"]).ravel()
    shift = np.asarray(post.idata["posterior"]["group_shift"]).reshape(-1, 2)
    implied = mu + shift[:, 0]
    assert abs(implied.mean() - 55.0) < 1.5
    assert abs(shift[:, 0].mean() - (55.0 - mu.mean())) < 1.5
    assert abs(shift[:, 1].mean()) < 0.5 * abs(shift[:, 0].mean())


def test_spec_keys(tmp_path):
    from hybridpriv.spec import parse_spec

    raw = {"kind": "grouped", "bounds": [0, 100], "groups": [{"name": "g", "size": 100, "epsilon": 1.0}],
           "model": {"family": "normal"}}
    assert parse_spec(raw).problem().model.group_shift == 0.0
    on = {**raw, "model": {"family": "normal", "groups_may_differ": True}}
    assert parse_spec(on).problem().model.group_shift == 0.05
    med = {**on, "statistic": "median", "model": {**on["model"], "group_shift": 0.1}}
    assert parse_spec(med).problem().model.group_shift == 0.0  # a shift does not tell the population median
    assert parse_spec({**med, "evaluation": {"target": "sample"}}).problem().model.group_shift == 0.1
