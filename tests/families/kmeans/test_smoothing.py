"""``smoothing="refit"`` and ``"auto"``: the pilot's in-sample K-means cost turned into the cost on fresh users.

The claim (``hybridpriv.families.kmeans.model.cross_validated_smoothing``): the Bayesian bootstrap's users are
the pilot's own points, so the cost of the public start (fitted to them) is seen at its in-sample value; blurring
every resampled point by the cross-validated ``h`` makes the model's expected cost of the start the cost on
*fresh* users.  Tested against an independent computation: pilots drawn from a known Gaussian mixture, the start's
cost on 20,000 fresh points of that mixture, the model's expected cost from its own datasets.  The default,
``"refit"`` (``refit_spread``), also carries the pilot-to-pilot uncertainty of that optimism: its 5-95% ranges of
the start's cost must hold the fresh cost as often as they say, which the blur's do not.
"""

import math

import numpy as np
import pytest
from hybridpriv.core.random import rng
from hybridpriv.families.kmeans.model import MAX_SPREAD, SMOOTHING_FOLDS, cross_validated_smoothing, pilot_start, refit_spread
from hybridpriv.models import KMeansPilotModel

CENTRES = np.array([[0.25, 0.3], [0.7, 0.75], [0.3, 0.75]])
SD = 0.07


def _mixture(size: int, g: np.random.Generator) -> np.ndarray:
    return np.clip(CENTRES[g.integers(3, size=size)] + SD * g.standard_normal((size, 2)), 0.0, 1.0)


def _cost(points: np.ndarray, centres: np.ndarray) -> float:
    return float(((points[:, None, :] - centres[None]) ** 2).sum(-1).min(1).mean())


def test_formula_against_a_loop_over_the_folds():
    """Leave-one-out up to SMOOTHING_FOLDS points, else fold i mod 20: recomputed here point by point."""
    g = rng(0, "test", "smoothing", "loop")
    for m in (12, 57):
        pilot = _mixture(m, g)
        folds = min(m, SMOOTHING_FOLDS)
        fit = _cost(pilot, pilot_start(pilot, 3))
        cv = 0.0
        for i in range(m):
            keep = [j for j in range(m) if j % folds != i % folds]
            cv += _cost(pilot[i:i + 1], pilot_start(pilot[keep], 3)) / m
        assert cross_validated_smoothing(pilot, 3) == pytest.approx(math.sqrt(max(cv - fit, 0.0) / 2), rel=1e-12)


def test_the_models_cost_of_the_start_is_the_cost_on_fresh_users():
    """Over 60 pilots of 30 points: the model's expected cost of the public start (mean over 8 of its datasets of
    400 users) against the start's cost on 20,000 fresh points of the mixture.  The plain bootstrap is optimistic
    by 18% here (mean ratio 0.822: below 0.90, which shows the test has power); the blurred one is within 6%
    (1.016 when written)."""
    g = rng(0, "test", "smoothing", "fresh")
    fresh = _mixture(20_000, g)
    plain, auto = [], []
    for r in range(60):
        pilot = _mixture(30, g)
        start = pilot_start(pilot, 3)
        truth = _cost(fresh, start)
        for rule, out in ((0.0, plain), ("auto", auto)):
            post = KMeansPilotModel(pilot, (0.0, 1.0), n=400, c=0.5, k=3, smoothing=rule).fit(
                draws=8, chains=1, seed=r, on_unconverged="ignore")
            model = np.mean([_cost(post.generate(0, d, rng(r, "test", "smoothing", d)).points, start)
                             for d in range(8)])
            out.append(model / truth)
    assert np.mean(plain) < 0.90
    assert np.mean(auto) == pytest.approx(1.0, abs=0.06)


@pytest.mark.slow
def test_refit_ranges_hold_the_starts_cost_on_fresh_users():
    """``smoothing="refit"`` (the default): over 60 pilots of 30 points, the 5-95% range of the model's cost of the
    public start (100 datasets of 400 users) holds the start's cost on 20,000 fresh points in at least 80% of the
    pilots (58 of 60 when written), and its mean is within 10% of that cost (1.067); the blur's ranges held 41 of 60
    (it gets the mean, 1.02, but not the pilot-to-pilot uncertainty), which shows the test can fail."""
    g = rng(0, "test", "smoothing", "fresh")
    fresh = _mixture(20_000, g)
    held = {"refit": 0, "auto": 0}
    ratio = []
    for r in range(60):
        pilot = _mixture(30, g)
        start = pilot_start(pilot, 3)
        truth = _cost(fresh, start)
        for rule in held:
            post = KMeansPilotModel(pilot, (0.0, 1.0), n=400, c=0.5, k=3, smoothing=rule,
                                    trust_may_follow_clusters=False).fit(draws=100, chains=1, seed=r,
                                                                          on_unconverged="ignore")
            costs = np.array([_cost(post.generate(0, d, rng(r, "test", "smoothing", d)).points, start)
                              for d in range(100)])
            low, high = np.quantile(costs, [0.05, 0.95])
            held[rule] += int(low <= truth <= high)
            if rule == "refit":
                ratio.append(costs.mean() / truth)
    assert held["refit"] >= 48 and held["auto"] < 48
    assert np.mean(ratio) == pytest.approx(1.0, abs=0.10)


def test_refit_spread_against_a_loop_and_on_a_pilot_that_fits_itself():
    """Each draw's factor recomputed by hand (same generator), and the two edge cases: a pilot of k distinct points
    fits every bootstrap pilot of its own points exactly (factor MAX_SPREAD unless the bootstrap kept them all:
    then 0 / 0 -> 1), and the default names the rule and blurs nothing."""
    pilot = _mixture(25, rng(0, "test", "smoothing", "refit"))
    w = rng(1, "test", "smoothing", "refit").dirichlet(np.ones(25), size=6)
    got = refit_spread(pilot, 3, w, rng(2, "test", "smoothing", "refit"))
    g = rng(2, "test", "smoothing", "refit")
    for b in range(6):
        idx = g.choice(25, 25, p=w[b] / w[b].sum())
        start = pilot_start(pilot[idx], 3)
        d2 = ((pilot[:, None, :] - start[None]) ** 2).sum(-1).min(1)
        assert got[b] == pytest.approx((w[b] @ d2) / d2[idx].mean(), rel=1e-12)
    two = np.array([[0.2, 0.2], [0.8, 0.8]])
    spread = refit_spread(two, 2, np.full((40, 2), 0.5), rng(3, "test", "smoothing", "refit"))
    assert set(np.unique(spread)) <= {1.0, MAX_SPREAD} and (spread == MAX_SPREAD).any() and (spread == 1.0).any()
    with pytest.raises(ValueError, match=r"weights must be \(draws, 25\) for a pilot of shape \(25, 2\), got \(6, 24\)"):
        refit_spread(pilot, 3, w[:, :24], rng(0, "t"))
    model = KMeansPilotModel(pilot, (0.0, 1.0), n=100, c=0.5, k=3)
    assert (model.smoothing_rule, model.smoothing) == ("refit", 0.0)
    post = model.fit(draws=50, chains=2, seed=4)
    assert post.idata["posterior"]["spread"].shape == (2, 50) and (post.idata["posterior"]["spread"] > 0).all()


def test_auto_is_still_offered_and_says_so():
    pilot = _mixture(40, rng(0, "test", "smoothing", "default"))
    model = KMeansPilotModel(pilot, (0.0, 1.0), n=100, c=0.5, k=3, smoothing="auto")
    assert model.smoothing_rule == "auto"
    assert model.smoothing == pytest.approx(cross_validated_smoothing(pilot, 3), rel=1e-12) and model.smoothing > 0
    given = KMeansPilotModel(pilot, (0.0, 1.0), n=100, c=0.5, k=3, smoothing=np.float64(0.01))
    assert (given.smoothing_rule, given.smoothing) == ("given", 0.01)


def test_refusals_name_the_parameter_and_the_value():
    pilot = _mixture(40, rng(0, "test", "smoothing", "bad"))
    for bad in (-0.1, math.inf, "blur", True, None):
        with pytest.raises(ValueError, match=f"smoothing must be a finite number >= 0, 'refit' or 'auto', got {bad!r}"):
            KMeansPilotModel(pilot, (0.0, 1.0), n=100, c=0.5, k=3, smoothing=bad)
    # leave-one-out of 3 points leaves 2 to fit 3 centres
    with pytest.raises(ValueError, match="smoothing='auto' .* more than k = 3 pilot points .* the pilot has 3"):
        KMeansPilotModel(pilot[:3], (0.0, 1.0), n=100, c=0.5, k=3, smoothing="auto")
    with pytest.raises(ValueError, match="smoothing='refit' fits k = 3 centres to the pilot: it needs at least k pilot "
                                         "points, got 2"):
        KMeansPilotModel(pilot[:2], (0.0, 1.0), n=100, c=0.5, k=3, start="uniform", trust_may_follow_clusters=False)
    with pytest.raises(ValueError, match=r"pilot must be an \(m, d\) array"):
        cross_validated_smoothing(pilot[:, 0], 2)
