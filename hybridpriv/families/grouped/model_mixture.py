"""A flexible family for bounded records: point masses at both bounds beside a two-component Beta mixture.

Real bounded records are often clamped (a share sits exactly on a bound), skewed or bimodal; a
clamped normal or a single Beta cannot reproduce them.  :class:`MixtureFamily` models a record as

* exactly the lower bound ``a`` with probability ``w[0]``, exactly the upper bound ``b`` with
  probability ``w[1]``;
* otherwise ``a + (b - a) Z`` with ``Z ~ Beta(m_j kappa_j, (1 - m_j) kappa_j)``, component ``j`` with
  probability ``w[2 + j]`` (``j = 0, 1``; ``m_0 < m_1`` so the components do not switch labels).

Priors: ``w ~ Dirichlet(0.5, 0.5, 2, 2)`` (about 10% expected at each bound), ``m_0 ~ Beta(1, 1)``,
``m_1 = m_0 + (1 - m_0) u`` with ``u ~ Beta(1, 1)``, ``kappa_j ~ Gamma(2, 0.1)``.  The likelihood of a
record on a bound is the point mass, of an interior record the mixture density on the data scale
(``1 / (b - a)`` times the unit-scale density), so its pointwise log-likelihood is comparable with the
censored normal's (:func:`hybridpriv.models.choose_family` compares them by PSIS-LOO).

Moments (closed form, used for earlier releases): with ``W = w[2] + w[3]`` the interior weight,
``E[Z] = w[1] + sum_j w[2+j] m_j`` and ``E[Z^2] = w[1] + sum_j w[2+j] (m_j (1 - m_j) / (kappa_j + 1) + m_j^2)``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.basic import Variable
from pytensor.tensor.variable import TensorVariable

from ...core.privacy import Bounds
from .model_families import Family, Params

__all__ = ["MixtureFamily"]

#: Dirichlet concentration of the weights (lower bound, upper bound, component 0, component 1).
WEIGHT_PRIOR = (0.5, 0.5, 2.0, 2.0)
#: Gamma (shape, rate) of each component's concentration.
CONCENTRATION_PRIOR = (2.0, 0.1)


class MixtureFamily(Family):
    """Point masses at the bounds and a two-component Beta mixture inside (see the module docstring).

    Parameters: ``"w"`` (4 weights), ``"m"`` (2 ordered component means on the unit scale),
    ``"kappa"`` (2 concentrations).  Supports earlier releases (closed-form moments); not
    ``known_variance``.
    """

    name = "mixture"
    supports_released_means = True

    def __init__(self, bounds: Bounds | tuple[float, float] | None = None) -> None:
        super().__init__(bounds)

    def __repr__(self) -> str:
        return "MixtureFamily()"

    def _copy(self) -> MixtureFamily:
        return MixtureFamily(self._bounds)

    def priors(self, fixed: Params | None = None) -> dict[str, TensorVariable]:
        if fixed:
            raise ValueError(f"family='mixture' has no fixed parameters, got {sorted(fixed)}")
        w = pm.Dirichlet("w", a=np.array(WEIGHT_PRIOR))
        m0 = pm.Beta("m0", 1.0, 1.0)
        u = pm.Beta("m_gap", 1.0, 1.0)
        m = pm.Deterministic("m", pt.stack([m0, m0 + (1 - m0) * u]))
        kappa = pm.Gamma("kappa", alpha=CONCENTRATION_PRIOR[0], beta=CONCENTRATION_PRIOR[1], shape=2)
        return {"w": w, "m": m, "kappa": kappa}

    def _logp(self, values: TensorVariable, w0, w1, w2, w3, m0, m1, k0, k1) -> TensorVariable:
        w, m, kappa = (w0, w1, w2, w3), (m0, m1), (k0, k1)
        a, width = self.bounds.lower, self.bounds.width
        z = (values - a) / width
        at_lower, at_upper = pt.le(values, a), pt.ge(values, self.bounds.upper)
        inside = pt.clip(z, 1e-12, 1 - 1e-12)  # the switch below never uses the clipped ends
        comp = [pt.log(w[2 + j]) + pm.logp(pm.Beta.dist(m[j] * kappa[j], (1 - m[j]) * kappa[j]), inside)
                for j in range(2)]
        interior = pt.logaddexp(comp[0], comp[1]) - np.log(width)
        return pt.switch(at_lower, pt.log(w[0]), pt.switch(at_upper, pt.log(w[1]), interior))

    def observe(self, name: str, params: Mapping[str, TensorVariable], values: np.ndarray) -> TensorVariable:
        w, m, kappa = params["w"], params["m"], params["kappa"]
        scalars = [w[0], w[1], w[2], w[3], m[0], m[1], kappa[0], kappa[1]]  # CustomDist takes scalar parameters
        observed = values if isinstance(values, Variable) else np.asarray(values, dtype=float)  # pm.Data as given
        return pm.CustomDist(name, *scalars, logp=self._logp, observed=observed)

    def simulate(self, params: Params, size: int, rng: np.random.Generator) -> np.ndarray:
        b = self.bounds
        w, m, kappa = (np.asarray(params[k], dtype=float) for k in ("w", "m", "kappa"))
        which = rng.choice(4, size=size, p=w / w.sum())
        comp = np.clip(which - 2, 0, 1)
        z = rng.beta(m[comp] * kappa[comp], (1 - m[comp]) * kappa[comp])
        z = np.where(which == 0, 0.0, np.where(which == 1, 1.0, z))
        return np.clip(b.lower + b.width * z, b.lower, b.upper)

    @staticmethod
    def _unit_moments(w, m, kappa):
        mean = w[1] + w[2] * m[0] + w[3] * m[1]
        second = w[1] + sum(w[2 + j] * (m[j] * (1 - m[j]) / (kappa[j] + 1) + m[j] ** 2) for j in range(2))
        return mean, second

    def population(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, float]:
        from scipy import optimize, stats

        b = self.bounds
        w, m, kappa = (np.asarray(params[k], dtype=float) for k in ("w", "m", "kappa"))
        mean, second = self._unit_moments(w, m, kappa)

        def cdf(z: float) -> float:  # P(Z <= z) for z in [0, 1)
            return w[0] + sum(w[2 + j] * stats.beta.cdf(z, m[j] * kappa[j], (1 - m[j]) * kappa[j]) for j in range(2))

        if w[0] >= 0.5:
            median = 0.0
        elif cdf(1 - 1e-12) < 0.5:
            median = 1.0
        else:
            median = optimize.brentq(lambda z: cdf(z) - 0.5, 0.0, 1 - 1e-12, xtol=1e-10)
        return {"mean": b.lower + b.width * float(mean), "median": b.lower + b.width * float(median),
                "variance": b.width**2 * float(max(second - mean**2, 0.0))}

    def clamped_moments(self, params: Mapping[str, TensorVariable]) -> tuple[TensorVariable, TensorVariable]:
        b = self.bounds
        mean, second = self._unit_moments(params["w"], params["m"], params["kappa"])
        return b.lower + b.width * mean, b.width**2 * pt.maximum(second - mean**2, 0.0)
