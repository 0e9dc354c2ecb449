"""Choosing k through the one pipeline: ContributionBoundedCounts candidates on a fitted
UserItemPosterior, scored by ItemCounts in evaluate, decided by decide(dim="k").

The exact risk the engine uses is checked against the matrices it made (recomputed here from the
posterior and the named stream) and against the Monte Carlo path of the same mechanism on the
same matrices (paired, within 4 standard errors); the numbers do not depend on the chunking or on
running on a 2-worker dask cluster; a resume with a changed k is refused naming it."""

import numpy as np
import pytest
import xarray as xr
from hybridpriv.engine import Engine
from hybridpriv.models import UserItemModel

from hybridpriv.core.privacy import Group
from hybridpriv.core.random import rng as stream_rng
from hybridpriv.engine.checkpoint import Checkpoint
from hybridpriv.engine.decision import decide, format_table
from hybridpriv.engine.evaluate import evaluate
from hybridpriv.estimators import ContributionBoundedCounts, ItemCounts, WeightedMean
from hybridpriv.theory import user_item_risk

COUNTS = [30, 18, 12, 9, 7, 5, 4, 3]


class Released(ContributionBoundedCounts):
    """The same mechanism, but not exactly the class ItemCounts knows the risk of: it is released."""


@pytest.fixture(scope="module")
def posterior():
    return UserItemModel(COUNTS, 40).fit(draws=10, tune=20, chains=2, seed=3, on_unconverged="ignore")


def _cands(ks, eps=1.0, cls=ContributionBoundedCounts):
    return {k: cls(k, eps) for k in ks}


def test_the_exact_risk_in_the_evaluation_is_that_of_the_matrices_the_engine_made(posterior):
    ev = evaluate(_cands([2, 3], 0.5), posterior, ItemCounts(), dim="k", seed=4)
    assert ev.risk.dims == ("k", "chain", "draw") and ev.risk.shape == (2, 2, 10)
    assert ev.exact.values.all() and "loss" not in ev and ev.attrs["source"] == "UserItemPosterior"
    assert list(ev.label.values) == ["k=2", "k=3"]
    assert ev.privacy_epsilon.sel(unit="users").values.tolist() == [0.5, 0.5]
    for c in range(2):
        for d in range(10):
            mat = posterior.generate(c, d, stream_rng(4, "dataset", c, d))
            np.testing.assert_allclose(ev.risk.sel(chain=c, draw=d).values, user_item_risk(mat, [2, 3], 0.5),
                                       rtol=1e-12)
            r = np.diff(mat.indptr)
            truth = ev.truth.sel(chain=c, draw=d)
            assert float(truth.sel(quantity="n_users")) == 40 and float(truth.sel(quantity="reports")) == sum(COUNTS)
            assert float(truth.sel(quantity="share_one_item")) == pytest.approx(np.mean(r == 1))
            assert float(truth.sel(quantity="max_items")) == r.max()


def test_the_exact_risk_equals_the_monte_carlo_path_on_the_same_matrices(posterior):
    """Paired per matrix: the mean over matrices of (Monte Carlo mean loss - exact risk) is within
    4 standard errors (the within-matrix s.e. of the Monte Carlo means, added over matrices)."""
    ks, trials = [1, 2, 4], 400
    exact = evaluate(_cands(ks), posterior, ItemCounts("squared"), dim="k", seed=5)
    mc = evaluate(_cands(ks, cls=Released), posterior, ItemCounts("squared"), dim="k", seed=5, trials=trials)
    assert not mc.exact.values.any() and mc.loss.shape == (3, 2, 10, trials)
    n_sets = 20
    diff = (mc.risk - exact.risk).mean(("chain", "draw"))
    se = np.sqrt((mc.loss.var("trial", ddof=1) / trials).sum(("chain", "draw"))) / n_sets
    assert (np.abs(diff) < 4 * se).all(), (diff.values, se.values)
    # and the Monte Carlo path is not trivially equal: it has its own noise
    assert (np.abs(diff) > 0).all()


def test_losses_without_a_closed_form_run_the_mechanism(posterior):
    ev = evaluate(_cands([1, 8]), posterior, ItemCounts("max"), dim="k", seed=1, trials=30)
    assert not ev.exact.values.any() and ev.attrs["loss"] == "largest absolute error over items"
    assert np.isfinite(ev.loss).all() and (ev.loss > 0).all()
    # k = 8 = m keeps every item: the loss is the largest of 8 Laplace magnitudes, mean (k/eps) H_8
    h8 = np.sum(1.0 / np.arange(1, 9))
    per = ev.loss.sel(k=8).values.ravel()
    assert abs(per.mean() - 8 * h8) < 4 * per.std(ddof=1) / np.sqrt(per.size)
    top = evaluate(_cands([2]), posterior, ItemCounts("top10"), dim="k", seed=1, trials=5)
    assert top.attrs["task"] == "ItemCounts(loss='top10')" and np.isfinite(top.risk).all()


def test_exact_risk_groups_candidates_by_epsilon_and_leaves_others_to_monte_carlo():
    matrix = np.array([[1, 1, 1, 0], [1, 0, 1, 1], [0, 1, 0, 0], [1, 1, 1, 1]])
    task = ItemCounts()
    mechs = [ContributionBoundedCounts(1, 1.0), ContributionBoundedCounts(2, 0.5), Released(2, 1.0),
             ContributionBoundedCounts(3, 1.0)]
    out = task.exact_risk(mechs, matrix, task.truth(matrix))
    np.testing.assert_allclose(out[[0, 3]], user_item_risk(matrix, [1, 3], 1.0), rtol=1e-12)
    assert out[1] == pytest.approx(user_item_risk(matrix, 2, 0.5)) and np.isnan(out[2])
    assert ItemCounts("max").exact_risk(mechs, matrix, {}) is None
    # the loss of a release against the true counts (3, 3, 3, 2)
    rel = np.array([[3.0, 3, 3, 2], [4.0, 3, 3, 0]])
    np.testing.assert_allclose(task.loss(mechs[0], rel, matrix, {}), [0.0, 5.0])
    np.testing.assert_allclose(ItemCounts("max").loss(mechs[0], rel, matrix, {}), [0.0, 2.0])
    with pytest.raises(ValueError, match=r"releases must have shape \(trials, 4\)"):
        task.loss(mechs[0], rel[:, :3], matrix, {})
    with pytest.raises(ValueError, match="loss must be one of .*got 'huber'"):
        ItemCounts("huber")


def test_the_decision_over_k(posterior):
    ev = evaluate(_cands(range(1, 6)), posterior, ItemCounts(), dim="k", seed=2)
    dec = decide(ev, dim="k")
    expected = ev.risk.mean(("chain", "draw"))
    best = int(expected.k[int(np.argmin(expected.values))])
    assert int(dec.attrs["recommended"]) == best
    assert float(dec.p_best.sum()) == pytest.approx(1.0) and bool(dec.meets_requirements.all())
    np.testing.assert_allclose(dec.expected_loss, expected)
    assert format_table(dec).splitlines()[2].split()[0] == str(best)  # rows sorted by expected loss


def test_numbers_do_not_depend_on_the_chunking(posterior):
    one = evaluate(_cands(range(1, 5)), posterior, ItemCounts(), dim="k", seed=1, engine=Engine(chunk_size=1))
    two = evaluate(_cands(range(1, 5)), posterior, ItemCounts(), dim="k", seed=1, engine=Engine(chunk_size=7))
    xr.testing.assert_identical(one, two)
    # a candidate's numbers do not depend on the others beside it (up to rounding: all k of one
    # epsilon share one sparse product)
    alone = evaluate(_cands([3]), posterior, ItemCounts(), dim="k", seed=1)
    np.testing.assert_allclose(alone.risk.sel(k=3), one.risk.sel(k=3), rtol=1e-13)


def test_resume_after_a_changed_k_is_refused_naming_it(tmp_path, posterior):
    evaluate(_cands([1, 2, 3]), posterior, ItemCounts(), dim="k", seed=4,
            engine=Engine(checkpoint=Checkpoint(tmp_path, {"run": 1})))
    changed = {**_cands([1, 2]), 3: ContributionBoundedCounts(4, 1.0)}
    with pytest.raises(ValueError, match=r"candidates\.3\.params\.k: 3 there, 4 here"):
        evaluate(changed, posterior, ItemCounts(), dim="k", seed=4,
                engine=Engine(checkpoint=Checkpoint(tmp_path, {"run": 1})))
    with pytest.raises(ValueError, match=r"candidates\.4: \(absent\) there"):
        evaluate(_cands([1, 2, 3, 4]), posterior, ItemCounts(), dim="k", seed=4,
                 engine=Engine(checkpoint=Checkpoint(tmp_path, {"run": 1})))
    with pytest.raises(ValueError, match=r"task\.params\.loss: \"squared\" there, \"max\" here"):
        evaluate(_cands([1, 2, 3]), posterior, ItemCounts("max"), dim="k", seed=4,
                 engine=Engine(checkpoint=Checkpoint(tmp_path, {"run": 1})))
    # the same candidates resume from the kept chunks
    again = evaluate(_cands([1, 2, 3]), posterior, ItemCounts(), dim="k", seed=4,
                     engine=Engine(checkpoint=Checkpoint(tmp_path, {"run": 1})))
    xr.testing.assert_identical(again, evaluate(_cands([1, 2, 3]), posterior, ItemCounts(), dim="k", seed=4))


def test_mismatched_kinds_are_refused(posterior):
    grouped = WeightedMean([Group("a", 5, 1.0)], (0.0, 1.0), 1.0)
    with pytest.raises(ValueError, match="ItemCounts scores 'user-item' data, but WeightedMean releases from 'grouped'"):
        evaluate([grouped], posterior, ItemCounts())
    with pytest.raises(ValueError, match=r"task is required for mechanisms that read \['user-item'\] data"):
        evaluate(_cands([1]), posterior)


# -- on a dask cluster ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def client():
    import distributed  # noqa: F401  (in the test extra: a missing dask fails, never skips)

    from hybridpriv.engine.cluster import local_client

    c = local_client(2)  # what --workers 2 starts
    yield c
    cluster = c.cluster
    c.close()
    cluster.close()


@pytest.mark.slow
def test_numbers_on_a_two_worker_cluster_equal_one_process_and_the_job_is_small(posterior, client):
    from hybridpriv.engine import chunks

    here = evaluate(_cands(range(1, 5)), posterior, ItemCounts(), dim="k", seed=1)
    stats = {}
    original = chunks.run_sections
    try:
        chunks.run_sections = lambda *a, **k: original(*a, **k, stats=stats)
        there = evaluate(_cands(range(1, 5)), posterior, ItemCounts(), dim="k", seed=1,
                engine=Engine(client, chunk_size=5))
    finally:
        chunks.run_sections = original
    xr.testing.assert_identical(here, there)
    measured = evaluate(_cands(range(1, 5)), posterior, ItemCounts(), dim="k", seed=1, engine=Engine(client))
    xr.testing.assert_identical(here, measured)
    mc_here = evaluate(_cands([1, 3]), posterior, ItemCounts("max"), dim="k", seed=2, trials=7)
    mc_there = evaluate(_cands([1, 3]), posterior, ItemCounts("max"), dim="k", seed=2, trials=7,
                        engine=Engine(client, chunk_size=3))
    xr.testing.assert_identical(mc_here, mc_there)
    assert stats["chunks"] == stats["tasks"] == 4 and stats["items"] == 20 and stats["chunk_sizes"] == [5]
    assert stats["task_cpu_seconds"] > 0
    # a task carries only its item range (no row sums: the posterior is the job, sent once per worker)
    assert stats["task_bytes"] < 4 * 100
    # the job: the posterior's histograms as uint8 (20 draws x 8 levels) beside the model, not its DataTree
    assert stats["job_bytes"] < 20_000
