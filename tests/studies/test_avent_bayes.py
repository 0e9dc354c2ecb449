"""The quick version of the avent-bayes study: structure, an independent recomputation of the
exact risks, the Monte Carlo check, and the study's claims."""

import numpy as np
import pytest

from hybridpriv.studies import avent_bayes

pytestmark = pytest.mark.slow  # end-to-end runs (minutes on 2 cores)


@pytest.fixture(scope="module")
def ds():
    return avent_bayes.run(quick=True, seed=0)


def _lemma_3_13(w, n, c, sigma2, s_T2, s_L2):
    """Lemma 3.13 in the homogeneous setting, written out here (no gap)."""
    return (w - c) ** 2 * sigma2 * (1 / (c * n) + 1 / ((1 - c) * n)) + w**2 * s_T2 + (1 - w) ** 2 * s_L2 / ((1 - c) * n)


def test_structure(ds):
    assert ds["gain_bayes"].dims == ("knowledge", "assumption", "distribution", "n", "c", "epsilon")
    assert list(ds.knowledge.values) == ["prior", "pilot-100"]
    assert list(ds.assumption.values) == ["homogeneous"]
    assert list(ds.distribution.values) == ["Beta(10,10)", "Beta(1,1)", "Beta(0.1,0.1)"]
    assert list(ds.c.values) == [0.005, 0.05] and list(ds.epsilon.values) == [0.1, 1.0]
    assert ds.n.values[0] == 1000 and ds.n.values[-1] == 100_000
    assert np.isfinite(ds["gain_bayes"]).all() and np.isfinite(ds["mse_bayes"]).all()
    fitted = ds["max_rhat"].sel(knowledge="pilot-100")
    assert (fitted < 1.1).all() and ds["max_rhat"].sel(knowledge="prior").isnull().all()  # exact draws: no R-hat


def test_exact_risks_recomputed_independently(ds):
    # Laplace on [0, 1]: s_L2 = 2 / eps^2, s_T2 = s_L2 / (c n)^2; sigma^2 of Beta(a, a) = 1 / (4 (2a + 1))
    for dist, a in (("Beta(10,10)", 10.0), ("Beta(0.1,0.1)", 0.1)):
        sigma2 = 1 / (4 * (2 * a + 1))
        for n in (1000.0, 100_000.0):
            for c in (0.005, 0.05):
                for eps in (0.1, 1.0):
                    s_L2 = 2 / eps**2
                    s_T2 = s_L2 / (c * n) ** 2
                    cell = dict(distribution=dist, n=n, c=c, epsilon=eps)
                    for k in ds.knowledge.values:
                        w = float(ds["w_bayes"].sel({**cell, "knowledge": k, "assumption": "homogeneous"}))
                        mse = float(ds["mse_bayes"].sel({**cell, "knowledge": k, "assumption": "homogeneous"}))
                        assert mse == pytest.approx(_lemma_3_13(w, n, c, sigma2, s_T2, s_L2), rel=1e-10)
                    best = min((1 - c) / (c * n) * sigma2 + s_T2, s_L2 / n)  # Definition 3.9's two cases
                    mse_kvh = float(ds["mse_kvh"].sel(cell))
                    assert float(ds["R_kvh"].sel(cell)) == pytest.approx(best / mse_kvh, rel=1e-10)
                    w_pwh = s_L2 / (s_L2 + (1 - c) * n * s_T2)
                    assert float(ds["mse_pwh"].sel(cell)) == pytest.approx(
                        _lemma_3_13(w_pwh, n, c, sigma2, s_T2, s_L2), rel=1e-10)


def test_monte_carlo_agrees_with_the_exact_risk(ds):
    assert ds.sizes["check"] == 2
    assert (np.abs(ds["mc_z"]) < 4).all(), ds["mc_z"].values
    assert (ds["mc_mse_se"] < 0.1 * ds["mc_mse"]).all()  # 400 datasets pin the MSE to 10%


def test_claims(ds):
    # KVH is the oracle: R(KVH) >= 1 everywhere (the paper) and no weight beats it
    assert (ds["R_kvh"] >= 1).all()
    assert (ds["gain_bayes"] <= 1 + 1e-9).all()
    # gain < 0 exactly where R < 1
    assert ((ds["gain_pwh"] < 0) == ds["pwh_below"]).all()
    below = ds["pwh_below"]
    assert int(below.sum()) >= 5
    g = ds["gain_bayes"].sel(assumption="homogeneous").where(below)
    # 100 pilot records per group: at least 95% of the oracle gain wherever PWH falls below 1
    assert float(g.sel(knowledge="pilot-100").min()) > 0.95
    # the prior alone does worse, but better than PWH in most of those cells
    assert float(g.sel(knowledge="prior").min()) < float(g.sel(knowledge="pilot-100").min())
    beats = (ds["gain_bayes"].sel(knowledge="prior", assumption="homogeneous") > ds["gain_pwh"]).where(below)
    assert float(beats.mean()) > 0.5


def test_plot(ds, tmp_path):
    path = tmp_path / "avent-bayes.png"
    avent_bayes.plot(ds, path)
    assert path.stat().st_size > 10_000
