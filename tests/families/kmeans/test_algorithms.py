"""Hybrid DP K-means (Avent et al., Appendix E) as mechanisms: building blocks, declarations and
ledgers, the data, source and task, and the family through evaluate + decide -- each against an
independent computation (Lloyd's algorithm by broadcasting, Definition 5.3 by hand, brute-force
WCSS, Monte Carlo of the noise scales, split_budget for the ledger)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hybridpriv.accounting import split_budget
from hybridpriv.core.privacy import Guarantee
from hybridpriv.core.random import rng as stream_rng
from hybridpriv.engine.decision import decide
from hybridpriv.engine.evaluate import evaluate
from hybridpriv.families.kmeans.algorithms import (
    WCSS,
    HybridKMeans,
    LloydKMeans,
    LMKMeans,
    PointCloud,
    TCMKMeans,
    TrustSplitSource,
    algorithm,
    budget_parts,
    gaussian_clusters,
    nearest_centre,
    noise_scales,
    wcss,
)
from hybridpriv.families.kmeans.algorithms import mechanisms as kmech
from hybridpriv.families.kmeans.algorithms.algorithm import _nearest_batch
from hybridpriv.noise import randomized_response, rr_probabilities


def make_rng(key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([0xC1A5, key]))


def lloyd(x, init, iterations):
    """Lloyd's algorithm written independently (broadcasting, no SciPy); empty clusters keep their centre."""
    c = np.array(init, dtype=float)
    history = [c.copy()]
    for _ in range(iterations):
        lab = ((x[:, None, :] - c[None, :, :]) ** 2).sum(-1).argmin(1)
        new = c.copy()
        for j in range(len(c)):
            if (lab == j).any():
                new[j] = x[lab == j].mean(0)
        c = new
        history.append(c.copy())
    return np.array(history)


def brute_wcss(x, c):
    return float(sum(min(((xi - cj) ** 2).sum() for cj in c) for xi in x))


X = gaussian_clusters([[0.2, 0.2], [0.8, 0.3], [0.5, 0.8]], 0.08, 300, (0.0, 1.0), make_rng(1))
INIT = np.array([[0.1, 0.9], [0.9, 0.9], [0.5, 0.1], [0.05, 0.05]])  # 4 centres: one may go empty
B = (0.0, 1.0)
ALL = np.ones(len(X), dtype=bool)


def cloud(trusted=ALL, init=INIT, points=X, bounds=B, centres=None):
    return PointCloud(points, trusted, bounds, init, centres)


# -- exact limits (epsilon = inf) -------------------------------------------------------------------
def test_tcm_with_infinite_epsilon_and_lloyd_baseline_are_lloyds_algorithm():
    res = TCMKMeans(4, math.inf, 6, B).run(cloud(), make_rng(2))
    np.testing.assert_allclose(res.history, lloyd(X, INIT, 6), atol=1e-12)
    assert res.scales == {"b_T": 0.0, "b_L": 0.0}
    half = np.arange(len(X)) % 2 == 0  # Lloyd reads every user, trusted or not
    base = LloydKMeans(4, 6, B).run(cloud(trusted=half), make_rng(3))
    np.testing.assert_allclose(base.history, lloyd(X, INIT, 6), atol=1e-12)
    np.testing.assert_allclose(LloydKMeans(4, 6, B).release(cloud(trusted=half), make_rng(4), trials=3),
                               np.broadcast_to(lloyd(X, INIT, 6)[-1], (3, 4, 2)), atol=1e-12)


def test_lm_with_infinite_epsilon_is_lloyd_on_all_users():
    res = LMKMeans(4, math.inf, 5, B).run(cloud(trusted=~ALL), make_rng(5))
    np.testing.assert_allclose(res.history, lloyd(X, INIT, 5), atol=1e-12)


def test_shifted_bounds_give_the_same_clustering():
    # the algorithms work on x - lower in [0, m]^d: with epsilon = inf shifting the data and the
    # bounds shifts the centres and nothing else
    shifted = PointCloud(X * 5 - 2, ALL, (-2, 3), INIT * 5 - 2)
    res = TCMKMeans(4, math.inf, 4, (-2, 3)).run(shifted, make_rng(6))
    np.testing.assert_allclose(res.history, lloyd(X, INIT, 4) * 5 - 2, atol=1e-10)


@pytest.mark.parametrize("pwh_noise", ["mean", "printed"])
def test_hybrid_first_iteration_is_the_pwh_mix(pwh_noise):
    # epsilon = inf: counts and means are exact, so line 15 can be recomputed by hand
    trusted = np.arange(len(X)) % 10 == 0
    xt, xl, init = X[trusted], X[~trusted], INIT[:3]
    tau, m, d = 3, 1.0, 2
    res = HybridKMeans(3, math.inf, tau, B, pwh_noise=pwh_noise).run(cloud(trusted, init), make_rng(7))
    lab_t = ((xt[:, None] - init[None]) ** 2).sum(-1).argmin(1)
    lab_l = ((xl[:, None] - init[None]) ** 2).sum(-1).argmin(1)
    b_t, b_l = (m * d + 1) * tau, m * d * (tau + 1)  # line 2 with epsilon = 1 (w only sees the ratio)
    for j in range(3):
        nt, nl = (lab_t == j).sum(), (lab_l == j).sum()
        assert nt >= 1 and nl >= 1
        s_t2 = 2 * b_t**2 / (nt**2 if pwh_noise == "mean" else 1)
        w = 2 * b_l**2 / (2 * b_l**2 + nl * s_t2)  # Definition 5.3 with n = nt + nl, (1 - c) n = nl
        expect = w * xt[lab_t == j].mean(0) + (1 - w) * xl[lab_l == j].mean(0)
        assert res.weights[0, j] == pytest.approx(w, rel=1e-12)
        np.testing.assert_allclose(res.history[1, j], expect, atol=1e-12)


def test_pwh_weight_agrees_with_the_theory_module():
    from hybridpriv.families.kmeans.algorithms.algorithm import _pwh
    from hybridpriv.theory.avent import pwh_weight

    n_t, n_l = np.array([3.0, 40.0, 7.5]), np.array([900.0, 120.0, 5.0])
    for noise in ("mean", "printed"):
        s_t2 = 2 * 2.0**2 / (n_t**2 if noise == "mean" else 1.0)
        expected = pwh_weight(n_t + n_l, n_t / (n_t + n_l), s_t2, 2 * 3.0**2)
        np.testing.assert_allclose(_pwh(n_t, n_l, 2.0, 3.0, noise), expected, rtol=1e-12)


# -- WCSS and the nearest-centre search --------------------------------------------------------
@pytest.mark.parametrize("k", [1, 3, 70])  # 70 centres: the cKDTree path
def test_wcss_and_nearest_centre_against_brute_force(k):
    rng = make_rng(10 + k)
    x, c = rng.random((200, 3)), rng.random((k, 3))
    best = [min(sum((xi[j] - cj[j]) ** 2 for j in range(3)) for cj in c) for xi in x]
    assert wcss(x, c) == pytest.approx(sum(best), rel=1e-12)
    idx, d2 = nearest_centre(x, c)
    np.testing.assert_allclose(d2, best, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(((x - c[idx]) ** 2).sum(1), best, rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("k", [2, 5, 70])
def test_batched_nearest_centre_against_brute_force(k):
    rng = make_rng(20 + k)
    x, c = rng.random((50, 2)), rng.random((6, k, 2))  # 6 trials, each with its own centres
    per_trial = rng.random((6, 50, 2))  # points that differ per trial too (the LM reports' shape)
    for pts in (x, per_trial):
        got = _nearest_batch(pts, c)
        for t in range(6):
            p = pts if pts.ndim == 2 else pts[t]
            d2 = ((p[:, None, :] - c[t][None]) ** 2).sum(-1)
            np.testing.assert_array_equal(got[t], d2.argmin(1))
    assert _nearest_batch(x[:0], c).shape == (6, 0)


def test_nearest_centre_ties_go_to_the_lower_index():
    c = np.array([[0.0, 0.5], [1.0, 0.5], [0.5, 0.0]])
    idx, _ = nearest_centre(np.array([[0.5, 0.5]]), c)
    assert idx.tolist() == [0]
    assert _nearest_batch(np.array([[0.5, 0.5]]), np.stack([c, c])).tolist() == [[0], [0]]


# -- the declaration and the ledger ------------------------------------------------------------------
@pytest.mark.parametrize("tau,d,bounds", [(1, 2, (0, 1)), (3, 1, (0, 2)), (7, 3, (-1, 1))])
def test_budget_is_split_as_the_pseudocode_and_composes_to_epsilon(tau, d, bounds):
    eps, m = 2.5, bounds[1] - bounds[0]
    rng = make_rng(30)
    x = bounds[0] + m * rng.random((60, d))
    trusted = np.arange(60) < 20
    data = PointCloud(x, trusted, bounds, None)
    hybrid = HybridKMeans(3, eps, tau, bounds, d=d)
    res = hybrid.run(data, rng)
    assert res.spent_epsilon["tcm"] == pytest.approx(eps, rel=1e-12)
    assert res.spent_epsilon["lm"] == pytest.approx(eps, rel=1e-12)
    assert res.scales["b_T"] == pytest.approx((m * d + 1) * tau / eps)
    assert res.scales["b_L"] == pytest.approx(m * d * (tau + 1) / eps)
    ledger = res.accountant.releases
    tcm = [r.epsilon["tcm"] for r in ledger if "tcm" in r.epsilon]
    lm = [r.epsilon["lm"] for r in ledger if "lm" in r.epsilon]
    # independent split: per iteration counts and sums in the ratio 1 : m d (lines 9-10);
    # LM: tau + 1 equal parts (line 4 once, line 7 every iteration)
    np.testing.assert_allclose(tcm, split_budget(eps, [1.0, m * d] * tau), rtol=1e-12)
    np.testing.assert_allclose(lm, split_budget(eps, [1.0] * (tau + 1)), rtol=1e-12)
    assert ledger[0].label.startswith("line 4")
    # the run spends exactly the plan the declaration is composed from
    assert [(r.label, dict(r.epsilon)) for r in ledger] == hybrid.ledger_plan()
    declared = {u: (g.epsilon, g.delta, g.relation, g.trust) for u, g in hybrid.privacy.items()}
    assert declared == {"tcm": (pytest.approx(eps, rel=1e-12), 0.0, "add-remove", "central"),
                        "lm": (pytest.approx(eps, rel=1e-12), 0.0, "replace", "local")}
    assert TCMKMeans(3, eps, tau, bounds, d=d).run(data, rng).spent_epsilon == pytest.approx({"tcm": eps})
    lm_run = LMKMeans(3, eps, tau, bounds, d=d).run(data, rng)
    assert lm_run.spent_epsilon == pytest.approx({"tcm": eps, "lm": eps})  # every user is a local user here


def test_declarations_per_unit():
    t = TCMKMeans(4, 7.0, 3, B).privacy
    assert set(t) == {"tcm"} and t["tcm"].relation == "add-remove" and t["tcm"].trust == "central"
    lm = LMKMeans(4, 7.0, 3, B).privacy
    assert {u: (g.relation, g.trust) for u, g in lm.items()} == {"tcm": ("replace", "local"), "lm": ("replace", "local")}
    assert all(g.epsilon == pytest.approx(7.0) for g in lm.values())
    lloyd_privacy = LloydKMeans(4, 3, B).privacy
    assert set(lloyd_privacy) == {"tcm", "lm"} and all(g.is_public for g in lloyd_privacy.values())
    assert all(g.is_public for g in TCMKMeans(4, math.inf, 3, B).privacy.values())  # no noise, no promise
    # d and the range change the parts, not the total
    assert TCMKMeans(4, 7.0, 3, (-5, 5), d=3).privacy["tcm"].epsilon == pytest.approx(7.0, rel=1e-12)


@pytest.mark.parametrize("eps", [5000.0, 1e300])
def test_large_epsilon_is_accounted_in_log_space(eps):
    """epsilon/(tau+1) > ~700 made r = 1/(K + e^eps' - 1) underflow to 0 (ZeroDivisionError at 5000)."""
    tau, d, m = 2, 2, 1.0
    parts = budget_parts(eps, tau, m, d, 3)
    assert parts["rr"] == pytest.approx(eps / (tau + 1), rel=1e-12)
    assert parts["count"] == pytest.approx(eps / ((m * d + 1) * tau), rel=1e-12)
    trusted = np.arange(len(X)) < 90
    res = HybridKMeans(3, eps, tau, B).run(cloud(trusted, None), make_rng(31))
    assert res.spent_epsilon["tcm"] == pytest.approx(eps, rel=1e-12)
    lm = [r.epsilon["lm"] for r in res.accountant.releases if "lm" in r.epsilon]
    np.testing.assert_allclose(lm, split_budget(eps, [1.0] * (tau + 1)), rtol=1e-12)
    assert np.isfinite(res.history).all() and ((res.history >= 0) & (res.history <= 1)).all()
    from hybridpriv.noise import rr_probabilities

    q, r = rr_probabilities(2.5 / 4, 3)  # at a moderate epsilon the log-space value is log(q/r)
    assert budget_parts(2.5, 3, 1.0, 2, 3)["rr"] == pytest.approx(math.log(q / r), rel=1e-12)


@pytest.mark.parametrize(
    "eps,m,match",
    [
        (1e-308, 1.0, r"epsilon=1e-308 with m=1 \(data range\), tau=2, d=2 gives noise scales b_T=inf"),
        (1e300, 1e-300, r"epsilon=1e\+300 with m=1e-300 .* b_L=0"),
        (1e-300, 1e10, r"epsilon=1e-300 with m=1e\+10 .* b_T=inf"),
    ],
)
def test_extreme_epsilon_or_range_raises(eps, m, match):
    with pytest.raises(ValueError, match=match):
        noise_scales(eps, 2, m, 2)
    with pytest.raises(ValueError, match=match):
        budget_parts(eps, 2, m, 2)
    with pytest.raises(ValueError, match=match):
        HybridKMeans(3, eps, 2, (0, m))
    assert noise_scales(math.inf, 2, m, 2) == (0.0, 0.0)  # no noise, no error


def test_noise_that_could_overflow_and_debiasing_that_would_are_refused():
    # b_T = 2e300: a Laplace draw of that scale can exceed the largest double
    with pytest.raises(ValueError, match=r"epsilon=1e-300 .* b_T=2e\+300, b_L=2e\+300; both must lie in"):
        noise_scales(1e-300, 1, 1.0, 1)
    TCMKMeans(2, 1e-299, 1, (0, 1e-9), d=1)  # scales of 1e299: allowed
    with pytest.raises(ValueError, match=r"epsilon=1e-299 is too small to debias randomized response over k=2"):
        LMKMeans(2, 1e-299, 1, (0, 1e-9), d=1, debias=True)
    with pytest.raises(ValueError, match=r"too small to debias"):
        HybridKMeans(2, 1e-299, 1, (0, 1e-9), d=1, debias=True)


# -- noise scales (line 2): Monte Carlo on one cluster, one iteration -----------------------------
def _variance_and_se(c):
    var = c.var(ddof=1)
    return var, np.sqrt((np.mean((c - c.mean()) ** 4) - c.var() ** 2) / c.size)


def test_lm_noise_scale_monte_carlo():
    # K = 1, tau = 1: the LM centre is mean(x) + mean of n Laplace(b_L), b_L = m d (tau+1)/eps = 2
    data = PointCloud(np.full((1000, 1), 0.5), np.zeros(1000, dtype=bool), B, [[0.1]])
    c = LMKMeans(1, 1.0, 1, B, d=1).release(data, make_rng(40), trials=3000)[:, 0, 0]
    var, se = _variance_and_se(c)
    assert abs(var - 2 * 2.0**2 / 1000) < 4 * se, (var, se)
    assert abs(c.mean() - 0.5) < 4 * c.std() / np.sqrt(c.size)


def test_tcm_noise_scale_monte_carlo():
    # K = 1, tau = 1: centre = (S + Y2)/(N + Y1), Y ~ Lap(b_T), b_T = (m d + 1) tau / eps = 2;
    # delta method: Var ~= 2 b^2 (1 + mu^2) / N^2 (error O(b / N) = 0.2%)
    n, mu = 1000, 0.5
    data = PointCloud(np.full((n, 1), mu), np.ones(n, dtype=bool), B, [[0.1]])
    c = TCMKMeans(1, 1.0, 1, B, d=1).release(data, make_rng(41), trials=3000)[:, 0, 0]
    var, se = _variance_and_se(c)
    var_theory = 2 * 2.0**2 * (1 + mu**2) / n**2
    assert abs(var - var_theory) < 4 * se + 0.01 * var_theory, (var, var_theory, se)


def test_tcm_iterations_add_the_noise_of_mechanisms_laplace():
    # lines 9-10 add hybridpriv.noise.laplace's noise (the run draws it without laplace()'s checks):
    # two iterations recomputed by hand from the same generator, brute-force labels and bincount sums
    from hybridpriv.noise import laplace

    trusted = np.arange(len(X)) % 3 == 0
    mech, k = TCMKMeans(4, 2.0, 2, B), 4
    got = mech.run(cloud(trusted), make_rng(62)).history
    x, rng, c = X[trusted], make_rng(62), INIT.copy()
    b_t = noise_scales(2.0, 2, 1.0, 2)[0]
    for it in range(2):
        lab = ((x[:, None] - c[None]) ** 2).sum(-1).argmin(1)
        counts = laplace(np.bincount(lab, minlength=k).astype(float), b_t, rng)
        sums = laplace(np.stack([np.bincount(lab, x[:, j], minlength=k) for j in range(2)], -1), b_t, rng)
        ok = counts >= 1
        c = np.where(ok[:, None], np.clip(sums / np.where(ok, counts, 1.0)[:, None], 0.0, 1.0), c)
        np.testing.assert_array_equal(got[it + 1], c)


@pytest.mark.parametrize("shape", [(1, 160_000, 2), (3, 1000, 2), (7, 5, 2), (2, 1, 2), (2, 0, 2), (400, 3, 2)])
def test_sum_rows_is_numpys_sum_over_axis_1(shape):
    # the debiased LM branch's report totals: the compiled running sum gives r.sum(axis=1)'s doubles
    # (NumPy's order for this layout; a change in NumPy would show here), signs of zeros included
    from hybridpriv.families.kmeans.algorithms import _kernels

    rng = make_rng(70)
    for r in (rng.laplace(size=shape) * 10 + rng.random(shape), np.full(shape, -0.0)):
        got = _kernels.sum_rows(r, np.empty((shape[0], shape[2])))
        np.testing.assert_array_equal(got, r.sum(axis=1))
        np.testing.assert_array_equal(np.signbit(got), np.signbit(r.sum(axis=1)))


@pytest.mark.parametrize("d", [1, 2, 3])
def test_take_rows_is_compress(d):
    from hybridpriv.families.kmeans.algorithms import _kernels

    rng = make_rng(63 + d)
    x = rng.random((500, d))
    x.flags.writeable = False
    for mask in (rng.random(500) < 0.01, rng.random(500) < 0.5, np.zeros(500, dtype=bool)):
        for want in (True, False):
            out = np.full((int((mask == want).sum()), d), np.nan)
            out_t = np.full(out.shape[::-1], np.nan)
            _kernels.take_rows(x, mask, want, out, out_t)
            np.testing.assert_array_equal(out, np.compress(mask == want, x, axis=0))
            np.testing.assert_array_equal(out_t, out.T)


def test_a_batch_of_trials_has_the_distribution_of_single_runs():
    # the vectorised release (one batch) against one run at a time: two-sample z-test on the
    # final centres' mean and a check of their spread
    trusted = np.arange(len(X)) % 5 == 0
    data = cloud(trusted, INIT[:3])
    mech = HybridKMeans(3, 1.0, 3, B)
    batch = mech.release(data, make_rng(42), trials=400)
    single = np.stack([mech.run(data, make_rng(1000 + i)).centres for i in range(400)])
    for a, b in ((batch, single),):
        diff = a.mean(0) - b.mean(0)
        se = np.sqrt(a.var(0, ddof=1) / len(a) + b.var(0, ddof=1) / len(b))
        assert (np.abs(diff) < 4.5 * se + 1e-12).all(), (diff, se)
        ratio = a.std(0) / np.maximum(b.std(0), 1e-12)
        assert ((ratio > 0.75) & (ratio < 1.33)).all(), ratio


def _nearest_batch_broadcast(x, c):
    """The previous batched nearest-centre search (NumPy broadcast over the trial axis), kept as the
    reference the per-trial SciPy search replaced (3-5x faster, benchmarks/kmeans_trials.py)."""
    t, k = c.shape[:2]
    n = x.shape[-2]
    if n == 0:
        return np.zeros((t, 0), dtype=np.intp)
    xb = x[None] if x.ndim == 2 else x
    best = ((xb - c[:, :1, :]) ** 2).sum(-1)
    idx = np.zeros((t, n), dtype=np.intp)
    for j in range(1, k):
        d2 = ((xb - c[:, j : j + 1, :]) ** 2).sum(-1)
        closer = d2 < best
        idx[closer] = j
        np.minimum(best, d2, out=best)
    return idx


@pytest.mark.parametrize("mech", [HybridKMeans(3, 7.0, 3, B), LMKMeans(3, 2.0, 2, B, debias=True), TCMKMeans(3, 1.0, 4, B)],
                         ids=lambda m: m.label)
def test_the_batched_release_draws_what_the_previous_broadcast_search_drew(monkeypatch, mech):
    # the nearest-centre search changed, the random draws did not: same labels, same releases, bit for bit
    # (the compiled one-pass iteration against the NumPy path with the broadcast search patched in)
    from hybridpriv.families.kmeans.algorithms import algorithm

    data = cloud(np.arange(len(X)) % 5 == 0, INIT[:3])
    new = mech.release(data, make_rng(45), trials=30)
    monkeypatch.setattr(algorithm, "_compiled", lambda x: False)
    monkeypatch.setattr(algorithm, "_nearest_batch", _nearest_batch_broadcast)
    np.testing.assert_array_equal(new, mech.release(data, make_rng(45), trials=30))


ALL_KINDS = [HybridKMeans(4, 7.0, 3, B), HybridKMeans(4, 1.0, 5, B, pwh_noise="printed"), HybridKMeans(2, 3.0, 2, B, debias=True),
             LMKMeans(4, 0.5, 4, B), LMKMeans(5, 2.0, 2, B, debias=True), TCMKMeans(4, 1.0, 4, B), LloydKMeans(4, 6, B),
             HybridKMeans(1, 2.0, 2, B), LMKMeans(1, 2.0, 3, B)]


@pytest.mark.parametrize("mech", ALL_KINDS, ids=lambda m: f"{m.label}-k{m.k}")
@pytest.mark.parametrize("trials", [1, 7])
def test_compiled_iteration_releases_what_the_numpy_path_releases(monkeypatch, mech, trials):
    # _kernels (nearest centre + randomized response + cluster sums in one pass) against the NumPy path
    # (SciPy search, randomized_response, bincount) on the same generator: the same releases, bit for bit;
    # points on a coarse grid make many exact ties between centres (which go to the lower index)
    from hybridpriv.families.kmeans.algorithms import algorithm

    tied = np.round(X * 8) / 8
    init = np.array([[0.25, 0.25], [0.25, 0.25], [0.75, 0.5], [0.5, 0.75], [0.5, 0.5]])[: mech.k]
    for points in (X, tied):
        data = PointCloud(points, np.arange(len(points)) % 7 == 0, B, init)
        fast = mech.release(data, make_rng(47), trials=trials)
        run = mech.run(data, make_rng(48))
        with monkeypatch.context() as m:
            m.setattr(algorithm, "_compiled", lambda x: False)
            np.testing.assert_array_equal(fast, mech.release(data, make_rng(47), trials=trials))
            slow = mech.run(data, make_rng(48))
        np.testing.assert_array_equal(run.history, slow.history)
        if run.weights is not None:
            np.testing.assert_array_equal(run.weights, slow.weights)


@pytest.mark.parametrize("k", [1, 2, 4, 9])
def test_kernels_against_brute_force_and_the_scipy_search(monkeypatch, k):
    from hybridpriv.families.kmeans.algorithms import _kernels, algorithm

    rng = make_rng(60 + k)
    for x in (rng.random((3000, 2)), np.round(rng.random((3000, 2)) * 4) / 4, rng.random((0, 2))):
        c = np.round(rng.random((k, 2)) * 4) / 4  # grid centres, some repeated: ties
        d2 = ((x[:, None, :] - c[None]) ** 2).sum(-1)
        idx, best = _kernels.assign(x, c)
        np.testing.assert_array_equal(idx, d2.argmin(1) if x.size else idx)  # argmin: ties to the lower index
        np.testing.assert_allclose(best, d2.min(1) if x.size else best, rtol=1e-15, atol=0)
        with monkeypatch.context() as m:
            m.setattr(algorithm, "_compiled", lambda x: False)
            ref_idx, ref_best = algorithm._nearest(x, c)
        np.testing.assert_array_equal(idx, ref_idx)
        np.testing.assert_array_equal(best, ref_best)  # the same doubles as SciPy's cdist
        counts, sums = np.zeros(k, dtype=np.intp), np.zeros((k, 2))
        _kernels.assign_sums(x, c, counts, sums)
        np.testing.assert_array_equal(counts, np.bincount(idx, minlength=k))
        np.testing.assert_array_equal(sums, np.stack([np.bincount(idx, x[:, j], minlength=k) for j in range(2)], -1))
        # randomized response: the reports of mechanisms.randomized_response, given the same uniforms (it
        # draws one per label from its generator: the same seed gives the kernel the same uniforms)
        values, eps = rng.random((len(x), 2)), 0.8
        reported = randomized_response(idx, k, eps, make_rng(70 + k))
        u = make_rng(70 + k).random(len(x))
        counts, sums = np.zeros(k, dtype=np.intp), np.zeros((k, 2))
        _kernels.rr_assign_sums(x, c, u, 1.0 - k * rr_probabilities(eps, k)[1], values, counts, sums)
        np.testing.assert_array_equal(counts, np.bincount(reported, minlength=k))
        np.testing.assert_array_equal(sums, np.stack([np.bincount(reported, values[:, j], minlength=k) for j in range(2)], -1))


@pytest.mark.parametrize("k", [3, 5, 8, 17, 63])
def test_padded_search_against_brute_force(k):
    # the compiled search runs over the centres padded to a power of two by copies of centre 0:
    # labels (ties to the lower index) and distances as brute force, for every padding
    from hybridpriv.families.kmeans.algorithms import _kernels

    rng = make_rng(80 + k)
    for x in (rng.random((2000, 2)), np.round(rng.random((2000, 2)) * 4) / 4):
        c = np.round(rng.random((k, 2)) * 4) / 4
        assert _kernels.pad(c).shape == (1 << (k - 1).bit_length(), 2)
        d2 = ((x[:, None, :] - c[None]) ** 2).sum(-1)
        idx, best = _kernels.assign(x, c)
        np.testing.assert_array_equal(idx, d2.argmin(1))
        np.testing.assert_array_equal(best, d2[np.arange(len(x)), idx])
        assert wcss(x, c) == float(best.sum())


@pytest.mark.parametrize("shape", [(1, 50_000, 2), (3, 7, 2), (2, 5, 1), (1, 4, 3)])
@pytest.mark.parametrize("b", [0.37, 0.0])
def test_line_4_reports_from_uniforms_are_laplaces_draws(shape, b):
    # _kernels.laplace_reports turns the generator's uniforms into Generator.laplace(0, 1)'s draws, then
    # * b + x: the same doubles as laplace, *= b, += x from the same seed (signs of zeros included), and
    # the generator is left where laplace leaves it
    from hybridpriv.families.kmeans.algorithms import _kernels

    x = np.round(make_rng(90).random(shape[1:]) * 2) / 2  # zeros among the points
    for seed in range(3):
        ref_rng, rng = make_rng(100 + seed), make_rng(100 + seed)
        ref = ref_rng.laplace(0.0, 1.0, size=shape)
        ref *= b
        ref += x
        out = np.empty(shape)
        assert _kernels.laplace_reports(rng.random(math.prod(shape)), x, b, out)
        np.testing.assert_array_equal(out, ref)
        np.testing.assert_array_equal(np.signbit(out), np.signbit(ref))
        assert rng.random() == ref_rng.random()
    # the branch-free arithmetic at the edges: U = 0.5 (log 1 = 0: +0.0), U near 0 and near 1
    u = np.array([0.5, 0.25, 0.75, 2.0**-53, 1 - 2.0**-53, 0.5 - 2.0**-54])
    out = np.empty((1, 3, 2))
    assert _kernels.laplace_reports(u, np.zeros((3, 2)), 1.0, out)
    expect = [0.0 - math.log(2.0 - v - v) if v >= 0.5 else 0.0 + math.log(v + v) for v in u]
    np.testing.assert_array_equal(out.ravel(), expect)
    np.testing.assert_array_equal(np.signbit(out.ravel()), np.signbit(expect))
    assert not _kernels.laplace_reports(np.array([0.3, 0.0]), np.zeros((1, 2)), 1.0, np.empty((1, 1, 2)))


def test_a_zero_uniform_falls_back_to_laplace_on_the_same_stream(monkeypatch):
    # laplace redraws a uniform of exactly 0 (probability 2^-53 each): the kernel refuses it and the
    # run rewinds its generator and draws line 4 by laplace instead, so the numbers are those of laplace
    from hybridpriv.families.kmeans.algorithms import _kernels

    data = cloud(np.arange(len(X)) % 5 == 0, INIT[:3])
    for mech in (HybridKMeans(3, 7.0, 3, B), LMKMeans(3, 2.0, 2, B, debias=True)):
        fast = mech.release(data, make_rng(57), trials=4)
        monkeypatch.setattr(_kernels, "laplace_reports", lambda *args: False)
        np.testing.assert_array_equal(mech.release(data, make_rng(57), trials=4), fast)
        monkeypatch.undo()


def test_scratch_buffers_are_reused_and_runs_do_not_see_each_other():
    # the compiled path keeps its temporaries in per-thread buffers: one buffer per role, grown when needed;
    # a release after runs on other data (larger and smaller) draws what it draws on a fresh start
    a = algorithm.scratch("test.a", (3, 4))
    assert a.shape == (3, 4) and a.flags.c_contiguous
    assert np.shares_memory(a, algorithm.scratch("test.a", (5,))) and not np.shares_memory(a, algorithm.scratch("test.b", (5,)))
    assert algorithm.scratch("test.a", (100,)).size == 100 and algorithm.scratch("test.i", (2,), np.intp).dtype == np.intp
    mech = HybridKMeans(3, 7.0, 3, B)
    data = cloud(np.arange(len(X)) % 5 == 0, INIT[:3])
    first = mech.release(data, make_rng(58), trials=3)
    big = gaussian_clusters([[0.3, 0.3], [0.7, 0.7], [0.3, 0.7]], 0.05, 2000, B, make_rng(59))
    mech.release(PointCloud(big, np.arange(len(big)) % 3 == 0, B, INIT[:3]), make_rng(60), trials=2)
    mech.release(PointCloud(X[:40], np.arange(40) % 2 == 0, B, INIT[:3]), make_rng(61), trials=5)
    np.testing.assert_array_equal(mech.release(data, make_rng(58), trials=3), first)
    # the transposed points a PointCloud keeps for the search: (2, n), read-only; None for d != 2
    pc = cloud()
    np.testing.assert_array_equal(pc.points_t, X.T)
    assert not pc.points_t.flags.writeable and pc.points_t is pc.points_t
    assert PointCloud(np.full((3, 3), 0.5), np.ones(3, dtype=bool), B).points_t is None


def test_batched_release_and_one_run_at_a_time_have_the_same_mean_wcss():
    # the vectorised release (one batch of 400) against the per-trial path (400 releases of one trial,
    # each from its own generator): two-sample z-test on the mean WCSS.  The setting (epsilon = 7, a
    # start near the clusters) keeps the WCSS's spread small enough that a 5% difference in the mean
    # would be found with probability >= 95% at the 1% level, which is checked first
    data = cloud(np.arange(len(X)) % 5 == 0, np.array([[0.25, 0.25], [0.75, 0.3], [0.5, 0.75]]))
    mech = HybridKMeans(3, 7.0, 3, B)
    batch = np.array([wcss(X, c) for c in mech.release(data, make_rng(46), trials=400)])
    single = np.array([wcss(X, mech.release(data, make_rng(2000 + i))[0]) for i in range(400)])
    se = math.sqrt(batch.var(ddof=1) / batch.size + single.var(ddof=1) / single.size)
    assert 0.05 * single.mean() > (2.576 + 1.645) * se, (single.mean(), se)  # power to see 5%
    assert abs(batch.mean() - single.mean()) < 2.576 * se, (batch.mean(), single.mean(), se)


def test_batches_are_split_by_memory_and_stay_reproducible(monkeypatch):
    trusted = np.arange(len(X)) % 5 == 0
    mech = HybridKMeans(4, 2.0, 2, B)
    a = mech.release(cloud(trusted), make_rng(43), trials=7)
    np.testing.assert_array_equal(a, mech.release(cloud(trusted), make_rng(43), trials=7))
    monkeypatch.setattr(kmech, "BATCH_ELEMENTS", 2 * len(X) * 4)  # two trials per batch
    b = mech.release(cloud(trusted), make_rng(43), trials=7)
    assert b.shape == (7, 4, 2) and ((b >= 0) & (b <= 1)).all() and not np.array_equal(a, b)
    np.testing.assert_array_equal(b, mech.release(cloud(trusted), make_rng(43), trials=7))
    # one trial: release and run draw the same numbers
    np.testing.assert_array_equal(mech.release(cloud(trusted), make_rng(44))[0], mech.run(cloud(trusted), make_rng(44)).centres)


# -- properties ------------------------------------------------------------------------------------
def test_same_seed_same_result_and_centres_stay_in_bounds():
    trusted = np.arange(len(X)) % 10 == 0
    mech = HybridKMeans(4, 0.5, 5, B)
    a, b = mech.run(cloud(trusted, None), make_rng(50)), mech.run(cloud(trusted, None), make_rng(50))
    c = mech.run(cloud(trusted, None), make_rng(51))
    np.testing.assert_array_equal(a.history, b.history)
    np.testing.assert_array_equal(a.weights, b.weights)
    assert not np.array_equal(a.centres, c.centres)
    # heavy noise (epsilon = 0.5 over 5 iterations): centres still inside the square
    assert ((a.history >= 0) & (a.history <= 1)).all() and ((a.weights >= 0) & (a.weights <= 1)).all()


def test_empty_groups_are_allowed():
    # TCM-only with no TCM users releases noise around the start; the hybrid then follows the LM branch
    out = TCMKMeans(2, 1.0, 2, B).release(cloud(~ALL, INIT[:2]), make_rng(52), trials=5)
    assert out.shape == (5, 2, 2) and np.isfinite(out).all()
    res = HybridKMeans(2, math.inf, 2, B).run(cloud(~ALL, INIT[:2]), make_rng(53))
    np.testing.assert_allclose(res.history, lloyd(X, INIT[:2], 2), atol=1e-12)
    assert (res.weights == 0).all()


def test_debiased_lm_is_unbiased_where_the_pseudocode_lm_is_pulled():
    # one iteration from the true centres: lines 11-12 mix in reports of the other clusters, pulling
    # each LM centre to (q S_k + r (S - S_k)) / (q n_k + r (n - n_k)) (randomized response's report
    # probabilities q, r at epsilon/2); debiasing inverts that (200 runs each, 3600 users)
    centres = np.array([[0.2, 0.2], [0.8, 0.2], [0.5, 0.8]])
    x = gaussian_clusters(centres, 0.03, 1200, B, make_rng(54))
    data = PointCloud(x, np.zeros(len(x), dtype=bool), B, centres)
    raw = LMKMeans(3, 4.0, 1, B).release(data, make_rng(55), trials=200)
    deb = LMKMeans(3, 4.0, 1, B, debias=True).release(data, make_rng(56), trials=200)
    lab = ((x[:, None] - centres[None]) ** 2).sum(-1).argmin(1)
    n, sums = np.bincount(lab), np.stack([x[lab == j].sum(0) for j in range(3)])
    truth = sums / n[:, None]
    e = math.exp(4.0 / 2)
    q, r = e / (3 + e - 1), 1 / (3 + e - 1)
    pull = (q * sums + r * (x.sum(0) - sums)) / (q * n + r * (len(x) - n))[:, None] - truth
    se = deb.std(0, ddof=1) / np.sqrt(len(deb))
    assert (np.abs(deb.mean(0) - truth) < 4 * se).all(), (deb.mean(0) - truth, se)
    big = np.abs(pull) > 0.05
    assert big.sum() >= 4
    np.testing.assert_allclose((raw.mean(0) - truth)[big], pull[big], rtol=0.2)


# -- data, source and task -------------------------------------------------------------------------
def test_point_cloud_is_validated_and_read_only():
    pc = cloud(np.arange(len(X)) < 3)
    assert pc.data_kind == "points" and pc.n_trusted == 3 and pc.d == 2
    with pytest.raises(ValueError, match="read-only"):
        pc.points[0, 0] = 0.5
    with pytest.raises(ValueError, match="read-only"):
        pc.trusted[0] = False
    with pytest.raises(ValueError, match=r"points has 1 value\(s\) outside bounds"):
        PointCloud([[0.5, 1.5]], [True], B)
    with pytest.raises(TypeError, match="trusted must be a boolean mask"):
        PointCloud(X, np.ones(len(X)), B)
    with pytest.raises(ValueError, match="trusted must have one entry per point"):
        PointCloud(X, ALL[:-1], B)
    with pytest.raises(ValueError, match="init must have 2 coordinate"):
        PointCloud(X, ALL, B, [[0.5]])
    with pytest.raises(ValueError, match="centres must be finite"):
        PointCloud(X, ALL, B, None, [[np.nan, 0.5]])


def test_mechanisms_refuse_data_they_were_not_built_for():
    with pytest.raises(TypeError, match="data must be a PointCloud"):
        TCMKMeans(4, 1.0, 2, B).release(X, make_rng(60))
    with pytest.raises(ValueError, match=r"data bounds \[0, 2\] differ from the mechanism's bounds \[0, 1\]"):
        TCMKMeans(4, 1.0, 2, B).release(PointCloud(X, ALL, (0, 2)), make_rng(60))
    with pytest.raises(ValueError, match="d=2 coordinates, the mechanism was built for d=3"):
        TCMKMeans(4, 1.0, 2, B, d=3).release(cloud(), make_rng(60))
    with pytest.raises(ValueError, match=r"public start \(init\) holds 4 centres, the mechanism needs k=3"):
        TCMKMeans(3, 1.0, 2, B).release(cloud(), make_rng(60))


def test_trust_split_source_draws_a_split_and_a_start_per_dataset():
    src = TrustSplitSource(X, B, 0.1, 4, draws=5, centres=[[0.2, 0.2], [0.8, 0.3], [0.5, 0.8]])
    assert src.shape == (1, 5) and src.data_kind == "points"
    a, b = src.generate(0, 0, stream_rng(3, "dataset", 0, 0)), src.generate(0, 0, stream_rng(3, "dataset", 0, 0))
    other = src.generate(0, 1, stream_rng(3, "dataset", 0, 1))
    assert a.n_trusted == 90 and a.points is src.points  # round(c n); the cloud is shared, never copied
    np.testing.assert_array_equal(a.trusted, b.trusted)
    np.testing.assert_array_equal(a.init, b.init)
    assert not np.array_equal(a.trusted, other.trusted) and not np.array_equal(a.init, other.init)
    assert a.init.shape == (4, 2) and ((a.init >= 0) & (a.init <= 1)).all()
    # the parameters that change the datasets change the fingerprint
    assert src.fingerprint() != TrustSplitSource(X, B, 0.2, 4, draws=5).fingerprint()
    assert src.fingerprint() != TrustSplitSource(X[::-1], B, 0.1, 4, draws=5).fingerprint()
    for c in (0, 1, 1.5, -0.1, True):
        with pytest.raises(ValueError, match=r"c \(share of users who trust the curator\) must be in \(0, 1\)"):
            TrustSplitSource(X, B, c, 4, draws=5)
    with pytest.raises(ValueError, match="both groups need at least one user"):
        TrustSplitSource(X[:10], B, 0.01, 4, draws=5)


def test_wcss_task_scores_all_users_against_brute_force():
    centres = np.array([[0.2, 0.2], [0.8, 0.3], [0.5, 0.8]])
    data = cloud(np.arange(len(X)) < 9, INIT[:3], centres=centres)
    task = WCSS()
    assert task.truth(data) == {"wcss_generating": pytest.approx(brute_wcss(X, centres), rel=1e-12)}
    assert task.truth(cloud()) == {}
    releases = make_rng(61).random((3, 3, 2))
    loss = task.loss(HybridKMeans(3, 1.0, 1, B), releases, data, {})
    np.testing.assert_allclose(loss, [brute_wcss(X, c) for c in releases], rtol=1e-12)
    with pytest.raises(ValueError, match=r"releases must be centres of shape \(trials, K, 2\)"):
        task.loss(HybridKMeans(3, 1.0, 1, B), releases[..., :1], data, {})
    from hybridpriv.core.privacy import Group
    from hybridpriv.estimators import WeightedMean

    with pytest.raises(ValueError, match="WCSS scores 'points' data"):
        task.check(WeightedMean([Group("a", 3, 1.0)], B, 1.0))


# -- the family through the engine ----------------------------------------------------------------
CENTRES = np.array([[0.25, 0.25], [0.25, 0.75], [0.75, 0.25], [0.75, 0.75]])


@pytest.fixture(scope="module")
def evaluation():
    x = gaussian_clusters(CENTRES, 0.03, 400, B, make_rng(70))
    src = TrustSplitSource(x, B, 0.1, 4, draws=12, centres=CENTRES)
    mechs = [HybridKMeans(4, 7.0, 2, B), TCMKMeans(4, 7.0, 2, B), LMKMeans(4, 7.0, 2, B), LloydKMeans(4, 2, B)]
    required = {"tcm": Guarantee(7.0, 0.0, "add-remove", "central"), "lm": Guarantee(7.0, 0.0, "replace", "local")}
    ev = evaluate(mechs, src, WCSS(), trials=2, seed=5, dim="algorithm", requirements=required)
    return ev, src, mechs


def test_evaluate_scores_every_release_by_the_wcss_of_all_users(evaluation):
    ev, src, mechs = evaluation
    assert ev["loss"].dims == ("algorithm", "chain", "draw", "trial") and ev.sizes["draw"] == 12
    assert list(ev.algorithm.values) == ["hybrid", "tcm", "lm", "lloyd"]
    assert "estimate" not in ev  # releases are centres: only their losses are kept
    np.testing.assert_allclose(ev["truth"].sel(quantity="wcss_generating"), brute_wcss(src.points, CENTRES), rtol=1e-9)
    # replay one dataset and one candidate on the engine's own streams: the same releases, scored by brute force
    data = src.generate(0, 3, stream_rng(5, "dataset", 0, 3))
    rel = mechs[0].release(data, stream_rng(5, "mechanism", "hybrid", 0, 3), trials=2)
    np.testing.assert_allclose(ev["loss"].sel(algorithm="hybrid", chain=0, draw=3), [brute_wcss(src.points, c) for c in rel],
                               rtol=1e-9)
    # the non-private baseline is deterministic given the start: its two trials agree
    lloyd_loss = ev["loss"].sel(algorithm="lloyd")
    np.testing.assert_array_equal(lloyd_loss.isel(trial=0), lloyd_loss.isel(trial=1))


def test_decide_over_algorithms_keeps_the_declarations(evaluation):
    ev = evaluation[0]
    assert ev["privacy_trust"].sel(algorithm="hybrid").values.tolist() == ["central", "local"]
    assert np.isinf(ev["privacy_epsilon"].sel(algorithm="lloyd")).all()
    dec = decide(ev, dim="algorithm")
    # Lloyd promises nothing; LM K-means promises TCM users local replace-one protection, which does
    # not give the add/remove-one promise they require (a user's presence shows in the report count)
    assert dec["meets_requirements"].values.tolist() == [True, True, False, False]
    assert str(dec.attrs["recommended"]) in ("hybrid", "tcm")
    best = dec["expected_loss"].sel(algorithm=["hybrid", "tcm"]).idxmin().item()
    assert dec.attrs["recommended"] == best
    np.testing.assert_allclose(dec["expected_loss"], ev["risk"].mean(("chain", "draw")), rtol=1e-12)


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("shared", [True, False])
def test_tiny_batches_search_by_one_broadcast_with_the_labels_of_one_search_per_trial(d, shared):
    """A batch of a few points (the audits: 1-3 points, 15,000 trials) takes the broadcast path; its labels
    are those of one search per trial (:func:`_nearest`: compiled at d = 2, SciPy otherwise) and of a brute
    force, ties (integer coordinates) to the lower centre."""
    rng = np.random.default_rng(3 + d)
    t, n, k = 60, 5, 4
    assert n * k <= algorithm._BROADCAST_UPTO
    x = rng.integers(0, 3, (n, d) if shared else (t, n, d)).astype(float)
    c = rng.integers(0, 3, (t, k, d)).astype(float)
    got = algorithm._nearest_batch(x, c)
    one = np.stack([algorithm._nearest(x if shared else x[i], c[i])[0] for i in range(t)])
    np.testing.assert_array_equal(got, one)
    for i in range(t):
        pts = x if shared else x[i]
        for j in range(n):
            dist = [sum((pts[j, a] - c[i, q, a]) ** 2 for a in range(d)) for q in range(k)]
            assert got[i, j] == dist.index(min(dist))
    assert (got != 0).any() and len(np.unique(got)) > 1  # not a degenerate case


def test_the_public_start_releases_the_start_and_reads_no_point():
    """Issue 25: ``PublicStart`` releases the data's public start (or a uniform start in the box, from ``rng``),
    the same for any points, and declares epsilon 0 for both units."""
    from hybridpriv.families.kmeans.algorithms import PointCloud, PublicStart

    rng = np.random.default_rng(0)
    start = np.array([[0.2, 0.3], [0.7, 0.8]])
    mech = PublicStart(2, (0.0, 1.0), d=2)
    a = PointCloud(rng.random((50, 2)), np.arange(50) < 10, (0.0, 1.0), start)
    b = PointCloud(rng.random((80, 2)), np.arange(80) < 5, (0.0, 1.0), start)
    out_a, out_b = mech.release(a, np.random.default_rng(1), 4), mech.release(b, np.random.default_rng(2), 4)
    assert out_a.shape == (4, 2, 2) and np.array_equal(out_a, out_b) and np.array_equal(out_a[0], start)
    assert {u: (g.epsilon, g.delta) for u, g in mech.privacy.items()} == {"tcm": (0.0, 0.0), "lm": (0.0, 0.0)}
    # no public start: uniform in the box, one per trial, from the generator alone
    c = PointCloud(rng.random((30, 2)) * 2 + 1, np.arange(30) < 3, (1.0, 3.0), None)
    u = PublicStart(2, (1.0, 3.0), d=2).release(c, np.random.default_rng(5), 2000)
    assert u.min() >= 1.0 and u.max() <= 3.0 and abs(u.mean() - 2.0) < 0.03  # mean 2, sd of the mean 0.0065
    assert np.array_equal(u, PublicStart(2, (1.0, 3.0), d=2).release(
        PointCloud(np.full((7, 2), 2.0), np.arange(7) < 1, (1.0, 3.0), None), np.random.default_rng(5), 2000))
    with pytest.raises(ValueError, match="box"):
        PublicStart(2, (0.0, 2.0), d=2).release(a, rng)
