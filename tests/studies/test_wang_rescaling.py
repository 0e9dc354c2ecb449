"""wang-rescaling (Wang et al. Sec. 3.2, Figs. 2-3): counts recomputed by brute force, the claims, the figure."""

import numpy as np
import pytest
from hybridpriv.studies import wang_rescaling
from scipy.spatial.distance import cdist

from hybridpriv.core.random import rng

pytestmark = pytest.mark.slow  # end-to-end runs (minutes on 2 cores)


@pytest.fixture(scope="module")
def quick():
    return wang_rescaling.run(quick=True, seed=0)


def _counts(P, E):
    return np.bincount(cdist(P, E).argmin(axis=1), minlength=len(E))  # ties: the lowest index


def test_counts_recomputed_by_brute_force(quick):
    for r in range(2):
        D, E = wang_rescaling.simulate(2000, 2000, rng(0, "study", "wang-rescaling", r))
        lo, hi = E[:, :2].min(axis=0), E[:, :2].max(axis=0)  # step 1 by hand: the public range, D clipped to it
        scale = lambda Z: np.c_[(np.clip(Z[:, :2], lo, hi) - lo) / (hi - lo), Z[:, 2]]  # noqa: E731
        diff = _counts(scale(D), scale(E)) - _counts(D, E)
        assert quick.over_2.values[r] == (np.abs(diff) > 2).sum()
        assert quick.max_abs_diff.values[r] == np.abs(diff).max()
        if r == 0:
            np.testing.assert_array_equal(quick.count_diff.values, diff)


def test_the_setting_is_figure_2s():
    D, E = wang_rescaling.simulate(20_000, 20_000, np.random.default_rng(1))
    # variances 1, 1 (D) and 0.5, 1 (E): standard errors about 0.01
    np.testing.assert_allclose(D[:, :2].var(axis=0), [1, 1], atol=0.05)
    np.testing.assert_allclose(E[:, :2].var(axis=0), [0.5, 1], atol=0.05)
    # P(y = 1) rises with x1 in D (beta_D = (0.2, 0.4)) and falls with it in E (beta_E = (0.5, -0.1))
    assert np.corrcoef(D[:, 1], D[:, 2])[0, 1] > 0.1 and np.corrcoef(E[:, 1], E[:, 2])[0, 1] < -0.01


def test_claims_and_plot(quick, tmp_path):
    rows = wang_rescaling.claims(quick)
    assert rows[0].verdict == "not comparable"  # quick: n = 2,000, not the paper's 10^4
    share = np.nanmean(quick.boundary_share_over_2.values)
    assert f"{100 * share:.0f}% of them" in rows[1].ours
    np.testing.assert_allclose(quick.boundary_share_all, 0.1, atol=0.002)  # 5% at each end by construction
    wang_rescaling.plot(quick, tmp_path / "r.png")
    assert (tmp_path / "r.png").stat().st_size > 10_000


def test_engine_options_are_refused():
    from hybridpriv.engine import Engine

    client = type("Client", (), {"__module__": "distributed.client"})()  # passes for a dask client
    with pytest.raises(ValueError, match="--workers does not apply"):
        wang_rescaling.run(quick=True, engine=Engine(client))
    with pytest.raises(ValueError, match="--chunk-size does not apply"):
        wang_rescaling.run(quick=True, engine=Engine(chunk_size=3))
