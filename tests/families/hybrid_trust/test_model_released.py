"""HybridTrustModel with earlier noisy releases of a group's mean (released_means)."""

import numpy as np
import pytest

from hybridpriv.models import HybridTrustModel, ReleasedMean

pytestmark = pytest.mark.slow  # end-to-end runs (minutes on 2 cores)


@pytest.mark.slow
def test_a_precise_release_pins_the_groups_mean():
    """A release with small noise (0.05, below the 0.1-0.15 sampling error) of the TCM group's mean of many records: the posterior of mu_T sits
    at the released value (within the sampling error of a mean of n_T records, sigma_T / sqrt(n_T))."""
    model = HybridTrustModel(10.0, sizes=(400, 600), released_means=[ReleasedMean(7.5, 0.05, "T")])
    post = model.fit(draws=300, tune=300, chains=2, seed=1)
    p = post.idata["posterior"]
    mu_T = p["mu_T"].values
    sd = float(np.sqrt(p["sigma_T2"].values.mean() / 400))
    assert abs(mu_T.mean() - 7.5) < 3 * sd
    assert mu_T.std() < 3 * sd  # prior sd of mu_T is about 2.5: the release dominates
    assert abs(float(p["mu_L"].values.mean()) - 7.5) > 0.1  # the LM group is only tied through the prior gap


@pytest.mark.slow
def test_pooled_release_uses_both_sizes():
    """Pooled release: the latent mean is (n_T mu_T + n_L mu_L) / n."""
    model = HybridTrustModel(1.0, sizes=(100, 900), released_means=[ReleasedMean(0.2, 0.005)])
    post = model.fit(draws=300, tune=300, chains=2, seed=2)
    p = post.idata["posterior"]
    pooled = 0.1 * p["mu_T"].values + 0.9 * p["mu_L"].values
    assert abs(pooled.mean() - 0.2) < 0.02


@pytest.mark.parametrize("kwargs, needle", [
    ({"released_means": [ReleasedMean(1.0, 1.0, "T")]}, "needs the groups' sizes"),
    ({"sizes": (5, 5), "released_means": [ReleasedMean(1.0, 1.0, "tcm")]}, "group must be 'T', 'L' or None"),
    ({"sizes": (5, 5), "released_means": [ReleasedMean(100.0, 1.0)]}, "value = 100 is impossible"),
    ({"sizes": (5, 5), "released_means": [(1.0, 1.0)]}, "must be a ReleasedMean"),
])
def test_bad_releases_are_refused_naming_them(kwargs, needle):
    with pytest.raises((TypeError, ValueError), match="released_means") as info:
        HybridTrustModel(1.0, **kwargs)
    assert needle in str(info.value)
