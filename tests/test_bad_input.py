"""Bad input never slips through (issue 6, part 4): property-based tests with Hypothesis.

Every public constructor, every estimator's ``estimate``, the theory functions, the PyMC
models' knowledge arguments and the CLI's SPEC files are fed generated bad values (epsilon
<= 0, NaN, inf where not allowed, zero or negative sizes, empty groups, data outside the
bounds with clamping off, reversed bounds, infeasible column sums, k <= 0 or k > m,
mismatched lengths, wrong dtypes, 3-D and empty arrays) and generated good ones.  A bad
case must raise ``ValueError`` or ``TypeError``

* whose message names the parameter (a word-bounded match, so ``k`` is not found in ``rank``),
* raised by hybridpriv's own code (the innermost traceback frame is in ``hybridpriv/`` or
  ``models/``, not a deep NumPy/SciPy frame),
* within a time limit (``SIGALRM``; Hypothesis' ``deadline`` guards each example too);

a good case must return finite numbers.  The CLI must exit with status 2 and print exactly
one stderr line starting ``error: `` that names the key.

Counting: every test body is wrapped by :func:`counted`, which counts the examples that ran
to the end (examples Hypothesis discarded with ``assume`` are not counted); an autouse
fixture checks after each test that at least ``MIN_CASES`` examples ran and records the number as the
``hypothesis_cases`` user property (in JUnit XML).  With ``HYBRIDPRIV_CASES_FILE=path`` the
counts are also appended to that file as ``area<TAB>test<TAB>cases`` lines.
``HYBRIDPRIV_BAD_INPUT_SCALE=k`` multiplies every ``max_examples`` (default 1) for a longer
local run.  Examples are derandomized, so CI is deterministic.
"""

from __future__ import annotations

import contextlib
import functools
import io
import math
import os
import re
import signal
import tempfile
import threading
import traceback
import warnings
from collections import Counter
from datetime import timedelta
from pathlib import Path

import numpy as np
import pymc as pm
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, assume, given, settings
from hypothesis.errors import StopTest, UnsatisfiedAssumption
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridpriv
import hybridpriv.models as hp_models
from hybridpriv import theory
from hybridpriv.cli import main as cli_main
from hybridpriv.data import IIDSource, ThinnedSource, normal_source
from hybridpriv.estimators import (
    ESTIMATOR_NAMES,
    default_estimators,
    make_estimator,
    ContributionBoundedCounts,
    PDPSample,
    PEMedian,
    PublicMean,
    PublicMedian,
    UniformMean,
    UniformMedian,
    WeightedMean,
    WeightedMedian,
    monte_carlo_user_item_loss,
)
from hybridpriv.evaluate import evaluate
from hybridpriv.mechanisms import exponential_mechanism, gaussian, gaussian_sigma, laplace, smith_quantile
from hybridpriv.models import (
    BetaFamily,
    CustomFamily,
    GroupedDataModel,
    NormalFamily,
    ReleasedMean,
    UserItemModel,
)
from hybridpriv.privacy import Bounds, Group, Guarantee, check_groups
from hybridpriv.select import decide
from hybridpriv.spec import load_spec
from hybridpriv.useritem import risk_over_matrices

# ----------------------------------------------------------------------------------------
# Settings, counting, time limits
# ----------------------------------------------------------------------------------------

SCALE = float(os.environ.get("HYBRIDPRIV_BAD_INPUT_SCALE", "1"))
#: Fewest Hypothesis examples a test must execute (per test; counted in the test body).
MIN_CASES = 5
#: Seconds one call may take before it counts as a hang.
CALL_LIMIT = 30.0

#: Examples executed in this process, per area.
CASES: Counter[str] = Counter()
_CURRENT = {"area": "", "n": 0, "failed": False}


def cfg(n: int, deadline: float | None = 5.0) -> settings:
    """Deterministic Hypothesis settings with ``n`` examples (times ``SCALE``)."""
    return settings(
        max_examples=max(1, int(n * SCALE)),
        derandomize=True,
        database=None,
        deadline=None if deadline is None else timedelta(seconds=deadline),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )


def counted(area: str):
    """Count the examples of a test body that run to the end (place it below ``@given``)."""

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                out = fn(*args, **kwargs)
            except (UnsatisfiedAssumption, StopTest):
                raise
            except BaseException:  # pytest.fail raises a BaseException
                _CURRENT["failed"] = True  # the count check would only add noise to the failure
                raise
            CASES[area] += 1
            _CURRENT["area"] = area
            _CURRENT["n"] += 1
            return out

        return wrapper

    return decorate


@pytest.fixture(autouse=True)
def _count_cases(request):
    _CURRENT.update(area="", n=0, failed=False)
    yield
    n, area = _CURRENT["n"], _CURRENT["area"]
    if _CURRENT["failed"]:
        return
    request.node.user_properties.append(("hypothesis_cases", n))
    path = os.environ.get("HYBRIDPRIV_CASES_FILE")
    if path:
        with open(path, "a") as fh:
            fh.write(f"{area}\t{request.node.name}\t{n}\n")
    assert n >= MIN_CASES, f"only {n} Hypothesis example(s) ran in {request.node.name}"


class Hang(Exception):
    """A call did not return within the time limit."""


@contextlib.contextmanager
def time_limit(seconds: float = CALL_LIMIT):
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Hang(f"call did not return within {seconds:g}s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


_OUR_CODE = tuple(str(Path(m.__file__).resolve().parent) for m in (hybridpriv, hp_models))


def _raised_by_us(exc: BaseException) -> bool:
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and str(Path(frames[-1].filename).resolve()).startswith(_OUR_CODE)


def _names(message: str, name: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", message) is not None


def rejects(fn, *names: str, exc=(ValueError, TypeError)) -> BaseException:
    """``fn()`` must raise ``exc`` from hybridpriv code, naming one of ``names``, in time."""
    with time_limit():
        try:
            result = fn()
        except exc as e:
            err = e
        else:
            pytest.fail(f"bad input accepted: {fn!r} returned {result!r:.200}")
    msg = str(err)
    assert any(_names(msg, n) for n in names), f"{type(err).__name__}({msg!r}) names none of {names}"
    assert _raised_by_us(err), (
        f"{type(err).__name__}({msg!r}) was raised outside hybridpriv:\n"
        + "".join(traceback.format_tb(err.__traceback__)[-2:])
    )
    return err


def accepts(fn):
    """``fn()`` must return, in time, without NaN in a numeric result."""
    with time_limit():
        out = fn()
    if isinstance(out, (int, float, np.ndarray, np.number)):
        arr = np.asarray(out, dtype=float)
        assert not np.isnan(arr).any(), f"NaN result from good input: {out!r}"
    return out


def finite(x) -> None:
    arr = np.asarray(x, dtype=float)
    assert np.isfinite(arr).all(), f"non-finite result from good input: {x!r}"


# ----------------------------------------------------------------------------------------
# Strategies
# ----------------------------------------------------------------------------------------

NAN, INF = math.nan, math.inf

#: Values that are not real numbers (bool included: True is not a size or an epsilon).
not_a_number = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=4),
    st.sampled_from(["1", "0.5", "inf", "nan", b"1"]),
    st.complex_numbers(allow_nan=False, allow_infinity=False).map(complex),
    st.lists(st.floats(0.1, 10), min_size=1, max_size=2),
    st.builds(object),
    st.just(np.array([1.0, 2.0])),
    st.just(np.array(1.0)),
)
non_positive = st.one_of(st.floats(max_value=0.0), st.integers(max_value=0), st.just(-INF))
bad_epsilon = st.one_of(non_positive, st.just(NAN), st.just(np.float64(NAN)), not_a_number)
bad_finite_epsilon = st.one_of(bad_epsilon, st.just(INF))
bad_positive = st.one_of(non_positive, st.sampled_from([NAN, INF, np.float64(INF)]), not_a_number)
bad_probability = st.one_of(
    st.floats(max_value=0.0), st.floats(min_value=1.0), st.just(NAN), not_a_number
)
good_epsilon = st.floats(1e-3, 1e3)
epsilon_or_public = st.one_of(good_epsilon, st.just(INF))
not_bool = st.one_of(
    st.integers(), st.none(), st.text(max_size=3), st.floats(allow_nan=False), st.just(np.bool_(True))
)
not_int = st.one_of(st.floats(), st.text(max_size=3), st.none(), st.booleans(), st.just(np.float64(3.0)), st.just([1]))
names_ok = st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=5)
#: Every keyword some parameter accepts: a "bad word" must be none of them.
KEYWORDS = {
    "mean", "median", "sample", "population", "squared", "absolute", "max", "top10", "min", "avg", "opt",
    "kept", "expected", "replace", "analytic", "classic", "normal", "beta", "grouped", "user", "inf", "public",
}
unknown_word = st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=8).filter(
    lambda s: s not in KEYWORDS
)


def text_not(*allowed: str):
    """Lower-case words other than ``allowed``."""
    return unknown_word.filter(lambda s: s not in allowed)


@st.composite
def groups_st(draw, min_size=1, max_size=4, max_n=30, public=None):
    """A valid tuple of groups; ``public=True`` forces a public group first."""
    names = draw(st.lists(names_ok, min_size=min_size, max_size=max_size, unique=True))
    out = []
    for k, name in enumerate(names):
        eps = INF if (public and k == 0) else draw(epsilon_or_public)
        out.append(Group(name, draw(st.integers(1, max_n)), eps, draw(st.sampled_from([0.0, 1e-6]))))
    return tuple(out)


@st.composite
def bounds_st(draw):
    lower = draw(st.floats(-1e3, 1e3))
    return Bounds(lower, lower + draw(st.floats(1e-2, 1e3)))


@st.composite
def data_for(draw, groups, bounds, trials=None):
    """One array per group inside the bounds (``trials`` rows when given)."""
    out = []
    for g in groups:
        shape = (g.size,) if trials is None else (trials, g.size)
        out.append(draw(hnp.arrays(np.float64, shape, elements=st.floats(bounds.lower, bounds.upper))))
    return out


#: Each estimator class with the extra arguments it needs.
ESTIMATORS = {
    "WeightedMean": lambda g, b, **kw: WeightedMean(g, b, 4.0, **kw),
    "WeightedMedian": lambda g, b, **kw: WeightedMedian(g, b, 4.0, **kw),
    "PDPSample-min": lambda g, b, **kw: PDPSample(g, b, "min", **kw),
    "PDPSample-opt": lambda g, b, **kw: PDPSample(g, b, "opt", sigma2=4.0, **kw),
    "PDPSample-expected": lambda g, b, **kw: PDPSample(
        g, b, "avg", sigma2=4.0, denominator="expected", mean_square=1.0, **kw
    ),
    "PEMedian": lambda g, b, **kw: PEMedian(g, b, **kw),
    "UniformMean": lambda g, b, **kw: UniformMean(g, b, **kw),
    "UniformMedian": lambda g, b, **kw: UniformMedian(g, b, **kw),
    "PublicMean": lambda g, b, **kw: PublicMean(g, b, **kw),
    "PublicMedian": lambda g, b, **kw: PublicMedian(g, b, **kw),
}
NEEDS_PUBLIC = {"PublicMean", "PublicMedian"}


def build(name, groups, bounds, **kw):
    return ESTIMATORS[name](groups, bounds, **kw)


# ----------------------------------------------------------------------------------------
# Group, Bounds, check_groups
# ----------------------------------------------------------------------------------------

bad_size = st.one_of(
    st.integers(max_value=0),
    st.integers(-(2**62), 0).map(np.int64),
    st.floats(),
    st.none(),
    st.booleans(),
    st.text(max_size=3),
    st.just([3]),
)


@cfg(190)
@given(name=names_ok, size=bad_size)
@counted("privacy")
def test_group_rejects_bad_size(name, size):
    rejects(lambda: Group(name, size, 1.0), "size")


@cfg(190)
@given(name=names_ok, epsilon=bad_epsilon)
@counted("privacy")
def test_group_rejects_bad_epsilon(name, epsilon):
    rejects(lambda: Group(name, 10, epsilon), "epsilon")


@cfg(130)
@given(name=names_ok, delta=st.one_of(st.floats(max_value=-1e-300), st.floats(min_value=1.0), st.just(NAN), not_a_number))
@counted("privacy")
def test_group_rejects_bad_delta(name, delta):
    rejects(lambda: Group(name, 10, 1.0, delta), "delta")


@cfg(60)
@given(name=st.one_of(st.just(""), st.text(" \t\n", min_size=1, max_size=3), st.none(), st.integers(), st.just(b"x")))
@counted("privacy")
def test_group_rejects_bad_name(name):
    rejects(lambda: Group(name, 10, 1.0), "name")


@cfg(160)
@given(
    name=names_ok,
    size=st.one_of(st.integers(1, 10**9), st.integers(1, 10**6).map(np.int64)),
    epsilon=st.one_of(st.floats(min_value=5e-324, allow_nan=False), st.integers(1, 100)),
    delta=st.floats(0.0, 1.0, exclude_max=True),
)
@counted("privacy")
def test_group_accepts_good_values(name, size, epsilon, delta):
    g = accepts(lambda: Group(name, size, epsilon, delta))
    assert g.size == int(size) and type(g.size) is int
    assert g.epsilon == float(epsilon) > 0 and g.is_public == math.isinf(epsilon)
    assert 0.0 <= g.delta < 1.0


finite_mod = st.floats(-1e12, 1e12)


@st.composite
def bad_bounds_pair(draw):
    kind = draw(st.sampled_from(["reversed", "nan", "inf", "overflow", "type"]))
    if kind == "reversed":
        a = draw(finite_mod)
        b = draw(st.one_of(st.just(a), st.floats(-1e12, a)))
        return (a, b)
    if kind == "nan":
        pair = [draw(finite_mod), NAN]
    elif kind == "inf":
        pair = [draw(finite_mod), draw(st.sampled_from([INF, -INF]))]
    elif kind == "overflow":  # finite ends, infinite width
        return (-draw(st.floats(9e307, 1.7e308)), draw(st.floats(9e307, 1.7e308)))
    else:
        pair = [draw(finite_mod), draw(not_a_number)]
    draw(st.randoms()).shuffle(pair)
    return tuple(pair)


bad_bounds_shape = st.one_of(
    st.none(),
    st.floats(),
    st.text(max_size=3),
    st.lists(st.floats(0, 1), max_size=1),
    st.lists(st.floats(0, 1), min_size=3, max_size=4),
)


@cfg(240)
@given(pair=st.one_of(bad_bounds_pair(), bad_bounds_shape))
@counted("privacy")
def test_bounds_rejects_bad_pairs(pair):
    rejects(lambda: Bounds.from_pair(pair), "bounds")
    if isinstance(pair, tuple) and len(pair) == 2:
        rejects(lambda: Bounds(*pair), "bounds")


@cfg(160)
@given(
    lower=finite_mod,
    width=st.floats(1e-6, 1e12),
    values=hnp.arrays(np.float64, st.integers(0, 20), elements=st.floats(allow_nan=False)),
)
@counted("privacy")
def test_bounds_clamp_and_check(lower, width, values):
    assume(lower < lower + width)
    b = accepts(lambda: Bounds.from_pair([lower, lower + width]))
    clipped = accepts(lambda: b.clamp(values))
    assert ((clipped >= b.lower) & (clipped <= b.upper)).all()
    assert np.array_equal(b.check(clipped, "x"), clipped)
    outside = (values < b.lower) | (values > b.upper)
    if outside.any():
        rejects(lambda: b.check(values, "records"), "records")
    with_nan = np.append(values, NAN)
    rejects(lambda: b.clamp(with_nan), "values")
    rejects(lambda: b.check(with_nan, "records"), "records")
    rejects(lambda: b.check(values.astype(str), "records"), "records")


@cfg(100)
@given(
    groups=st.one_of(
        st.just([]),
        st.just(()),
        st.lists(st.one_of(st.integers(), st.text(max_size=2), st.none()), min_size=1, max_size=3),
        groups_st(max_size=2).map(lambda g: list(g) + [g[0]]),
        st.text(max_size=3),
        st.none(),
        st.integers(),
    )
)
@counted("privacy")
def test_check_groups_rejects(groups):
    rejects(lambda: check_groups(groups), "groups", "group")


@cfg(160)
@given(which=st.sampled_from(["epsilon", "delta", "relation"]), data=st.data())
@counted("privacy")
def test_guarantee_rejects(which, data):
    args = {"epsilon": 1.0, "delta": 0.0, "relation": "add-remove"}
    args[which] = data.draw(
        {
            "epsilon": st.one_of(st.floats(max_value=-1e-300), st.just(NAN), st.just(-INF), not_a_number),
            "delta": st.one_of(st.floats(max_value=-1e-300), st.floats(min_value=1.0), st.just(NAN), not_a_number),
            "relation": st.one_of(unknown_word, st.none(), st.integers()),
        }[which]
    )
    rejects(lambda: Guarantee(**args), which)


@cfg(100)
@given(epsilon=st.one_of(st.floats(0, allow_nan=False), st.integers(0, 10)), delta=st.floats(0, 1, exclude_max=True),
       relation=st.sampled_from(["add-remove", "replace"]))
@counted("privacy")
def test_guarantee_accepts(epsilon, delta, relation):
    g = accepts(lambda: Guarantee(epsilon, delta, relation))
    assert g.epsilon == float(epsilon) and g.delta == delta and str(g)


# ----------------------------------------------------------------------------------------
# Mechanisms
# ----------------------------------------------------------------------------------------

bad_scale = st.one_of(
    st.floats(max_value=-1e-300), st.sampled_from([NAN, INF, -INF]), not_a_number.filter(lambda v: not isinstance(v, (bool, list)) and not (isinstance(v, np.ndarray)))
)
bad_values = st.one_of(
    st.just(NAN),
    st.lists(st.floats(-5, 5), min_size=1, max_size=4).map(lambda v: v + [NAN]),
    st.text(min_size=1, max_size=3),
    st.just(["1", "2"]),
    st.just([1 + 2j]),
    st.builds(lambda: [object()]),
    st.just([[1.0, 2.0], [3.0]]),
)


@cfg(190)
@given(mech=st.sampled_from(["laplace", "gaussian"]), scale=bad_scale, values=st.floats(-10, 10))
@counted("mechanisms")
def test_noise_rejects_bad_scale(mech, scale, values):
    fn, name = (laplace, "scale") if mech == "laplace" else (gaussian, "sigma")
    rng = np.random.default_rng(0)
    rejects(lambda: fn(values, scale, rng), name)


@cfg(130)
@given(mech=st.sampled_from([laplace, gaussian]), values=bad_values)
@counted("mechanisms")
def test_noise_rejects_bad_values(mech, values):
    rejects(lambda: mech(values, 1.0, np.random.default_rng(0)), "values")


@cfg(100)
@given(
    mech=st.sampled_from([laplace, gaussian]),
    values=hnp.arrays(np.float64, hnp.array_shapes(max_dims=2, max_side=4), elements=st.floats(-1e6, 1e6)),
    scale=st.floats(0, 1e3),
    rng=st.sampled_from([None, 0, np.random.RandomState(0), "rng"]),
)
@counted("mechanisms")
def test_noise_good_values_and_bad_rng(mech, values, scale, rng):
    out = accepts(lambda: mech(values, scale, np.random.default_rng(1)))
    assert out.shape == values.shape
    finite(out)
    rejects(lambda: mech(values, scale, rng), "rng")


@cfg(190)
@given(
    which=st.sampled_from(["epsilon", "delta", "sensitivity", "method"]),
    data=st.data(),
)
@counted("mechanisms")
def test_gaussian_sigma_rejects(which, data):
    args = {"epsilon": 0.5, "delta": 1e-5, "sensitivity": 1.0}
    bad = {
        "epsilon": bad_finite_epsilon,
        "delta": bad_probability,
        "sensitivity": bad_positive,
        "method": st.one_of(unknown_word, st.none()),
    }[which]
    value = data.draw(bad)
    if which == "method":
        rejects(lambda: gaussian_sigma(**args, method=value), "method")
    else:
        args[which] = value
        rejects(lambda: gaussian_sigma(**args), which)


@cfg(130)
@given(
    epsilon=st.floats(1e-3, 50),
    delta=st.floats(1e-12, 0.5),
    sensitivity=st.floats(1e-100, 1e100),
)
@counted("mechanisms")
def test_gaussian_sigma_good(epsilon, delta, sensitivity):
    s = accepts(lambda: gaussian_sigma(epsilon, delta, sensitivity))
    finite(s)
    assert s > 0


@cfg(160)
@given(
    which=st.sampled_from(["epsilon", "sensitivity", "scores", "log_base_measure"]),
    data=st.data(),
)
@counted("mechanisms")
def test_exponential_mechanism_rejects(which, data):
    args = {"scores": np.zeros(3), "epsilon": 1.0, "sensitivity": 1.0}
    bad = {
        "epsilon": bad_epsilon,
        "sensitivity": bad_positive,
        "scores": st.sampled_from(
            [np.array([]), np.array([1.0, NAN]), np.array(["a", "b"]), np.array([INF, 0.0]), np.float64(1.0), [[1], [2, 3]]]
        ),
        "log_base_measure": st.sampled_from([np.zeros(2), np.array([NAN, 0, 0]), np.array(["a"] * 3), np.array([INF, 0, 0])]),
    }[which]
    value = data.draw(bad)
    rng = np.random.default_rng(0)
    if which == "log_base_measure":
        rejects(lambda: exponential_mechanism(**args, rng=rng, log_base_measure=value), which)
    else:
        args[which] = value
        rejects(lambda: exponential_mechanism(**args, rng=rng), which)


@cfg(160)
@given(
    which=st.sampled_from(["q", "epsilon", "bounds", "data"]),
    data=st.data(),
)
@counted("mechanisms")
def test_smith_quantile_rejects(which, data):
    args = {"data": np.array([0.2, 0.5, 0.9]), "q": 0.5, "epsilon": 1.0, "bounds": (0.0, 1.0)}
    bad = {
        "q": bad_probability.filter(lambda v: not (isinstance(v, float) and v == 1.0)).filter(
            lambda v: not (isinstance(v, float) and v == 0.0)
        ),
        "epsilon": bad_epsilon,
        "bounds": st.one_of(bad_bounds_pair(), bad_bounds_shape),
        "data": st.sampled_from(
            [np.array([]), np.array([0.5, NAN]), np.array([0.5, 2.0]), np.array([-INF]), np.array(["a"]), [[0.5], [0.5, 0.6]]]
        ),
    }[which]
    args[which] = data.draw(bad)
    rejects(lambda: smith_quantile(rng=np.random.default_rng(0), **args), which)


@cfg(100)
@given(
    data=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=6), elements=st.floats(0, 1)),
    q=st.floats(0, 1),
    epsilon=epsilon_or_public,
)
@counted("mechanisms")
def test_smith_quantile_good(data, q, epsilon):
    out = accepts(lambda: smith_quantile(data, q, epsilon, (0.0, 1.0), np.random.default_rng(0)))
    finite(out)
    assert ((np.asarray(out) >= 0) & (np.asarray(out) <= 1)).all()


# ----------------------------------------------------------------------------------------
# Theory
# ----------------------------------------------------------------------------------------

THEORY = {
    "group_mean_variances": theory.group_mean_variances,
    "mixed_mean_weights": theory.mixed_mean_weights,
    "mixed_mean_variance": theory.mixed_mean_variance,
    "pdp_sample_variance": lambda n, e, s2, d: theory.pdp_sample_variance(n, e, 1.0, s2, d),
    "pdp_sample_variance-expected": lambda n, e, s2, d: theory.pdp_sample_variance(n, e, 1.0, s2, d, "expected", 1.0),
    "pdp_optimal_threshold": theory.pdp_optimal_threshold,
}
theory_fn = st.sampled_from(sorted(THEORY))


@cfg(160)
@given(fn=theory_fn, sizes=st.lists(st.integers(1, 50), min_size=1, max_size=4), extra=st.integers(1, 3), data=st.data())
@counted("theory")
def test_theory_rejects_mismatched_lengths(fn, sizes, extra, data):
    k = data.draw(st.sampled_from([len(sizes) + extra, max(len(sizes) - extra, 0)]))
    assume(k != len(sizes))
    epsilons = [1.0] * k
    rejects(lambda: THEORY[fn](sizes, epsilons, 1.0, 1.0), "sizes", "epsilons")


@cfg(240)
@given(fn=theory_fn, sizes=st.lists(st.integers(1, 50), min_size=1, max_size=4), data=st.data())
@counted("theory")
def test_theory_rejects_bad_epsilons(fn, sizes, data):
    eps = [1.0] * len(sizes)
    eps[data.draw(st.integers(0, len(sizes) - 1))] = data.draw(
        st.one_of(st.floats(max_value=0.0), st.sampled_from([NAN, -INF, None, "a", "1", 1j, object()]))
    )
    rejects(lambda: THEORY[fn](sizes, eps, 1.0, 1.0), "epsilons")


bad_size_entry = st.one_of(
    st.integers(max_value=0),
    st.floats(0.01, 1e6).filter(lambda v: v != round(v)),
    st.sampled_from([NAN, INF, -INF, None, "a", "3", True, 2 + 0j, object(), 10**30]),
)


@cfg(240)
@given(fn=theory_fn, sizes=st.lists(st.integers(1, 50), min_size=1, max_size=4), data=st.data())
@counted("theory")
def test_theory_rejects_bad_sizes(fn, sizes, data):
    sizes = list(sizes)
    sizes[data.draw(st.integers(0, len(sizes) - 1))] = data.draw(bad_size_entry)
    rejects(lambda: THEORY[fn](sizes, [1.0] * len(sizes), 1.0, 1.0), "sizes")


@cfg(60)
@given(fn=theory_fn, shape=st.sampled_from(["empty", "scalar", "2d"]))
@counted("theory")
def test_theory_rejects_bad_shapes(fn, shape):
    sizes, eps = {"empty": ([], []), "scalar": (5, 1.0), "2d": ([[5, 5]], [[1.0, 1.0]])}[shape]
    rejects(lambda: THEORY[fn](sizes, eps, 1.0, 1.0), "sizes")


@cfg(240)
@given(fn=theory_fn, which=st.sampled_from(["sigma2", "sensitivity"]), value=bad_positive)
@counted("theory")
def test_theory_rejects_bad_sigma2_and_sensitivity(fn, which, value):
    args = {"sigma2": 1.0, "sensitivity": 1.0, which: value}
    rejects(lambda: THEORY[fn]([10, 20], [1.0, 2.0], args["sigma2"], args["sensitivity"]), which)


@cfg(160)
@given(
    groups=st.lists(st.tuples(st.integers(1, 200), epsilon_or_public), min_size=1, max_size=4),
    sigma2=st.floats(1e-3, 1e3),
    sensitivity=st.floats(1e-3, 1e3),
)
@counted("theory")
def test_theory_good_inputs_give_finite_answers(groups, sigma2, sensitivity):
    sizes, eps = [n for n, _ in groups], [e for _, e in groups]
    var = accepts(lambda: theory.group_mean_variances(sizes, eps, sigma2, sensitivity))
    finite(var)
    w = accepts(lambda: theory.mixed_mean_weights(sizes, eps, sigma2, sensitivity))
    finite(w)
    assert (w >= 0).all() and math.isclose(w.sum(), 1.0, rel_tol=1e-9)
    v = accepts(lambda: theory.mixed_mean_variance(sizes, eps, sigma2, sensitivity))
    assert 0 < v <= var.min() * (1 + 1e-9)
    p = accepts(lambda: theory.pdp_keep_probabilities(eps, 1.0))
    assert ((p > 0) & (p <= 1)).all()
    pmf = accepts(lambda: theory.pdp_count_pmf(sizes, p))
    assert pmf.size == sum(sizes) + 1 and math.isclose(pmf.sum(), 1.0)
    for den in ("kept", "expected"):
        finite(accepts(lambda: theory.pdp_sample_variance(sizes, eps, 1.0, sigma2, sensitivity, den, 1.0)))
    try:
        t = theory.pdp_optimal_threshold(sizes, eps, sigma2, sensitivity)
    except ValueError as exc:  # legitimately: tiny private groups keep nothing at any threshold
        assert "no threshold keeps at least one record" in str(exc)
    else:
        finite(t)
        assert t > 0


@cfg(190)
@given(
    which=st.sampled_from(["weights", "threshold", "denominator", "mean_square", "grid_size", "max_empty", "probabilities", "count sizes"]),
    data=st.data(),
)
@counted("theory")
def test_theory_rejects_other_arguments(which, data):
    n, e = [10, 20], [1.0, INF]
    if which == "weights":
        w = data.draw(st.sampled_from([[NAN, 1.0], [INF, 0.0], ["a", 1.0], [1.0], [1.0, 2.0, 3.0], [None, 1.0]]))
        rejects(lambda: theory.mixed_mean_variance(n, e, 1.0, 1.0, weights=w), "weights")
    elif which == "threshold":
        t = data.draw(bad_finite_epsilon)
        fn = data.draw(st.sampled_from(["keep", "variance"]))
        if fn == "keep":
            rejects(lambda: theory.pdp_keep_probabilities(e, t), "threshold")
        else:
            rejects(lambda: theory.pdp_sample_variance(n, e, t, 1.0, 1.0), "threshold")
    elif which == "denominator":
        d = data.draw(st.one_of(unknown_word, st.none(), st.integers()))
        fn = data.draw(st.sampled_from([theory.pdp_sample_variance, theory.pdp_optimal_threshold]))
        if fn is theory.pdp_sample_variance:
            rejects(lambda: fn(n, e, 1.0, 1.0, 1.0, d), "denominator")
        else:
            rejects(lambda: fn(n, e, 1.0, 1.0, d), "denominator")
    elif which == "mean_square":
        m2 = data.draw(st.one_of(st.floats(max_value=-1e-300), st.sampled_from([NAN, INF]), not_a_number))
        rejects(lambda: theory.pdp_sample_variance(n, e, 1.0, 1.0, 1.0, "expected", m2), "mean_square")
        rejects(lambda: theory.pdp_optimal_threshold(n, [1.0, 2.0], 1.0, 1.0, "expected", m2), "mean_square")
    elif which == "grid_size":
        g = data.draw(st.one_of(st.integers(max_value=1), st.floats(), st.text(max_size=2), st.none(), st.booleans()))
        rejects(lambda: theory.pdp_optimal_threshold(n, e, 1.0, 1.0, grid_size=g), "grid_size")
    elif which == "max_empty":
        m = data.draw(bad_probability)
        rejects(lambda: theory.pdp_optimal_threshold(n, e, 1.0, 1.0, max_empty=m), "max_empty")
    elif which == "probabilities":
        p = data.draw(st.sampled_from([[NAN, 0.5], [1.5, 0.5], [-0.1, 0.5], ["a", 0.5], [0.5]]))
        rejects(lambda: theory.pdp_count_pmf(n, p), "probabilities")
    else:
        s = data.draw(st.sampled_from([[-1, 3], [2.5, 3], [NAN, 3], ["a", 3], [True, 3], [[1, 2]]]))
        rejects(lambda: theory.pdp_count_pmf(s, [0.5] * len(s)), "sizes")


@cfg(60)
@given(t=st.floats(760.0, 1.7e308), n=st.integers(1, 1000), eps=st.floats(1e-3, 10.0), n_pub=st.integers(1, 50))
@counted("theory")
def test_pdp_threshold_that_keeps_nothing_is_an_error(t, n, eps, n_pub):
    rejects(lambda: theory.pdp_sample_variance([n], [eps], t, 1.0, 1.0, "expected"), "threshold")
    rejects(lambda: PDPSample([Group("a", n, eps)], (0, 1), t, denominator="expected"), "threshold")
    # with a public group something is always kept, and a huge t does not overflow t^2
    for den in ("kept", "expected"):
        finite(accepts(lambda: theory.pdp_sample_variance([n, n_pub], [eps, INF], t, 1.0, 1.0, den)))


binary_matrix = hnp.arrays(
    np.int8, st.tuples(st.integers(1, 8), st.integers(1, 8)), elements=st.integers(0, 1)
)


@st.composite
def bad_matrix(draw):
    kind = draw(st.sampled_from(["value", "nan", "inf", "1d", "3d", "empty", "str", "object", "complex", "ragged", "none", "sparse-dup"]))
    m = draw(binary_matrix)
    if kind == "value":
        m = m.astype(float)
        m.flat[draw(st.integers(0, m.size - 1))] = draw(
            st.one_of(st.integers(2, 100), st.integers(-100, -1), st.floats(0.01, 0.99))
        )
        return m
    if kind == "nan":
        m = m.astype(float)
        m.flat[0] = NAN
        return m
    if kind == "inf":
        m = m.astype(float)
        m.flat[0] = INF
        return m
    return {
        "1d": m.ravel(),
        "3d": m[None],
        "empty": np.zeros((0, m.shape[1])) if draw(st.booleans()) else np.zeros((m.shape[0], 0)),
        "str": m.astype(str),
        "object": np.array([[object()] * m.shape[1]] * m.shape[0]),
        "complex": m.astype(complex),
        "ragged": [[1, 0], [1]],
        "none": None,
        "sparse-dup": sp.coo_array(([1, 1], ([0, 0], [0, 0])), shape=(1, 2)),
    }[kind]


@cfg(240)
@given(
    which=st.sampled_from(["matrix", "k", "epsilon"]),
    matrix=binary_matrix,
    data=st.data(),
)
@counted("theory")
def test_user_item_risk_rejects(which, matrix, data):
    m = matrix.shape[1]
    k, eps = 1, 1.0
    if which == "matrix":
        bad = data.draw(bad_matrix())
        rejects(lambda: theory.user_item_risk(bad, k, eps), "matrix")
        return
    if which == "k":
        k = data.draw(
            st.one_of(
                st.integers(max_value=0),
                st.integers(m + 1, 10**40),
                st.lists(st.integers(max_value=0), min_size=1, max_size=3),
                st.lists(st.integers(m + 1, 10**6), min_size=1, max_size=3),
                st.just([]),
                st.floats(),
                st.sampled_from(["2", None, True, [1.0], [[1]], np.array(1.5)]),
            )
        )
        rejects(lambda: theory.user_item_risk(matrix, k, eps), "k")
    else:
        eps = data.draw(bad_finite_epsilon)
        rejects(lambda: theory.user_item_risk(matrix, k, eps), "epsilon")


@cfg(130)
@given(matrix=binary_matrix, data=st.data(), epsilon=st.floats(1e-2, 1e2))
@counted("theory")
def test_user_item_risk_good(matrix, data, epsilon):
    m = matrix.shape[1]
    k = data.draw(st.integers(1, m))
    risk = accepts(lambda: theory.user_item_risk(matrix, k, epsilon))
    finite(risk)
    terms = theory.user_item_risk_terms(sp.csr_array(matrix), k, epsilon)
    assert risk >= 0 and math.isclose(risk, terms.total)
    ks = np.arange(1, m + 1)
    finite(accepts(lambda: theory.user_item_risk(matrix, ks, epsilon)))


# ----------------------------------------------------------------------------------------
# Estimators: constructors
# ----------------------------------------------------------------------------------------

bad_groups = st.one_of(
    st.just([]),
    st.lists(st.one_of(st.integers(), st.text(max_size=2), st.none()), min_size=1, max_size=2),
    groups_st(max_size=2).map(lambda g: list(g) + [g[0]]),
    st.none(),
    st.text(max_size=2),
)
bad_bounds = st.one_of(bad_bounds_pair(), bad_bounds_shape)


@cfg(320)
@given(
    name=st.sampled_from(sorted(ESTIMATORS)),
    which=st.sampled_from(["groups", "bounds", "clamp"]),
    groups=groups_st(public=True),
    data=st.data(),
)
@counted("estimators")
def test_estimator_constructors_reject_bad_setting(name, which, groups, data):
    args = {"groups": groups, "bounds": (0.0, 1.0), "clamp": False}
    args[which] = data.draw({"groups": bad_groups, "bounds": bad_bounds, "clamp": not_bool}[which])
    rejects(lambda: build(name, args["groups"], args["bounds"], clamp=args["clamp"]), which, *(["group"] if which == "groups" else []))


@cfg(240)
@given(which=st.sampled_from(["sigma2", "relation", "threshold", "denominator", "mean_square", "public"]), data=st.data())
@counted("estimators")
def test_estimator_constructors_reject_bad_parameters(which, data):
    g, b = (Group("pub", 5, INF), Group("a", 10, 1.0)), (0.0, 1.0)
    if which == "sigma2":
        s2 = data.draw(bad_positive.filter(lambda v: v is not None))
        cls = data.draw(st.sampled_from(["WeightedMean", "WeightedMedian", "PDPSample"]))
        if cls == "PDPSample":
            rejects(lambda: PDPSample(g, b, "opt", sigma2=s2), "sigma2")
        else:
            rejects(lambda: globals()[cls](g, b, s2), "sigma2")
    elif which == "relation":
        rel = data.draw(st.one_of(unknown_word, st.none(), st.integers(), st.just("Add-Remove")))
        cls = data.draw(st.sampled_from([WeightedMean, WeightedMedian, PDPSample, UniformMean, UniformMedian]))
        if cls in (WeightedMean, WeightedMedian):
            rejects(lambda: cls(g, b, 1.0, relation=rel), "relation")
        elif cls is PDPSample:
            rejects(lambda: cls(g, b, "min", relation=rel), "relation")
        else:
            rejects(lambda: cls(g, b, relation=rel), "relation")
    elif which == "threshold":
        t = data.draw(st.one_of(bad_finite_epsilon, unknown_word))
        rejects(lambda: PDPSample(g, b, t), "threshold")
    elif which == "denominator":
        d = data.draw(st.one_of(unknown_word, st.none(), st.integers()))
        rejects(lambda: PDPSample(g, b, "min", denominator=d), "denominator")
    elif which == "mean_square":
        m2 = data.draw(st.one_of(st.floats(max_value=-1e-300), st.sampled_from([NAN, INF, -INF]), not_a_number.filter(lambda v: v is not None)))
        rejects(lambda: PDPSample(g, b, "opt", sigma2=1.0, denominator="expected", mean_square=m2), "mean_square")
    else:
        private = data.draw(groups_st().filter(lambda gs: not any(x.is_public for x in gs)))
        cls = data.draw(st.sampled_from([PublicMean, PublicMedian]))
        rejects(lambda: cls(private, b), "public")


@cfg(190)
@given(which=st.sampled_from(["name", "statistic", "sigma2", "mean_square"]), groups=groups_st(public=True), data=st.data())
@counted("estimators")
def test_make_and_default_estimators_reject(which, groups, data):
    b = (0.0, 1.0)
    if which == "name":
        name = data.draw(st.one_of(text_not(*ESTIMATOR_NAMES), st.none(), st.integers()))
        rejects(lambda: make_estimator(name, groups, b, 1.0), "estimator")
    elif which == "statistic":
        stat = data.draw(st.one_of(text_not("mean", "median"), st.none(), st.integers()))
        rejects(lambda: default_estimators(groups, b, stat, 1.0), "statistic")
    elif which == "sigma2":
        name = data.draw(st.sampled_from(["weighted", "pdp-opt", "pdp-opt-expected", "weighted-median"]))
        s2 = data.draw(bad_positive)
        rejects(lambda: make_estimator(name, groups, b, s2, mean_square=1.0), "sigma2")
    else:
        m2 = data.draw(st.one_of(st.floats(max_value=-1e-300), st.sampled_from([NAN, INF]), not_a_number.filter(lambda v: v is not None)))
        rejects(lambda: make_estimator("pdp-opt-expected", groups, b, 1.0, mean_square=m2), "mean_square")


@cfg(100)
@given(
    groups=groups_st(max_n=200),
    bounds=bounds_st(),
    sigma2=st.floats(1e-3, 1e3),
    relation=st.sampled_from(["add-remove", "replace"]),
)
@counted("estimators")
def test_estimator_constructors_accept_good_settings(groups, bounds, sigma2, relation):
    for cls in (WeightedMean, WeightedMedian):
        est = accepts(lambda: cls(groups, bounds, sigma2, relation=relation))
        finite(est.weights)
    for rule in ("min", "avg", "max", "opt"):
        est = accepts(lambda: PDPSample(groups, bounds, rule, sigma2=sigma2, relation=relation))
        finite(est.threshold)
        finite(est.keep_probabilities)
    for est in (PEMedian(groups, bounds), UniformMean(groups, bounds), UniformMedian(groups, bounds)):
        assert set(est.privacy) == {g.name for g in groups}
        assert all(v.epsilon > 0 for v in est.privacy.values())


# ----------------------------------------------------------------------------------------
# Estimators: estimate
# ----------------------------------------------------------------------------------------

CORRUPTIONS = [
    "nan", "inf", "-inf", "outside", "wrong-length", "too-few-groups", "too-many-groups", "strings",
    "numeric-strings", "objects", "none", "complex", "3-d", "empty", "ragged", "mapping-missing",
    "mapping-extra", "ndarray", "string", "trial-mismatch", "mixed-ndim", "zero-trials", "rng",
]


@st.composite
def corrupted(draw, groups, bounds, valid):
    """``(data, rng, names)``: a corruption of ``valid`` data and the names its error must give."""
    kind = draw(st.sampled_from(CORRUPTIONS))
    data = [v.copy() for v in valid]
    k = draw(st.integers(0, len(groups) - 1))
    rng = np.random.default_rng(0)
    if kind in ("nan", "inf", "-inf", "outside"):
        i = draw(st.integers(0, groups[k].size - 1))
        if kind == "outside":
            step = draw(st.floats(1e-6, 1e6)) * max(1.0, bounds.width)
            value = bounds.upper + step if draw(st.booleans()) else bounds.lower - step
            assume(not bounds.lower <= value <= bounds.upper)
        else:
            value = {"nan": NAN, "inf": INF, "-inf": -INF}[kind]
        data[k][i] = value
    elif kind == "wrong-length":
        n = groups[k].size + draw(st.sampled_from([-1, 1, 2])) if groups[k].size > 1 else 2
        data[k] = np.full(n, bounds.midpoint)
    elif kind == "too-few-groups":
        data = data[:-1]
    elif kind == "too-many-groups":
        data = data + [data[0]]
    elif kind == "strings":
        data[k] = np.array(["x"] * groups[k].size)
    elif kind == "numeric-strings":
        data[k] = data[k].astype(str)
    elif kind == "objects":
        data[k] = np.array([object()] * groups[k].size)
    elif kind == "none":
        data[k] = None
    elif kind == "complex":
        data[k] = data[k] + 1j
    elif kind == "3-d":
        data[k] = data[k][None, None, :]
    elif kind == "empty":
        data[k] = np.array([])
    elif kind == "ragged":
        data[k] = [list(data[k]), list(data[k])[:-1] or [1.0, 2.0]]
    elif kind == "mapping-missing":
        data = {g.name: v for g, v in zip(groups, data) if g.name != groups[k].name}
    elif kind == "mapping-extra":
        data = {g.name: v for g, v in zip(groups, data)} | {"zz-extra": data[0]}
    elif kind == "ndarray":
        data = np.zeros((len(groups), 3))
    elif kind == "string":
        data = "data"
    elif kind == "trial-mismatch":
        assume(len(groups) > 1)
        data = [np.broadcast_to(v, (2 + j, v.size)) for j, v in enumerate(data)]
    elif kind == "mixed-ndim":
        assume(len(groups) > 1)
        data[k] = data[k][None, :]
    elif kind == "zero-trials":
        data = [np.zeros((0, v.size)) for v in data]
    else:
        rng = draw(st.sampled_from([None, 0, np.random.RandomState(0), "rng"]))
        return data, rng, ("rng",), kind
    return data, rng, ("data",), kind


@cfg(960)
@given(
    name=st.sampled_from(sorted(ESTIMATORS)),
    groups=groups_st(public=True),
    bounds=bounds_st(),
    data=st.data(),
)
@counted("estimate")
def test_estimate_rejects_bad_data(name, groups, bounds, data):
    est = build(name, groups, bounds)
    valid = data.draw(data_for(groups, bounds))
    bad, rng, names, kind = data.draw(corrupted(groups, bounds, valid))
    rejects(lambda: est.estimate(bad, rng), *names)


@cfg(240)
@given(
    name=st.sampled_from(sorted(ESTIMATORS)),
    groups=groups_st(public=True),
    bounds=bounds_st(),
    trials=st.one_of(st.none(), st.integers(1, 4)),
    data=st.data(),
)
@counted("estimate")
def test_estimate_good_data_gives_finite_results(name, groups, bounds, trials, data):
    est = build(name, groups, bounds)
    valid = data.draw(data_for(groups, bounds, trials))
    out = accepts(lambda: est.estimate(valid, np.random.default_rng(data.draw(st.integers(0, 2**32)))))
    finite(out)
    if trials is None:
        assert isinstance(out, float)
    else:
        assert out.shape == (trials,)
    if est.statistic == "median":  # medians of records in the bounds stay in the bounds
        assert (np.asarray(out) >= bounds.lower - 1e-9 * bounds.width).all()
        assert (np.asarray(out) <= bounds.upper + 1e-9 * bounds.width).all()
    # a mapping by group name is the same data
    mapping = {g.name: v for g, v in zip(groups, valid)}
    again = est.estimate(mapping, np.random.default_rng(1))
    np.testing.assert_array_equal(again, est.estimate(valid, np.random.default_rng(1)))


@cfg(240)
@given(
    name=st.sampled_from(sorted(ESTIMATORS)),
    groups=groups_st(public=True),
    bounds=bounds_st(),
    data=st.data(),
    seed=st.integers(0, 2**32),
)
@counted("estimate")
def test_clamp_on_clips_and_clamp_off_rejects(name, groups, bounds, data, seed):
    raw = [
        data.draw(hnp.arrays(np.float64, g.size, elements=st.floats(bounds.lower - 1e6, bounds.upper + 1e6)))
        for g in groups
    ]
    k = data.draw(st.integers(0, len(groups) - 1))
    raw[k][0] = data.draw(st.sampled_from([bounds.upper + 1.0, bounds.lower - 1.0, INF, -INF]))
    clamped = build(name, groups, bounds, clamp=True)
    got = accepts(lambda: clamped.estimate(raw, np.random.default_rng(seed)))
    finite(got)
    clipped = [np.clip(x, bounds.lower, bounds.upper) for x in raw]
    want = build(name, groups, bounds).estimate(clipped, np.random.default_rng(seed))
    assert got == want
    rejects(lambda: build(name, groups, bounds).estimate(raw, np.random.default_rng(seed)), "data")
    with_nan = [x.copy() for x in raw]
    with_nan[k][0] = NAN
    rejects(lambda: clamped.estimate(with_nan, np.random.default_rng(seed)), "data")


# ----------------------------------------------------------------------------------------
# Contribution-bounded counts
# ----------------------------------------------------------------------------------------

bad_k = st.one_of(
    st.integers(max_value=0),
    st.integers(2**63, 10**40),
    st.floats(),
    st.sampled_from(["2", None, True, [1, 2], np.float64(2.0), np.array([1, 2])]),
)


@cfg(240)
@given(which=st.sampled_from(["k", "epsilon"]), data=st.data())
@counted("useritem")
def test_contribution_bounded_counts_rejects_bad_parameters(which, data):
    if which == "k":
        k = data.draw(bad_k)
        rejects(lambda: ContributionBoundedCounts(k, 1.0), "k")
    else:
        eps = data.draw(bad_finite_epsilon)
        rejects(lambda: ContributionBoundedCounts(1, eps), "epsilon")


@cfg(240)
@given(which=st.sampled_from(["matrix", "k>m", "trials", "rng"]), matrix=binary_matrix, data=st.data())
@counted("useritem")
def test_contribution_bounded_counts_estimate_rejects(which, matrix, data):
    m = matrix.shape[1]
    rng = np.random.default_rng(0)
    if which == "matrix":
        bad = data.draw(bad_matrix())
        rejects(lambda: ContributionBoundedCounts(1, 1.0).estimate(bad, rng), "matrix")
    elif which == "k>m":
        k = data.draw(st.integers(m + 1, 10**6))
        mech = ContributionBoundedCounts(k, 1.0)
        rejects(lambda: mech.estimate(matrix, rng), "k")
        rejects(lambda: mech.bounded_counts(matrix, rng), "k")
    elif which == "trials":
        t = data.draw(st.one_of(st.integers(max_value=0), not_int))
        rejects(lambda: ContributionBoundedCounts(1, 1.0).estimate(matrix, rng, t), "trials")
    else:
        bad_rng = data.draw(st.sampled_from([None, 0, np.random.RandomState(0), "rng"]))
        rejects(lambda: ContributionBoundedCounts(1, 1.0).estimate(matrix, bad_rng), "rng")


@cfg(130)
@given(matrix=binary_matrix, data=st.data(), epsilon=st.floats(1e-2, 1e2), trials=st.integers(1, 5))
@counted("useritem")
def test_contribution_bounded_counts_good(matrix, data, epsilon, trials):
    k = data.draw(st.integers(1, matrix.shape[1]))
    fmt = data.draw(st.sampled_from(["dense", "bool", "csr", "coo", "list"]))
    mat = {
        "dense": matrix,
        "bool": matrix.astype(bool),
        "csr": sp.csr_array(matrix),
        "coo": sp.coo_matrix(matrix),
        "list": matrix.tolist(),
    }[fmt]
    mech = ContributionBoundedCounts(k, epsilon)
    out = accepts(lambda: mech.estimate(mat, np.random.default_rng(0), trials))
    assert out.shape == (trials, matrix.shape[1])
    finite(out)
    kept = mech.bounded_counts(mat, np.random.default_rng(0), trials)
    assert (kept <= matrix.sum(axis=0)).all() and (kept.sum(axis=1) <= np.minimum(matrix.sum(axis=1), k).sum()).all()


@cfg(100)
@given(which=st.sampled_from(["loss", "trials", "ks", "epsilon", "shape"]), data=st.data())
@counted("useritem")
def test_user_item_loss_and_risk_helpers_reject(which, data):
    mat = np.array([[1, 1, 0], [0, 1, 1]])
    rng = np.random.default_rng(0)
    if which == "loss":
        loss = data.draw(st.one_of(unknown_word, st.none(), st.just(["squared"])))
        rejects(lambda: monte_carlo_user_item_loss(mat, 1, 1.0, rng, 3, loss=loss), "loss")
        rejects(lambda: risk_over_matrices([mat], (1, 1), [1], 1.0, loss=loss), "loss")
    elif which == "trials":
        t = data.draw(st.one_of(st.integers(max_value=1), not_int))
        rejects(lambda: monte_carlo_user_item_loss(mat, 1, 1.0, rng, t), "trials")
    elif which == "ks":
        ks = data.draw(st.sampled_from([[], [0], [-1, 2], [1, 1], [1.5], ["a"], [[1]], [True]]))
        rejects(lambda: risk_over_matrices([mat], (1, 1), ks, 1.0), "ks")
    elif which == "epsilon":
        eps = data.draw(bad_finite_epsilon)
        rejects(lambda: risk_over_matrices([mat], (1, 1), [1], eps), "epsilon")
        rejects(lambda: monte_carlo_user_item_loss(mat, 1, eps, rng, 3), "epsilon")
    else:
        shape = data.draw(st.sampled_from([(2, 1), (1, 2), (0, 1), (1, -1), (1,), "ab", None, (1.0, 1), (True, 1)]))
        rejects(lambda: risk_over_matrices([mat], shape, [1], 1.0), "shape")


# ----------------------------------------------------------------------------------------
# Sources, evaluate, decide
# ----------------------------------------------------------------------------------------

G2 = (Group("pub", 5, INF), Group("priv", 8, 1.0))
B2 = Bounds(0.0, 10.0)


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
    "chunk_size": st.one_of(st.integers(max_value=0), not_int.filter(lambda v: v is not None)),  # None: measured
    "draws": st.one_of(st.integers(max_value=0), st.integers(5, 100), st.floats(), st.text(max_size=2), st.booleans()),
    "progress": st.one_of(st.text(min_size=1, max_size=3), st.integers(), st.floats()),
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
    from hybridpriv.tasks import Statistic

    seed = seed % 2**63
    ev = accepts(
        lambda: evaluate(_EV_ESTS, _EV_SRC, Statistic(target, loss), trials=trials, seed=seed, chunk_size=chunk_size,
                         draws=draws)
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


# ----------------------------------------------------------------------------------------
# PyMC models: constructor validation only (no sampling)
# ----------------------------------------------------------------------------------------

bad_model_args = {
    "groups": bad_groups,
    "bounds": bad_bounds,
    "family": st.one_of(unknown_word, st.none(), st.integers(), st.just(NormalFamily), st.just(NormalFamily(bounds=(0, 1)))),
    "clamp": not_bool,
    "known_variance": bad_positive.filter(lambda v: v is not None),
    "public_data": st.one_of(
        st.just([1.0]),
        st.just({"priv": np.ones(8)}),
        st.just({"nobody": np.ones(5)}),
        st.just({"pub": np.ones(4)}),
        st.just({"pub": np.ones((1, 5))}),
        st.just({"pub": None}),
        st.just({"pub": [NAN] * 5}),
        st.just({"pub": ["1"] * 5}),
        st.just({"pub": [object()] * 5}),
        st.just({"pub": [1 + 1j] * 5}),
        st.floats(10.001, 1e9).map(lambda v: {"pub": [v] * 5}),
        st.sampled_from([INF, -INF]).map(lambda v: {"pub": [v] * 5}),
    ),
    "released_means": st.one_of(
        st.just([1.0]),
        st.just(1.0),
        st.just("x"),
        st.none(),
        st.floats(1e3, 1e9).map(lambda v: [ReleasedMean(v, 1.0)]),
        st.just([ReleasedMean(1.0, 1.0, "nobody")]),
    ),
}


@cfg(400)
@given(which=st.sampled_from(sorted(bad_model_args)), data=st.data())
@counted("models")
def test_grouped_data_model_rejects(which, data):
    args = dict(groups=G2, bounds=B2)
    args[which] = data.draw(bad_model_args[which])
    names = {"groups": ("groups", "group"), "family": ("family",), "released_means": ("released_means",)}.get(which, (which,))
    rejects(lambda: GroupedDataModel(**args), *names)


@cfg(320)
@given(
    which=st.sampled_from(["mu", "sigma_scale", "mean", "concentration", "bounds", "value", "noise_scale", "group",
                           "priors", "dist", "mc_samples", "mc_seed", "beta-known_variance"]),
    data=st.data(),
)
@counted("models")
def test_families_and_released_means_reject(which, data):
    pair = st.one_of(
        st.tuples(st.floats(0.1, 5), bad_positive),
        st.tuples(st.sampled_from([NAN, INF, -INF, "a", None]), st.floats(0.1, 5)),
        st.none(),
        st.floats(),
        st.text(max_size=2),
        st.just((1.0,)),
        st.just((1.0, 2.0, 3.0)),
    )
    if which == "mu":
        rejects(lambda: NormalFamily(mu=data.draw(pair.filter(lambda p: p is not None))), "mu")
    elif which == "sigma_scale":
        rejects(lambda: NormalFamily(sigma_scale=data.draw(bad_positive.filter(lambda v: v is not None))), "sigma_scale")
    elif which in ("mean", "concentration"):
        value = data.draw(st.one_of(pair, st.tuples(non_positive, st.floats(0.1, 5))))
        rejects(lambda: BetaFamily(**{which: value}), which)
    elif which == "bounds":
        cls = data.draw(st.sampled_from([NormalFamily, BetaFamily]))
        b = data.draw(bad_bounds.filter(lambda v: v is not None))
        rejects(lambda: cls(bounds=b), "bounds")
    elif which == "value":
        rejects(lambda: ReleasedMean(data.draw(st.one_of(st.sampled_from([NAN, INF, -INF]), not_a_number)), 1.0), "value")
    elif which == "noise_scale":
        rejects(lambda: ReleasedMean(1.0, data.draw(bad_positive)), "noise_scale")
    elif which == "group":
        rejects(lambda: ReleasedMean(1.0, 1.0, data.draw(st.one_of(st.integers(), st.floats(), st.just(["a"])))), "group")
    elif which in ("priors", "dist"):
        args = {"priors": lambda: {}, "dist": lambda **kw: None, which: data.draw(st.one_of(st.none(), st.integers(), st.text(max_size=2)))}
        rejects(lambda: CustomFamily(**args), which)
    elif which == "mc_samples":
        rejects(lambda: CustomFamily(lambda: {}, lambda **kw: None, mc_samples=data.draw(st.one_of(st.integers(max_value=1), not_int))), which)
    elif which == "mc_seed":
        rejects(lambda: CustomFamily(lambda: {}, lambda **kw: None, mc_seed=data.draw(st.one_of(st.integers(max_value=-1), not_int.filter(lambda v: v is not None)))), which)
    else:
        rejects(lambda: GroupedDataModel(G2, B2, family="beta", known_variance=data.draw(st.floats(0.1, 10))), "known_variance")


@cfg(100)
@given(
    bounds=bounds_st(),
    family=st.sampled_from(["normal", "beta"]),
    data=st.data(),
)
@counted("models")
def test_grouped_data_model_accepts_good_knowledge(bounds, family, data):
    public = data.draw(hnp.arrays(np.float64, 5, elements=st.floats(bounds.lower, bounds.upper)))
    rel = ReleasedMean(data.draw(st.floats(bounds.lower, bounds.upper)), data.draw(st.floats(1e-3, 1e3)),
                       data.draw(st.sampled_from([None, "pub", "priv"])))
    kv = data.draw(st.floats(1e-3, 1e3)) if family == "normal" else None
    model = accepts(lambda: GroupedDataModel(G2, bounds, family, public_data={"pub": public}, known_variance=kv,
                                             released_means=[rel]))
    np.testing.assert_array_equal(model.public_data["pub"], public)
    assert model.family.bounds == bounds
    fam = NormalFamily(mu=(data.draw(st.floats(-10, 10)), data.draw(st.floats(0.1, 10))), sigma_scale=data.draw(st.floats(0.1, 10)))
    assert accepts(lambda: fam.with_bounds(bounds)).is_bound
    beta = BetaFamily(mean=(data.draw(st.floats(0.1, 5)), 1.0), concentration=(2.0, data.draw(st.floats(0.01, 1))))
    assert accepts(lambda: beta.with_bounds(bounds)).is_bound


column_sums_st = st.lists(st.integers(0, 6), min_size=1, max_size=6).filter(lambda c: sum(c) > 0)


@st.composite
def bad_column_sums(draw):
    c = list(draw(column_sums_st))
    kind = draw(st.sampled_from(["negative", "fraction", "nan", "inf", "zeros", "empty", "strings", "bool", "2-d", "scalar", "none", "complex", "objects"]))
    j = draw(st.integers(0, len(c) - 1))
    if kind == "negative":
        c[j] = draw(st.integers(max_value=-1))
        return c
    if kind == "fraction":
        c = [float(x) for x in c]
        c[j] = draw(st.floats(0.01, 100).filter(lambda v: v != round(v)))
        return c
    if kind in ("nan", "inf"):
        c = [float(x) for x in c]
        c[j] = NAN if kind == "nan" else INF
        return c
    return {
        "zeros": [0] * len(c),
        "empty": [],
        "strings": [str(x) for x in c],
        "bool": [bool(x) for x in c],
        "2-d": [c],
        "scalar": c[0] or 1,
        "none": None,
        "complex": [complex(x) for x in c],
        "objects": [object()] * len(c),
    }[kind]


@cfg(400)
@given(which=st.sampled_from(["column_sums", "n", "n-infeasible", "trades_per_row", "items_prior", "n_prior"]),
       c=column_sums_st, data=st.data())
@counted("models")
def test_user_item_model_rejects(which, c, data):
    lo, hi = max(c), sum(c)
    if which == "column_sums":
        rejects(lambda: UserItemModel(data.draw(bad_column_sums())), "column_sums")
    elif which == "n":
        n = data.draw(st.one_of(st.floats(), st.text(max_size=2), st.booleans(), st.just((1,)), st.just((1, 2, 3)),
                                st.tuples(st.floats(), st.integers()), st.just((None, 3)), st.just((True, 3))))
        rejects(lambda: UserItemModel(c, n), "n", "n low", "n high")
    elif which == "n-infeasible":
        n = data.draw(
            st.one_of(
                st.integers(max_value=lo - 1),  # a column sum above n
                st.integers(hi + 1, 10**30),  # more users than reports
                st.tuples(st.integers(-10, hi), st.integers(-10, hi)).filter(lambda p: p[0] > p[1]),  # reversed
                st.integers(-(10**6), lo - 1).flatmap(lambda a: st.tuples(st.just(a), st.integers(a, lo - 1))),
                st.integers(hi + 1, 10**6).flatmap(lambda a: st.tuples(st.just(a), st.integers(a, 10**7))),
            )
        )
        rejects(lambda: UserItemModel(c, n), "n")
    elif which == "trades_per_row":
        t = data.draw(st.one_of(st.integers(max_value=0), not_int))
        rejects(lambda: UserItemModel(c, hi, trades_per_row=t), "trades_per_row")
    elif which == "items_prior":
        p = data.draw(st.one_of(unknown_word.filter(lambda s: s != "negative"), st.integers(), st.floats()))
        rejects(lambda: UserItemModel(c, items_prior=p), "items_prior")
    else:
        p = data.draw(st.one_of(st.integers(), st.floats(), st.text(max_size=2), st.just([1, 2])))
        rejects(lambda: UserItemModel(c, None if lo < hi else (lo, hi), n_prior=p), "n_prior")


@cfg(160)
@given(c=column_sums_st, data=st.data())
@counted("models")
def test_user_item_model_accepts_feasible_knowledge(c, data):
    lo, hi = max(c), sum(c)
    n = data.draw(
        st.one_of(
            st.none(),
            st.integers(lo, hi),
            st.integers(lo, hi).map(np.int64),
            st.tuples(st.integers(-5, hi), st.integers(lo, hi + 5)).filter(lambda p: p[0] <= p[1]),
        )
    )
    model = accepts(lambda: UserItemModel(c, n, items_prior=data.draw(st.sampled_from([None, "negative-binomial"]))))
    a, b = model.n_range
    assert lo <= a <= b <= hi
    assert model.m == len(c) and model.total == hi
    finite(model._log_target_n)
    if a < b:
        assert accepts(lambda: UserItemModel(c, (a, b), n_prior=pm.Poisson.dist(max(a, 1)))).n_range == (a, b)


# ----------------------------------------------------------------------------------------
# The CLI: SPEC files
# ----------------------------------------------------------------------------------------


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return '"' + "".join(
            "\\" + c if c in '"\\' else f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in v
        ) + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(v)


def toml_dumps(spec: dict) -> str:
    """A minimal TOML writer for SPEC dicts (tables and arrays of tables one level deep)."""
    lines, tables, arrays = [], [], []
    for k, v in spec.items():
        if isinstance(v, dict):
            tables.append((k, v))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            arrays.append((k, v))
        else:
            lines.append(f"{k} = {_toml_value(v)}")
    for k, items in arrays:
        for item in items:
            lines += ["", f"[[{k}]]"] + [f"{kk} = {_toml_value(vv)}" for kk, vv in item.items()]
    for k, table in tables:
        lines += ["", f"[{k}]"] + [f"{kk} = {_toml_value(vv)}" for kk, vv in table.items()]
    return "\n".join(lines) + "\n"


def run_cli(argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with time_limit(60.0), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = cli_main(list(argv))
    return code, out.getvalue(), err.getvalue()


def assert_cli_error(code: int, err: str, *names: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2, f"exit status {code}, stderr {err!r}"
    assert len(lines) == 1, f"expected one stderr line, got {lines!r}"
    assert lines[0].startswith("error: "), lines[0]
    assert any(_names(lines[0], n) for n in names), f"{lines[0]!r} names none of {names}"


def select_spec(spec: dict | str, *extra: str, filename: str = "spec.toml", files: dict | None = None):
    """Write ``spec`` (a dict or raw text) in a fresh folder and run ``hybridpriv select`` on it."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / filename
        path.write_text(spec if isinstance(spec, str) else toml_dumps(spec), encoding="utf-8")
        for name, text in (files or {}).items():
            (Path(tmp) / name).write_text(text)
        return run_cli(["select", str(path), "--out", str(Path(tmp) / "out"), *extra])


@st.composite
def grouped_spec(draw):
    lo = draw(st.integers(-100, 100))
    return {
        "statistic": "mean",
        "bounds": [lo, lo + draw(st.integers(1, 100))],
        "groups": [
            {"name": "pub", "size": draw(st.integers(1, 30)), "epsilon": INF},
            {"name": "priv", "size": draw(st.integers(1, 500)), "epsilon": draw(st.floats(0.05, 5.0))},
        ],
        "evaluation": {"draws": 4, "trials": 2, "seed": 0},
    }


def _set(spec, path, value):
    node = spec
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(key, str) else node[key]
    node[path[-1]] = value



#: key -> (path in the spec, strategy of bad values, names the error must give)
GROUPED_BAD = {
    "epsilon": (("groups", 1, "epsilon"), st.one_of(st.floats(max_value=0.0), st.just(NAN), st.booleans(),
                                                  text_not("inf", "public")), ("epsilon",)),
    "size": (("groups", 1, "size"), st.one_of(st.integers(-(2**63), 0), st.floats(0.5, 10), st.text(max_size=2), st.booleans()), ("size",)),
    "delta": (("groups", 1, "delta"), st.one_of(st.floats(max_value=-1e-300), st.floats(min_value=1.0), st.just(NAN)), ("delta",)),
    "name": (("groups", 1, "name"), st.sampled_from(["pub", "", "  "]), ("name", "names")),
    "bounds": (("bounds",), st.one_of(
        st.tuples(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6)).filter(lambda p: not p[0] < p[1]).map(list),
        st.tuples(st.floats(-1e6, 1e6), st.sampled_from([NAN, INF, -INF])).map(list),
        st.lists(st.floats(0, 1), max_size=1),
        st.lists(st.floats(0, 1), min_size=3, max_size=3),
        st.just(["0", "1"]),
        st.just(5),
    ), ("bounds",)),
    "statistic": (("statistic",), st.one_of(text_not("mean", "median"), st.integers()), ("statistic",)),
    "clamp": (("clamp",), st.one_of(st.integers(), st.text(max_size=3)), ("clamp",)),
    "relation": (("relation",), text_not("replace"), ("relation",)),
    "estimators": (("evaluation", "estimators"), st.one_of(
        st.lists(text_not(*ESTIMATOR_NAMES), min_size=1, max_size=2),
        st.just([]),
        st.just(["weighted-median"]),
        st.just("weighted"),
        st.just([1]),
    ), ("estimator", "estimators")),
    "draws": (("evaluation", "draws"), st.one_of(st.integers(-(2**63), 1), st.floats(2.5, 10), st.text(max_size=2)), ("draws",)),
    "trials": (("evaluation", "trials"), st.one_of(st.integers(-(2**63), 0), st.floats(), st.booleans()), ("trials",)),
    "seed": (("evaluation", "seed"), st.one_of(st.integers(-(2**63), -1), st.floats(allow_nan=False)), ("seed",)),
    "target": (("evaluation", "target"), text_not("population", "sample"), ("target",)),
    "loss": (("evaluation", "loss"), text_not("squared", "absolute"), ("loss",)),
    "family": (("model", "family"), text_not("normal", "beta"), ("family",)),
    "chains": (("model", "chains"), st.integers(-100, 0), ("chains",)),
    "tune": (("model", "tune"), st.integers(-100, -1), ("tune",)),
    "known_variance": (("model", "known_variance"), st.one_of(st.just(NAN), st.text(max_size=2), st.booleans()), ("known_variance",)),
    "released_means": (("model", "released_means"), st.one_of(
        st.just([{"value": NAN, "noise_scale": 1.0}]),
        st.just([{"value": 1.0}]),
        st.just([{"value": 1.0, "noise_scale": 1.0, "group": "nobody"}]),
        st.just([{"value": 1.0, "noise_scale": 1.0, "extra": 1}]),
    ), ("value", "noise_scale", "group", "unknown key(s)", "released_means")),
    "unknown": (("zz_unknown",), st.integers(), ("unknown key(s)",)),
    "data-private": (("groups", 1, "data"), st.just([0.0]), ("data",)),
    "data-length": (("groups", 0, "data"), st.lists(st.floats(0, 1), max_size=3).map(lambda v: v + [0.0] * 40), ("data",)),
    "data-nan": (("groups", 0, "data"), st.just(None), ("data",)),
    "data-missing-file": (("groups", 0, "data"), st.just("missing.csv"), ("data",)),
}


@cfg(480, deadline=None)
@given(spec=grouped_spec(), key=st.sampled_from(sorted(GROUPED_BAD)), data=st.data())
@counted("cli")
def test_cli_grouped_spec_bad_values_exit_2_with_one_line(spec, key, data):
    path, strategy, names = GROUPED_BAD[key]
    value = data.draw(strategy)
    if key == "data-nan":
        value = [0.0] * spec["groups"][0]["size"]
        value[0] = NAN
    _set(spec, path, value)
    code, out, err = select_spec(spec)
    assert_cli_error(code, err, *names)


@cfg(60, deadline=None)
@given(spec=grouped_spec(), key=st.sampled_from(["known_variance", "noise_scale", "family_options"]), data=st.data())
@counted("cli")
def test_cli_grouped_spec_model_knowledge_exit_2(spec, key, data):
    """Knowledge checked when the model is built (after parsing, before any sampling)."""
    if key == "known_variance":
        _set(spec, ("model", "known_variance"), data.draw(st.one_of(st.floats(max_value=0.0), st.just(INF))))
    elif key == "noise_scale":
        _set(spec, ("model", "released_means"), [{"value": 1.0, "noise_scale": data.draw(st.floats(max_value=0.0))}])
    else:
        _set(spec, ("model", "family_options"), {"sigma_scale": data.draw(st.floats(max_value=0.0))})
        key = "sigma_scale"
    code, out, err = select_spec(spec)
    assert_cli_error(code, err, key)


@cfg(60)
@given(spec=grouped_spec())
@counted("cli")
def test_good_grouped_spec_loads(spec):
    """The generator writes valid SPECs: unmutated, they parse back to the same values."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spec.toml"
        path.write_text(toml_dumps(spec), encoding="utf-8")
        parsed = accepts(lambda: load_spec(path))
    assert [g.size for g in parsed.groups] == [g["size"] for g in spec["groups"]]
    assert [g.epsilon for g in parsed.groups] == [g["epsilon"] for g in spec["groups"]]
    assert (parsed.bounds.lower, parsed.bounds.upper) == tuple(spec["bounds"])


@st.composite
def user_item_spec(draw):
    c = draw(st.lists(st.integers(0, 6), min_size=2, max_size=6).filter(lambda c: sum(c) > 0))
    return {
        "kind": "user-item",
        "column_sums": c,
        "n": draw(st.integers(max(c), sum(c))),
        "epsilon": draw(st.floats(0.1, 5.0)),
        "k": [1, len(c)],
        "evaluation": {"draws": 4, "chains": 2, "trials": 2},
    }


@cfg(480, deadline=None)
@given(
    spec=user_item_spec(),
    key=st.sampled_from(["epsilon", "k<=0", "k>m", "k-range", "k-type", "column_sums", "column_sums-infeasible",
                         "column_sums-file", "n-type", "n-infeasible", "n-bounds", "loss", "draws", "trades_per_row",
                         "unknown"]),
    data=st.data(),
)
@counted("cli")
def test_cli_user_item_spec_bad_values_exit_2_with_one_line(spec, key, data):
    c = spec["column_sums"]
    m, lo, hi = len(c), max(c), sum(c)
    names = (key.split("-")[0].split("<")[0].split(">")[0],)
    if key == "epsilon":
        spec["epsilon"] = data.draw(st.one_of(st.floats(max_value=0.0), st.sampled_from([NAN, INF]), st.text(max_size=2), st.booleans()))
    elif key == "k<=0":
        spec["k"] = data.draw(st.one_of(st.integers(-(2**63), 0), st.tuples(st.integers(-100, 0), st.integers(1, m)).map(list)))
    elif key == "k>m":
        spec["k"] = data.draw(st.one_of(st.integers(m + 1, 2**63 - 1), st.tuples(st.integers(1, m), st.integers(m + 1, 10**6)).map(list)))
    elif key == "k-range":
        spec["k"] = data.draw(st.tuples(st.integers(2, m + 5), st.integers(1, m + 5)).filter(lambda p: p[0] > p[1]).map(list))
    elif key == "k-type":
        spec["k"] = data.draw(st.one_of(st.floats(), st.text(max_size=2), st.booleans(), st.just([1, 2, 3]), st.just([1.0, 2.0])))
    elif key == "column_sums":
        spec["column_sums"] = data.draw(
            st.one_of(
                st.just([]),
                st.lists(st.integers(0, 5), min_size=1, max_size=4).map(lambda v: v + [-1]),
                st.lists(st.integers(0, 5), min_size=1, max_size=4).map(lambda v: v + [1.5]),
                st.just([1.0, NAN]),
                st.just([1.0, INF]),
                st.just(["1", "2"]),
                st.just([True, 1]),
                st.just(3),
            )
        )
    elif key == "column_sums-infeasible":  # all zero: nobody reported anything
        spec["column_sums"] = [0] * m
        spec.pop("n")
    elif key == "column_sums-file":
        spec["column_sums"] = data.draw(st.sampled_from(["missing.csv", "sub/none.csv"]))
    elif key == "n-type":
        spec["n"] = data.draw(st.one_of(st.floats(0.5, 10), st.text(max_size=2), st.booleans(), st.just([1]), st.just([1, 2, 3]), st.just([1.5, 3])))
    elif key == "n-infeasible":
        spec["n"] = data.draw(st.one_of(st.integers(-(2**63), lo - 1), st.integers(hi + 1, 2**63 - 1)))
    elif key == "n-bounds":
        spec["n"] = data.draw(
            st.one_of(
                st.tuples(st.integers(-100, hi), st.integers(-100, hi)).filter(lambda p: p[0] > p[1]).map(list),
                st.tuples(st.integers(hi + 1, hi + 50), st.integers(hi + 50, hi + 100)).map(list),
                st.tuples(st.integers(-100, lo - 1), st.integers(-100, lo - 1)).filter(lambda p: p[0] <= p[1]).map(list),
            )
        )
        names = ("n",)
    elif key == "loss":
        spec["loss"] = data.draw(text_not("squared", "max", "top10"))
    elif key == "draws":
        spec["evaluation"]["draws"] = data.draw(st.integers(-(2**63), 1))
    elif key == "trades_per_row":
        spec["trades_per_row"] = data.draw(st.integers(-100, 0))
    else:
        spec["zz_unknown"] = 1
        names = ("unknown key(s)",)
    code, out, err = select_spec(spec)
    assert_cli_error(code, err, *names)


@cfg(60, deadline=None)
@given(
    case=st.sampled_from(["missing-file", "not-toml", "directory", "kind", "draws-flag", "trials-flag", "seed-flag", "example"]),
    data=st.data(),
)
@counted("cli")
def test_cli_files_and_flags_exit_2_with_one_line(case, data):
    good = data.draw(grouped_spec())
    if case == "missing-file":
        with tempfile.TemporaryDirectory() as tmp:
            code, _, err = run_cli(["select", str(Path(tmp) / data.draw(names_ok) / "spec.toml")])
        assert_cli_error(code, err, "spec file not found", "No such file or directory")
    elif case == "not-toml":
        code, _, err = select_spec(data.draw(st.sampled_from(["bounds = [0, ", "[[groups]\nname=1", "= 3", "x = 'a\n"])))
        assert_cli_error(code, err, "TOML")
    elif case == "directory":
        with tempfile.TemporaryDirectory() as tmp:
            code, _, err = run_cli(["select", tmp])
        assert_cli_error(code, err, "spec file not found")
    elif case == "kind":
        good["kind"] = data.draw(text_not("grouped", "user"))
        code, _, err = select_spec(good)
        assert_cli_error(code, err, "kind")
    elif case == "example":
        code, _, err = run_cli(["select", "--example", data.draw(text_not("grouped")) + "-x", "--out", "/nonexistent/x"])
        assert_cli_error(code, err, "example")
    else:
        flag = case.split("-")[0]
        value = {"draws": st.integers(-(10**6), 1), "trials": st.integers(-(10**6), 0), "seed": st.integers(-(10**6), -1)}[flag]
        code, _, err = select_spec(good, f"--{flag}", str(data.draw(value)))
        assert_cli_error(code, err, f"--{flag}")
