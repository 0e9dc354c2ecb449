"""Parameters as data: recorded from constructors, described as JSON, compared by path."""

import math

import numpy as np
import pytest

from hybridpriv.core.params import Parametrized, describe, differences, fingerprint
from hybridpriv.core.privacy import Bounds, Group
from hybridpriv.estimators import PDPSample, WeightedMean
from hybridpriv.families.grouped import normal_source

GROUPS = [Group("pub", 10, math.inf), Group("a", 20, 1.0)]


def test_get_params_records_every_constructor_argument_with_defaults():
    est = WeightedMean(GROUPS, (0, 1), 2.0)
    params = est.get_params()
    assert params["sigma2"] == 2.0 and params["relation"] == "add-remove" and params["clamp"] is False
    assert params["groups"] == GROUPS and params["bounds"] == (0, 1)
    clone = est.clone()
    assert type(clone) is WeightedMean and clone is not est and clone.get_params() == params
    # the subclass records its own arguments, not the base class's call
    pdp = PDPSample(GROUPS, (0, 1), "min", denominator="expected")
    assert pdp.get_params()["threshold"] == "min" and pdp.get_params()["denominator"] == "expected"


def test_describe_is_deterministic_json_and_differences_name_the_path():
    a = describe(WeightedMean(GROUPS, Bounds(0, 1), 1.0))
    b = describe(WeightedMean(GROUPS, Bounds(0, 1), 100.0))
    assert a["class"].endswith("WeightedMean")
    assert differences(a, b) == ["params.sigma2: 1.0 there, 100.0 here"]
    assert differences(a, a) == []
    # arrays by checksum, infinities as strings, objects without parameters by class and text
    d = describe({"x": np.arange(100), "e": math.inf, "g": GROUPS[0]})
    assert d["x"]["shape"] == [100] and "array_crc32" in d["x"] and d["e"] == "inf"
    assert d["g"]["fields"]["epsilon"] == "inf"
    src = normal_source(GROUPS, (0, 1), 0.5, 0.2, 5)
    assert fingerprint(src) == fingerprint(normal_source(GROUPS, (0, 1), 0.5, 0.2, 5))
    assert fingerprint(src) != fingerprint(normal_source(GROUPS, (0, 1), 0.5, 0.3, 5))


def test_constructors_with_star_args_cannot_be_cloned():
    class Odd(Parametrized):
        def __init__(self, *values, scale=1.0):
            self.values = values

    o = Odd(1, 2, scale=3.0)
    assert o.get_params() == {"*values": (1, 2), "scale": 3.0}
    with pytest.raises(TypeError, match="cannot be cloned"):
        o.clone()
