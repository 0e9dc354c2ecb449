"""The quick version of avent-kmeans (Figure 6): structure, reproducibility and robust claims."""

import numpy as np
import pytest

from hybridpriv.studies import avent_kmeans


@pytest.fixture(scope="module")
def ds():
    return avent_kmeans.run(quick=True, seed=0)


def test_structure(ds):
    assert ds["wcss"].dims == ("algorithm", "c", "tau", "trial")
    assert list(ds.algorithm.values) == ["hybrid", "tcm", "lm"]
    assert list(ds.c.values) == [0.001, 0.01]
    assert list(ds.variant.values) == list(avent_kmeans.VARIANTS)
    for name in ("wcss_mean", "wcss_low", "wcss_high", "wcss_q025", "wcss_q975"):
        assert ds[name].dims == ("algorithm", "c", "tau"), name
    assert np.isfinite(ds.wcss).all() and np.isfinite(ds.wcss_variant).all()
    assert (ds.wcss_low <= ds.wcss_mean).all() and (ds.wcss_mean <= ds.wcss_high).all()
    # no algorithm beats the WCSS floor of Lloyd's fixed point by much: every WCSS is at least
    # the WCSS at the generating centres minus sampling slack
    assert (ds.wcss >= 0.9 * ds.wcss_optimal).all()


def test_same_seed_same_numbers(ds):
    # one (c, tau, trial) recomputed from the same spawned seed gives the same numbers
    x = avent_kmeans.make_data(ds.attrs["n_per_cluster"], np.random.default_rng(np.random.SeedSequence(0).spawn(2)[0]))
    seeds = np.random.SeedSequence(0).spawn(2)[1].spawn(ds.c.size * ds.tau.size * ds.trial.size)
    main, variants, _ = avent_kmeans._one(x, 0.001, 1, seeds[0])
    np.testing.assert_array_equal(main, ds.wcss.isel(c=0, tau=0, trial=0).values)
    np.testing.assert_array_equal(variants, ds.wcss_variant.isel(c=0, tau=0, trial=0).values)


def test_robust_claims(ds):
    m = ds.wcss_mean
    # the hybrid is never worse than the worse baseline (mean over trials)
    worst = m.sel(algorithm=["tcm", "lm"]).max("algorithm")
    assert (m.sel(algorithm="hybrid") <= worst).all(), m.values
    # ten times more TCM users help the TCM-only algorithm at every tau
    tcm = m.sel(algorithm="tcm")
    assert (tcm.sel(c=0.01) < tcm.sel(c=0.001)).all(), tcm.values
    # the pseudocode's LM means (no debiasing) get worse with more iterations: each spends
    # epsilon/(tau+1) on randomized response, whose pull towards the other clusters grows
    lm = m.sel(algorithm="lm")
    assert (lm.isel(tau=-1) > lm.isel(tau=0)).all(), lm.values
    # the PWH weight on the TCM branch grows with c
    assert (ds.pwh_weight.sel(c=0.01) > ds.pwh_weight.sel(c=0.001)).all()
