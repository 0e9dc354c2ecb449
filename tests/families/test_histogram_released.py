"""Earlier releases of private groups' counts in the histogram model (model_released), and the histogram family's
budget-spending selector (pythia_histogram) that makes them.

* The Gaussian algebra (information form, the candidate's formula for the evidence) against a second derivation:
  the explicit joint Gaussian of ``p`` and the releases, conditioned directly (C = 4, two releases).
* The sampler (tau on its grid, then p, then q) against brute-force integration of the same Gaussian model on a
  grid (C = 2, 40,000 draws: the mean of q and P(alike) within 4 standard errors; a 5% error in q's sd fails).
* The Gaussian approximation against the exact model (Beta prior, binomial counts plus Laplace noise, summed
  exactly): how far it is, in the posterior's own sd, on cases the docs quote.
* The selector: each group's epsilon in all, the noise's law (20,000 releases), the relation's sensitivity.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from hybridpriv.families.histogram.heldout import histogram_truth, noisy_group_counts, pythia_histogram
from hybridpriv.families.histogram.model import CategoryModel
from hybridpriv.families.histogram.model_released import (
    ReleasedCounts,
    _parts,
    draw_released,
    log_evidence,
    posterior_of_p,
    tau_grid,
)
from hybridpriv.core.privacy import Group
from hybridpriv.spec import SpecError, parse_spec

DRAWS = 40_000


def _joint(alpha, releases, tau):
    """The joint Gaussian of (p, z_1, ..., z_G) built block by block (q_g = p + u_g, z_g = A q_g + e_g), then
    conditioned on the z's: the posterior of p and the z's log density, without the information form."""
    p_hat, s, v, obs = _parts(alpha, releases)
    k, blocks = v.shape[0], []
    mean = [p_hat[:-1]] + [a @ p_hat[:-1] for a, _, _ in obs]
    size = k + sum(a.shape[0] for a, _, _ in obs)
    cov = np.zeros((size, size))
    cov[:k, :k] = v
    at = k
    for a, _, r in obs:
        n = a.shape[0]
        cov[:k, at:at + n] = v @ a.T
        cov[at:at + n, :k] = a @ v
        at2 = k
        for a2, _, _ in obs:
            n2 = a2.shape[0]
            cov[at:at + n, at2:at2 + n2] = a @ v @ a2.T
            at2 += n2
        cov[at:at + n, at:at + n] += a @ (tau * tau * s) @ a.T + r
        blocks.append(slice(at, at + n))
        at += n
    mu = np.concatenate(mean)
    z = np.concatenate([zz for _, zz, _ in obs])
    czz, cpz = cov[k:, k:], cov[:k, k:]
    post_mean = mu[:k] + cpz @ np.linalg.solve(czz, z - mu[k:])
    post_cov = v - cpz @ np.linalg.solve(czz, cpz.T)
    return post_mean, post_cov, stats.multivariate_normal(mu[k:], czz).logpdf(z)


@pytest.mark.parametrize("tau", [0.0, 0.25])
def test_the_gaussian_algebra_matches_direct_conditioning(tau):
    alpha = np.array([12.0, 30.0, 5.0, 9.0])
    releases = [(300, np.array([70.0, 160.0, 20.0, 50.0]), 4.0), (120, np.array([40.0, 50.0, -3.0, 31.0]), 15.0)]
    mean, cov = posterior_of_p(alpha, releases, tau)
    direct_mean, direct_cov, direct_logz = _joint(alpha, releases, tau)
    np.testing.assert_allclose(mean, direct_mean, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(cov, direct_cov, rtol=1e-8, atol=1e-14)
    assert log_evidence(alpha, releases, tau) == pytest.approx(direct_logz, rel=1e-10)


def _gaussian_brute(alpha, n, y, b, between, shared, grid=np.linspace(-0.5, 1.5, 801)):
    """q's posterior under the same Gaussian model (C = 2) by summing over a grid of p and q for each tau."""
    p_hat, s, v, obs = _parts(alpha, [(n, y, b)])
    a, z, r = obs[0]
    dx = grid[1] - grid[0]
    d = z[None, :] - grid[:, None] * a[:, 0][None, :]
    lik = np.exp(-0.5 * np.einsum("qi,ij,qj->q", d, np.linalg.inv(r), d))
    prior_p = stats.norm.pdf(grid, p_hat[0], np.sqrt(v[0, 0]))
    post, alike = np.zeros(grid.size), 0.0
    for tau, w in zip(*tau_grid(between, shared)):
        if tau == 0:
            m = w * prior_p * lik
            alike += m.sum()
        else:
            cond = stats.norm.pdf(grid[None, :], grid[:, None], tau * np.sqrt(s[0, 0]))
            m = w * (prior_p[:, None] * cond).sum(axis=0) * dx * lik
        post += m
    total = post.sum()
    post /= total
    mean = float((grid * post).sum())
    return mean, float(np.sqrt(((grid - mean) ** 2 * post).sum())), alike / total


CASES = [((30, 30), 200, 0.3, 5.0, 0.5), ((20, 40), 500, 0.45, 10.0, 0.5), ((60, 20), 300, 0.74, 2.0, 1.0),
         ((60, 20), 300, 0.5, 2.0, 0.5), ((15, 15), 150, 0.2, 20.0, 0.5),
         ((30, 60), 800, 0.3, 200.0, 0.5), ((30, 60), 300, 0.3, 400.0, 0.5)]  # the selector's noise at epsilon 0.05


def _case(panel, n, q, b):
    rng = np.random.default_rng(0)
    x = rng.binomial(n, q)
    return 1.0 + np.array(panel, dtype=float), np.array([x, n - x]) + rng.laplace(0.0, b, 2)


@pytest.mark.parametrize("panel, n, q, b, shared", CASES[:5])  # the last two floor many draws' shares at 0
def test_the_sampler_draws_the_gaussian_models_posterior(panel, n, q, b, shared):
    alpha, y = _case(panel, n, q, b)
    mean, sd, alike = _gaussian_brute(alpha, n, y, b, 0.3, shared)
    out = draw_released(alpha, {"g": n}, [ReleasedCounts("g", tuple(y), b)], 0.3, shared, DRAWS,
                        np.random.default_rng(1))
    drawn = out["q"][:, 0, 0]
    assert abs(drawn.mean() - mean) < 4 * sd / np.sqrt(DRAWS)
    assert abs(drawn.std() / sd - 1) < 4 * np.sqrt(1 / (2 * DRAWS)) * 1.5  # 1.5: the mixture's heavier tails
    assert abs(out["alike"].mean() - alike) < 4 * np.sqrt(max(alike * (1 - alike), 1e-4) / DRAWS) + 1e-3


def _exact(alpha, n, y, b, between, shared, size=400):
    """q's posterior under the exact model: p ~ Beta(alpha), q | p ~ Beta(p k, (1 - p) k) (k = 1 / tau^2 - 1) or
    q = p, counts x ~ Binomial(n, q), each released count plus Laplace(b): summed over x and a grid of p and q."""
    g = (np.arange(size) + 0.5) / size
    x = np.arange(n + 1)
    lap = lambda t: np.exp(-np.abs(t) / b)  # noqa: E731
    lik = (stats.binom.pmf(x[None, :], n, g[:, None]) * lap(y[0] - x)[None, :] * lap(y[1] - (n - x))[None, :]).sum(1)
    prior_p = stats.beta.pdf(g, *alpha)
    post, alike = np.zeros(size), 0.0
    for tau, w in zip(*tau_grid(between, shared)):
        if tau == 0:
            m = w * prior_p * lik
            alike += m.sum()
        else:
            k = 1 / tau ** 2 - 1
            cond = stats.beta.pdf(g[None, :], g[:, None] * k, (1 - g[:, None]) * k)
            cond /= cond.sum(axis=1, keepdims=True)
            m = w * (prior_p[:, None] * cond).sum(axis=0) * lik
        post += m
    total = post.sum()
    post /= total
    mean = float((g * post).sum())
    return mean, float(np.sqrt(((g - mean) ** 2 * post).sum())), alike / total


@pytest.mark.parametrize("panel, n, q, b, shared", CASES)
def test_the_gaussian_approximation_is_near_the_exact_model(panel, n, q, b, shared):
    """Measured on these cases: the mean within 0.49 of the exact posterior sd, the sd 0.70-0.94 of the exact one
    (narrower: the Gaussian's evidence favours one branch of alike / differ more where the exact posterior is a
    two-humped mixture of them), P(alike) within 0.12.  Bounds with a margin.  Checked to fail: a sampler that
    ignores the release (the panel's mean is 2.4-8.6 exact sds away in cases 1, 2, 4) and one that takes the
    noise 20 times smaller than it is (cases 1, 2, 5: the sd 0.34-0.54 of the exact one).  Known to be worse, and
    not bounded here (docs/histogram.md): a small panel far from a precise release (20 records at 0.5, a release
    at 0.1 of 1,000 records, b = 33): the sd 0.48 of the exact one, and alike the mean 2.1 sds off (the Beta's
    thin tail pulls harder than the Gaussian's)."""
    alpha, y = _case(panel, n, q, b)
    mean, sd, alike = _exact(alpha, n, y, b, 0.3, shared)
    out = draw_released(alpha, {"g": n}, [ReleasedCounts("g", tuple(y), b)], 0.3, shared, DRAWS,
                        np.random.default_rng(2))
    drawn = out["q"][:, 0, 0]
    assert abs(drawn.mean() - mean) < 0.6 * sd
    assert 0.6 < drawn.std() / sd < 1.1
    assert abs(out["alike"].mean() - alike) < 0.15


def _model(releases, categories=("a", "b", "c"), between=0.3):
    groups = [Group("panel", 40, float("inf")), Group("g1", 300, 1.0), Group("g2", 100, 0.2)]
    return CategoryModel(groups, categories, {"panel": np.array([10, 20, 10])}, between=between,
                         released_counts=releases)


def test_generate_draws_a_released_groups_counts_from_its_own_shares():
    release = ReleasedCounts("g1", (30.0, 240.0, 30.0), 2.0)
    post = _model([release]).fit(draws=500, chains=2, seed=3)
    q = post.q["g1"]
    assert q.shape == (2, 500, 3) and np.allclose(q.sum(axis=-1), 1)
    assert abs(q[..., 1].mean() - 0.8) < 0.03  # the release (80% in b) outweighs the panel's 50%
    rng = np.random.default_rng(4)
    counts = np.array([post.generate(1, 7, rng).counts[1] for _ in range(4000)])
    expected = 300 * q[1, 7]
    se = np.sqrt(300 * q[1, 7] * (1 - q[1, 7]) / 4000)
    assert np.all(np.abs(counts.mean(axis=0) - expected) < 4 * se)
    assert "g2" not in post.q  # not released: drawn around p as before


def test_the_releases_covariance_is_the_multinomials_plus_the_noises():
    """R (the covariance of y / n given the shares) against 20,000 simulated releases y = Multinomial(n, q) +
    Laplace(b): every entry within 4 standard errors of the sample covariance (the release's own shares stand
    for q, as the model's plug-in does; here they are q exactly)."""
    n, b, q = 400, 6.0, np.array([0.1, 0.2, 0.3, 0.4])
    rng = np.random.default_rng(9)
    y = rng.multinomial(n, q, size=20_000) + rng.laplace(0.0, b, (20_000, 4))
    _, _, _, obs = _parts(np.ones(4), [(n, q * n - 1.0, b)])  # own shares = (y + 1) / sum: q exactly
    r = obs[0][2]
    sample = np.cov(y.T / n)
    z = y / n - (y / n).mean(axis=0)
    se = np.sqrt(np.var(z[:, :, None] * z[:, None, :], axis=0) / 20_000)
    assert np.all(np.abs(sample - r) < 4 * se + 1e-12)


def test_q_given_p_is_direct_conditioning_in_four_categories():
    """The released group's shares given p (tau > 0): draw_released's conditional mean and covariance against the
    explicit joint Gaussian of (q, z) given p, conditioned directly (4 categories, 40,000 draws at a fixed tau)."""
    alpha = np.array([12.0, 30.0, 5.0, 9.0])
    y, n, b = np.array([70.0, 160.0, 20.0, 50.0]), 300, 4.0
    p_hat, s, v, obs = _parts(alpha, [(n, y, b)])
    a, z, r = obs[0]
    out = draw_released(alpha, {"g": n}, [ReleasedCounts("g", tuple(y), b)], 0.3, 0.0, DRAWS,
                        np.random.default_rng(3))
    p, taus = out["p"][:, :-1], out["between"]
    at = taus == taus[0]
    t = float(taus[0])  # the draws of one grid point of the spread, as the sampler drew them
    joint_qz, cov_zz = t * t * s @ a.T, a @ (t * t * s) @ a.T + r  # cov(q, z | p), cov(z | p)
    gain = joint_qz @ np.linalg.inv(cov_zz)
    want_cov = t * t * s - gain @ joint_qz.T
    resid = out["q"][at, 0, :-1] - (p[at] + (z[None, :] - p[at] @ a.T) @ gain.T)
    assert at.sum() > 300 and s.shape == (3, 3)
    se = np.sqrt(np.diag(want_cov) / at.sum())
    assert np.all(np.abs(resid.mean(axis=0)) < 4 * se)
    np.testing.assert_allclose(np.cov(resid.T), want_cov, rtol=0.25)


def test_bad_releases_are_refused_naming_them():
    with pytest.raises(ValueError, match=r"released_counts\[0\].group must name a private group, got 'panel'"):
        _model([ReleasedCounts("panel", (1.0, 2.0, 3.0), 1.0)])
    with pytest.raises(ValueError, match=r"released_counts\[1\].group 'g1' is released twice"):
        _model([ReleasedCounts("g1", (1.0, 2.0, 3.0), 1.0), ReleasedCounts("g1", (1.0, 2.0, 3.0), 1.0)])
    with pytest.raises(ValueError, match=r"released_counts\[0\].counts must hold 3 counts .* got 2"):
        _model([ReleasedCounts("g1", (1.0, 2.0), 1.0)])
    with pytest.raises(ValueError, match=r"noise_scale of the release of group 'g1' must be a number in \(0, 1e\+12\], "
                                         r"got 0.0"):
        ReleasedCounts("g1", (1.0, 2.0), 0.0)
    with pytest.raises(ValueError, match=r"noise_scale .* got 1e\+200"):
        ReleasedCounts("g1", (1.0, 2.0), 1e200)
    with pytest.raises(ValueError, match=r"counts of the release of group 'g1' must lie within \+-1e\+12, got 1e\+300"):
        ReleasedCounts("g1", (1e300, 2.0), 1.0)
    taus, _ = tau_grid(1.0, 0.5)
    assert taus.max() == 0.99  # the spread is capped as the model's draws are
    with pytest.raises(ValueError, match="counts of the release of group 'g1' must be finite"):
        ReleasedCounts("g1", (1.0, float("nan")), 1.0)
    with pytest.raises(TypeError, match="released_counts must be a sequence of ReleasedCounts"):
        _model({"g1": (1.0, 2.0, 3.0)})
    many = tuple(f"c{j}" for j in range(201))
    groups = [Group("g1", 300, 1.0)]
    with pytest.raises(ValueError, match="at most 200 categories, got 201"):
        CategoryModel(groups, many, released_counts=[ReleasedCounts("g1", (1.0,) * 201, 1.0)])


@pytest.fixture(scope="module")
def truth():
    return histogram_truth(1, np.random.default_rng(3), quick=True)


def test_the_spec_takes_releases_and_refuses_bad_ones(truth):
    raw = pythia_histogram(truth.spec, truth.data, 0.1, np.random.default_rng(0))
    problem = parse_spec(raw).problem()
    assert [r.group for r in problem.model.released_counts] == ["private-0", "private-1", "private-2"]
    assert any("counts released earlier" in line for line in problem.header)
    bad = {**raw, "model": {"released_counts": [{**raw["model"]["released_counts"][0], "group": "panel"}]}}
    with pytest.raises(SpecError, match=r"model.released_counts\[0\].group must name a private group, got 'panel'"):
        parse_spec(bad)
    short = {**raw, "model": {"released_counts": [{**raw["model"]["released_counts"][0], "counts": [1.0, 2.0]}]}}
    with pytest.raises(SpecError, match=r"model.released_counts\[0\].counts must hold \d+ counts"):
        parse_spec(short)
    twice = {**raw, "model": {"released_counts": raw["model"]["released_counts"][:1] * 2}}
    with pytest.raises(SpecError, match=r"model.released_counts\[1\].group 'private-0' is released twice"):
        parse_spec(twice)
    loud = {**raw, "model": {"released_counts": [{**raw["model"]["released_counts"][0], "noise_scale": 1e200}]}}
    with pytest.raises(SpecError, match=r"model.released_counts\[0\]: noise_scale of the release of group 'private-0'"):
        parse_spec(loud).problem()
    tiny = {**raw, "model": {"released_counts": [{**raw["model"]["released_counts"][0], "noise_scale": 1e-9}]}}
    post = parse_spec(tiny).problem().model.fit(draws=50, chains=1, seed=0)  # a noiseless release: no LinAlgError
    assert np.isfinite(post.q["private-0"]).all()


def test_each_group_is_charged_its_epsilon_in_all(truth):
    raw = pythia_histogram(truth.spec, truth.data, 0.1, np.random.default_rng(0))
    releases = {r["group"]: r for r in raw["model"]["released_counts"]}
    for before, after in zip(truth.spec["groups"], raw["groups"]):
        if not np.isfinite(before["epsilon"]):
            assert after == before and before["name"] not in releases
            continue
        spent = 1.0 / releases[before["name"]]["noise_scale"]  # add-remove: sensitivity 1
        assert spent == pytest.approx(0.1 * before["epsilon"])
        assert spent + after["epsilon"] == pytest.approx(before["epsilon"])
    replace = pythia_histogram({**truth.spec, "relation": "replace"}, truth.data, 0.1, np.random.default_rng(0))
    r0 = replace["model"]["released_counts"][0]
    assert r0["noise_scale"] == pytest.approx(2 * releases[r0["group"]]["noise_scale"])  # a replaced record: 2 counts
    assert "released_counts" not in truth.spec.get("model", {})  # the truth's SPEC is kept
    with pytest.raises(ValueError, match=r"share must be in \(0, 1\), got 1.0"):
        pythia_histogram(truth.spec, truth.data, 1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="epsilon must be a finite number > 0, got 0.0"):
        noisy_group_counts(np.array([1, 2]), "add-remove", 0.0, np.random.default_rng(0))


def test_the_release_follows_its_law(truth):
    """Each count plus Laplace(1 / epsilon): over 20,000 releases the mean within 4 standard errors and the sd
    within 4 standard errors (3.2% for a Laplace: a 5% error in the scale fails), counts independent."""
    counts = truth.data["private-0"].astype(float)
    out, scale = noisy_group_counts(counts, "add-remove", 0.25, np.random.default_rng(5), trials=20_000)
    assert scale == pytest.approx(4.0) and out.shape == (20_000, counts.size)
    sd = np.sqrt(2) * scale
    assert np.all(np.abs(out.mean(axis=0) - counts) < 4 * sd / np.sqrt(20_000))
    assert np.all(np.abs(out.std(axis=0) / sd - 1) < 4 * np.sqrt(5 / 4 / 20_000))
    assert abs(np.corrcoef(out[:, 0], out[:, 1])[0, 1]) < 4 / np.sqrt(20_000)
    assert stats.kstest((out[:, 0] - counts[0]) / scale, "laplace").pvalue > 1e-3
