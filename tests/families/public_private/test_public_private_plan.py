"""The public-private two-stage plan's probe (:class:`~hybridpriv.families.public_private.plan.CrossMomentsProbe`): the
cohort's cross-moments with Laplace noise at a share of its epsilon, and the second stage's candidates at the rest.
Its DP audit is in the audit registry (``hybridpriv.testing.cases.wang``); the release path in
tests/release/test_plan_release.py."""

from __future__ import annotations

import math
import tomllib

import numpy as np
import pytest

from hybridpriv.families.public_private.plan import CrossMomentsProbe
from hybridpriv.families.public_private.wang import HybridDesign
from hybridpriv.spec import builtin_example_path, parse_spec


def _design(n=40, p=2, seed=0):
    rng = np.random.default_rng(seed)
    private = np.column_stack([rng.normal(0.0, 1.5, (n, p)), rng.random(n) < 0.4]).astype(float)
    return HybridDesign(private, np.zeros((3, p + 1)))


def test_the_probe_releases_the_cross_moments_with_its_noise():
    d = _design()
    probe = CrossMomentsProbe(2, 40, 2.0, 0.25)
    scale = 2 * 2.0 * 2 / (40 * 0.25 * 2.0)  # 2 clip p / (n share epsilon), written out
    np.testing.assert_allclose(probe.scales, [scale, scale])
    Z, y = d.private[:, :2], d.private[:, 2]
    exact = (y[:, None] * np.clip(Z, -2.0, 2.0)).mean(0)  # the statistic by hand
    np.testing.assert_allclose(probe.exact(d), exact, rtol=1e-12)
    out = probe.release(d, np.random.default_rng(1), trials=20_000)
    assert out.shape == (20_000, 2)
    np.testing.assert_allclose(out.std(0), math.sqrt(2) * scale, rtol=0.03)
    assert np.all(np.abs(out.mean(0) - exact) < 4 * math.sqrt(2) * scale / math.sqrt(20_000))
    assert probe.privacy["private"].epsilon == pytest.approx(0.5) and probe.privacy["private"].relation == "replace"


def test_the_probe_refuses_a_dataset_of_another_shape_and_bad_settings():
    with pytest.raises(ValueError, match=r"data must hold 40 private records of 2 columns and the outcome, got shape "
                                         r"\(40, 4\)"):
        CrossMomentsProbe(2, 40, 1.0).exact(_design(p=3))
    with pytest.raises(ValueError, match="share must be in"):
        CrossMomentsProbe(2, 40, 1.0, 1.0)
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        CrossMomentsProbe(2, 40, 0.0)


def _pima(**evaluation):
    path = builtin_example_path("pima")
    raw = tomllib.loads(path.read_text())
    raw["evaluation"] = {**raw.get("evaluation", {}), **evaluation}
    return parse_spec(raw, base_dir=path.parent)


def test_the_spec_gives_a_probe_and_the_second_stage_at_the_rest():
    problem = _pima().problem()
    probe = problem.probe
    assert probe is not None and probe.share == pytest.approx(0.1)
    assert probe.mechanism.privacy["private"].epsilon == pytest.approx(0.1)
    assert probe.scales == pytest.approx(np.full(5, 2 * 2.0 * 5 / (332 * 0.1)))

    from hybridpriv.families.public_private.plan import public_private_probe
    from hybridpriv.families.public_private.wang import Algorithm1, PublicOnly

    seen = []

    def candidates(values, posterior):  # the later candidates, built without a fitted posterior
        seen.append((values.epsilon, posterior))
        return {"public-only": PublicOnly("mean"), "alg1-n=10": Algorithm1("mean", values.epsilon, 10)}

    spec = _pima()
    later = public_private_probe(spec.values, 0.1, candidates).later({"public-only": None, "alg1-n=10": None,
                                                                      "lei": None}, "the posterior")
    orders = [e for e, post in seen if post == "the posterior"]
    assert orders == [pytest.approx(0.9)]
    assert set(later) == {"public-only", "alg1-n=10"}
    assert later["alg1-n=10"].privacy["private"].epsilon == pytest.approx(0.9)
    assert _pima(plan_share=0.0).problem().probe is None
