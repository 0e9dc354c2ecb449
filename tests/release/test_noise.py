"""The OpenDP noise backend: its draws have the right distribution, and it refuses what it cannot draw."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from hybridpriv.core.privacy import Group
from hybridpriv.estimators import WeightedMean, make_estimator
from hybridpriv.families.user_item.mechanisms import ContributionBoundedCounts
from hybridpriv.release.noise import OpenDPGenerator, UnsupportedNoiseError, probe_noise

N = 40_000  # standard error of mean |X| / b and of mean X^2 / s^2: 0.5% and 0.7%; a 5% scale error is 10 s.e.
GROUPS = [Group("panel", 50, math.inf), Group("a", 80, 1.0), Group("b", 60, 0.3)]


def test_opendp_laplace_has_the_laplace_distribution():
    b = 2.5
    x = OpenDPGenerator().laplace(0.0, b, size=N)
    assert x.shape == (N,) and x.dtype == np.float64
    m, se = np.mean(np.abs(x)), np.std(np.abs(x)) / math.sqrt(N)  # E|X| = b
    # OpenDP's sampler cannot be seeded (OS entropy): false-failure rates are kept below 1e-5 per
    # check (5 s.e.; KS at 1e-5), and a 5% scale error sits 10 s.e. away, so the mean check sees it
    assert abs(m - b) < 5 * se
    assert abs(m - 1.05 * b) > 5 * se
    assert stats.kstest(x, stats.laplace(scale=b).cdf).pvalue > 1e-5


@pytest.mark.slow
def test_opendp_gaussian_has_the_normal_distribution():
    s = 3.0
    x = OpenDPGenerator().normal(0.0, s, size=N)
    m2, se = np.mean(x**2), np.std(x**2) / math.sqrt(N)  # E X^2 = s^2
    assert abs(m2 - s * s) < 5 * se
    assert abs(m2 - (1.05 * s) ** 2) > 5 * se
    assert stats.kstest(x, stats.norm(scale=s).cdf).pvalue > 1e-5
    z = OpenDPGenerator().standard_normal(size=(100, 50))
    assert z.shape == (100, 50) and abs(z.mean()) < 5 / math.sqrt(5000)


def test_loc_scale_broadcasting_and_zero_scale():
    rng = OpenDPGenerator()
    x = rng.laplace([10.0, 20.0, 30.0], [0.0, 1.0, 0.0])
    assert x.shape == (3,) and x[0] == 10.0 and x[2] == 30.0 and x[1] != 20.0
    assert isinstance(rng.laplace(), float)
    assert rng.normal(5.0, 0.0, size=(2, 2)).tolist() == [[5.0, 5.0], [5.0, 5.0]]
    with pytest.raises(ValueError, match="scale"):
        rng.laplace(0.0, -1.0)
    with pytest.raises(ValueError, match="loc"):
        rng.normal(np.nan, 1.0)


def test_a_mechanism_released_both_ways_agrees_in_distribution():
    data = [np.full(g.size, 40.0) for g in GROUPS]
    est = WeightedMean(GROUPS, (0, 99), sigma2=100.0)
    trials = 10_000
    numpy_path = est.release(data, np.random.default_rng(1), trials=trials)
    opendp_path = est.release(data, OpenDPGenerator(), trials=trials)
    assert stats.ks_2samp(numpy_path, opendp_path).pvalue > 1e-5
    # and each against the exact law of the weighted mean's noise: sum_g w_g Lap(r / (n_g eps_g))
    w = est.weights
    var = sum(2 * (wi * 99 / (g.size * g.epsilon)) ** 2 for wi, g in zip(w, GROUPS) if math.isfinite(g.epsilon))
    for x in (numpy_path, opendp_path):
        assert abs(np.var(x) / var - 1) < 5 * math.sqrt(5.0 / trials)  # Laplace kurtosis 6: var(X^2) <= 5 var^2


def test_non_noise_randomness_is_not_reproducible_by_default():
    a, b = OpenDPGenerator().integers(0, 2**62, size=4), OpenDPGenerator().integers(0, 2**62, size=4)
    assert not np.array_equal(a, b)
    assert np.array_equal(OpenDPGenerator(seed=3).random(3), OpenDPGenerator(seed=3).random(3))


def test_refused_noise_and_probe():
    with pytest.raises(UnsupportedNoiseError, match="gumbel"):
        OpenDPGenerator().gumbel(size=3)
    with pytest.raises(UnsupportedNoiseError, match="exponential"):
        OpenDPGenerator().exponential()
    stand_in = [np.full(g.size, 40.0) for g in GROUPS]
    median = make_estimator("weighted-median", GROUPS, (0, 99), sigma2=100.0)
    with pytest.raises(UnsupportedNoiseError, match="weighted-median.*gumbel"):
        probe_noise(median, stand_in)
    assert probe_noise(WeightedMean(GROUPS, (0, 99), sigma2=100.0), stand_in)["laplace"] >= 1
    calls = probe_noise(ContributionBoundedCounts(2, 1.0), np.eye(5, dtype=np.int8))
    assert set(calls) == {"laplace"}


def test_non_noise_randomness_comes_from_chacha20_keyed_from_the_os():
    from randomgen import ChaCha

    rng = OpenDPGenerator()
    bits = rng.bit_generator
    assert isinstance(bits, ChaCha) and int(bits.state["state"]["rounds"]) == 20
    # the transform over ChaCha20 keeps the law: 40,000 uniforms, KS and the mean (s.e. 0.0014: a 5% bias of
    # the mean, 0.025, is 17 s.e.), and integers in [0, 10) with each share within 5 s.e. of 1/10
    u = rng.random(40_000)
    assert stats.kstest(u, "uniform").pvalue > 1e-5 and abs(u.mean() - 0.5) < 5 * math.sqrt(1 / 12 / 40_000)
    counts = np.bincount(rng.integers(0, 10, 40_000), minlength=10)
    assert np.all(np.abs(counts / 40_000 - 0.1) < 5 * math.sqrt(0.09 / 40_000))


def test_provenance_says_what_drew_each_number_and_every_other_distribution_is_refused():
    from hybridpriv.release.noise import NUMPY_METHODS

    rng = OpenDPGenerator()
    rng.laplace(0.0, 1.0, size=2)
    rng.uniform(size=3)
    rng.uniform(size=3)
    rng.integers(0, 5)
    got = rng.provenance()
    assert {k: v["calls"] for k, v in got.items()} == {"laplace": 1, "uniform": 2, "integers": 1}
    assert got["laplace"]["drawn_by"].startswith("OpenDP make_laplace")
    assert "not OpenDP" in got["uniform"]["drawn_by"] and "ChaCha20" in got["uniform"]["drawn_by"]
    # every Generator method is OpenDP's, counted NumPy (non-noise), or refused: none slips through uncounted
    for name in (n for n in dir(np.random.Generator) if not n.startswith("_") and n != "bit_generator"):
        if name in ("laplace", "normal", "standard_normal", *NUMPY_METHODS):
            continue
        with pytest.raises(UnsupportedNoiseError, match=name):
            getattr(OpenDPGenerator(), name)(*(() if name not in ("dirichlet",) else ([1.0, 1.0],)))
    # a probe accepts the counted NumPy methods (a plugin drawing uniforms is released, and recorded as such)
    class Uniforms:
        label = "u"

        def release(self, data, rng, trials=1):
            return rng.uniform(size=trials)

    assert probe_noise(Uniforms(), None) == {"uniform": 1}
