"""Posterior predictive check tables: tail probabilities against a direct computation."""

import numpy as np
import pytest

from hybridpriv.criticism import format_checks, predictive_check


def test_tail_probabilities_match_a_direct_count():
    rep = np.arange(100.0)  # T(y_rep) = 0..99
    ds = predictive_check({"a": 97.5, "b": 50.0, "c": -1.0}, {"a": rep, "b": rep, "c": rep})
    # a: 2 draws >= 97.5 -> p = 2 * 2/100; b: 50 >= 50, 51 <= 50 -> 2 * 0.5; c: none <= -1 -> 0
    np.testing.assert_allclose(ds.p_value.values, [0.04, 1.0, 0.0])
    assert ds.flagged.values.tolist() == [False, False, True]
    np.testing.assert_allclose(ds.replicated_low.sel(statistic="a"), np.quantile(rep, 0.05))


def test_a_calibrated_statistic_is_flagged_about_as_often_as_its_level():
    # observed values drawn from the replicated distribution itself: P(p < 0.05) ~ 0.05
    rng = np.random.default_rng(3)
    flags = [predictive_check({"x": rng.normal()}, {"x": rng.normal(size=2000)}, level=0.05).flagged.item()
             for _ in range(2000)]
    assert 0.04 < np.mean(flags) < 0.065  # binomial(2000, 0.05) s.d. 0.005: +-2 s.d. and a little


def test_format_names_every_flagged_statistic():
    ds = predictive_check({"m": 10.0, "s": 0.0}, {"m": np.zeros(50), "s": np.linspace(-1, 1, 50)})
    lines = format_checks(ds)
    assert lines[-1].startswith("warning:") and "m" in lines[-1] and "not reproduced" in lines[1]


@pytest.mark.parametrize("kw, match", [
    ({"observed": {"a": 1.0}, "replicated": {"b": np.zeros(3)}}, "same statistics"),
    ({"observed": {"a": 1.0}, "replicated": {"a": np.zeros(1)}}, "at least 2 draws"),
    ({"observed": {"a": float("nan")}, "replicated": {"a": np.zeros(3)}}, "not finite"),
    ({"observed": {"a": 1.0}, "replicated": {"a": np.zeros(3)}, "level": 1.5}, r"level must be in \(0, 1\), got 1.5"),
])
def test_bad_input_is_refused_naming_it(kw, match):
    with pytest.raises(ValueError, match=match):
        predictive_check(**kw)


def test_the_warning_gives_the_models_advice():
    import numpy as np

    from hybridpriv.criticism import ADVICE, format_checks, predictive_check

    rep = {"a": np.linspace(0, 1, 100)}
    lines = format_checks(predictive_check({"a": 5.0}, rep, advice="widen the prior"))
    assert lines[-1].startswith("warning: the model of public knowledge cannot reproduce a (p < 0.01)")
    assert lines[-1].endswith(": widen the prior")
    assert format_checks(predictive_check({"a": 5.0}, rep))[-1].endswith(ADVICE)
