"""Bad input to the hybrid trust family (Avent et al.): the estimators' constructors, HybridTrustModel,
HybridTrustPosterior (draws, Bayes weight) and the exact-risk formulas; good input gives finite numbers."""

from _support.bad_input import *  # noqa: F403  (settings, checks, strategies)
from _support.bad_input import _CURRENT, _names  # noqa: F401
from hybridpriv.families.hybrid_trust.model import HybridTrustModel, HybridTrustPosterior

from hybridpriv.families.hybrid_trust.mechanisms import FullLM, Hybrid, LMOnly, TCMOnly
from hybridpriv.theory import avent as T

AVENT = {"TCMOnly": TCMOnly, "LMOnly": LMOnly, "FullLM": FullLM, "Hybrid": lambda g, b, **kw: Hybrid(g, b, 0.5, **kw)}
TWO = (Group("tcm", 10, 1.0), Group("lm", 90, 0.5, trust="local"))

bad_variance = st.one_of(st.floats(max_value=-1e-300), st.sampled_from([NAN, INF, -INF]),
                         not_a_number.filter(lambda v: v is not None))
#: not a real number (booleans excluded: NumPy-level functions read them as 0 and 1)
_junk = st.sampled_from([NAN, INF, -INF, None, "1", "a", 1j, object()])
_positive = st.one_of(st.floats(max_value=0.0), _junk)
_variance = st.one_of(st.floats(max_value=-1e-300), _junk)
bad_real = st.one_of(st.sampled_from([NAN, INF, -INF]), not_a_number.filter(lambda v: v is not None))


class _Returns:
    """A stand-in posterior whose Bayes weight is ``value``."""

    def __init__(self, value):
        self.value = value

    def bayes_weight(self, *args):
        return self.value


bad_pair = st.one_of(st.none(), st.text(max_size=3), st.floats(0.1, 5), st.lists(st.floats(0.1, 5), max_size=1),
                     st.lists(st.floats(0.1, 5), min_size=3, max_size=3),
                     st.tuples(st.floats(0.1, 5), bad_positive))


@cfg(300)
@given(name=st.sampled_from(sorted(AVENT)),
       which=st.sampled_from(["groups", "bounds", "noise", "delta", "calibration", "relation", "clamp", "epsilon"]),
       data=st.data())
@counted("avent")
def test_estimator_constructors_reject_bad_setting(name, which, data):
    args = {"groups": TWO, "bounds": (0.0, 1.0), "noise": "laplace", "delta": None, "calibration": "analytic",
            "relation": "add-remove", "clamp": False}
    names: tuple[str, ...] = (which,)
    if which == "groups":
        args["groups"] = data.draw(st.one_of(bad_groups, groups_st(min_size=3, max_size=4), groups_st(max_size=1)))
        names = ("groups", "group")
    elif which == "bounds":
        args["bounds"] = data.draw(bad_bounds)
    elif which == "noise":
        args["noise"] = data.draw(st.one_of(text_not("laplace", "gaussian"), st.none(), st.integers()))
    elif which == "delta":
        if data.draw(st.booleans()):  # any delta with Laplace noise is a mistake
            args["delta"] = data.draw(st.floats(1e-9, 0.5))
        else:
            args["noise"], args["delta"] = "gaussian", data.draw(st.one_of(bad_probability, st.just(None)))
    elif which == "calibration":
        args["calibration"] = data.draw(st.one_of(text_not("analytic", "classic"), st.none(), st.integers()))
    elif which == "relation":
        args["relation"] = data.draw(st.one_of(unknown_word, st.none(), st.integers(), st.just("Replace")))
    elif which == "clamp":
        args["clamp"] = data.draw(not_bool)
    else:  # an epsilon so small the noise is useless (or overflows): refused, naming the group's epsilon
        eps = data.draw(st.floats(1e-300, 1e-13))
        args["groups"] = (TWO[0], Group("lm", 90, eps)) if data.draw(st.booleans()) else (Group("tcm", 10, eps), TWO[1])
        names = ("epsilon",)
    rejects(lambda: AVENT[name](args.pop("groups"), args.pop("bounds"), **args), *names)


@cfg(240)
@given(which=st.sampled_from(["weight", "sigma2", "sigma_T2", "sigma_L2", "mu_T", "posterior", "unused"]), data=st.data())
@counted("avent")
def test_hybrid_weight_arguments_reject(which, data):
    g, b = TWO, (0.0, 1.0)
    if which == "weight":
        w = data.draw(st.one_of(text_not("kvh", "pwh", "naive", "bayes"), st.floats(1.0001, 1e9), st.floats(-1e9, -1e-9),
                                st.sampled_from([NAN, INF, None, True, [0.5]])))
        rejects(lambda: Hybrid(g, b, w), "weight")
    elif which == "sigma2":
        rejects(lambda: Hybrid(g, b, "kvh", sigma2=data.draw(bad_variance)), "sigma2")
    elif which in ("sigma_T2", "sigma_L2"):
        kw = {"sigma_T2": 0.1, "sigma_L2": 0.1, which: data.draw(bad_variance)}
        rejects(lambda: Hybrid(g, b, "kvh-heterogeneous", **kw), which)
    elif which == "mu_T":
        rejects(lambda: Hybrid(g, b, "kvh-heterogeneous", sigma_T2=0.1, sigma_L2=0.1, mu_T=data.draw(bad_real)), "mu_T")
    elif which == "posterior":
        post = data.draw(st.one_of(st.none(), st.integers(), st.text(max_size=3),
                                   st.builds(_Returns, st.one_of(st.floats(1.0001, 1e9), st.floats(-1e9, -1e-9),
                                                                 st.sampled_from([NAN, INF, "0.5", None])))))
        rejects(lambda: Hybrid(g, b, "bayes", posterior=post), "posterior")
    else:  # knowledge the chosen weight does not use
        key = data.draw(st.sampled_from(["sigma2", "sigma_T2", "posterior"]))
        rejects(lambda: Hybrid(g, b, "pwh", **{key: 0.1}), key)


@cfg(120)
@given(n_T=st.integers(1, 40), n_L=st.integers(1, 200), eps=st.tuples(st.floats(1e-3, 1e3), st.floats(1e-3, 1e3)),
       bounds=bounds_st(), noise=st.sampled_from(["laplace", "gaussian"]), data=st.data())
@counted("avent")
def test_good_settings_give_finite_estimates(n_T, n_L, eps, bounds, noise, data):
    groups = (Group("tcm", n_T, eps[0], 1e-6), Group("lm", n_L, eps[1], 1e-6))
    w = data.draw(st.one_of(st.floats(0.0, 1.0), st.sampled_from(["pwh", "naive"])))
    est = accepts(lambda: Hybrid(groups, bounds, w, noise=noise))
    x = data.draw(data_for(groups, bounds, trials=3))
    finite(accepts(lambda: est.estimate(x, np.random.default_rng(0))))
    finite(est.mse(0.5 * bounds.width**2 / 4, 0.25 * bounds.width**2 / 4))


@cfg(300)
@given(which=st.sampled_from(["m", "mean", "variance_fraction", "gap_logit_sd", "homogeneous", "clamp", "pilot_T",
                              "pilot_L", "sizes"]), data=st.data())
@counted("avent")
def test_hybrid_trust_model_rejects(which, data):
    bad = {
        "m": bad_positive,
        "mean": bad_pair,
        "variance_fraction": bad_pair,
        "gap_logit_sd": bad_positive,
        "homogeneous": not_bool,
        "clamp": not_bool,
        "pilot_T": st.one_of(st.just([0.2, NAN]), st.just([0.2, 1.5]), st.just([-0.1]), st.just([[0.2]]), st.just([]),
                             st.just(["a"]), st.just([1 + 1j])),
        "sizes": st.one_of(st.none().map(lambda _: 5), st.just((10,)), st.just((10, 0)), st.just((-1, 5)),
                           st.just((2.5, 10)), st.just((True, 3)), st.just("ab"), st.just((10, 20, 30))),
    }
    value = data.draw(bad["pilot_T" if which == "pilot_L" else which])
    names = (which, "mean", "variance_fraction") if which in ("mean", "variance_fraction") else (which,)
    rejects(lambda: HybridTrustModel(**({"m": value} if which == "m" else {"m": 1.0, which: value})), *names)


@cfg(200)
@given(which=st.sampled_from(["sigma_T2", "sigma_L2", "gap", "n", "c", "s_T2", "s_L2", "on_unconverged"]),
       data=st.data())
@counted("avent")
def test_hybrid_trust_posterior_rejects(which, data):
    if which in ("sigma_T2", "sigma_L2", "gap"):
        value = data.draw(_junk.filter(lambda v: v is not None) if which == "gap" else _variance)
        kw = {"sigma_T2": 0.1, "sigma_L2": 0.1, which: value}
        rejects(lambda: HybridTrustPosterior.from_draws(**kw), which)
    elif which == "on_unconverged":
        word = data.draw(st.one_of(text_not("raise", "warn", "ignore"), st.none(), st.integers()))
        rejects(lambda: HybridTrustPosterior.from_draws(0.1, 0.1, on_unconverged=word), "on_unconverged")
    else:
        post = HybridTrustPosterior.from_draws(np.random.default_rng(0).gamma(5.0, 0.01, 200), 0.05)
        args = {"n": 1000, "c": 0.05, "s_T2": 1e-3, "s_L2": 2.0}
        args[which] = data.draw({"n": _positive, "c": st.one_of(_positive, st.floats(1.0, 1e9)),
                                 "s_T2": _variance, "s_L2": _variance}[which])
        rejects(lambda: post.bayes_weight(**args), which)


#: each formula with valid arguments; the test replaces one of them by a bad value
FORMULAS = {
    "noise_variances": (lambda a: T.noise_variances("laplace", a["epsilon"], a["m"], a["n"], a["c"]),
                        ("epsilon", "m", "n", "c")),
    "hybrid_mse": (lambda a: T.hybrid_mse(a["w"], a["n"], a["c"], a["sigma_T2"], a["sigma_L2"], a["s_T2"], a["s_L2"]),
                   ("w", "n", "c", "sigma_T2", "sigma_L2", "s_T2", "s_L2")),
    "kvh_weight": (lambda a: T.kvh_weight(a["n"], a["c"], a["sigma_T2"], a["s_T2"], a["s_L2"]), ("n", "c", "s_T2", "s_L2")),
    "pwh_weight": (lambda a: T.pwh_weight(a["n"], a["c"], a["s_T2"], a["s_L2"]), ("n", "c", "s_T2", "s_L2")),
    "n_crit_laplace": (lambda a: T.n_crit_laplace(a["c"], a["epsilon"], a["m"], a["sigma_T2"]), ("c", "epsilon", "m")),
    "amplified_epsilon": (lambda a: T.amplified_epsilon(a["w"], a["n"], a["c"], a["m"], a["s_T2"], a["s_L2"], 1e-6, 0.2),
                          ("w", "n", "c", "m", "s_T2", "s_L2")),
}
GOOD = {"epsilon": 1.0, "m": 1.0, "n": 1000.0, "c": 0.05, "w": 0.5, "sigma_T2": 0.05, "sigma_L2": 0.08, "s_T2": 1e-3,
        "s_L2": 2.0}
BAD = {"epsilon": _positive, "m": _positive, "n": _positive, "c": st.one_of(_positive, st.floats(1.0, 1e9)),
       "w": st.one_of(st.floats(1.0001, 1e9), st.floats(-1e9, -1e-9), _junk), "sigma_T2": _variance,
       "sigma_L2": _variance, "s_T2": _variance, "s_L2": _variance}


@cfg(300)
@given(fn=st.sampled_from(sorted(FORMULAS)), data=st.data())
@counted("avent")
def test_formulas_name_the_bad_argument(fn, data):
    call, params = FORMULAS[fn]
    which = data.draw(st.sampled_from(params))
    args = {**GOOD, which: data.draw(BAD[which])}
    rejects(lambda: call(args), which)
