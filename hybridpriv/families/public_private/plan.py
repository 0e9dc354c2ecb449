"""The public-private family's two-stage plan (:mod:`hybridpriv.engine.plan`): the cohort spends a share of its epsilon on a
Laplace release of its cross-moments (:class:`CrossMomentsProbe`), then the candidates are chosen at the rest.

The features are the budget-spending selector's (:func:`hybridpriv.families.public_private.heldout.pythia_public_private`):
the same statistic, the same noise.  The selector fits the model again given them; the plan instead judges, before
any budget is spent, whether choosing after them would pay, and then chooses by the plan's importance weights."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from ...core.mechanism import Mechanism
from ...core.privacy import Guarantee, check_integer, check_positive
from .wang.cross_moments import CROSS_CLIP, cross_moment_statistic, cross_sensitivity

__all__ = ["CrossMomentsProbe", "public_private_probe"]

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
        """The cohort's cross-moments, noiseless (``data``: a design whose private records are ``(Z, y)``)."""
        private = np.asarray(getattr(data, "private", data), dtype=float)
        if private.ndim != 2 or private.shape != (self.n, self.p + 1):
            raise ValueError(f"data must hold {self.n} private records of {self.p} columns and the outcome, got shape "
                             f"{private.shape}")
        return cross_moment_statistic(private[:, :self.p], private[:, self.p], self.clip)

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

    return Probe(share, WHAT, CrossMomentsProbe(len(v.columns), v.private.n, v.epsilon, share), later)
