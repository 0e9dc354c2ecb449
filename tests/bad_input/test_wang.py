"""Bad input to the Wang family: the data type, the mechanisms, the tasks, the sources, the budget-free choice."""

from _support.bad_input import *  # noqa: F403  (settings, checks, strategies)
from _support.bad_input import _CURRENT, _names  # noqa: F401
from hybridpriv.families.public_private.wang.model import PublishedSummaries, WangPrivateModel

from hybridpriv.families.public_private.subset import select_subset_size
from hybridpriv.families.public_private.wang import (
    Algorithm1,
    Algorithm2,
    HybridDesign,
    LeiHistogram,
    OrderedSource,
    ParameterError,
    PredictionError,
    PublicOnly,
    Released,
    Section51Source,
)

#: A valid small design (one covariate and the outcome, label last).
_RNG = np.random.default_rng(0)
_D = np.column_stack([_RNG.normal(size=20), _RNG.integers(0, 2, 20)]).astype(float)
_E = np.column_stack([_RNG.normal(size=8), np.r_[0, 1, 0, 1, 0, 1, 0, 1]]).astype(float)
GOOD = HybridDesign(_D, _E, columns=("x", "y"), label="y")


@st.composite
def bad_points(draw):
    kind = draw(st.sampled_from(["nan", "inf", "3d", "empty", "str", "object", "complex", "ragged", "none", "width"]))
    x = _D.copy()
    if kind in ("nan", "inf"):
        x.flat[draw(st.integers(0, x.size - 1))] = NAN if kind == "nan" else draw(st.sampled_from([INF, -INF]))
        return x
    return {"3d": x[None], "empty": np.zeros((0, 2)), "str": x.astype(str), "object": np.array([[object()] * 2] * 3),
            "complex": x.astype(complex), "ragged": [[1.0, 0.0], [1.0]], "none": None, "width": np.zeros((4, 3))}[kind]


bad_order = st.one_of(
    st.just([]), st.just([0, 0]), st.lists(st.integers(-5, -1), min_size=1, max_size=3),
    st.lists(st.floats(0.1, 3.0), min_size=1, max_size=3), st.just([[0, 1], [1]]), st.just("abc"), st.just(3),
    st.just([8]), st.just(np.array([True, False])),
)


@cfg(240)
@given(which=st.sampled_from(["private", "public", "categorical", "columns", "label", "orders"]), data=st.data())
@counted("wang")
def test_hybrid_design_rejects_bad_parts(which, data):
    args = {"private": _D, "public": _E, "columns": ("x", "y"), "label": "y"}
    if which in ("private", "public"):
        args[which] = data.draw(bad_points())
    elif which == "categorical":
        args["categorical"] = data.draw(st.one_of(st.just([2]), st.just([-3]), st.just([0, 0]), st.just("0"),
                                                  st.just([0.5]), st.just([True]), st.builds(object)))
    elif which == "columns":
        args["columns"] = data.draw(st.one_of(st.just(("x",)), st.just(("x", "x")), st.just("xy"), st.just((1, 2))))
    elif which == "label":
        args["label"] = data.draw(st.one_of(unknown_word.filter(lambda w: w not in ("x", "y")), st.integers()))
    else:
        args["orders"] = data.draw(st.one_of(bad_order.map(lambda o: {"o": o}), st.just([1, 2]), st.just({3: [0]})))
    rejects(lambda: HybridDesign(**args), which, *(["public", "private"] if which in ("private", "public") else []))


@cfg(240)
@given(which=st.sampled_from(["contrast", "epsilon", "subset_size", "order", "truncate", "on_zero_weights"]),
       data=st.data())
@counted("wang")
def test_algorithm1_rejects_bad_parameters(which, data):
    args = {"contrast": "mean", "epsilon": 1.0}
    args[which] = data.draw({
        "contrast": st.one_of(unknown_word.filter(lambda w: w not in ("mean", "median", "logistic")), st.integers(),
                              st.none()),
        "epsilon": bad_epsilon,
        "subset_size": st.one_of(st.integers(max_value=0), not_int.filter(lambda v: v is not None)),
        "order": bad_order.filter(lambda o: not isinstance(o, str) and not (isinstance(o, list) and o == [8])),  # a name is fine
        "truncate": not_bool,
        "on_zero_weights": st.one_of(unknown_word, st.none(), st.integers()),
    }[which])
    rejects(lambda: Algorithm1(**args), which)


@cfg(200)
@given(which=st.sampled_from(["epsilons", "subset_sizes", "criterion", "criterion_sensitivity", "reference_ridge",
                              "selection", "truncate", "on_zero_weights", "output"]), data=st.data())
@counted("wang")
def test_algorithm2_rejects_bad_parameters(which, data):
    args = {"contrast": "logistic", "epsilons": (0.8, 0.2, 1.0), "subset_sizes": [2, 4], "criterion": "brier"}
    args[which] = data.draw({
        "epsilons": st.one_of(bad_finite_epsilon.map(lambda e: (e, 0.2, 1.0)), st.just((1.0, 1.0)), st.just("abc"),
                              st.none()),
        "subset_sizes": st.one_of(st.just([4, 2]), st.just([0, 2]), st.just([]), st.just([1.5]), st.just("12"),
                                  st.just([[1, 2]])),
        "criterion": st.one_of(unknown_word.filter(lambda w: w not in ("paper", "brier")), st.integers(), st.none()),
        "criterion_sensitivity": bad_positive.filter(lambda v: v is not None),
        "reference_ridge": bad_positive.filter(lambda v: v is not None),
        "selection": st.one_of(unknown_word, st.none()),
        "truncate": not_bool,
        "on_zero_weights": st.one_of(unknown_word, st.integers()),
        "output": st.one_of(unknown_word.filter(lambda w: w not in ("theta", "size")), st.none()),
    }[which])
    if which == "reference_ridge":
        args["criterion"] = "paper"
    rejects(lambda: Algorithm2(**args), which)


@cfg(200)
@given(which=st.sampled_from(["contrast", "epsilon", "bins", "lower", "discrete", "max_cells", "on_zero_weights"]),
       data=st.data())
@counted("wang")
def test_lei_histogram_and_public_only_reject_bad_parameters(which, data):
    args = {"contrast": "mean", "epsilon": 1.0, "bins": 4}
    args[which] = data.draw({
        "contrast": st.one_of(st.integers(), st.none(), unknown_word.filter(lambda w: w not in ("mean", "median", "logistic"))),
        "epsilon": bad_epsilon,
        "bins": st.one_of(st.integers(max_value=0), not_int),
        "lower": st.one_of(st.just([NAN]), st.just(INF), st.just("low"), st.just([object()])),
        "discrete": st.one_of(st.just([0, 1]), st.integers(), st.just("0")),
        "max_cells": st.one_of(st.integers(max_value=0), not_int),
        "on_zero_weights": st.one_of(unknown_word, st.none()),
    }[which])
    rejects(lambda: LeiHistogram(**args), which)
    if which == "contrast":
        rejects(lambda: PublicOnly(args["contrast"]), "contrast")


@cfg(200)
@given(mech=st.sampled_from(["algorithm1", "algorithm2", "lei", "public"]), which=st.sampled_from(["data", "trials"]),
       data=st.data())
@counted("wang")
def test_releases_reject_bad_data_and_trials(mech, which, data):
    m = {"algorithm1": Algorithm1("logistic", 1.0), "algorithm2": Algorithm2("logistic", (1, 1, 1), [2, 4], "brier"),
         "lei": LeiHistogram("logistic", 1.0, 3), "public": PublicOnly("logistic")}[mech]
    if which == "data":
        bad = data.draw(st.one_of(st.just([_D, _E]), st.just(_D), st.none(), st.builds(dict)))
        rejects(lambda: m.release(bad, np.random.default_rng(0)), "data")
    else:
        trials = data.draw(st.one_of(st.integers(max_value=0), not_int))
        rejects(lambda: m.release(GOOD, np.random.default_rng(0), trials), "trials")


@cfg(60)
@given(eps=good_epsilon, n=st.integers(1, 8), trials=st.integers(1, 4), seed=st.integers(0, 2**31))
@counted("wang")
def test_good_releases_are_finite(eps, n, trials, seed):
    for m in (Algorithm1("logistic", eps, n), Algorithm1("mean", eps, n, order=list(range(7, -1, -1))),
              Algorithm2("mean", (eps, eps, eps), list(range(1, n + 1)),
                         criterion=lambda th, d: np.abs(th[:, 0]) * 0 + 1.0, criterion_sensitivity=1.0),
              LeiHistogram("mean", eps, 3), PublicOnly("mean")):
        out = accepts(lambda: m.release(GOOD, np.random.default_rng(seed), trials))
        assert out.shape[0] == trials
        finite(out)


@cfg(120)
@given(which=st.sampled_from(["prediction", "parameter", "loss", "released", "section51", "ordered"]), data=st.data())
@counted("wang")
def test_tasks_and_sources_reject_bad_parameters(which, data):
    if which == "prediction":
        rejects(lambda: PredictionError(data.draw(st.one_of(st.just("mean"), st.integers(), unknown_word))), "contrast")
    elif which == "parameter":
        rejects(lambda: ParameterError(data.draw(st.one_of(st.integers(), st.none(), st.just("mode")))), "contrast")
    elif which == "loss":
        rejects(lambda: ParameterError("mean", data.draw(st.one_of(unknown_word, st.integers(), st.none()))), "loss")
    elif which == "released":
        rejects(lambda: Released(data.draw(st.one_of(unknown_word, st.integers(), st.none()))), "data_kind")
    elif which == "section51":
        name = data.draw(st.sampled_from(["p", "n_private", "n_public", "draws"]))
        args = {"p": 2, "n_private": 10, "n_public": 10, "draws": 2}
        args[name] = data.draw(st.one_of(st.integers(max_value=0), not_int))
        rejects(lambda: Section51Source(**args), name)
    else:
        src = Section51Source(2, 10, 6, draws=2)
        name = data.draw(st.sampled_from(["source", "orders", "noisy"]))
        if name == "source":
            rejects(lambda: OrderedSource(data.draw(st.one_of(st.none(), st.integers(), st.just(GOOD)))), "source")
        elif name == "orders":
            bad = data.draw(st.one_of(st.just([1, 2]), st.just({"o": np.zeros((1, 2))}), st.just({"o": np.zeros((1, 2, 3))}),
                                      bad_order.map(lambda o: {"o": np.broadcast_to(np.asarray(o, dtype=object), (1, 2, 1))
                                                               if np.ndim(o) == 0 else [[o, o]]})))
            rejects(lambda: OrderedSource(src, bad), "orders")
        else:
            bad = data.draw(st.one_of(st.just([0.5]), bad_finite_epsilon.map(lambda e: {"eps1": e})))
            rejects(lambda: OrderedSource(src, noisy=bad), "noisy")


@pytest.fixture(scope="module")
def posterior():
    X, y = _E[:, :1], _E[:, 1]
    return WangPrivateModel(X, y, PublishedSummaries(20), rate_draws=20).fit(draws=30, tune=30, chains=2, seed=0,
                                                                             cores=1, on_unconverged="ignore")


@cfg(120)
@given(which=st.sampled_from(["subset_sizes", "epsilon", "datasets", "noise_draws", "order_datasets", "seed",
                              "order", "posterior", "contrast"]), data=st.data())
@counted("wang")
def test_select_subset_size_rejects_bad_arguments(posterior, which, data):
    args = {"posterior": posterior, "contrast": "logistic", "subset_sizes": [2, 8], "epsilon": 1.0, "datasets": 2,
            "noise_draws": 1}
    args[which] = data.draw({
        "subset_sizes": st.one_of(st.just([8, 2]), st.just([0]), st.just([9]), st.just([]), st.just([1.5])),
        "epsilon": st.one_of(non_positive, st.just(NAN), st.none(), st.booleans(), st.text(max_size=3), st.just([1.0, 1.0]),
                             st.just([]), st.just([-1.0, 2.0]), st.just([1.0, "2"])),  # a sequence of budgets is fine
        "datasets": st.one_of(st.integers(max_value=1), st.integers(61, 100), not_int),
        "noise_draws": st.one_of(st.integers(max_value=0), not_int),
        "order_datasets": st.one_of(st.integers(max_value=0), st.floats(0.5, 3.0), st.just("2")),
        "seed": st.one_of(st.integers(max_value=-1), not_int),
        "order": bad_order,
        "posterior": st.one_of(st.none(), st.just(GOOD), st.integers()),
        "contrast": st.one_of(st.just("mean"), st.integers(), unknown_word.filter(lambda w: w not in ("logistic",))),
    }[which])
    rejects(lambda: select_subset_size(**args), which, *(["count"] if which == "datasets" else []))
