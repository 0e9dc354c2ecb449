"""The Wang family on the one pipeline: HybridDesign, the mechanisms, the tasks and the sources.

Independent references: full distance matrices (the package uses KD-trees and cached searches),
closed-form weighted means, a Newton/IRLS logistic fit written here, Laplace and Gumbel draws
reproduced from a generator in the documented order, sums of the ledger written by hand.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.special import expit

from hybridpriv.core.data import DatasetSource, FixedSource
from hybridpriv.core.random import rng as stream_rng
from hybridpriv.engine.decision import decide
from hybridpriv.engine.evaluate import evaluate
from hybridpriv.families.public_private.wang import (
    TIE_ATOL,
    TIE_RTOL,
    Algorithm1,
    Algorithm2,
    HybridData,
    HybridDesign,
    LeiHistogram,
    LogisticContrast,
    OrderedSource,
    ParameterError,
    PredictionError,
    PublicOnly,
    Released,
    Section51Source,
    SubsetDistance,
    algorithm2,
    lei_m_estimator,
    load_hybrid_csv,
    rescale,
    simulate_section51,
)


def brute_nearest(P, E):
    """Index and distance of the nearest row of E (full distance matrix; ties to the lowest index)."""
    d = np.sqrt(((P[:, None, :] - E[None, :, :]) ** 2).sum(axis=2))
    dmin = d.min(axis=1, keepdims=True)
    return np.argmax(d <= dmin + TIE_RTOL * dmin + TIE_ATOL, axis=1), dmin[:, 0]


def irls_logistic(X, y, w=None, iters=100):
    """Newton-Raphson for the weighted logistic log-likelihood (no intercept), written independently."""
    w = np.ones(len(y)) if w is None else w / w.sum()
    b = np.zeros(X.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-X @ b))
        step = np.linalg.solve(X.T @ (X * (w * p * (1 - p))[:, None]), X.T @ (w * (p - y)))
        b -= step
        if np.abs(step).max() < 1e-13:
            break
    return b


def design(seed=0, n_d=300, n_e=60, p=2, **kw):
    rng = np.random.default_rng(seed)
    XD, XE = rng.normal(1.0, 1.0, (n_d, p)), rng.normal(0.0, 0.7, (n_e, p))
    D = np.column_stack([XD, rng.random(n_d) < expit(XD @ np.linspace(-1, 1, p))])
    E = np.column_stack([XE, rng.random(n_e) < expit(XE @ np.full(p, 0.3))])
    return HybridDesign(D, E, columns=(*(f"x{j}" for j in range(p)), "y"), label="y", **kw)


def counts_of(data, subset):
    p01, e01, _ = rescale(data.private, data.public)
    return np.bincount(brute_nearest(p01, e01[subset])[0], minlength=len(subset)).astype(float)


# ---------------------------------------------------------------------------------------
# the data type
# ---------------------------------------------------------------------------------------
def test_hybrid_design_is_the_public_private_kind_with_cached_searches():
    data = design(orders={"mine": [5, 2, 9]})
    assert data.data_kind == "public-private" and data.n_private == 300 and data.n_public == 60
    assert data.outcome == 2 and data.covariates().shape == (300, 2)
    assert not data.private.flags.writeable and not data.orders["mine"].flags.writeable
    np.testing.assert_array_equal(data.order("mine"), [5, 2, 9])
    # nearest points of a subset, by position in the subset, against a full distance matrix
    p01, e01, _ = rescale(data.private, data.public)
    sub = np.array([7, 3, 40, 11])
    idx, dist = data.nearest(sub)
    ref_idx, ref_dist = brute_nearest(p01, e01[sub])
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(dist, ref_dist, rtol=1e-12)
    assert data.nearest(sub)[0] is idx  # computed once, kept
    np.testing.assert_array_equal(data.counts(), counts_of(data, np.arange(60)))
    more = data.with_orders({"other": [1, 0]})
    assert sorted(more.orders) == ["mine", "other"] and more.nearest(sub)[0] is idx  # the searches are shared
    assert HybridData is HybridDesign


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(private=np.zeros((3, 2)), public=np.zeros((4, 3))), ValueError, "same number of columns"),
    (dict(private=[[np.nan, 0.0]], public=[[0.0, 1.0]]), ValueError, "private contains NaN"),
    (dict(private=[[0.0, 1.0]], public=[[0.0, 1.0]], columns=("a",)), ValueError, "columns must name the 2"),
    (dict(private=[[0.0, 1.0]], public=[[0.0, 1.0]], columns=("a", "b"), label="y"), ValueError, "label must"),
    (dict(private=[[0.0, 1.0]], public=[[0.0, 1.0]], orders={"o": [0, 0]}), ValueError, "must not repeat"),
    (dict(private=[[0.0, 1.0]], public=[[0.0, 1.0]], orders={"o": [3]}), ValueError, r"in \[0, 1\)"),
    (dict(private=[[0.0, 1.0]], public=[[0.0, 1.0]], orders={"o": [0.5]}), TypeError, "integer public indices"),
    (dict(private=[[0.0, 1.0]], public=[[0.0, 1.0]], categorical=[5]), ValueError, "categorical column index"),
])
def test_hybrid_design_refuses_bad_input_naming_it(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        HybridDesign(**kwargs)


def test_the_csv_loader_returns_a_design_with_the_outcome_last(tmp_path):
    (tmp_path / "pub.csv").write_text("age,mi\n50,yes\n61,no\n70,yes\n")
    (tmp_path / "priv.csv").write_text("age,mi\n55,no\n80,yes\n")
    data = load_hybrid_csv(tmp_path / "priv.csv", tmp_path / "pub.csv", label="mi")
    assert isinstance(data, HybridDesign) and data.columns == ("age", "mi") and data.outcome == 1
    theta = Algorithm1("logistic", math.inf).release(data, np.random.default_rng(0))
    assert theta.shape == (1, 1) and np.isfinite(theta).all()


# ---------------------------------------------------------------------------------------
# Algorithm1
# ---------------------------------------------------------------------------------------
def test_algorithm1_releases_on_the_first_points_of_a_public_order():
    data = design(orders={"named": np.arange(59, -1, -1)})
    order = np.array([11, 4, 30, 2, 55, 8, 17])
    for mech, sub in ((Algorithm1("mean", 1.5, 5, order=order), order[:5]),
                      (Algorithm1("mean", 1.5, 12, order="named"), np.arange(59, 47, -1)),
                      (Algorithm1("mean", 1.5), np.arange(60))):
        out = mech.release(data, np.random.default_rng(4), trials=6)
        counts = counts_of(data, sub)
        z = np.random.default_rng(4).laplace(size=(6, sub.size)) * (2 / 1.5)  # the draws, reproduced
        w = np.maximum((counts + z) / 300, 0.0)
        np.testing.assert_allclose(out, w @ data.public[sub] / w.sum(axis=1, keepdims=True), atol=1e-12)
        assert mech.privacy["private"].epsilon == 1.5 and mech.privacy["private"].relation == "replace"
        assert math.isinf(mech.privacy["public"].epsilon)
    # noise-free weights: the counts themselves, every trial the same (the paper's black curve)
    oracle = Algorithm1("mean", math.inf, 5, order=order).release(data, np.random.default_rng(0), 3)
    c = counts_of(data, order[:5])
    np.testing.assert_allclose(oracle, np.tile(c @ data.public[order[:5]] / c.sum(), (3, 1)), atol=1e-12)
    with pytest.raises(ValueError, match="subset_size must be at most the order's length 7"):
        Algorithm1("mean", 1.0, 8, order=order).release(data, np.random.default_rng(0))
    with pytest.raises(ValueError, match="order must name one of the dataset's public orders"):
        Algorithm1("mean", 1.0, order="missing").release(data, np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_E = 60"):
        Algorithm1("mean", 1.0, order=[70]).release(data, np.random.default_rng(0))


def test_algorithm1_logistic_matches_an_independent_newton_fit_and_checks_the_layout():
    data = design(seed=3)
    theta = Algorithm1("logistic", 2.0, 40).release(data, np.random.default_rng(1), trials=2)
    z = np.random.default_rng(1).laplace(size=(2, 40)) * (2 / 2.0)
    w = np.maximum((counts_of(data, np.arange(40)) + z) / 300, 0.0)
    E = data.public[:40]
    for t in range(2):
        np.testing.assert_allclose(theta[t], irls_logistic(E[:, :2], E[:, 2], w[t]), atol=1e-6)
    with pytest.raises(ValueError, match="outcome 'y' is column 2"):
        Algorithm1(LogisticContrast(label=0), 1.0).release(data, np.random.default_rng(0))
    with pytest.raises(TypeError, match="data must be a HybridDesign"):
        Algorithm1("mean", 1.0).release([np.zeros(3)], np.random.default_rng(0))


def test_algorithm1_all_zero_weights_fall_back_to_equal_weights_or_raise():
    data = HybridDesign(np.zeros((2, 1)), np.array([[0.0], [1.0], [2.0]]))
    seed = next(s for s in range(500) if (np.random.default_rng(s).laplace(size=3) * 2e3 + [2, 0, 0] < 0).all())
    theta = Algorithm1("mean", 1e-3).release(data, np.random.default_rng(seed))
    assert theta[0, 0] == pytest.approx(1.0)  # the unweighted public mean
    with pytest.raises(ValueError, match="positive sum"):
        Algorithm1("mean", 1e-3, on_zero_weights="raise").release(data, np.random.default_rng(seed))


# ---------------------------------------------------------------------------------------
# Algorithm2
# ---------------------------------------------------------------------------------------
def _bounded(thetas, private):
    """A criterion of sensitivity 1 under replace-one: each record adds a term in [0, 1]."""
    return np.minimum(1.0, np.abs(private[None, :, 0] - thetas[:, None, 0])).sum(axis=1)


def test_algorithm2_declares_the_accountants_total_computed_by_hand():
    sizes = [5, 10, 20, 40]
    for selection, total in (("noisy_min", 0.4 + 0.1 + 0.5), ("curve", 1.0), ("exponential", 1.0),
                             ("paper", 0.4 + 0.1 + 4 * 0.5)):
        mech = Algorithm2("mean", (0.4, 0.1, 0.5), sizes, criterion=_bounded, criterion_sensitivity=1.0,
                          selection=selection)
        assert mech.privacy["private"].epsilon == pytest.approx(total, rel=1e-12)
        assert mech.privacy["private"].relation == "replace" and math.isinf(mech.privacy["public"].epsilon)
        assert [e for _, e in mech.ledger_plan()][:5] == [0.4, 0.025, 0.025, 0.025, 0.025]
    with pytest.warns(UserWarning, match="not a proven guarantee"):
        unproven = Algorithm2("logistic", (0.4, 0.1, 0.5), sizes)
    assert unproven.sensitivity_proven is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Algorithm2("logistic", (0.4, 0.1, 0.5), sizes, reference_ridge=1.0).sensitivity_proven


def test_algorithm2_runs_many_trials_at_once_with_the_documented_draws():
    """Mean contrast, bounded criterion: every step recomputed with a distance matrix and the draws in order."""
    data = design(seed=5, n_d=80, n_e=12, p=1)
    sizes, (e1, e2, e3), T = [3, 6, 12], (0.7, 0.3, 1.0), 5
    mech = Algorithm2("mean", (e1, e2, e3), sizes, criterion=_bounded, criterion_sensitivity=1.0)
    out = mech.release(data, np.random.default_rng(9), trials=T)
    g = np.random.default_rng(9)
    all_counts = counts_of(data, np.arange(12))
    order = np.argsort(-(all_counts + g.laplace(size=(T, 12)) * 2 / e1) / 80, axis=1, kind="stable")
    thetas = np.empty((T, 3, 2))
    for i, n in enumerate(sizes):
        z = g.laplace(size=(T, n)) * 2 / (e2 / 3)
        for t in range(T):
            w = np.maximum((counts_of(data, order[t, :n]) + z[t]) / 80, 0)
            w = np.ones(n) if w.sum() == 0 else w
            thetas[t, i] = w @ data.public[order[t, :n]] / w.sum()
    crit = np.array([_bounded(thetas[t], data.private) for t in range(T)])
    chosen = np.argmin(crit + g.laplace(size=(T, 3)) * 2 * 1.0 / e3, axis=1)
    np.testing.assert_allclose(out, thetas[np.arange(T), chosen], atol=1e-12)
    # output="size" is the same run's chosen size; run() is one run with everything
    sizes_out = Algorithm2("mean", (e1, e2, e3), sizes, criterion=_bounded, criterion_sensitivity=1.0,
                           output="size").release(data, np.random.default_rng(9), trials=T)
    np.testing.assert_array_equal(sizes_out, np.array(sizes)[chosen])
    one = mech.run(data, np.random.default_rng(9))
    assert one.chosen_size == sizes[int(np.argmin(one.noisy_criterion))]
    assert one.total_epsilon == pytest.approx(e1 + e2 + e3)


def test_algorithm2_mechanism_is_the_function_on_the_same_generator():
    data = design(seed=6, n_d=200, n_e=50)
    kw = dict(criterion="brier", selection="curve")
    res = algorithm2(data.private, data.public, "logistic", (0.8, 0.2, 1.0), [10, 25, 50], np.random.default_rng(2), **kw)
    mech = Algorithm2("logistic", (0.8, 0.2, 1.0), [10, 25, 50], **kw)
    np.testing.assert_array_equal(mech.release(data, np.random.default_rng(2))[0], res.theta)
    run = mech.run(data, np.random.default_rng(2))
    np.testing.assert_array_equal(run.order, res.order)
    np.testing.assert_array_equal(run.noisy_criterion, res.noisy_criterion)
    with pytest.raises(ValueError, match=r"subset_sizes must lie in \[1, n_E=50\]"):
        Algorithm2("logistic", (0.8, 0.2, 1.0), [10, 60], **kw).release(data, np.random.default_rng(0))


# ---------------------------------------------------------------------------------------
# Lei, public-only
# ---------------------------------------------------------------------------------------
def test_lei_histogram_mechanism_uses_the_public_range_and_one_draw_per_cell_and_trial():
    data = design(seed=8, n_d=500, n_e=80)
    mech = LeiHistogram("mean", 1.0, 4)
    out = mech.release(data, np.random.default_rng(3), trials=3)
    lo, hi = data.public.min(axis=0), data.public.max(axis=0)
    D = np.clip(data.private, lo, hi)
    ref, edges = np.histogramdd(D, bins=[4, 4, 4], range=list(zip(lo, hi)))
    z = np.random.default_rng(3).laplace(size=(3, 64)) * 2 / 1.0
    noisy = np.maximum(ref.ravel() + z, 0)
    centres = np.stack(np.meshgrid(*[(e[:-1] + e[1:]) / 2 for e in edges], indexing="ij"), axis=-1).reshape(-1, 3)
    np.testing.assert_allclose(out, noisy @ centres / noisy.sum(axis=1, keepdims=True), atol=1e-9)
    # one trial: the function with the same box and generator
    np.testing.assert_allclose(mech.release(data, np.random.default_rng(5))[0],
                               lei_m_estimator(data.private, "mean", 1.0, 4, np.random.default_rng(5), lower=lo, upper=hi),
                               atol=1e-12)
    assert mech.privacy["private"].epsilon == 1.0


def test_public_only_never_reads_the_private_records():
    data = design(seed=9)
    out = PublicOnly("mean").release(data, np.random.default_rng(0), trials=2)
    np.testing.assert_allclose(out, np.tile(data.public.mean(axis=0), (2, 1)))
    assert PublicOnly("mean").privacy["private"].epsilon == 0.0
    other = HybridDesign(data.private + 5.0, data.public)
    np.testing.assert_array_equal(PublicOnly("mean").release(other, np.random.default_rng(1)), out[:1])


# ---------------------------------------------------------------------------------------
# tasks
# ---------------------------------------------------------------------------------------
def test_prediction_error_task_against_an_independent_fit():
    data = design(seed=10)
    task = PredictionError()
    truth = task.truth(data)
    X, y = data.private[:, :2], data.private[:, 2]
    ref = irls_logistic(X, y)
    np.testing.assert_allclose([truth["theta_hat[0]"], truth["theta_hat[1]"]], ref, atol=1e-6)
    thetas = np.array([[0.1, 0.2], [-1.0, 0.5]])
    direct = np.sqrt(((expit(thetas @ X.T) - expit(X @ ref)) ** 2).sum(axis=1))
    np.testing.assert_allclose(task.loss(Algorithm1("logistic", 1.0), thetas, data, truth), direct, rtol=1e-6)
    with pytest.raises(ValueError, match="intercept=False"):
        task.check(Algorithm1(LogisticContrast(intercept=True), 1.0))
    with pytest.raises(ValueError, match="output='size'"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        task.check(Algorithm2("logistic", (1, 1, 1), [5], output="size"))


def test_parameter_distance_and_released_tasks():
    data = design(seed=11)
    task = ParameterError("mean")
    truth = task.truth(data)
    np.testing.assert_allclose([truth[f"theta_hat[{j}]"] for j in range(3)], data.private.mean(axis=0))
    rel = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    np.testing.assert_allclose(task.loss(PublicOnly("mean"), rel, data, truth),
                               ((rel - data.private.mean(axis=0)) ** 2).sum(axis=1))
    with pytest.raises(ValueError, match="ParameterError"):
        task.check(PublicOnly("median"))
    np.testing.assert_array_equal(Released().loss(None, np.array([[3.0], [5.0]]), data, {}), [3.0, 5.0])
    with pytest.raises(ValueError, match="scalar releases"):
        Released().loss(PublicOnly("mean"), np.zeros((2, 3)), data, {})


def test_subset_distance_is_exact_and_matches_a_distance_matrix():
    data = design(seed=12)
    sub = np.array([3, 1, 4, 15, 9])
    ev = evaluate({n: Algorithm1("mean", math.inf, n, order=sub) for n in (1, 3, 5)},
                  FixedSource(data, 2), SubsetDistance(), dim="subset_size")
    p01, e01, _ = rescale(data.private, data.public)
    want = [brute_nearest(p01, e01[sub[:n]])[1].mean() for n in (1, 3, 5)]
    np.testing.assert_allclose(ev["risk"].isel(chain=0, draw=0), want, rtol=1e-12)
    assert bool(ev["exact"].all()) and "loss" not in ev  # no release was drawn
    with pytest.raises(ValueError, match="public subset"):
        SubsetDistance().check(PublicOnly("mean"))


# ---------------------------------------------------------------------------------------
# sources and the engine
# ---------------------------------------------------------------------------------------
def test_section51_source_is_the_paper_simulation_one_repeat_per_draw():
    src = Section51Source(2, 50, 40, draws=3)
    assert isinstance(src, DatasetSource) and src.shape == (1, 3)
    data = src.generate(0, 1, np.random.default_rng(4))
    sim = simulate_section51(2, 50, 40, np.random.default_rng(4))
    np.testing.assert_array_equal(data.private, np.column_stack([sim["Xd"], sim["yd"]]))
    np.testing.assert_array_equal(data.public, np.column_stack([sim["Xe"], sim["ye"]]))
    assert data.columns == ("x0", "x1", "y") and data.label == "y"
    # the setting: public variances (0.5, 1), private (1, 1), to 4 standard errors (sd of a variance: v sqrt(2/n))
    big = simulate_section51(2, 20_000, 20_000, np.random.default_rng(0))
    v = big["Xe"].var(axis=0)
    assert np.all(np.abs(v - [0.5, 1.0]) < 4 * np.array([0.5, 1.0]) * math.sqrt(2 / 20_000))
    assert np.all(np.abs(big["Xd"].var(axis=0) - 1.0) < 4 * math.sqrt(2 / 20_000))
    assert np.all(np.abs(big["beta_d"]) <= 1) and np.all((big["beta_e"] >= 0) & (big["beta_e"] <= 0.5))
    hundred = simulate_section51(100, 30_000, 30_000, np.random.default_rng(1))
    assert np.all(np.abs(hundred["Xe"].var(axis=0).mean() - 0.5) < 4 * 0.5 * math.sqrt(2 / 30_000 / 100))


def test_ordered_source_attaches_fixed_orders_and_draws_noisy_ones_after_the_data():
    base = Section51Source(2, 60, 20, draws=2)
    fixed = np.stack([np.arange(20), np.arange(19, -1, -1)])[None]  # (1 chain, 2 draws, 20)
    src = OrderedSource(base, {"model": fixed}, {"eps1": 0.8})
    data = src.generate(0, 1, np.random.default_rng(7))
    g = np.random.default_rng(7)
    plain = base.generate(0, 1, g)  # the same dataset: the order is drawn after it
    np.testing.assert_array_equal(data.private, plain.private)
    np.testing.assert_array_equal(data.order("model"), np.arange(19, -1, -1))
    counts = counts_of(plain, np.arange(20))
    want = np.argsort(-(counts + g.laplace(size=20) * 2 / 0.8) / 60, kind="stable")
    np.testing.assert_array_equal(data.order("eps1"), want)
    with pytest.raises(ValueError, match=r"orders\['model'\] must have shape \(1, 2, m\)"):
        OrderedSource(base, {"model": fixed[0]})


def test_evaluate_and_decide_take_every_wang_mechanism():
    src = Section51Source(2, 300, 200, draws=3)
    c = LogisticContrast()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        a2 = Algorithm2(c, (0.8, 0.2, 1.0), [20, 100, 200])
    cands = {"alg1": Algorithm1(c, 2.0, 100), "alg2": a2, "lei": LeiHistogram(c, 1.0, 5), "public": PublicOnly(c),
             "oracle": Algorithm1(c, math.inf)}
    ev = evaluate(cands, src, PredictionError(), trials=2, seed=4)
    assert ev["risk"].dims == ("estimator", "chain", "draw") and np.isfinite(ev["risk"]).all()
    assert list(ev["unit"].values) == ["private", "public"]
    np.testing.assert_allclose(ev["privacy_epsilon"].sel(unit="private"), [2.0, 2.0, 1.0, 0.0, math.inf])
    # the dataset of each draw is the engine's stream ("dataset", chain, draw); the loss recomputed by hand
    data = src.generate(0, 2, stream_rng(4, "dataset", 0, 2))
    X, ref = data.private[:, :2], irls_logistic(data.private[:, :2], data.private[:, 2])
    theta = PublicOnly(c).release(data, None)[0]
    want = np.sqrt(((expit(X @ theta) - expit(X @ ref)) ** 2).sum())
    assert float(ev["risk"].sel(estimator="public", chain=0, draw=2)) == pytest.approx(want, rel=1e-6)
    dec = decide(ev)
    assert dec.attrs["recommended"] == "oracle"  # noise-free weights on every point: not private, but best
