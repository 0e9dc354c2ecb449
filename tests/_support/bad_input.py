"""Shared support of the bad-input tests (``tests/bad_input/``): settings, counting, checks, strategies.

Bad input never slips through (issue 6, part 4): property-based tests with Hypothesis.

Every public constructor, every estimator's ``estimate``, the theory functions, the PyMC
models' knowledge arguments and the CLI's SPEC files are fed generated bad values (epsilon
<= 0, NaN, inf where not allowed, zero or negative sizes, empty groups, data outside the
bounds with clamping off, reversed bounds, infeasible column sums, k <= 0 or k > m,
mismatched lengths, wrong dtypes, 3-D and empty arrays) and generated good ones.  A bad
case must raise ``ValueError`` or ``TypeError``

* whose message names the parameter (a word-bounded match, so ``k`` is not found in ``rank``),
* raised by hybridpriv's own code (the innermost traceback frame is in ``hybridpriv/`` or
  ``models/``, not a deep NumPy/SciPy frame),
* within a time limit (``SIGALRM``, :data:`CALL_LIMIT`: a hang guard, not a speed test; there
  are no Hypothesis deadlines, so a slow or busy machine passes);

a good case must return finite numbers.  The CLI must exit with status 2 and print exactly
one stderr line starting ``error: `` that names the key.

Counting: every test body is wrapped by :func:`counted`, which counts the examples that ran
to the end (examples Hypothesis discarded with ``assume`` are not counted); an autouse
fixture (``tests/bad_input/conftest.py``) checks after each test that at least ``MIN_CASES`` examples ran and records the number as the
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

import hybridpriv.models as hp_models
import numpy as np
import pymc as pm
import pytest
import scipy.sparse as sp
from hybridpriv.models import (
    BetaFamily,
    CustomFamily,
    GroupedDataModel,
    NormalFamily,
    ReleasedMean,
    UserItemModel,
)
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.errors import StopTest, UnsatisfiedAssumption
from hypothesis.extra import numpy as hnp

import hybridpriv
from hybridpriv import theory
from hybridpriv.cli import main as cli_main
from hybridpriv.core.data import ThinnedSource
from hybridpriv.core.privacy import Bounds, Group, Guarantee, check_groups
from hybridpriv.engine.decision import decide
from hybridpriv.engine.evaluate import evaluate
from hybridpriv.estimators import (
    ESTIMATOR_NAMES,
    ContributionBoundedCounts,
    PDPSample,
    PEMedian,
    PublicMean,
    PublicMedian,
    UniformMean,
    UniformMedian,
    WeightedMean,
    WeightedMedian,
    default_estimators,
    make_estimator,
    monte_carlo_user_item_loss,
)
from hybridpriv.families.grouped import IIDSource, normal_source
from hybridpriv.noise import exponential_mechanism, gaussian, gaussian_sigma, laplace, smith_quantile
from hybridpriv.spec import load_spec

# ----------------------------------------------------------------------------------------
# Settings, counting, time limits
# ----------------------------------------------------------------------------------------

SCALE = float(os.environ.get("HYBRIDPRIV_BAD_INPUT_SCALE", "1"))
#: Fewest Hypothesis examples a test must execute (per test; counted in the test body).
MIN_CASES = 5
#: Seconds one call may take before it counts as a hang (generous: a hang guard, not a speed limit).
CALL_LIMIT = 300.0

#: Examples executed in this process, per area.
CASES: Counter[str] = Counter()
_CURRENT = {"area": "", "n": 0, "failed": False}


def cfg(n: int, deadline: None = None) -> settings:
    """Deterministic Hypothesis settings with ``n`` examples (times ``SCALE``), no deadline."""
    if deadline is not None:
        raise ValueError("no test depends on wall-clock speed: Hypothesis deadlines are not used")
    return settings(
        max_examples=max(1, int(n * SCALE)),
        derandomize=True,
        database=None,
        deadline=None,
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
    "paper", "brier", "theta", "size",  # Algorithm 2's selection, criterion and output (Hypothesis drew "paper")
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


finite_mod = st.floats(-1e12, 1e12)
#: A small grouped setting: one public and one private group.
G2 = (Group("pub", 5, INF), Group("priv", 8, 1.0))
B2 = Bounds(0.0, 10.0)


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


bad_groups = st.one_of(
    st.just([]),
    st.lists(st.one_of(st.integers(), st.text(max_size=2), st.none()), min_size=1, max_size=2),
    groups_st(max_size=2).map(lambda g: list(g) + [g[0]]),
    st.none(),
    st.text(max_size=2),
)
bad_bounds = st.one_of(bad_bounds_pair(), bad_bounds_shape)
