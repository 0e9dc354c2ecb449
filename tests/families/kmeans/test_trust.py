"""``trust_may_follow_clusters``: the K-means model admits that who trusts the curator may go with where a point lies.

The claim (``hybridpriv.families.kmeans.model``): in each posterior draw trust follows the clusters with
probability 1/2; then a ``Uniform(0, 1)`` share of the ``round(c n)`` TCM users come from one cluster (uniform
over the pilot start's ``k``), the rest at random from the other users; otherwise the split is random.  Tested
against independent computations: the hypergeometric count of TCM users in a cluster, a brute-force
enumeration of a small split, the PyMC model's own prior draws, and Monte Carlo frequencies with enough draws
to see a 5% bias.
"""

import itertools

import numpy as np
import pytest
from scipy import stats

from hybridpriv.core.random import rng
from hybridpriv.families.kmeans.model import TRUST_FOLLOWS_PRIOR, pilot_start, trust_split
from hybridpriv.models import KMeansPilotModel
from hybridpriv.spec import parse_spec

PILOT = np.array([[0.1, 0.2], [0.15, 0.25], [0.2, 0.1], [0.12, 0.15], [0.8, 0.9], [0.85, 0.8], [0.9, 0.85],
                  [0.88, 0.9]])


def test_split_counts_and_the_share_drawn_from_the_cluster():
    labels = np.repeat([0, 1, 2], [30, 50, 20])
    g = rng(0, "trust-split")
    for share, cluster in [(0.0, 1), (0.4, 1), (1.0, 2), (1.0, 0)]:
        t = trust_split(labels, 25, share, cluster, g)
        assert t.dtype == bool and t.sum() == 25
    # all 25 from cluster 1 (50 users) at share 1; cluster 2 holds 20: all 20 of them, then 5 of the others
    assert (labels[trust_split(labels, 25, 1.0, 1, g)] == 1).all()
    t = trust_split(labels, 25, 1.0, 2, g)
    assert (t & (labels == 2)).sum() == 20


def test_the_count_in_the_cluster_is_the_share_plus_a_hypergeometric_rest():
    """In cluster j (size K of n): first = round(share n_t) from it, then n_t - first from the n - first others,
    of whom K - first are in j: the count is first + Hypergeometric(n - first, K - first, n_t - first)."""
    labels = np.repeat([0, 1], [60, 140])
    n, big_k, n_t, share = 200, 60, 40, 0.3
    first = round(share * n_t)
    g = rng(1, "trust-split")
    counts = np.array([(trust_split(labels, n_t, share, 0, g) & (labels == 0)).sum() for _ in range(20_000)])
    law = stats.hypergeom(n - first, big_k - first, n_t - first)
    expect = first + law.mean()
    se = np.sqrt(law.var() / counts.size)
    assert abs(counts.mean() - expect) < 4 * se  # 4 se = 0.04 users: a 5% bias of 19.4 is 1 user
    assert counts.var() == pytest.approx(law.var(), rel=0.05)


def test_a_random_split_gives_every_subset_the_same_chance():
    """share 0 on 5 users, 2 trusted: each of the 10 pairs equally likely (brute-force enumeration)."""
    labels = np.array([0, 0, 1, 1, 1])
    g = rng(2, "trust-split")
    pairs = list(itertools.combinations(range(5), 2))
    seen = {p: 0 for p in pairs}
    draws = 20_000
    for _ in range(draws):
        seen[tuple(np.flatnonzero(trust_split(labels, 2, 0.0, 1, g)))] += 1
    chi2 = sum((c - draws / 10) ** 2 / (draws / 10) for c in seen.values())
    assert stats.chi2(9).sf(chi2) > 1e-4


def test_bad_split_arguments_are_refused_naming_them():
    with pytest.raises(ValueError, match="share must be in"):
        trust_split(np.zeros(4), 2, 1.5, 0, rng(0, "t"))
    with pytest.raises(ValueError, match="n_trusted must be in"):
        trust_split(np.zeros(4), 5, 0.5, 0, rng(0, "t"))


def test_exact_draws_follow_the_pymc_model():
    model = KMeansPilotModel(PILOT, (0, 1), n=100, c=0.3, k=2)
    post = model.fit(draws=4000, chains=2, seed=3).idata["posterior"]
    follows = post["trust_follows"].values.astype(bool)
    share = post["trust_share"].values
    cluster = post["trust_cluster"].values
    # Bernoulli(1/2): 8,000 draws, se 0.0056; a 5% bias (0.025) is 4.5 se
    assert abs(follows.mean() - TRUST_FOLLOWS_PRIOR) < 4 * np.sqrt(0.25 / follows.size)
    assert (share[~follows] == 0).all()
    assert stats.kstest(share[follows], "uniform").pvalue > 1e-4
    assert set(np.unique(cluster)) == {0, 1} and abs(cluster.mean() - 0.5) < 4 * np.sqrt(0.25 / cluster.size)
    # the same law from PyMC's own prior draws of build()'s model
    import pymc as pm

    prior = pm.draw([v for v in (lambda m: (m["trust_follows"], m["trust_share"], m["trust_cluster"]))(model.build())],
                    draws=4000, random_seed=5)
    f, s, c = (np.asarray(a) for a in prior)
    assert abs(f.mean() - follows.mean()) < 5 * np.sqrt(0.25 / 4000 + 0.25 / 8000)
    assert stats.ks_2samp(s[f > 0], share[follows]).pvalue > 1e-4 and (s[f == 0] == 0).all()
    assert abs(c.mean() - cluster.mean()) < 5 * np.sqrt(0.25 / 4000 + 0.25 / 8000)


def test_datasets_take_each_draws_trust():
    model = KMeansPilotModel(PILOT, (0, 1), n=2000, c=0.2, k=2, smoothing=0)
    post = model.fit(draws=200, chains=1, seed=4)
    p = post.idata["posterior"]
    labels_of = lambda pts: np.argmin(((pts[:, None] - pilot_start(PILOT, 2)[None]) ** 2).sum(-1), 1)  # noqa: E731
    for d in range(200):
        data = post.generate(0, d, rng(d, "t"))
        assert data.n_trusted == 400
        share, j = float(p["trust_share"].values[0, d]), int(p["trust_cluster"].values[0, d])
        inside = (data.trusted & (labels_of(data.points) == j)).sum()
        size = (labels_of(data.points) == j).sum()
        first = min(round(share * 400), size)
        # first from cluster j, then 400 - first of the 2000 - first others, size - first of them in j
        # (hypergeometric mean and variance): within 6 sd
        m, good, taken = 2000 - first, size - first, 400 - first
        mean = taken * good / m
        var = taken * good / m * (m - good) / m * (m - taken) / max(m - 1, 1)
        assert abs(inside - first - mean) <= 6 * np.sqrt(var) + 1e-9


def test_the_branch_is_the_draws_where_trust_is_random_and_false_removes_it():
    post = KMeansPilotModel(PILOT, (0, 1), n=100, c=0.3, k=2).fit(draws=100, chains=2, seed=6)
    (branch,) = post.branches()
    assert branch.name == "trust" and "trust_may_follow_clusters = false" in branch.advice
    np.testing.assert_array_equal(branch.draws, post.idata["posterior"]["trust_follows"].values == 0)
    off = KMeansPilotModel(PILOT, (0, 1), n=100, c=0.3, k=2, trust_may_follow_clusters=False).fit(draws=100, seed=6)
    assert off.branches() == [] and "trust_share" not in off.idata["posterior"]
    # the weights do not change with the option (drawn first from each chain's generator)
    np.testing.assert_array_equal(off.idata["posterior"]["weights"].values,
                                  KMeansPilotModel(PILOT, (0, 1), n=100, c=0.3, k=2).fit(draws=100, seed=6)
                                  .idata["posterior"]["weights"].values)
    data = off.generate(0, 0, rng(0, "t"))
    assert data.n_trusted == 30


def test_bad_option_values_are_refused_naming_the_parameter():
    with pytest.raises(ValueError, match="trust_may_follow_clusters must be true or false, got 'yes'"):
        KMeansPilotModel(PILOT, (0, 1), n=100, c=0.3, k=2, trust_may_follow_clusters="yes")
    with pytest.raises(ValueError, match="trust_may_follow_clusters needs at least k = 3 pilot points"):
        KMeansPilotModel(PILOT[:2], (0, 1), n=100, c=0.3, k=3, start="uniform", smoothing=0.01)


def test_the_spec_key_reaches_the_model_and_the_header():
    raw = {"kind": "kmeans", "bounds": [0.0, 1.0], "n": 200, "c": 0.3, "epsilon": 4.0, "k": 2, "iterations": [1],
           "model": {"pilot": PILOT.tolist()}}
    on = parse_spec(raw).problem()
    assert on.model.trust_may_follow_clusters and any("trust: may follow the clusters" in h for h in on.header)
    off = parse_spec({**raw, "model": {**raw["model"], "trust_may_follow_clusters": False}}).problem()
    assert not off.model.trust_may_follow_clusters and any("split at random" in h for h in off.header)
    with pytest.raises(Exception, match="trust_may_follow_clusters"):
        parse_spec({**raw, "model": {**raw["model"], "trust_may_follow_clusters": "no"}})
