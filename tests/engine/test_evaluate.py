import math

import numpy as np
import pytest

from hybridpriv.engine import Engine
from hybridpriv.core.privacy import Bounds, Group
from hybridpriv.core.random import rng as stream_rng
from hybridpriv.engine.decision import decide
from hybridpriv.engine.evaluate import evaluate, evaluate_many
from hybridpriv.estimators import PDPSample, UniformMean, WeightedMean
from hybridpriv.families.grouped import Statistic, normal_source
from hybridpriv.theory import mixed_mean_variance

GROUPS = [Group("pub", 50, math.inf), Group("a", 200, 1.0), Group("b", 100, 0.2)]
BOUNDS = Bounds(-10, 10)


def _setup(draws=40):
    src = normal_source(GROUPS, BOUNDS, 1.0, 3.0, draws=draws)
    ests = [WeightedMean(GROUPS, BOUNDS, 9.0), PDPSample(GROUPS, BOUNDS, "min"), UniformMean(GROUPS, BOUNDS)]
    return src, ests


def test_dims_and_loss_definition():
    src, ests = _setup()
    res = evaluate(ests, src, trials=5, seed=3)
    assert res["estimate"].dims == ("estimator", "chain", "draw", "trial")
    assert list(res.estimator.values) == ["weighted", "pdp-min", "uniform-mean"]
    assert res.sizes == {"estimator": 3, "chain": 1, "draw": 40, "trial": 5, "quantity": 2, "unit": 3}
    np.testing.assert_allclose(res["loss"], (res["estimate"] - res["truth"].sel(quantity="mean")) ** 2)
    np.testing.assert_allclose(res["risk"], res["loss"].mean("trial"))
    # the population truth is the clamped normal mean, the same for every draw
    assert np.unique(res["truth"].sel(quantity="mean").values).size == 1
    # the sample truth is the pooled mean of the simulated dataset, so it varies by draw
    sample = evaluate(ests, src, Statistic(target="sample"), trials=5, seed=3)
    assert float(sample["truth"].sel(quantity="mean").std()) > 0.0
    # every candidate's parameters (by fingerprint) and privacy declaration are in the result
    from hybridpriv.core.params import fingerprint

    assert res["params_fingerprint"].values.tolist() == [fingerprint(m.get_params()) for m in ests]
    assert len(set(res["params_fingerprint"].values.tolist())) == 3
    assert list(res["mechanism"].values) == ["WeightedMean", "PDPSample", "UniformMean"]
    assert res["privacy_epsilon"].sel(estimator="uniform-mean").values.tolist() == [0.2, 0.2, 0.2]
    assert res["required_epsilon"].values.tolist() == [math.inf, 1.0, 0.2]


def test_same_seed_same_numbers_and_chunking_does_not_matter():
    src, ests = _setup()
    a = evaluate(ests, src, trials=4, seed=11, engine=Engine(chunk_size=1))
    b = evaluate(ests, src, trials=4, seed=11, engine=Engine(chunk_size=64))
    c = evaluate(ests, src, trials=4, seed=12, engine=Engine(chunk_size=64))
    np.testing.assert_array_equal(a["estimate"], b["estimate"])
    assert not np.array_equal(a["estimate"], c["estimate"])


def test_adding_an_estimator_leaves_the_others_unchanged():
    src, ests = _setup()
    a = evaluate(ests[:1], src, trials=3, seed=5)
    b = evaluate(ests, src, trials=3, seed=5)
    np.testing.assert_array_equal(a["estimate"].sel(estimator="weighted"), b["estimate"].sel(estimator="weighted"))


def test_target_sample_scores_against_the_dataset_mean():
    src, ests = _setup(draws=10)
    res = evaluate(ests, src, Statistic(target="sample"), trials=2, seed=1)
    for d in range(10):
        ds = src.generate(0, d, stream_rng(1, "dataset", 0, d))
        pooled = np.concatenate(ds.values).mean()
        assert res["truth"].sel(quantity="mean", chain=0, draw=d).item() == pytest.approx(pooled)
        np.testing.assert_allclose(res["loss"].sel(chain=0, draw=d), (res["estimate"].sel(chain=0, draw=d) - pooled) ** 2)


def test_expected_loss_matches_closed_form_through_the_pipeline():
    # fresh data every draw, one trial: E[(estimate - mu)^2] = Var of the mixed mean
    src = normal_source(GROUPS, BOUNDS, 1.0, 3.0, draws=3000)
    sigma2 = src.population["variance"]
    res = evaluate([WeightedMean(GROUPS, BOUNDS, sigma2)], src, trials=1, seed=2)
    dec = decide(res)
    exact = mixed_mean_variance([g.size for g in GROUPS], [g.epsilon for g in GROUPS], sigma2, BOUNDS.sum_sensitivity())
    got, se = float(dec.expected_loss.item()), float(dec.mcse.item())
    assert abs(got - exact) < 4 * se, (got, exact, se)


def test_evaluate_many_stacks_a_sweep():
    def runs():
        for eps in (0.5, 2.0):
            gs = [Group("pub", 50, math.inf), Group("a", 200, eps)]
            yield {"epsilon": eps}, [WeightedMean(gs, BOUNDS, 9.0), PDPSample(gs, BOUNDS, "opt", sigma2=9.0)], normal_source(
                gs, BOUNDS, 0.0, 3.0, draws=5
            )

    res = evaluate_many(runs(), {"epsilon": [0.5, 2.0]}, trials=2, seed=0)
    assert res["estimate"].sizes["epsilon"] == 2
    assert list(res.epsilon.values) == [0.5, 2.0]


def test_evaluate_many_stacks_settings_with_other_candidates():
    """Settings whose candidates differ (the Wang study's size grids per p; here a third estimator at one
    epsilon, listed first): each setting gets every candidate, the missing ones as NaN, and the numbers
    of the others are those of the setting run alone."""
    def runs(both=True):
        for eps in (0.5, 2.0) if both else (2.0,):
            gs = [Group("pub", 50, math.inf), Group("a", 200, eps)]
            cands = {"weighted": WeightedMean(gs, BOUNDS, 9.0), "pdp": PDPSample(gs, BOUNDS, "opt", sigma2=9.0)}
            if eps == 2.0:
                cands = {"uniform": UniformMean(gs, BOUNDS), **cands}
            yield {"epsilon": eps}, cands, normal_source(gs, BOUNDS, 0.0, 3.0, draws=5)

    res = evaluate_many(runs(), {"epsilon": [0.5, 2.0]}, trials=2, seed=0)
    assert list(res.estimator.values) == ["weighted", "pdp", "uniform"]
    assert np.isnan(res["risk"].sel(epsilon=0.5, estimator="uniform")).all()
    assert np.isfinite(res["risk"].sel(epsilon=2.0)).all() and np.isfinite(res["risk"].sel(epsilon=0.5).drop_sel(
        estimator="uniform")).all()
    alone = evaluate_many(runs(both=False), {"epsilon": [2.0]}, trials=2, seed=0)
    np.testing.assert_array_equal(res["risk"].sel(epsilon=2.0).sel(estimator=["uniform", "weighted", "pdp"]),
                                  alone["risk"].sel(epsilon=2.0).sel(estimator=["uniform", "weighted", "pdp"]))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"trials": 0}, "trials must be an integer >= 1, got 0"),
        ({"seed": -1}, r"seed must be an integer in \[0, 2\*\*63\), got -1"),
        ({"dim": "chain"}, "dim must be a name other than"),
        ({"draws": 1000}, r"draws must be an integer in \[1, 40\], got 1000"),
    ],
)
def test_bad_arguments(kwargs, match):
    src, ests = _setup()
    with pytest.raises(ValueError, match=match):
        evaluate(ests, src, **kwargs)


def test_the_engine_is_one_checked_value():
    src, ests = _setup()
    with pytest.raises(ValueError, match="chunk_size must be an integer >= 1, got 0"):
        Engine(chunk_size=0)
    with pytest.raises(TypeError, match="engine must be a hybridpriv.engine.Engine or None, got dict"):
        evaluate(ests, src, engine={"chunk_size": 2})
    with pytest.raises(TypeError, match="unexpected keyword argument 'chunk_size'"):
        evaluate(ests, src, chunk_size=2)  # one way: the engine's settings live in the Engine
    assert Engine(chunk_size=2).replace(progress=True) == Engine(chunk_size=2, progress=True)


def test_estimators_for_other_groups_are_refused():
    src, _ = _setup()
    other = [Group("x", 10, 1.0)]
    with pytest.raises(ValueError, match="built for other groups"):
        evaluate([UniformMean(other, BOUNDS)], src)


def test_duplicate_labels_are_refused():
    src, ests = _setup()
    with pytest.raises(ValueError, match="coordinates must be unique"):
        evaluate([ests[0], ests[0]], src)
    with pytest.raises(ValueError, match="at least one mechanism"):
        evaluate([], src)


def test_statistic_task_refuses_bad_target_and_loss():
    with pytest.raises(ValueError, match="target must be 'population' or 'sample', got 'median'"):
        Statistic(target="median")
    with pytest.raises(ValueError, match="loss must be one of"):
        Statistic(loss="huber")


def test_any_candidate_dimension_and_numeric_coordinates():
    # the same estimator family swept over a parameter: the candidate dim is that parameter
    src, _ = _setup(draws=12)
    cands = {t: PDPSample(GROUPS, BOUNDS, t) for t in (0.2, 0.5, 1.0)}
    res = evaluate(cands, src, trials=3, seed=4, dim="threshold")
    assert list(res.threshold.values) == [0.2, 0.5, 1.0]
    assert res["risk"].dims == ("threshold", "chain", "draw")
    assert list(res["label"].values) == ["pdp-0.2", "pdp-0.5", "pdp-1"]
    dec = decide(res)
    assert dec.attrs["candidate_dim"] == "threshold" and dec.attrs["recommended"] in (0.2, 0.5, 1.0)


def test_noise_is_keyed_by_the_coordinate_and_the_dataset_only():
    # the release of a candidate on (chain, draw) is reproducible from the documented streams
    src, ests = _setup(draws=3)
    res = evaluate(ests, src, trials=4, seed=9)
    data = src.generate(0, 2, stream_rng(9, "dataset", 0, 2))
    again = ests[1].release(data, stream_rng(9, "mechanism", "pdp-min", 0, 2), 4)
    np.testing.assert_array_equal(res["estimate"].sel(estimator="pdp-min", chain=0, draw=2), again)


class _Strata:
    """A source whose draws come in strata (as a pooled mixture's): another source's datasets plus ``strata``."""

    def __init__(self, source, strata):
        self.source, self.strata = source, strata
        self.data_kind, self.groups, self.bounds = source.data_kind, source.groups, source.bounds

    @property
    def shape(self):
        return self.source.shape

    def generate(self, chain, draw, rng):
        return self.source.generate(chain, draw, rng)


def test_a_sources_strata_reach_the_evaluation_and_its_errors():
    from hybridpriv.core.data import ThinnedSource, strata_of
    from hybridpriv.engine.stats import _mcse_mean, stratified_mcse_mean

    src, ests = _setup(draws=40)
    strata = np.repeat([0, 1], 20)[None, :]
    thinned = ThinnedSource(_Strata(src, strata), 10)  # draws 0, 4, 9, ..., 39: five of each stratum
    assert thinned.strata.tolist() == [strata[0, thinned.index].tolist()] and thinned.strata.sum() == 5
    res = evaluate(ests, thinned, trials=3, seed=4)
    assert res["stratum"].dims == ("chain", "draw") and res["stratum"].values.tolist() == thinned.strata.tolist()
    d = decide(res)
    risk = res["risk"]
    np.testing.assert_allclose(d["mcse"].values, stratified_mcse_mean(risk, risk["stratum"]).values, rtol=1e-12)
    assert not np.allclose(d["mcse"].values, _mcse_mean(risk.drop_vars("stratum")).values)
    # no strata: no coordinate, the plain error
    plain = evaluate(ests, ThinnedSource(src, 10), trials=3, seed=4)
    assert "stratum" not in plain.coords and strata_of(src) is None
    # evaluate_many keeps the strata as a variable (they may differ between settings)
    many = evaluate_many([({"n": 1}, ests, thinned), ({"n": 2}, ests, ThinnedSource(src, 10))], {"n": [1, 2]},
                         trials=1, seed=4)
    assert "stratum" in many.data_vars and "stratum" not in many.coords


def test_strata_that_do_not_fit_the_source_are_refused():
    from hybridpriv.core.data import ThinnedSource, strata_of

    src, _ = _setup(draws=40)
    with pytest.raises(ValueError, match=r"_Strata.strata must be integers shaped like its \(chains, draws\) \(1, 40\)"):
        strata_of(_Strata(src, np.zeros((1, 39), dtype=int)))
    with pytest.raises(ValueError, match="must be integers"):
        ThinnedSource(_Strata(src, np.zeros((1, 40))), 5)
