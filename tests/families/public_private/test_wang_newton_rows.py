"""Many logistic fits at once (``newton_rows.fit_logistic_rows``) against ``fit_logistic`` one fit at a time.

``fit_logistic`` is the independent computation: its own Newton loop (BLAS ``syrk`` on the positively weighted
rows, LAPACK Cholesky) and, where that refuses, SciPy ``trust-exact``.  Where both accept Newton's method both
stop at a gradient norm below 1e-10, so they agree to the stopping rule's accuracy: objectives to 1e-9 relative,
``theta`` to ``1e-6 * max(1, ||theta||)`` (as ``test_wang_logistic_fast``).  Fits the vectorised loop refuses
(separable weighted points without a ridge, fewer positive weights than parameters) are ``fit_logistic``'s own:
the same numbers to the bit.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from scipy import special

from hybridpriv.families.public_private.wang import Algorithm2, HybridDesign, LogisticContrast, newton_rows
from hybridpriv.families.public_private.wang.contrasts import fit_logistic
from hybridpriv.families.public_private.wang.newton_rows import fit_logistic_rows

# the module (the package's attribute of that name is the function)
algorithm2_module = importlib.import_module("hybridpriv.families.public_private.wang.algorithm2")


def _objective(X, y, w, l2, theta):
    eta = X @ theta
    return float(w @ (np.logaddexp(0.0, eta) - y * eta) + 0.5 * l2 * theta @ theta)


def _fits(rng, fits, n, d, own, zero_frac=0.4):
    """``fits`` noisy weight vectors on shared or own points; fit 1 separable among its positive weights, fit 3
    a single positive weight (both refused by Newton's method without a ridge)."""
    shape = (fits, n) if own else (n,)
    X = np.concatenate([np.ones(shape + (1,)), rng.standard_normal(shape + (d - 1,))], axis=-1)
    beta = rng.uniform(-1.0, 1.0, d)
    y = (rng.random(shape) < special.expit(X @ beta)).astype(float)
    W = rng.random((fits, n)) * (rng.random((fits, n)) >= zero_frac)
    Xs, ys = (X[1], y[1]) if own else (X, y)
    sep = (Xs @ beta > 0).astype(float)
    W[1] = np.where(sep == ys, W[1] + 0.1, 0.0)  # only the points on the right side of X beta = 0 weigh
    W[3] = np.eye(n)[5]
    return X, y, W / W.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("own", [False, True])
@pytest.mark.parametrize("d, n, l2", [(2, 15, 0.0), (4, 60, 0.0), (4, 300, 0.01), (6, 40, 0.05)])
def test_the_fits_together_agree_with_each_fit_alone(own, d, n, l2):
    rng = np.random.default_rng([d, n, own])
    X, y, W = _fits(rng, 12, n, d, own)
    got, newton = fit_logistic_rows(X, y, W, l2)
    for b in range(len(W)):
        Xb, yb = (X[b], y[b]) if own else (X, y)
        ref, ref_newton = fit_logistic(Xb, yb, W[b], l2)
        assert newton[b] == ref_newton, b
        if not ref_newton:  # trust-exact's answer, from the same call
            np.testing.assert_array_equal(got[b], ref)
            continue
        f_got, f_ref = _objective(Xb, yb, W[b], l2, got[b]), _objective(Xb, yb, W[b], l2, ref)
        assert abs(f_got - f_ref) <= 1e-9 * abs(f_ref), (b, f_got, f_ref)
        assert np.abs(got[b] - ref).max() <= 1e-6 * max(1.0, float(np.linalg.norm(ref))), (b, got[b], ref)
    _, accepted = newton_rows._newton_block(X, y, W, l2)  # the vectorised loop alone, before any fallback
    assert accepted.sum() >= 8  # most answers above are the loop's, not fit_logistic's
    if l2 == 0.0:  # the two refusals planted by _fits
        assert not accepted[1] and not accepted[3] and not newton[1] and not newton[3]


def test_blocks_give_the_answers_of_one_block(monkeypatch):
    rng = np.random.default_rng(7)
    X, y, W = _fits(rng, 30, 50, 4, own=True)
    whole, whole_newton = fit_logistic_rows(X, y, W, 0.0)
    monkeypatch.setattr(newton_rows, "_BLOCK_NUMBERS", 3 * 50)  # blocks of 3 fits
    parts, parts_newton = fit_logistic_rows(X, y, W, 0.0)
    np.testing.assert_array_equal(whole_newton, parts_newton)
    np.testing.assert_allclose(parts, whole, rtol=1e-12, atol=1e-12)


def test_large_fits_run_one_by_one_from_the_previous_solution():
    """Above ``_VECTORISE_MAX_WORK`` the answers are exactly the loop the package ran before (each fit from the
    previous one's solution)."""
    rng = np.random.default_rng(3)
    n = newton_rows._VECTORISE_MAX_WORK // 16 + 1  # 4 columns: just above the limit
    X, y, W = _fits(rng, 5, n, 4, own=False)
    got, newton = fit_logistic_rows(X, y, W, 0.01)
    start = None
    for b in range(len(W)):
        ref, ref_newton = fit_logistic(X, y, W[b], 0.01, start)
        np.testing.assert_array_equal(got[b], ref)
        assert newton[b] == ref_newton
        start = ref if ref_newton else None


def test_minimize_rows_of_the_contrast_is_the_vectorised_fit():
    rng = np.random.default_rng(11)
    c = LogisticContrast(intercept=True, l2=0.01)
    X, y, W = _fits(rng, 8, 40, 4, own=True)
    points = np.concatenate([X[..., 1:], y[..., None]], axis=-1)  # covariates then the label; intercept added
    np.testing.assert_array_equal(c.minimize_rows(points, W), fit_logistic_rows(X, y, W, 0.01)[0])
    shared = c.minimize_rows(points[0], W)
    for b in range(len(W)):
        ref = c.minimize(points[0], W[b])
        assert np.abs(shared[b] - ref).max() <= 1e-6 * max(1.0, float(np.linalg.norm(ref)))


def test_algorithm2_fits_its_runs_in_blocks_with_the_same_answers(monkeypatch):
    """Algorithm 2 stacks its runs' subsets in blocks of at most ``_STACK_NUMBERS`` numbers; blocks of one run give
    the same releases (the random draws do not depend on the blocks)."""
    rng = np.random.default_rng(5)
    XD, XE = rng.normal(1.0, 1.0, (200, 2)), rng.normal(0.0, 0.7, (60, 2))
    data = HybridDesign(np.column_stack([XD, rng.random(200) < special.expit(XD @ [-1.0, 1.0])]),
                        np.column_stack([XE, rng.random(60) < special.expit(XE @ [0.3, 0.3])]),
                        columns=("x0", "x1", "y"), label="y")
    mech = Algorithm2("logistic", (0.8, 0.2, 1.0), [10, 25, 60], criterion="brier")
    whole = mech.release(data, np.random.default_rng(9), trials=40)
    monkeypatch.setattr(algorithm2_module, "_STACK_NUMBERS", 1)  # one run a block
    one = mech.release(data, np.random.default_rng(9), trials=40)
    np.testing.assert_allclose(one, whole, rtol=1e-10, atol=1e-12)
    assert len(np.unique(whole.round(6), axis=0)) > 10  # the runs chose and fitted different subsets


def test_bad_weights_are_refused_with_their_value():
    X, y = np.ones((4, 2)), np.array([0.0, 1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match=r"weights must be >= 0.*-0\.5"):
        fit_logistic_rows(X, y, np.array([[0.5, 0.5, 0.5, -0.5]]))
    with pytest.raises(ValueError, match=r"weights must be \(fits, rows\), got shape \(4,\)"):
        fit_logistic_rows(X, y, np.full(4, 0.25))
    with pytest.raises(ValueError, match=r"X \(4, 2\) and weights \(1, 3\) do not match"):
        fit_logistic_rows(X, y, np.full((1, 3), 1 / 3))


def test_a_fit_with_an_overflowing_hessian_is_refused_alone():
    """A fit whose Hessian overflows (a covariate of 1e200) is left for fit_logistic; the other fits of its block are
    still the loop's (eigvalsh and solve would fail on the whole stack)."""
    rng = np.random.default_rng(2)
    X, y, W = _fits(rng, 6, 30, 3, own=True)
    X[2, 4, 1], W[2, 4] = 1e200, 0.1  # a weighted point
    with np.errstate(over="ignore", invalid="ignore"):
        _, accepted = newton_rows._newton_block(X, y, W, 0.01)
    assert not accepted[2] and accepted[[0, 4, 5]].all()


def test_every_contrast_fits_rows_on_their_own_points():
    """``minimize_rows`` with a stack ``(B, n, p)`` (Algorithm 2's runs) fits row ``i`` on its own points: the mean
    contrast by a weighted mean computed here, the median (the base class's loop) by ``minimize`` on those points."""
    from hybridpriv.families.public_private.wang import MeanContrast, MedianContrast

    rng = np.random.default_rng(4)
    points, W = rng.normal(size=(5, 9, 2)), rng.random((5, 9))
    W /= W.sum(axis=1, keepdims=True)
    want = np.array([(W[i, :, None] * points[i]).sum(axis=0) for i in range(5)])
    np.testing.assert_allclose(MeanContrast().minimize_rows(points, W), want, rtol=1e-12)
    med = MedianContrast()
    got = med.minimize_rows(points, W)
    for i in range(5):
        np.testing.assert_array_equal(got[i], med.minimize(points[i], W[i]))
    assert not np.allclose(got[0], med.minimize(points[1], W[0]))  # the rows' own points, not one set
