"""hybridpriv.families.hybrid_trust.summary: Monte Carlo MSEs and R, r of an evaluation, against plain NumPy
(means, standard errors) and, for the ratios' standard errors, against the jackknife (a different method)."""

from __future__ import annotations

import numpy as np
import pytest

from hybridpriv.core.privacy import Group
from hybridpriv.engine.evaluate import evaluate, evaluate_many
from hybridpriv.families.grouped import BetaSampler, IIDSource, Statistic
from hybridpriv.families.hybrid_trust.mechanisms import FullLM, Hybrid, TCMOnly
from hybridpriv.families.hybrid_trust.summary import improvement_summary, mse_summary, relative_improvements

DRAWS = 400


def _setting(eps: float):
    groups = [Group("tcm", 20, eps), Group("lm", 180, eps, trust="local")]
    cands = {"tcm-only": TCMOnly(groups, (0, 1)), "full-lm": FullLM(groups, (0, 1)),
             "pwh": Hybrid(groups, (0, 1), "pwh"), "w=0.3": Hybrid(groups, (0, 1), 0.3)}
    return cands, IIDSource(groups, (0, 1), [BetaSampler(2, 5), BetaSampler(2, 5)], {"mean": 2 / 7}, DRAWS)


@pytest.fixture(scope="module")
def ev():
    cands, src = _setting(1.0)
    return evaluate(cands, src, Statistic(target="sample"), seed=3)


def _jackknife_ratio_se(num: np.ndarray, den: np.ndarray) -> float:
    k = num.size
    loo = (num.sum() - num) / (den.sum() - den)
    return float(np.sqrt((k - 1) / k * np.sum((loo - loo.mean()) ** 2)))


def test_mse_summary_is_the_mean_and_its_standard_error(ev):
    out = mse_summary(ev)
    for label in ev.estimator.values:
        sq = ev["loss"].sel(estimator=label).values.ravel()  # one trial per dataset: the risk is the loss
        assert float(out["mse_mc"].sel(estimator=label)) == pytest.approx(sq.mean(), rel=1e-12)
        se = sq.std(ddof=1) / np.sqrt(sq.size)
        assert float(out["mse_mc_se"].sel(estimator=label)) == pytest.approx(se, rel=1e-12)
        assert float(out["mse_mc_high"].sel(estimator=label) - out["mse_mc_low"].sel(estimator=label)) == pytest.approx(
            2 * 1.959963984540054 * se, rel=1e-9)


def test_relative_improvements_by_hand_and_jackknife(ev):
    sq = {lab: ev["loss"].sel(estimator=lab).values.ravel() for lab in ev.estimator.values}
    best, worst = sorted((sq["tcm-only"], sq["full-lm"]), key=np.mean)
    for hybrid in ("pwh", "w=0.3"):
        out = relative_improvements(ev, hybrid)
        assert float(out["R"]) == pytest.approx(best.mean() / sq[hybrid].mean(), rel=1e-12)
        assert float(out["r"]) == pytest.approx(worst.mean() / sq[hybrid].mean(), rel=1e-12)
        assert float(out["R_se"]) == pytest.approx(_jackknife_ratio_se(best, sq[hybrid]), rel=0.05)
        assert float(out["r_se"]) == pytest.approx(_jackknife_ratio_se(worst, sq[hybrid]), rel=0.05)


def test_improvement_summary_keeps_swept_dimensions():
    runs = [({"epsilon": e}, *_setting(e)) for e in (0.5, 2.0)]
    ev2 = evaluate_many(runs, {"epsilon": [0.5, 2.0]}, task=Statistic(target="sample"), seed=4, draws=100)
    out = improvement_summary(ev2, ["pwh", "w=0.3"])
    assert out["R_mc"].dims == ("estimator", "epsilon") and list(out.estimator.values) == ["pwh", "w=0.3"]
    assert out["mse_mc"].dims == ("epsilon", "mc_estimator")
    cands, src = _setting(2.0)
    one = evaluate(cands, src, Statistic(target="sample"), seed=4, draws=100)  # the same setting alone: same streams
    alone = relative_improvements(one, "w=0.3")
    assert float(out["R_mc"].sel(estimator="w=0.3", epsilon=2.0)) == pytest.approx(float(alone["R"]), rel=1e-12)
    squeezed = improvement_summary(ev2, ["pwh"], squeeze=True)
    assert "estimator" not in squeezed["R_mc"].dims


def test_bad_input_names_the_parameter(ev):
    with pytest.raises(ValueError, match=r"hybrid must be a candidate of the evaluation .* got 'kvh'"):
        relative_improvements(ev, "kvh")
    with pytest.raises(ValueError, match="tcm must be a candidate"):
        relative_improvements(ev, "pwh", tcm="tcm")
    with pytest.raises(TypeError, match="evaluation must be the xarray.Dataset"):
        mse_summary({"risk": 1})
    with pytest.raises(ValueError, match="must have the dimensions"):
        mse_summary(ev.isel(chain=0))
    with pytest.raises(TypeError, match="hybrids must be a non-empty sequence"):
        improvement_summary(ev, "pwh")
