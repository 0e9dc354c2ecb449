"""The K-means family's declared assumption: the users' points shifted against the pilot (hand-computed)."""

from __future__ import annotations

import numpy as np
import pytest

from hybridpriv.families.kmeans.algorithms import PointCloud
from hybridpriv.families.kmeans.assumptions import ShiftPoints, kmeans_assumptions
from hybridpriv.spec import builtin_example_path, load_spec


def test_the_shift_moves_every_point_clips_into_the_box_and_keeps_the_start_and_the_trust():
    (pilot,) = kmeans_assumptions((0.0, 2.0))
    assert pilot.name == "pilot" and pilot.scale == 2.0
    pts = np.array([[0.1, 0.5], [1.9, 1.0], [1.0, 0.05]])
    cloud = PointCloud(pts, np.array([True, False, False]), (0.0, 2.0), np.array([[0.5, 0.5], [1.5, 1.5]]),
                       centres=np.array([[0.5, 0.5]]))
    out = pilot.perturb(cloud, 0.2)
    np.testing.assert_allclose(out.points, [[0.3, 0.7], [2.0, 1.2], [1.2, 0.25]])
    np.testing.assert_array_equal(out.trusted, cloud.trusted)
    np.testing.assert_array_equal(out.init, cloud.init)
    assert out.centres is None  # they no longer generate the points
    np.testing.assert_allclose(pilot.perturb(cloud, -0.2).points, [[0.0, 0.3], [1.7, 0.8], [0.8, 0.0]])
    with pytest.raises(ValueError, match="data must be a PointCloud"):
        ShiftPoints((0.0, 1.0))(np.zeros((2, 2)), 0.1)


def test_every_kmeans_spec_declares_it():
    problem = load_spec(builtin_example_path("faithful")).problem()
    assert [a.name for a in problem.assumptions] == ["pilot"] and problem.assumptions[0].scale == 1.0


def test_every_candidate_rests_on_the_pilot_being_a_random_sample_unless_the_spec_says_so():
    """The pilot-sample premise: every built-in candidate rests on it (public-start is the pilot's own clustering,
    the iterated ones start from it; since the forty-fifth session, after pilot-biased failures with iterated
    candidates); a candidate a SPEC leaves out is not named; stated by model.pilot_is_random_sample = true (then in
    the header and no warning); no premise with a uniform start."""
    from hybridpriv.engine.decision import premise_lines
    from hybridpriv.spec import parse_spec

    pilot = np.random.default_rng(0).uniform(0.2, 0.8, (20, 2))
    raw = {"kind": "kmeans", "bounds": [0.0, 1.0], "n": 200, "c": 0.3, "epsilon": 4.0, "k": 2, "iterations": [1],
           "model": {"pilot": pilot.tolist()}}
    (premise,) = parse_spec(raw).problem().premises
    assert premise.name == "pilot-sample" and not premise.stated
    assert set(premise.candidates) == {f"{a}-T1" for a in ("hybrid", "tcm", "lm", "hybrid-debiased", "lm-debiased")
                                       } | {"public-start"}
    few = {**raw, "iterations": [1, 3], "evaluation": {"candidates": ["hybrid", "public-start"]}}
    assert parse_spec(few).problem().premises[0].candidates == ("hybrid-T1", "hybrid-T3", "public-start")
    assert premise.key == "model.pilot_is_random_sample" and "none is safe" in premise.advice
    stated = parse_spec({**raw, "model": {**raw["model"], "pilot_is_random_sample": True}}).problem()
    assert stated.premises[0].stated and any("pilot: a random sample of these users" in h for h in stated.header)
    assert parse_spec({**raw, "model": {**raw["model"], "start": "uniform"}}).problem().premises == ()
    with pytest.raises(Exception, match="pilot_is_random_sample"):
        parse_spec({**raw, "model": {**raw["model"], "pilot_is_random_sample": "yes"}})
    import xarray as xr

    dec = xr.Dataset({"expected_loss": ("algorithm", [1.0, 1.1]), "meets_requirements": ("algorithm", [True, True]),
                      "spends_nothing": ("algorithm", [True, False])}, coords={"algorithm": ["public-start", "hybrid-T1"]},
                     attrs={"recommended": "public-start", "candidate_dim": "algorithm"})
    (line,) = premise_lines(dec, [premise])
    assert "warning (premise: pilot-sample): public-start rests on the pilot being a random sample" in line
    assert premise_lines(dec, stated.premises) == []
    (line,) = premise_lines(dec.assign_attrs(recommended="hybrid-T1"), [premise])
    assert "hybrid-T1 rests on the pilot being a random sample" in line and "failed alike" in line
    assert premise_lines(dec.assign_attrs(recommended="hybrid-T1"), stated.premises) == []


@pytest.mark.slow
def test_run_selection_warns_of_the_premise_where_public_start_is_recommended_and_not_where_it_is_stated():
    """A library user sees the premise warning as a UserWarning (as the sensitivity and branch warnings), and the
    selection's premise_lines say it; stating the premise silences both (the faithful example, few draws)."""
    import warnings

    from hybridpriv.workflow import run_selection

    spec = load_spec(builtin_example_path("faithful")).with_overrides({"draws": 20, "trials": 2})
    problem = spec.problem()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sel = run_selection(problem)
    said = [str(w.message) for w in caught if "premise: pilot-sample" in str(w.message)]
    rests = str(sel.decision.attrs["recommended"]) == "public-start"
    assert rests and len(said) == 1 and said == sel.premise_lines()  # the example recommends public-start
    import dataclasses

    stated = dataclasses.replace(problem, premises=(dataclasses.replace(problem.premises[0], stated=True),))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sel = run_selection(stated)
    assert not [w for w in caught if "premise" in str(w.message)] and sel.premise_lines() == []
