"""The logistic contrast's Newton fits agree with the earlier SciPy ``trust-exact`` fits (issue 13).

``_reference`` is the earlier ``LogisticContrast.minimize`` (the package keeps it, unchanged, as the fallback).  Where Newton's method is
accepted both stop at a gradient norm below 1e-10, so both are within ``1e-10 / lambda_min(H)`` of
the minimiser: objectives agree to 1e-9 relative (measured: <= 6e-14) and ``theta`` to
``1e-6 * max(1, ||theta||)`` (measured: <= 8e-9).  Where it is not (separable or quasi-separable
weighted data without a ridge, fewer positive weights than parameters), the earlier code runs
unchanged: the same numbers bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from hybridpriv.families.public_private.wang import LogisticContrast, m_estimate
from hybridpriv.families.public_private.wang.contrasts import GTOL, _trust_exact, fit_logistic
from hybridpriv.families.public_private.wang.mestimation import fit_rows


def _reference(c: LogisticContrast, points: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The earlier ``LogisticContrast.minimize``: trust-exact from 0 on every row (kept unchanged in the
    package as the fallback, ``contrasts._trust_exact``)."""
    X, y = c.split(points)
    return _trust_exact(X, y, weights, c.l2)


def _objective(c, points, weights, theta):
    return c.objective(theta, points, weights)


def _gradient(c, points, weights, theta):
    return c.gradient(theta, points, weights)


def _problem(rng, n, p, kind, zero_frac=0.3):
    X = rng.standard_normal((n, p))
    beta = rng.uniform(-1.0, 1.0, p)
    if kind == "separable":
        y = (X @ beta > 0).astype(float)
    elif kind == "quasi":  # separable but for points at the origin with both labels
        y = (X @ beta > 0).astype(float)
        X[:4], y[:4] = 0.0, [1.0, 1.0, 0.0, 0.0]
    elif kind == "all_ones":
        y = np.ones(n)
    else:
        y = (rng.random(n) < special.expit(X @ beta)).astype(float)
    w = rng.random(n)
    w[rng.random(n) < zero_frac] = 0.0
    w[:4] = np.maximum(w[:4], 0.1)  # the quasi-separable case's boundary points keep their weight
    return np.column_stack([X, y]), w / w.sum()


def _assert_agree(c, points, w, new, old):
    f_new, f_old = _objective(c, points, w, new), _objective(c, points, w, old)
    assert abs(f_new - f_old) <= 1e-9 * abs(f_old), (f_new, f_old)
    assert np.abs(new - old).max() <= 1e-6 * max(1.0, float(np.linalg.norm(old))), (new, old)


@pytest.mark.parametrize("p", [2, 30])
@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("l2", [0.0, 0.05])
@pytest.mark.parametrize("zero_frac", [0.0, 0.6])
def test_newton_fits_agree_with_trust_exact(p, intercept, l2, zero_frac):
    rng = np.random.default_rng([p, intercept, int(l2 * 100), int(zero_frac * 10)])
    c = LogisticContrast(intercept=intercept, l2=l2)
    for n in (40 * p, 1_000):
        points, w = _problem(rng, n, p, "logistic", zero_frac)
        X, y = c.split(points)
        new, newton = fit_logistic(X, y, w, l2)
        assert newton
        assert np.linalg.norm(_gradient(c, points, w, new)) < GTOL
        _assert_agree(c, points, w, new, _reference(c, points, w))
        np.testing.assert_array_equal(c.minimize(points, w), new)


@pytest.mark.parametrize("kind", ["separable", "quasi", "all_ones", "few_points"])
@pytest.mark.parametrize("p", [2, 30])
@pytest.mark.parametrize("intercept", [False, True])
def test_without_a_minimiser_the_earlier_fit_runs_unchanged(kind, p, intercept):
    """No ridge and no finite MLE: trust-exact from 0 as before, the same numbers; with a ridge the
    minimiser exists and Newton's method finds it."""
    rng = np.random.default_rng([p, intercept, len(kind)])
    if kind == "few_points":  # fewer positive weights than parameters
        points, w = _problem(rng, 3 * p, p, "logistic", zero_frac=0.0)
        w[p // 2 + 1:] = 0.0
        w /= w.sum()
    else:
        points, w = _problem(rng, 5 * p, p, kind)
    c = LogisticContrast(intercept=intercept)
    X, y = c.split(points)
    new, newton = fit_logistic(X, y, w)
    old = _reference(c, points, w)
    if kind == "all_ones" and not intercept and newton:  # the MLE is finite unless the points lie in a half-space
        _assert_agree(c, points, w, new, old)
    else:
        assert not newton
        np.testing.assert_array_equal(new, old)
    ridge = LogisticContrast(intercept=intercept, l2=0.05)
    new, newton = fit_logistic(X, y, w, 0.05)
    assert newton
    _assert_agree(ridge, points, w, new, _reference(ridge, points, w))


@pytest.mark.parametrize("p, intercept, l2", [(2, False, 0.0), (30, True, 0.0), (30, False, 0.01)])
def test_rows_started_from_the_previous_row_agree(p, intercept, l2):
    """``minimize_rows`` (every row at once, ``newton_rows``) and ``fit_rows``: noisy truncated weights
    on one set of points, a row that is separable among them (its fit falls back, the next starts
    from 0) and a row with a single positive weight."""
    rng = np.random.default_rng(p)
    c = LogisticContrast(intercept=intercept, l2=l2)
    points, _ = _problem(rng, 20 * p, p, "logistic")
    counts = rng.multinomial(40 * p, rng.dirichlet(np.ones(len(points))))
    W = np.maximum(counts + rng.laplace(0.0, 2.0 / 0.5, (6, len(points))), 0.0)
    W[2] = np.where(np.arange(len(points)) < p // 2 + 1, 1.0, 0.0)
    W[4] = np.eye(len(points))[3]
    W /= W.sum(axis=1, keepdims=True)
    X, y = c.split(points)
    assert [fit_logistic(X, y, w, l2)[1] for w in W] == [True, True, l2 > 0, True, l2 > 0, True]
    got = c.minimize_rows(points, W)
    thetas, fell_back = fit_rows(points, W, c)
    np.testing.assert_allclose(thetas, got, rtol=1e-9, atol=1e-12)  # fit_rows divides by the sums again
    assert not fell_back.any()
    for w, new in zip(W, got):
        _assert_agree(c, points, w, new, _reference(c, points, w))


def test_m_estimate_agrees_with_the_earlier_fit_on_the_section_5_1_setting():
    """p = 100 without intercept, truncated Laplace-noisy counts of 2,000 private points as weights."""
    from hybridpriv.families.public_private.wang.sources import simulate_section51

    rng = np.random.default_rng(51)
    d = simulate_section51(100, 2_000, 1_000, rng)
    public = np.column_stack([d["Xe"], d["ye"]])
    counts = rng.multinomial(2_000, rng.dirichlet(np.ones(1_000)))
    w = np.maximum(counts + rng.laplace(0.0, 2.0 / 0.6, 1_000), 0.0) / 2_000
    c = LogisticContrast()
    assert (w == 0).any()
    _assert_agree(c, public, w / w.sum(), m_estimate(public, w, c), _reference(c, public, w / w.sum()))


def test_negative_weights_are_refused():
    X, y = np.ones((3, 1)), np.array([0.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="logistic weights must be >= 0.*-0.5"):
        fit_logistic(X, y, np.array([0.5, -0.5, 1.0]))


@pytest.mark.parametrize("d", range(2, 13))
def test_the_newton_steps_one_norm_is_the_symmetric_hessians_to_the_bit(d):
    """``_one_norm`` of a Hessian's upper triangle (as BLAS ``dsyrk`` returns it, Fortran order) equals the 1-norm of
    the symmetric matrix built the earlier way, ``h + triu(h, 1).T`` summed over columns, bit for bit (the rcond
    test reads it); summing the new matrix's columns instead differed in the last bit for 8 or more columns."""
    from scipy import linalg

    from hybridpriv.families.public_private.wang.contrasts import _one_norm

    rng = np.random.default_rng(d)
    for _ in range(200):
        z = rng.normal(size=(int(rng.integers(d, 60)), d)) * rng.exponential(size=(1, d))
        h = linalg.blas.dsyrk(1.0, z.T, trans=0, lower=0)
        h.flat[:: d + 1] += 0.01
        assert _one_norm(h) == np.abs(h + np.triu(h, 1).T).sum(axis=0).max()
