"""hybridpriv.engine.branches: the decision again within each alternative a mixture model draws.

Every number is checked against a hand computation on a small evaluation whose datasets map to
non-consecutive posterior draws (as a thinned source's do)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import xarray as xr

from hybridpriv.core.assumptions import Branch
from hybridpriv.engine.branches import BRANCH_WARNING, branch_check, branch_lines, branch_notes, branch_warnings
from hybridpriv.engine.decision import decide
from hybridpriv.engine.sensitivity import MATTERS

DRAW_INDEX = np.array([0, 3, 5, 9])  # the evaluation's 4 draws per chain are posterior draws 0, 3, 5 and 9 of 10


def _evaluation(risk, eligible=None):
    """Candidates a, b, c over 2 chains x 4 datasets; ``eligible``: which candidates meet the requirement."""
    risk = np.asarray(risk, dtype=float)
    ev = xr.Dataset({"risk": (("candidate", "chain", "draw"), risk)},
                    coords={"candidate": ["a", "b", "c"], "chain": [0, 1], "draw": range(4)},
                    attrs={"candidate_dim": "candidate"})
    if eligible is not None:
        ev = ev.assign_coords(unit=["u"]).assign(
            required_epsilon=("unit", [1.0]), required_delta=("unit", [0.0]),
            required_relation=("unit", ["replace"]), required_trust=("unit", ["central"]),
            privacy_epsilon=(("candidate", "unit"), [[1.0] if ok else [2.0] for ok in eligible]),
            privacy_delta=(("candidate", "unit"), [[0.0]] * 3),
            privacy_relation=(("candidate", "unit"), [["replace"]] * 3),
            privacy_trust=(("candidate", "unit"), [["central"]] * 3))
    return ev


def _branch(holds_at):
    """A branch over a (2, 10) posterior holding at the given (chain, posterior draw) pairs."""
    draws = np.zeros((2, 10), dtype=bool)
    for c, d in holds_at:
        draws[c, d] = True
    return Branch("law", "the law is shared", "the law differs", draws, advice="say so: model.shared = 1 or 0")


# the alternative holds on posterior draws 3 and 9 of chain 0 and draw 5 of chain 1: evaluation positions
# (0, 1), (0, 3), (1, 2); draws 1, 2, 4 (not evaluated) must not count
HOLDS = [(0, 3), (0, 9), (1, 5), (0, 1), (1, 2), (1, 4)]
RISK = np.array([
    [[1.0, 4.0, 1.0, 4.0], [1.0, 1.0, 4.0, 1.0]],  # a: good where the law differs, 4 where it is shared
    [[3.0, 1.0, 3.0, 1.0], [3.0, 3.0, 1.0, 3.0]],  # b: the reverse
    [[2.0, 2.0, 2.0, 2.0], [2.0, 2.0, 2.0, 2.0]],  # c: always 2
])


def test_each_alternative_is_decided_on_its_own_datasets_as_by_hand():
    ev = _evaluation(RISK)
    check = branch_check(ev, [_branch(HOLDS)], DRAW_INDEX, "a")  # "a" recommended (on average c is: 2 < 2.125)
    assert decide(ev).attrs["recommended"] == "c"
    mask = np.zeros((2, 4), dtype=bool)
    mask[0, 1] = mask[0, 3] = mask[1, 2] = True
    flat = RISK.reshape(3, -1)
    m = mask.ravel()
    for side, sel in (("holds", m), ("fails", ~m)):
        row = check.sel(branch="law", side=side)
        means = flat[:, sel].mean(axis=1)
        assert float(row["share"]) == pytest.approx(sel.mean())
        assert int(row["datasets"]) == sel.sum()
        assert str(row["best"].values) == "abc"[int(np.argmin(means))]
        assert float(row["excess"]) == pytest.approx(means[0] / means.min() - 1)
    # where the law is shared (3 of 8 datasets) b is best (1 against a's 4): the recommendation is 300% worse
    assert str(check.sel(branch="law", side="holds")["best"].values) == "b"
    assert branch_warnings(check) == [("law", "holds")]
    lines = branch_lines(check)
    assert any(line.startswith("warning: if the law is shared (38% of the model's datasets), b is better")
               and "300% worse" in line and line.endswith("hides it: say so: model.shared = 1 or 0") for line in lines)
    assert "the law differs (62% of the datasets): a is best there too" in "\n".join(lines)
    assert branch_notes(check) and branch_notes(check)[0].startswith("warning: if the law is shared")


def test_a_rare_or_near_tied_alternative_does_not_warn():
    ev = _evaluation(RISK)
    # holds on one of 8 datasets only: below BRANCH_WARNING? 1/8 = 12.5% is above it, so use a finer evaluation
    assert BRANCH_WARNING > 1 / 16
    rare = np.concatenate([RISK, RISK], axis=2)  # 2 chains x 8 datasets
    ev16 = xr.Dataset({"risk": (("candidate", "chain", "draw"), rare)},
                      coords={"candidate": ["a", "b", "c"], "chain": [0, 1], "draw": range(8)},
                      attrs={"candidate_dim": "candidate"})
    check = branch_check(ev16, [_branch([(0, 3)])], np.arange(8), "a")  # one dataset of 16, where b is best
    assert str(check.sel(branch="law", side="holds")["best"].values) == "b" and branch_warnings(check) == []
    # a best candidate within MATTERS of the recommendation is a near tie, not a warning
    tied = RISK.copy()
    tied[0][tied[0] == 4.0] = 1.2  # a is at most 20% worse than b anywhere
    check = branch_check(_evaluation(tied), [_branch(HOLDS)], DRAW_INDEX, "a")
    row = check.sel(branch="law", side="holds")
    assert str(row["best"].values) == "b" and float(row["excess"]) <= MATTERS and branch_warnings(check) == []
    assert check.attrs["recommended"] == "a" and ev.sizes["draw"] == 4


def test_an_ineligible_candidate_is_never_the_better_one():
    check = branch_check(_evaluation(RISK, eligible=[True, False, True]), [_branch(HOLDS)], DRAW_INDEX, "a")
    row = check.sel(branch="law", side="holds")
    assert str(row["best"].values) == "c"  # b (1) is ineligible; c (2) against a (4)
    assert float(row["excess"]) == pytest.approx(4.0 / 2.0 - 1)


def test_by_regret_the_best_is_the_lowest_expected_relative_regret():
    risk = RISK.copy()
    risk[2] = [[1.5, 1.5, 1.5, 1.5], [1.5, 1.5, 1.5, 1.5]]  # c: never best, never far
    check = branch_check(_evaluation(risk), [_branch(HOLDS)], DRAW_INDEX, "a", criterion="regret")
    # where the law differs (5 datasets): ratios to the best are a 1, b 3, c 1.5 -> a
    assert str(check.sel(branch="law", side="fails")["best"].values) == "a"
    # where it is shared (3): a 4, b 1, c 1.5 -> b
    assert str(check.sel(branch="law", side="holds")["best"].values) == "b"


def test_a_zero_lowest_loss_makes_any_other_loss_infinitely_worse():
    risk = RISK.copy()
    risk[1][risk[1] == 1.0] = 0.0  # b is exact where the law is shared
    check = branch_check(_evaluation(risk), [_branch(HOLDS)], DRAW_INDEX, "a")
    assert float(check.sel(branch="law", side="holds")["excess"]) == np.inf
    assert ("law", "holds") in branch_warnings(check)
    assert float(branch_check(_evaluation(risk), [_branch(HOLDS)], DRAW_INDEX, "b")
                 .sel(branch="law", side="holds")["excess"]) == 0.0


def test_an_alternative_on_no_dataset_is_reported_as_such():
    check = branch_check(_evaluation(RISK), [_branch([(0, 1)])], DRAW_INDEX, "a")  # draw 1 is not evaluated
    row = check.sel(branch="law", side="holds")
    assert int(row["datasets"]) == 0 and np.isnan(float(row["excess"])) and str(row["best"].values) == ""
    assert any(line.endswith("no dataset") for line in branch_lines(check)) and branch_warnings(check) == []


def test_bad_input_is_refused_by_name():
    ev = _evaluation(RISK)
    with pytest.raises(ValueError, match="recommended must be one of"):
        branch_check(ev, [_branch(HOLDS)], DRAW_INDEX, "z")
    with pytest.raises(ValueError, match="draw_index must give a posterior draw"):
        branch_check(ev, [_branch(HOLDS)], DRAW_INDEX[:3], "a")
    with pytest.raises(ValueError, match="branch 'law': its draws"):
        branch_check(ev, [_branch(HOLDS)], np.array([0, 3, 5, 10]), "a")
    with pytest.raises(ValueError, match="criterion must be one of"):
        branch_check(ev, [_branch(HOLDS)], DRAW_INDEX, "a", criterion="median")
    with pytest.raises(ValueError, match="draws must be a boolean"):
        Branch("law", "x", "y", np.zeros((2, 10)))
    with pytest.raises(ValueError, match="name must be"):
        Branch("a/b", "x", "y", np.zeros((2, 10), dtype=bool))
    with pytest.raises(ValueError, match="holds must be"):
        Branch("law", "", "y", np.zeros((2, 10), dtype=bool))


def test_the_calibration_counts_a_branch_warning():
    from hybridpriv.calibration.truth import _warned

    check = branch_check(_evaluation(RISK), [_branch(HOLDS)], DRAW_INDEX, "a")
    decision = xr.Dataset(attrs={"recommended": "a"})  # no spends_nothing: a decision made before it existed
    got = _warned(SimpleNamespace(sensitivity=None, branches=check, decision=decision))
    assert got["warned"] == "law" and np.isnan(got["flip_share"])
    assert _warned(SimpleNamespace(sensitivity=None, branches=None, decision=decision))["warned"] == ""
    # both alternatives warning name the branch once: c (always 2) is 100% worse than b where the law is shared
    # and than a where it differs
    both = branch_check(_evaluation(RISK), [_branch(HOLDS)], DRAW_INDEX, "c")
    assert len(branch_warnings(both)) == 2
    assert _warned(SimpleNamespace(sensitivity=None, branches=both, decision=decision))["warned"] == "law"
    # a free candidate best on a fifth of the datasets is the warning "free", after the branches
    free = xr.Dataset({"p_best": ("c", [0.7, 0.3]), "spends_nothing": ("c", [False, True])}, coords={"c": ["a", "b"]},
                      attrs={"recommended": "a", "candidate_dim": "c"})
    assert _warned(SimpleNamespace(sensitivity=None, branches=both, decision=free))["warned"] == "law, free"
    assert _warned(SimpleNamespace(sensitivity=None, branches=None, decision=free))["warned"] == "free"


def test_an_alternative_that_changes_nothing_takes_one_line():
    ev = _evaluation(RISK)
    check = branch_check(ev, [_branch(HOLDS)], DRAW_INDEX, "b")  # b: best where the law is shared ...
    same = check.copy()
    same["best"] = xr.full_like(check["best"], "b")  # ... and, in this copy, where it differs too
    lines = branch_lines(same)
    assert lines[1] == "  law: b is best whether the law is shared (38% of the datasets) or not" and len(lines) == 2
    assert len([x for x in branch_lines(check) if x.startswith("  law:")]) == 2  # where the sides disagree, a line each
    near = check.copy()  # another best on one side, the recommendation within 0.5% of it: not "the lowest"
    near["excess"] = xr.where(near["side"] == "fails", 0.003, near["excess"])
    near["best"] = xr.where(near["side"] == "fails", "a", near["best"])
    assert ("the law differs (62% of the datasets): a is best there (by expected loss); the recommendation's expected "
            "loss there is within 0.5% of the lowest") in "\n".join(branch_lines(near))


def test_calibration_records_the_flagged_predictive_checks_by_name():
    """_checks_flagged: the statistics select's check warning names, comma-separated, as the selection recorded them
    (the run's attrs); "" without checks or flags."""
    from hybridpriv.calibration.truth import _checks_flagged

    assert _checks_flagged(SimpleNamespace(attrs={"predictive_checks_flagged": "panel.q90, panel.share_at_upper"})) \
        == "panel.q90, panel.share_at_upper"
    assert _checks_flagged(SimpleNamespace(attrs={"predictive_checks_flagged": ""})) == ""
    assert _checks_flagged(SimpleNamespace(attrs={})) == ""
