"""The public-private family's two-stage plan (:mod:`hybridpriv.engine.plan`): the cohort spends a share of its epsilon on a
Laplace release of its cross-moments (:class:`CrossMomentsProbe`), then the candidates are chosen at the rest.

The plan's second stage fits the model again given the release (:func:`refit_spec`: the SPEC gains
``private.cross_moments``, its epsilon becomes the rest) and chooses again: the budget-spending selector's procedure
(:func:`hybridpriv.families.public_private.heldout.pythia_public_private` releases through this probe and refits with
:func:`refit_spec`).  Before any budget is spent the preposterior analysis judges the plan with importance weights
(it cannot fit the model once per simulated dataset).  On held-out seed 4 the refit did better than choosing now,
on seeds 3 and 5 worse (:attr:`~hybridpriv.families.public_private.family.PublicPrivateFamily.plan_held_out`), so
``select`` recommends choosing now and ``release --plan`` carries the plan out only when asked."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ...core.mechanism import Mechanism
from ...core.privacy import Guarantee, check_integer, check_positive
from .wang.cross_moments import CROSS_CLIP, check_records, cross_moment_statistic, cross_sensitivity

__all__ = ["CrossMomentsProbe", "public_private_probe", "refit_spec"]

#: What the probe releases, in words.
WHAT = "the cross-moments of the outcome with each column"


class CrossMomentsProbe(Mechanism):
    """The first stage of a public-private two-stage plan: the private cohort's cross-moments ``mean(y clip(x_j))``
    (``p`` columns on the design's standardised scale, clipped at ``clip``), plus Laplace noise of scale
    ``2 clip p / (n share epsilon)`` on each: ``share x epsilon``-DP for the cohort under replace-one (its size ``n``
    is public); the public records are not charged.

    ``release`` returns ``(trials, p)``; :meth:`exact` the noiseless cross-moments."""

    data_kind: ClassVar[str] = "public-private"
    label = "probe:cross-moments"

    def __init__(self, p: int, n: int, epsilon: float, share: float = 0.1, clip: float = CROSS_CLIP) -> None:
        self.p = check_integer(p, "p", 1)
        self.n = check_integer(n, "n", 2)
        self.epsilon = check_positive(epsilon, "epsilon")
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share < 1:
            raise ValueError(f"share must be in (0, 1), got {share!r}")
        self.share, self.clip = float(share), check_positive(clip, "clip")
        self.sensitivity = cross_sensitivity(self.p, self.n, self.clip)
        self.scale = self.sensitivity / (self.share * self.epsilon)
        self.scales = np.full(self.p, self.scale)

    @property
    def privacy(self) -> dict[str, Guarantee]:
        return {"private": Guarantee(self.share * self.epsilon, 0.0, "replace"),
                "public": Guarantee(math.inf, 0.0, "replace")}

    @property
    def privacy_events(self) -> dict[str, Any]:
        from ...core import events

        return {"private": events.laplace(self.scale, self.sensitivity), "public": events.epsilon_delta(math.inf)}

    def exact(self, data: Any) -> np.ndarray:
        """The cohort's cross-moments, noiseless (``data``: a design whose private records are ``(Z, y)``; checked
        by :func:`~hybridpriv.families.public_private.wang.cross_moments.check_records`)."""
        private = np.asarray(getattr(data, "private", data), dtype=float)
        if private.ndim != 2 or private.shape != (self.n, self.p + 1):
            raise ValueError(f"data must hold {self.n} private records of {self.p} columns and the outcome, got shape "
                             f"{private.shape}")
        X, y = check_records(private[:, :self.p], private[:, self.p])
        return cross_moment_statistic(X, y, self.clip)

    def release(self, data: Any, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
        from ...core.validation import check_rng, check_trials
        from ...noise import laplace

        trials = check_trials(trials)
        return laplace(np.broadcast_to(self.exact(data), (trials, self.p)).copy(), self.scales, check_rng(rng))


def public_private_probe(v: Any, share: float, candidates: Any) -> Any:
    """The probe of SPEC values ``v`` (:class:`hybridpriv.engine.plan.Probe`).  ``candidates(values, posterior)``: the
    family's candidates for SPEC values; the second stage's are those of ``v`` at ``(1 - share) x epsilon``, by the
    same labels (Algorithm 1's public order from the same posterior)."""
    from ...engine.plan import Probe

    rest = v.replace(epsilon=v.epsilon * (1.0 - share))

    def later(mechanisms: Any, posterior: Any) -> dict[Any, Any]:
        return {c: m for c, m in candidates(rest, posterior).items() if c in mechanisms}

    probe = CrossMomentsProbe(len(v.columns), v.private.n, v.epsilon, share)
    return Probe(share, WHAT, probe, later,
                 refit=lambda raw, observed: refit_spec(raw, observed, share, probe.scale, probe.clip))


def refit_spec(raw: Mapping[str, Any], observed: Any, share: float, noise_scale: float, clip: float = CROSS_CLIP
               ) -> dict[str, Any]:
    """The SPEC (TOML data) of the second stage after a release of the cross-moments: ``raw`` with
    ``private.cross_moments = {values: observed (one per column, in the SPEC's order), noise_scale, clip}``, epsilon
    ``(1 - share) x`` the SPEC's (the first stage spent the rest) and ``evaluation.plan_share = 0`` (no plan of its
    own).  The cohort's total is the SPEC's epsilon, as choosing now charges it."""
    if raw.get("contrast", "logistic") != "logistic":
        raise ValueError(f"the cross-moments need the outcome, which only the logistic contrast reads; contrast is "
                         f"{raw['contrast']!r}")
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share < 1:
        raise ValueError(f"share must be in (0, 1), got {share!r}")
    if "cross_moments" in (raw.get("private") or {}):
        raise ValueError("the SPEC already holds private.cross_moments: a second release of them would need both "
                         "in the model; refit from the SPEC without it")
    columns = list(raw["columns"])
    values = np.asarray(observed, dtype=float).ravel()
    if values.size != len(columns) or not np.isfinite(values).all():
        raise ValueError(f"observed must hold {len(columns)} finite released values (one per column), got "
                         f"{values.size}")
    out = {**raw, "epsilon": (1.0 - share) * float(raw["epsilon"]), "private": dict(raw["private"]),
           "evaluation": {**dict(raw.get("evaluation") or {}), "plan_share": 0.0}}
    out["private"]["cross_moments"] = {"values": {c: float(x) for c, x in zip(columns, values)},
                                      "noise_scale": float(noise_scale), "clip": float(clip)}
    return out
