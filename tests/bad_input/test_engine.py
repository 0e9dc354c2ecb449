"""Bad input to sources, evaluate and decide."""

from _support.bad_input import *  # noqa: F403  (settings, checks, strategies)
from _support.bad_input import _CURRENT, _names  # noqa: F401


# ----------------------------------------------------------------------------------------
# Sources, evaluate, decide
# ----------------------------------------------------------------------------------------



def _sampler(rng, n):
    return rng.normal(5.0, 2.0, n)


@cfg(320)
@given(which=st.sampled_from(["draws", "sampler", "population", "public_values", "groups", "bounds"]), data=st.data())
@counted("sources")
def test_iid_source_rejects(which, data):
    args = dict(groups=G2, bounds=B2, sampler=_sampler, population={"mean": 5.0}, draws=3)
    names = (which,)
    if which == "draws":
        args["draws"] = data.draw(st.one_of(st.integers(max_value=0), not_int))
    elif which == "sampler":
        args["sampler"] = data.draw(st.one_of(st.none(), st.integers(), st.text(max_size=2)))
    elif which == "population":
        args["population"] = data.draw(
            st.one_of(
                st.none(),
                st.lists(st.floats(), max_size=2),
                st.dictionaries(st.sampled_from(["mean", "median"]), st.sampled_from([NAN, INF, "a", None, True]), min_size=1),
                st.dictionaries(st.integers(), st.floats(0, 1), min_size=1),
            )
        )
    elif which == "public_values":
        args["public_values"] = data.draw(
            st.one_of(
                st.just([1.0]),
                st.just({"priv": np.ones(8)}),
                st.just({"nobody": np.ones(5)}),
                st.just({"pub": np.ones(4)}),
                st.just({"pub": np.ones((1, 5))}),
                st.just({"pub": [NAN] * 5}),
                st.just({"pub": ["1"] * 5}),
                st.just({"pub": [1 + 1j] * 5}),
                st.floats(10.001, 1e9).map(lambda v: {"pub": [v] * 5}),
            )
        )
    elif which == "groups":
        args["groups"] = data.draw(bad_groups)
        names = ("groups", "group")
    else:
        args["bounds"] = data.draw(bad_bounds)
    rejects(lambda: IIDSource(**args), *names)


@cfg(160)
@given(
    which=st.sampled_from(["mu", "sigma", "draws"]),
    data=st.data(),
)
@counted("sources")
def test_normal_source_rejects(which, data):
    args = dict(mu=5.0, sigma=2.0, draws=3)
    if which == "mu":
        args["mu"] = data.draw(st.one_of(st.sampled_from([NAN, INF, -INF]), not_a_number))
    elif which == "sigma":
        args["sigma"] = data.draw(bad_positive)
    else:
        args["draws"] = data.draw(st.one_of(st.integers(max_value=0), not_int))
    rejects(lambda: normal_source(G2, B2, **args), which)


@cfg(160)
@given(mu=st.floats(-1e6, 1e6), sigma=st.floats(5e-324, 1e6), bounds=bounds_st())
@counted("sources")
def test_normal_source_good_has_finite_moments(mu, sigma, bounds):
    src = accepts(lambda: normal_source(G2, bounds, mu, sigma, 2))
    pop = src.population
    finite(list(pop.values()))
    tol = 1e-6 * max(1.0, abs(bounds.lower), abs(bounds.upper))
    assert bounds.lower - tol <= pop["mean"] <= bounds.upper + tol
    assert pop["variance"] >= 0
    ds = src.generate(0, 0, np.random.default_rng(0))
    for v in ds.values:
        assert ((v >= bounds.lower) & (v <= bounds.upper)).all()


@cfg(100)
@given(which=st.sampled_from(["source", "draws"]), data=st.data())
@counted("sources")
def test_thinned_source_rejects(which, data):
    src = normal_source(G2, B2, 5.0, 2.0, 4)
    if which == "source":
        rejects(lambda: ThinnedSource(data.draw(st.one_of(st.none(), st.integers(), st.text(max_size=2))), 2), "source")
    else:
        draws = data.draw(st.one_of(st.integers(max_value=0), st.integers(5, 10**6), not_int))
        rejects(lambda: ThinnedSource(src, draws), "draws")


_EV_SRC = normal_source(G2, B2, 5.0, 2.0, 4)
_EV_ESTS = [WeightedMean(G2, B2, 4.0), UniformMean(G2, B2)]

bad_evaluate_args = {
    "trials": st.one_of(st.integers(max_value=0), not_int),
    "seed": st.one_of(st.integers(max_value=-1), st.floats(), st.text(max_size=2), st.none(), st.booleans()),
    "task": st.one_of(unknown_word, st.integers(), st.just(["squared"])),
    "dim": st.one_of(st.sampled_from(["chain", "draw", "trial", "unit", "quantity", "", "1k", "a b"]), st.integers(), st.none()),
    "requirements": st.one_of(unknown_word, st.integers(), st.just({"a": 1.0})),
    "engine": st.one_of(st.integers(), st.text(max_size=2), st.just({"chunk_size": 2})),
    "draws": st.one_of(st.integers(max_value=0), st.integers(5, 100), st.floats(), st.text(max_size=2), st.booleans()),
    "candidates": st.one_of(st.just([]), st.none(), st.text(max_size=2), st.just([object()]), st.just(_EV_ESTS + _EV_ESTS[:1]),
                            st.just({"": _EV_ESTS[0]}), st.integers()),
    "source": st.one_of(st.none(), st.integers(), st.just(normal_source((Group("x", 3, 1.0),), B2, 5.0, 2.0, 3))),
}


@cfg(320)
@given(which=st.sampled_from(sorted(bad_evaluate_args)), data=st.data())
@counted("evaluate")
def test_evaluate_rejects(which, data):
    value = data.draw(bad_evaluate_args[which])
    args = {"candidates": _EV_ESTS, "source": _EV_SRC, "trials": 1}
    args[which] = value
    names = {"candidates": ("candidates", "candidate"), "source": ("source", "groups"),
             "requirements": ("requirements", "relation")}.get(which, (which,))
    rejects(lambda: evaluate(**args), *names)


bad_engine_args = {
    "chunk_size": st.one_of(st.integers(max_value=0), not_int.filter(lambda v: v is not None)),  # None: measured
    "progress": st.one_of(st.text(min_size=1, max_size=3), st.integers(), st.floats()),
    "client": st.one_of(st.text(min_size=1, max_size=3), st.integers(), st.just(object())),
    "checkpoint": st.one_of(st.integers(), st.floats(), st.just(object())),
}


@cfg(120)
@given(which=st.sampled_from(sorted(bad_engine_args)), data=st.data())
@counted("evaluate")
def test_engine_rejects(which, data):
    from hybridpriv.engine import Engine

    value = data.draw(bad_engine_args[which])
    rejects(lambda: Engine(**{which: value}), which)


@cfg(60)
@given(
    trials=st.integers(1, 3),
    seed=st.integers(0, 2**64),
    chunk_size=st.integers(1, 5),
    draws=st.one_of(st.none(), st.integers(1, 4)),
    loss=st.sampled_from(["squared", "absolute"]),
    target=st.sampled_from(["population", "sample"]),
)
@counted("evaluate")
def test_evaluate_good(trials, seed, chunk_size, draws, loss, target):
    from hybridpriv.engine import Engine
    from hybridpriv.families.grouped import Statistic

    seed = seed % 2**63
    ev = accepts(
        lambda: evaluate(_EV_ESTS, _EV_SRC, Statistic(target, loss), trials=trials, seed=seed,
                         draws=draws, engine=Engine(chunk_size=chunk_size))
    )
    assert ev["loss"].dims == ("estimator", "chain", "draw", "trial")
    finite(ev["loss"].values)
    assert (ev["loss"].values >= 0).all()


_DECIDE_EV = evaluate(_EV_ESTS, _EV_SRC, trials=2, seed=1)


@st.composite
def bad_evaluation(draw):
    kind = draw(st.sampled_from(["type", "no-loss", "one-dataset", "nan", "inf", "strings", "dims"]))
    ev = _DECIDE_EV
    if kind == "type":
        return draw(st.sampled_from([None, {"risk": 1.0}, ev["risk"], [1, 2], "evaluation"])), ("evaluation",)
    if kind == "no-loss":
        return ev.drop_vars("risk"), ("risk",)
    if kind == "one-dataset":
        return ev.isel(draw=[0]), ("datasets",)
    if kind == "dims":
        return ev.assign(risk=ev["risk"].isel(chain=0, drop=True)), ("risk",)
    if kind == "strings":
        return ev.assign(risk=ev["risk"].astype(str)), ("risk",)
    risk = ev["risk"].values.copy()
    risk.flat[draw(st.integers(0, risk.size - 1))] = NAN if kind == "nan" else draw(st.sampled_from([INF, -INF]))
    return ev.assign(risk=(ev["risk"].dims, risk)), ("risk",)


@cfg(190)
@given(which=st.sampled_from(["interval", "evaluation"]), data=st.data())
@counted("decide")
def test_decide_rejects(which, data):
    if which == "interval":
        interval = data.draw(
            st.one_of(
                st.tuples(st.floats(0, 1), st.floats(0, 1)).filter(lambda p: not p[0] < p[1]),
                st.tuples(st.floats(max_value=-1e-9), st.floats(0.1, 1)),
                st.tuples(st.floats(0, 0.9), st.floats(min_value=1.0 + 1e-9)),
                st.tuples(st.just(NAN), st.floats(0, 1)),
                st.tuples(not_a_number, st.floats(0.5, 1)),
                st.none(),
                st.floats(0, 1),
                st.just(()),
                st.just((0.1, 0.5, 0.9)),
                st.just("ab"),
            )
        )
        rejects(lambda: decide(_DECIDE_EV, interval=interval), "interval")
    else:
        ev, names = data.draw(bad_evaluation())
        rejects(lambda: decide(ev), *names)


@cfg(50)
@given(lo=st.floats(0, 0.49), hi=st.floats(0.51, 1.0))
@counted("decide")
def test_decide_good(lo, hi):
    dec = accepts(lambda: decide(_DECIDE_EV, interval=(lo, hi)))
    assert dec.attrs["recommended"] in {e.label for e in _EV_ESTS}
    finite(dec["expected_loss"].values)
    finite(dec["mcse"].values)
    assert (dec["risk_low"] <= dec["risk_high"]).all()
