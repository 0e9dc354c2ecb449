"""The hybrid-trust budget-spending selector (the calibration's comparison at equal total budget).

Each group spends ``share`` of its epsilon on its mean: the TCM group a central Laplace mean, the LM group the
average of its users' local Laplace reports.  Checked: the epsilon charged in all per user (spent on the feature,
read back from the noise scales, plus what is left for the candidates), and the released values' law against an
independent simulation (every LM user's own Laplace draw, averaged), with enough draws to see a 5% error in the
noise's spread.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from hybridpriv.calibration.truth import _has_pythia
from hybridpriv.families.hybrid_trust.heldout import hybrid_trust_truth, pythia_hybrid_trust
from hybridpriv.spec import parse_spec

DRAWS = 20_000


@pytest.fixture(scope="module")
def truth():
    t = hybrid_trust_truth(3, np.random.default_rng(7), quick=True)
    assert t.family == "hybrid-trust" and t.spec["tcm"]["size"] >= 1 and t.spec["lm"]["size"] >= 50
    return t


def test_each_user_is_charged_its_epsilon_in_all(truth):
    spec = pythia_hybrid_trust(truth.spec, truth.data, 0.1, np.random.default_rng(0))
    m, n_T, n_L = truth.spec["m"], truth.spec["tcm"]["size"], truth.spec["lm"]["size"]
    tcm_release, lm_release = spec["model"]["released_means"][-2:]
    assert (tcm_release["group"], lm_release["group"]) == ("tcm", "lm")
    # the TCM mean: Laplace of scale m / (n_T eps) -> eps spent; the LM average: scale b / sqrt(n_L), b = m / eps
    spent_T = m / (n_T * tcm_release["noise_scale"])
    spent_L = m / (np.sqrt(n_L) * lm_release["noise_scale"])
    for unit, spent in (("tcm", spent_T), ("lm", spent_L)):
        eps = truth.spec[unit]["epsilon"]
        assert spent == pytest.approx(0.1 * eps) and spent + spec[unit]["epsilon"] == pytest.approx(eps)
    assert spec["tcm"]["epsilon"] == pytest.approx(0.9 * truth.spec["tcm"]["epsilon"])
    assert truth.spec["tcm"] is not spec["tcm"] and "released_means" not in truth.spec["model"]  # the truth's is kept
    # a SPEC that gives n and c instead of the sizes: the same sizes as its parser derives
    n_c = {**truth.spec, "n": n_T + n_L, "c": n_T / (n_T + n_L),
           "tcm": {k: v for k, v in truth.spec["tcm"].items() if k != "size"},
           "lm": {k: v for k, v in truth.spec["lm"].items() if k != "size"}}
    again = pythia_hybrid_trust(n_c, truth.data, 0.1, np.random.default_rng(0))
    assert again["model"]["released_means"] == spec["model"]["released_means"]
    assert parse_spec(again).problem().model.sizes == (n_T, n_L)
    problem = parse_spec(spec).problem()  # the selector's SPEC runs as it is, with both releases in its model
    assert len(problem.model.released_means) == 2 and [r.group for r in problem.model.released_means] == ["T", "L"]
    assert _has_pythia("hybrid-trust")


def test_the_releases_follow_their_laws(truth):
    """The TCM release: the group's mean plus Laplace(scale): mean and sd within 4 standard errors.  The LM release
    against an independent simulation, each of the n_L users adding its own Laplace(b) and the curator averaging:
    two-sample KS, and both sds within 4 standard errors of sqrt(2) b / sqrt(n_L).  Four standard errors of an sd
    from 20,000 draws are 3.2% for a Laplace and 2.0% for the nearly normal average (kurtosis 3 + 3 / n_L), so a
    5% error in either noise's spread fails (checked: the LM noise at 1.05 b fails)."""
    gen = np.random.default_rng(1)
    out = [pythia_hybrid_trust(truth.spec, truth.data, 0.2, gen)["model"]["released_means"][-2:] for _ in range(DRAWS)]
    tcm = np.array([o[0]["value"] for o in out])
    lm = np.array([o[1]["value"] for o in out])
    m, n_L, eps_L = truth.spec["m"], truth.spec["lm"]["size"], truth.spec["lm"]["epsilon"]
    sd_T = np.sqrt(2) * out[0][0]["noise_scale"]
    assert abs(tcm.mean() - truth.data["tcm"].mean()) < 4 * sd_T / np.sqrt(DRAWS)
    assert abs(tcm.std() / sd_T - 1) < 4 * np.sqrt(5 / 4 / DRAWS)  # Laplace (kurtosis 6): var(s / sd) ~ 5 / (4 n)
    b = m / (0.2 * eps_L)
    brute = (truth.data["lm"][None, :] + np.random.default_rng(2).laplace(0.0, b, (DRAWS, n_L))).mean(axis=1)
    sd_L = np.sqrt(2) * b / np.sqrt(n_L)
    assert out[0][1]["noise_scale"] == pytest.approx(b / np.sqrt(n_L))  # the Laplace of the same variance
    for x in (lm, brute):
        assert abs(x.mean() - truth.data["lm"].mean()) < 4 * sd_L / np.sqrt(DRAWS)
        assert abs(x.std() / sd_L - 1) < 4 * np.sqrt((2 + 3 / n_L) / 4 / DRAWS)
    assert stats.ks_2samp(lm, brute).pvalue > 1e-3


def test_bad_share_and_gaussian_noise_are_refused_naming_them(truth):
    with pytest.raises(ValueError, match=r"share must be in \(0, 1\), got 1.5"):
        pythia_hybrid_trust(truth.spec, truth.data, 1.5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="noise must be 'laplace' for the budget-spending selector, got 'gaussian'"):
        pythia_hybrid_trust({**truth.spec, "noise": "gaussian"}, truth.data, 0.1, np.random.default_rng(0))
