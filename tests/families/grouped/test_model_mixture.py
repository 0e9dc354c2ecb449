"""The mixture family (point masses at the bounds + two Betas) and family="auto" (PSIS-LOO)."""

import math

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
import xarray as xr
from hybridpriv.models import GroupedDataModel, MixtureFamily, choose_family
from scipy import integrate

from hybridpriv.core.privacy import Bounds, Group

BOUNDS = Bounds(0.0, 100.0)
PARAMS = {"w": np.array([0.15, 0.05, 0.5, 0.3]), "m": np.array([0.2, 0.7]), "kappa": np.array([12.0, 5.0])}


def _family():
    return MixtureFamily().with_bounds(BOUNDS)


def test_population_moments_agree_with_a_million_simulated_records():
    fam = _family()
    pop = fam.population(PARAMS)
    x = fam.simulate(PARAMS, 1_000_000, np.random.default_rng(0))
    se_mean = math.sqrt(x.var() / x.size)
    assert abs(x.mean() - pop["mean"]) < 4 * se_mean
    assert pop["variance"] == pytest.approx(x.var(), rel=0.01)  # sd of a variance estimate ~0.1% here
    assert pop["median"] == pytest.approx(np.median(x), abs=0.2)
    # the point masses are simulated as exact bound values with their weights
    assert np.mean(x == 0.0) == pytest.approx(0.15, abs=0.002) and np.mean(x == 100.0) == pytest.approx(0.05, abs=0.002)


def test_the_pytensor_moments_equal_the_numpy_ones():
    fam = _family()
    mean, var = fam.clamped_moments({k: pm.math.constant(v) for k, v in PARAMS.items()})
    pop = fam.population(PARAMS)
    assert float(mean.eval()) == pytest.approx(pop["mean"], rel=1e-12)
    assert float(var.eval()) == pytest.approx(pop["variance"], rel=1e-12)


def test_the_likelihood_is_a_probability_measure():
    """Point masses plus the integral of the interior density (data scale) make 1."""
    fam = _family()
    scalars = [*PARAMS["w"], *PARAMS["m"], *PARAMS["kappa"]]
    x = pm.math.constant(np.array([0.0, 100.0]))
    at_bounds = np.exp(fam._logp(x, *scalars).eval())
    np.testing.assert_allclose(at_bounds, [0.15, 0.05], rtol=1e-12)
    xs = pt.vector("xs")
    density = pytensor.function([xs], pt.exp(fam._logp(xs, *scalars)))
    inside, _ = integrate.quad(lambda t: float(density(np.array([t]))[0]), 1e-9, 100 - 1e-9, limit=200)
    assert at_bounds.sum() + inside == pytest.approx(1.0, abs=1e-6)


@pytest.fixture(scope="module")
def clamped_bimodal():
    rng = np.random.default_rng(1)
    return np.concatenate([np.zeros(40), rng.beta(2, 8, 80) * 100, rng.beta(9, 2, 80) * 100])


@pytest.mark.slow
def test_auto_chooses_the_mixture_for_clamped_bimodal_records_and_recovers_them(clamped_bimodal):
    groups = [Group("panel", 200, math.inf), Group("a", 500, 1.0)]
    model = GroupedDataModel(groups, BOUNDS, family="auto", public_data={"panel": clamped_bimodal})
    assert isinstance(model.family, MixtureFamily)
    table = model.family_choice
    assert list(table.family.values) == ["normal", "mixture"]  # beta cannot put mass on a bound: left out
    assert float(table.elpd_diff.sel(family="normal")) < -2 * float(table.se_diff.sel(family="normal"))
    # LOO-PIT (arviz_stats.loo_pit + uniformity test): the clamped normal misplaces these records, the mixture not
    assert float(table.loo_pit_p.sel(family="normal")) < 0.01 < float(table.loo_pit_p.sel(family="mixture"))
    from hybridpriv.families.grouped.spec import family_choice_lines

    lines = family_choice_lines(table)  # what select prints with family = "auto"
    assert lines[0] == "family = auto (200 public records; PSIS-LOO ELPD, Pareto k, LOO-PIT uniformity p):"
    assert lines[2].startswith("  mixture ") and lines[2].endswith("<- chosen") and not lines[-1].startswith("warning")
    assert family_choice_lines(table.assign(loo_pit_p=table.loo_pit_p * 0))[-1].startswith(
        "warning: even the chosen family (mixture) misplaces the public records")
    post = model.fit(draws=300, tune=300, seed=1, on_unconverged="warn")
    w = np.mean([post.params(c, d)["w"] for c in range(2) for d in range(300)], axis=0)
    assert w[0] == pytest.approx(0.2, abs=0.06) and w[1] < 0.03  # 20% of the records sit on the lower bound
    checks = post.predictive_checks(0)
    assert not bool(checks.flagged.any())  # and the model reproduces the panel


@pytest.mark.slow
def test_auto_keeps_the_normal_family_for_normal_records():
    x = np.clip(np.random.default_rng(2).normal(50, 10, 200), 0, 100)
    name, table = choose_family(x, BOUNDS)
    assert name == "normal"
    assert set(table.family.values) == {"normal", "beta", "mixture"}
    assert float(table.loo_pit_p.sel(family="normal")) > 0.01  # normal records: uniform LOO-PIT values


@pytest.mark.slow
def test_auto_without_public_records_or_with_a_known_variance_is_normal():
    groups = [Group("a", 100, 1.0)]
    assert GroupedDataModel(groups, BOUNDS, family="auto").family.name == "normal"
    pub = [Group("panel", 20, math.inf), Group("a", 100, 1.0)]
    model = GroupedDataModel(pub, BOUNDS, family="auto", public_data={"panel": np.linspace(1, 99, 20)},
                             known_variance=100.0)
    assert model.family.name == "normal" and model.family_choice is None


def test_bad_choices_are_refused():
    with pytest.raises(ValueError, match="at least 5 public records"):
        choose_family(np.ones(3), BOUNDS)
    with pytest.raises(ValueError, match="candidates must be among"):
        choose_family(np.linspace(1, 99, 20), BOUNDS, candidates=["gamma"])
    with pytest.raises(ValueError, match="no fixed parameters"):
        with pm.Model():
            _family().priors({"w": 1.0})


@pytest.mark.slow
def test_auto_falls_back_to_the_next_family_when_the_chosen_one_does_not_converge(clamped_bimodal, monkeypatch):
    from hybridpriv.core.model import ConvergenceError
    from hybridpriv.families.grouped.model import GroupedPosterior

    original = GroupedPosterior.check_convergence

    def mixture_never_converges(self, on_fail="raise"):
        if self.model_spec.family.name == "mixture":
            raise ConvergenceError("R-hat of m = 1.86 > 1.1 (simulated)")
        return original(self, on_fail)

    monkeypatch.setattr(GroupedPosterior, "check_convergence", mixture_never_converges)
    groups = [Group("panel", 200, math.inf), Group("a", 500, 1.0)]
    model = GroupedDataModel(groups, BOUNDS, family="auto", public_data={"panel": clamped_bimodal})
    assert model.family.name == "mixture"
    with pytest.warns(UserWarning, match=r"family = auto: the mixture family's fit did not converge .*; using normal"):
        post = model.fit(draws=100, tune=100, seed=1, on_unconverged="warn")
    assert post.family.name == "normal" and "using normal" in model.family_choice.attrs["fallback"]
    # a model whose every family fails raises as on_unconverged says, naming the last one tried
    monkeypatch.setattr(GroupedPosterior, "check_convergence",
                        lambda self, on_fail="raise": (_ for _ in ()).throw(ConvergenceError("never")))
    model = GroupedDataModel(groups, BOUNDS, family="auto", public_data={"panel": clamped_bimodal})
    with pytest.raises(ConvergenceError, match="never"), pytest.warns(UserWarning):
        model.fit(draws=50, tune=50, seed=1)


def test_a_repeated_choice_is_served_from_the_cache_keyed_by_every_argument(monkeypatch):
    from hybridpriv.families.grouped import model_choice

    calls = []

    def fake(x, bounds, seed, candidates, draws, tune, chains):
        calls.append((x.sum(), bounds.upper, seed, tuple(candidates), draws))
        return "normal", xr.Dataset({"elpd": ("family", [float(len(calls))])}, coords={"family": ["normal"]})

    monkeypatch.setattr(model_choice, "_choose", fake)
    monkeypatch.setattr(model_choice, "_CACHE", type(model_choice._CACHE)())
    x = np.linspace(1, 99, 20)
    _, first = choose_family(x, BOUNDS)
    first["elpd"][:] = -1.0  # a caller's change to its copy does not reach the cache
    _, again = choose_family(x.copy(), BOUNDS)
    assert len(calls) == 1 and float(again.elpd[0]) == 1.0
    for changed in ({"records": x + 1e-9}, {"bounds": Bounds(0.0, 101.0)}, {"seed": 1}, {"draws": 400},
                    {"candidates": ("normal", "mixture")}):
        args = {"records": x, "bounds": BOUNDS, **changed}
        choose_family(args.pop("records"), args.pop("bounds"), **args)
    assert len(calls) == 6  # every argument is part of the key
    for k in range(model_choice.CACHE_SIZE + 1):  # the oldest entries leave
        choose_family(x + k + 1, BOUNDS)
    choose_family(x, BOUNDS)
    assert len(calls) == 6 + model_choice.CACHE_SIZE + 2


@pytest.mark.slow
def test_the_choice_is_a_function_of_its_arguments_so_the_cache_changes_nothing(monkeypatch):
    from hybridpriv.families.grouped import model_choice

    x = np.clip(np.random.default_rng(5).normal(30, 20, 60), 0, 100)
    monkeypatch.setattr(model_choice, "_CACHE", type(model_choice._CACHE)())
    name, table = choose_family(x, BOUNDS, draws=150, tune=150)
    monkeypatch.setattr(model_choice, "_CACHE", type(model_choice._CACHE)())  # computed again from scratch
    name2, table2 = choose_family(x, BOUNDS, draws=150, tune=150)
    assert name == name2
    xr.testing.assert_identical(table, table2)


@pytest.mark.slow
def test_the_choice_fits_on_the_unit_scale_and_moves_each_interior_density_back_by_the_width(monkeypatch):
    """Change of variables: records ``100 x`` on ``[0, 100]`` have the same leave-one-out fits as ``x`` on
    ``[0, 1]`` (the unit-scale records are bit-identical: multiples of 1/8), so each interior record's
    pointwise ELPD is lower by exactly ``log 100`` and a record on a bound (a probability) keeps its value."""
    from hybridpriv.families.grouped import model_choice

    k = np.random.default_rng(3).integers(0, 9, 40)  # 0..8: some records on each bound
    x = k / 8.0
    assert (x == 0).any() and (x == 1).any()
    seen = {}
    original = model_choice._sample_loo

    def spy(family, records, *args):
        loo, p = original(family, records, *args)
        seen[(family.name, float(family.bounds.upper))] = (np.asarray(loo.elpd_i).ravel(), p)
        return loo, p

    monkeypatch.setattr(model_choice, "_sample_loo", spy)
    monkeypatch.setattr(model_choice, "_CACHE", type(model_choice._CACHE)())
    _, unit = choose_family(x, Bounds(0.0, 1.0), draws=100, tune=100, candidates=("normal", "mixture"))
    _, wide = choose_family(100 * x, Bounds(0.0, 100.0), draws=100, tune=100, candidates=("normal", "mixture"))
    interior = (x > 0) & (x < 1)
    for name in ("normal", "mixture"):
        (e1, p1), (e100, p100) = seen[(name, 1.0)], seen[(name, 100.0)]
        np.testing.assert_allclose(e100, e1 - np.log(100.0) * interior, rtol=0, atol=1e-9)
        assert p1 == pytest.approx(p100, rel=1e-9)  # the LOO-PIT check does not depend on the scale
    np.testing.assert_allclose(wide["elpd"], unit["elpd"] - np.log(100.0) * interior.sum(), rtol=0, atol=1e-8)
    np.testing.assert_array_equal(wide["chosen"], unit["chosen"])


@pytest.mark.parametrize("name", ["normal", "beta", "mixture"])
def test_each_familys_default_model_is_equivariant_under_the_unit_map(name):
    """What the unit-scale family choice rests on: each family's default model on ``[a, b]`` at parameters
    ``theta`` equals its model on ``[0, 1]`` at the mapped parameters, for the records ``(x - a) / (b - a)``: each
    record's log density differs by ``log(b - a)`` inside the bounds and not at all on them (the Beta's not at all:
    its density is the unit-scale one on any bounds), and the priors' log densities by a constant (the normal's
    ``mu`` and ``sigma`` are rescaled: ``-2 log(b - a)``; the sums agree to 1e-6)."""
    from hybridpriv.families.grouped.model_families import BetaFamily, NormalFamily

    cls = {"normal": NormalFamily, "beta": BetaFamily, "mixture": MixtureFamily}[name]
    a, b = 20.0, 70.0
    width = b - a
    rng = np.random.default_rng(8)
    x = np.concatenate([rng.uniform(a, b, 12), [] if name == "beta" else [a, b, b]])
    models = {}
    for scale, (lo, hi), rec in (("data", (a, b), x), ("unit", (0.0, 1.0), (x - a) / width)):
        family = cls().with_bounds(Bounds(lo, hi))
        with pm.Model() as model:
            family.observe("y", family.priors(), rec)
        free = [v for v in model.free_RVs]
        models[scale] = (model.compile_logp(vars=[model["y"]], sum=False, jacobian=False),
                         model.compile_logp(vars=free, jacobian=False), model)
    interior = (x > a) & (x < b)
    for _ in range(4):
        point_unit = models["unit"][2].initial_point()
        for k in point_unit:  # a random point of the unit-scale model's value space
            point_unit[k] = point_unit[k] + rng.normal(0, 0.5, np.shape(point_unit[k]))
        point_data = dict(point_unit)
        if name == "normal":  # mu and sigma on the data scale
            point_data["mu"] = a + width * point_unit["mu"]
            point_data["sigma_log__"] = point_unit["sigma_log__"] + np.log(width)
        y_data, y_unit = (np.asarray(models[s][0](p)[0]) for s, p in (("data", point_data), ("unit", point_unit)))
        # the Beta family's own likelihood is already the unit-scale density (it rescales inside observe): the
        # choice moves it back, as the others' interior records
        shift = 0.0 if name == "beta" else np.log(width)
        np.testing.assert_allclose(y_data, y_unit - shift * interior, rtol=1e-9, atol=1e-9)
        prior_shift = float(models["data"][1](point_data) - models["unit"][1](point_unit))
        assert prior_shift == pytest.approx(-2 * np.log(width) if name == "normal" else 0.0, abs=1e-6)
