"""Premises: what a recommendation rests on that nothing public can check, and its warning (by hand)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import xarray as xr

from hybridpriv.core.assumptions import Premise
from hybridpriv.engine.decision import premise_lines, premise_warnings


def _decision(recommended="free", loss=(1.0, 1.2, 1.1, 0.9), eligible=(True, True, True, False),
              spends=(True, False, False, False), criterion="loss", regret=None):
    names = ["free", "a", "b", "c"]
    data = {"expected_loss": ("m", list(loss)), "meets_requirements": ("m", list(eligible)),
            "spends_nothing": ("m", list(spends))}
    if regret is not None:
        data["expected_regret"] = ("m", list(regret))
    return xr.Dataset(data, coords={"m": names}, attrs={"recommended": recommended, "candidate_dim": "m",
                                                        "criterion": criterion})


PILOT = Premise("pilot-sample", "the pilot being a random sample", "recruited elsewhere", "model.pilot_random")


def test_a_recommendation_resting_on_an_unstated_premise_names_the_best_candidate_not_resting_on_it():
    """'free' spends nothing (candidates=None: the free ones rest on it); among the eligible others 'b' has the lowest
    expected loss (1.1; 'c' at 0.9 is not eligible): 10% above the recommendation's 1.0."""
    ((premise, other, excess),) = premise_warnings(_decision(), [PILOT])
    assert premise is PILOT and other == "b" and excess == pytest.approx(0.1)
    (line,) = premise_lines(_decision(), [PILOT])
    assert line.startswith("warning (premise: pilot-sample): free rests on the pilot being a random sample, which "
                           "nothing public here can check; if it does not hold (recruited elsewhere), the table's "
                           "numbers do not hold for free.")
    assert "The best eligible candidate that does not rest on it alone is b, 10% above it in expected loss" in line
    assert line.endswith("If it does hold, say model.pilot_random = true")
    (short,) = premise_lines(_decision(), [PILOT], short=True)
    assert short == "warning (premise: pilot-sample): free rests on the pilot being a random sample (say model.pilot_random = true if it does)"


def test_no_warning_where_stated_or_where_the_recommendation_does_not_rest_on_it():
    stated = Premise("pilot-sample", "x", "", "model.k", stated=True)
    assert premise_warnings(_decision(), [stated]) == [] and premise_lines(_decision(), [stated]) == []
    assert premise_warnings(_decision(recommended="a"), [PILOT]) == []
    assert premise_warnings(_decision(), []) == []
    # named candidates instead of the free ones: 'a' rests on it, 'free' does not
    named = Premise("p", "x", "", "model.k", candidates=("a",))
    assert premise_warnings(_decision(), [named]) == []
    ((_, other, excess),) = premise_warnings(_decision(recommended="a"), [named])
    assert other == "free" and excess == pytest.approx(1.0 / 1.2 - 1)


def test_the_alternative_follows_the_decisions_criterion_and_the_advice_replaces_it():
    dec = _decision(criterion="regret", regret=(0.2, 0.5, 0.6, 0.0))
    ((_, other, excess),) = premise_warnings(dec, [PILOT])
    assert other == "a" and excess == pytest.approx(0.3)  # a difference of regrets, in points
    assert "is a, 30 points above it in expected regret" in premise_lines(dec, [PILOT])[0]
    zero = _decision(criterion="regret", regret=(0.0, 0.5, 0.6, 0.0))  # a recommendation of no regret: still a gap
    assert premise_warnings(zero, [PILOT])[0][2] == pytest.approx(0.5)
    advised = Premise("pilot-sample", "the pilot being a random sample", "", "model.pilot_random",
                      advice="Nothing here is safe then.")  # one full stop, not two
    (line,) = premise_lines(_decision(), [advised])
    assert "Nothing here is safe then.  If it does hold" in line and "best candidate" not in line
    assert "if it does not hold, the table's" in line  # no empty parentheses without 'fails'


def test_where_nothing_else_is_eligible_no_alternative_is_named():
    dec = _decision(eligible=(True, False, False, False))
    assert [(o, np.isnan(e)) for _, o, e in premise_warnings(dec, [PILOT])] == [("", True)]
    (line,) = premise_lines(dec, [PILOT])
    assert "best" not in line and "No eligible candidate does without it." in line
    none = _decision(eligible=(False, False, False, False))  # nothing eligible: an ineligible one is never named
    assert [o for _, o, _ in premise_warnings(none, [PILOT])] == [""]
    named = Premise("p", "x", "", "model.k", candidates=("free", "not-evaluated"))  # a SPEC may leave some out
    assert [o for _, o, _ in premise_warnings(_decision(), [named])] == ["b"]


def test_bad_premises_are_refused_naming_the_field():
    with pytest.raises(ValueError, match="assumes must be a non-empty string"):
        Premise("p", "", "", "model.k")
    with pytest.raises(ValueError, match="key must be a non-empty string"):
        Premise("p", "x", "", "")
    with pytest.raises(ValueError, match="name must be a non-empty string without '/'"):
        Premise("a/b", "x", "", "model.k")
    with pytest.raises(ValueError, match="stated must be True or False, got 'yes'"):
        Premise("p", "x", "", "model.k", stated="yes")
    with pytest.raises(ValueError, match="candidates must be a non-empty sequence of candidate names or None, got 'a'"):
        Premise("p", "x", "", "model.k", candidates="a")
    with pytest.raises(ValueError, match=r"candidates must be a non-empty sequence .* got \(\)"):
        Premise("p", "x", "", "model.k", candidates=())
    assert Premise("p", "x", "", "model.k", candidates=(c for c in ["a"])).candidates == ("a",)  # a generator, kept
    assert [p.name for p, _, _ in premise_warnings(_decision(), (p for p in [PILOT]))] == ["pilot-sample"]
    with pytest.raises(ValueError, match="decision's recommended 'zzz' is not one of its candidates"):
        premise_warnings(_decision(recommended="zzz"), [PILOT])
    with pytest.raises(ValueError, match="decision must be a decide\\(\\) result"):
        premise_warnings(_decision().drop_vars("meets_requirements"), [PILOT])
    with pytest.raises(ValueError, match="the decision has no spends_nothing"):
        premise_warnings(_decision().drop_vars("spends_nothing"), [PILOT])
    from hybridpriv.workflow import Problem

    with pytest.raises(TypeError, match="premises must be a list or tuple of Premise"):
        Problem("k", "", None, dict, None, premises=PILOT)
    with pytest.raises(TypeError, match="premises must be a list or tuple of Premise"):
        Problem("k", "", None, dict, None, premises=["pilot"])
    assert Problem("k", "", None, dict, None, premises=[PILOT]).premises == (PILOT,)
    with pytest.raises(ValueError, match="advice must be a string, got 3"):
        Premise("p", "x", "", "model.k", advice=3)
    with pytest.raises(TypeError, match="premises must be a sequence of Premise"):
        premise_warnings(_decision(), PILOT)


def test_the_calibration_counts_a_premise_warning_by_name():
    from hybridpriv.calibration.truth import _warned

    sel = SimpleNamespace(sensitivity=None, branches=None, decision=_decision(),
                          problem=SimpleNamespace(premises=[PILOT]))
    assert _warned(sel)["warned"] == "premise:pilot-sample"
    sel.problem.premises = [Premise("pilot-sample", "x", "", "model.k", stated=True)]
    assert _warned(sel)["warned"] == ""
