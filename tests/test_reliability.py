"""The range a calibrated P(best) gives in each reliability bin (hybridpriv.reliability), against an exact
Poisson-binomial, and its coverage for calibrated and miscalibrated reports."""

from __future__ import annotations

import numpy as np
import pytest

from hybridpriv.reliability import BINS, reliability, reliability_band


def _poisson_binomial(p: np.ndarray) -> np.ndarray:
    """The exact law of a sum of independent Bernoulli(p_i), by convolution (an independent computation)."""
    law = np.array([1.0])
    for q in p:
        law = np.convolve(law, [1.0 - q, q])
    return law


def test_the_band_is_the_exact_poisson_binomial_range_when_pairs_are_independent():
    # two candidates per truth: p in 0.1-0.3, 1 - p in 0.7-0.9; each bin holds one pair per truth, so its wins are a
    # sum of independent Bernoullis
    rng = np.random.default_rng(1)
    p = rng.uniform(0.1, 0.3, 40)
    lo, hi = reliability_band(np.stack([p, 1 - p], axis=1), draws=40_000, rng=np.random.default_rng(2))
    for k, probs in ((1, p), (4, 1 - p)):
        cdf = np.cumsum(_poisson_binomial(probs))
        a, b = round(lo[k] * 40), round(hi[k] * 40)
        # each end is the exact law's quantile: the cdf reaches 2.5% (97.5%) there and not one count before
        # (Monte Carlo error of a cdf at 40,000 draws: under 0.001; slack 0.004)
        assert cdf[a] >= 0.025 - 0.004 and (a == 0 or cdf[a - 1] <= 0.025 + 0.004), (k, a, cdf[max(a - 1, 0):a + 1])
        assert cdf[b] >= 0.975 - 0.004 and cdf[b - 1] <= 0.975 + 0.004, (k, b, cdf[b - 1:b + 1])
    assert np.isnan(lo[[0, 2, 3, 5]]).all()


def _study(rng: np.random.Generator, truths: int, flatten: float) -> tuple[np.ndarray, np.ndarray]:
    """Reports from a Dirichlet; winners drawn from the reports (``flatten`` 0) or from a flatter law (the reports
    overconfident)."""
    p = rng.dirichlet(np.full(5, 0.5), truths)
    true = (1 - flatten) * p + flatten / 5
    winner = (rng.random(truths)[:, None] >= np.cumsum(true, axis=1)).sum(axis=1).clip(max=4)
    y = np.zeros_like(p)
    y[np.arange(truths), winner] = 1.0
    return p, y


def _outside(p: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    _, obs, n = reliability(p, y)
    lo, hi = reliability_band(p, draws=2000, rng=rng)
    return (n > 0) & ((obs < lo - 1e-12) | (obs > hi + 1e-12))


def test_calibrated_reports_fall_outside_rarely_and_overconfident_ones_are_caught():
    rng = np.random.default_rng(3)
    calibrated = np.array([_outside(*_study(rng, 40, 0.0), rng) for _ in range(300)])
    # per bin a 95% range of a discrete law: at most about 5% outside (300 studies: s.e. 1.3 points)
    share = calibrated.mean(axis=0)
    assert (share <= 0.08).all(), share
    overconfident = np.array([_outside(*_study(rng, 40, 0.6), rng) for _ in range(100)])
    # the winners drawn 60% from a uniform choice: the lowest bin wins far more than it reports
    assert overconfident[:, 0].mean() > 0.9, overconfident.mean(axis=0)


def test_a_bin_of_twelve_calibrated_pairs_misses_ten_points_often_but_not_its_band():
    """Why the band and not a fixed tolerance: 12 calibrated pairs at 0.39 miss a 10-point tolerance in about half of
    the studies (binomial: P(|share - 0.39| > 0.1) with 12 pairs), while the band holds them at least 95% of the time."""
    rng = np.random.default_rng(4)
    p = np.stack([np.full(12, 0.39), np.full(12, 0.61)], axis=1)
    lo, hi = reliability_band(p, draws=20_000, rng=rng)
    wins = rng.binomial(12, 0.39, 20_000) / 12
    assert 0.4 < np.mean(np.abs(wins - 0.39) > 0.1) < 0.6
    assert np.mean((wins >= lo[2]) & (wins <= hi[2])) >= 0.95


@pytest.mark.parametrize("kwargs, match", [
    ({"p_best": [0.2, 0.8]}, r"p_best must be a \(truths, candidates\) array, got shape \(2,\)"),
    ({"p_best": [[0.2, 0.7]]}, "p_best: row 0 is not a probability vector"),
    ({"p_best": [[0.5, 0.5], [-0.2, 1.2]]}, "p_best: row 1 is not a probability vector"),
    ({"p_best": [[0.5, 0.5]], "level": 1.0}, "level must be in"),
    ({"p_best": [[0.5, 0.5]], "draws": 10}, "draws must be an integer >= 100, got 10"),
    ({"p_best": [[0.5, 0.5]], "draws": True}, "draws must be an integer >= 100, got True"),
])
def test_bad_input_is_refused_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        reliability_band(**kwargs)


def test_ineligible_candidates_and_empty_truths_are_left_out():
    p = np.array([[0.6, np.nan, 0.4], [np.nan, np.nan, np.nan]])
    lo, hi = reliability_band(p, draws=1000, rng=np.random.default_rng(0))
    assert lo.shape == (len(BINS) - 1,)
    # one pair at 0.6 (bin 3) and one at 0.4 (bin 2): each wins or not
    assert (lo[2], hi[2], lo[3], hi[3]) == (0.0, 1.0, 0.0, 1.0)


def test_bin_label_names_the_bin_reliability_counts_a_p_best_in():
    from hybridpriv.reliability import BIN_LABELS, bin_label

    assert BIN_LABELS == ("0-0.1", "0.1-0.3", "0.3-0.5", "0.5-0.7", "0.7-0.9", "0.9-1")
    # the same bin reliability puts each value in (edges go to the bin above; 1 in the last, closed bin)
    values = np.array([0.0, 0.05, 0.1, 0.29999, 0.3, 0.5, 0.62, 0.7, 0.9, 0.95, 1.0])
    for v in values:
        counts = reliability([v], [1.0])[2]
        assert bin_label(v) == BIN_LABELS[int(np.flatnonzero(counts)[0])], v
    assert [bin_label(v) for v in (0.1, 0.7, 1.0)] == ["0.1-0.3", "0.7-0.9", "0.9-1"]
    for bad in (-0.01, 1.01, float("nan")):
        with pytest.raises(ValueError, match=r"a P\(best\) must be in \[0, 1\], got"):
            bin_label(bad)
