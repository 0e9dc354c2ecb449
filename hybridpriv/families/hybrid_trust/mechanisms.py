"""Hybrid-model mean estimators of Avent, Dubey & Korolova (PETS 2020): TCM users and LM users.

Two groups, in this order: the *TCM group* (users who trust the curator: it sees their raw
values and adds noise once, to their mean) and the *LM group* (users who randomise locally:
each adds noise to their own value before sending it).  The estimators:

=================  ================================================================================
``TCMOnly``        ``mean(TCM values) + Y_T`` (Definition 3.1); LM data unused
``FullLM``         every user (both groups) reports ``x_i + Y_i``; the mean of all reports (3.3)
``LMOnly``         the mean of the LM users' reports (3.10); TCM data unused
``Hybrid``         ``w * TCMOnly + (1 - w) * LMOnly`` (3.12), ``w`` from ``weight``
=================  ================================================================================

Noise is ``"laplace"`` (epsilon-DP) or ``"gaussian"`` ((epsilon, delta)-DP, analytic calibration
by default).  Each group's noise uses that group's epsilon (the paper has one epsilon for
everyone; different epsilons per group are allowed).  The exact risks are in
:mod:`hybridpriv.theory.avent`; every estimator exposes them as :meth:`~_AventEstimator.mse`.  The
Monte Carlo MSEs and relative improvements of an evaluation of these estimators are in
:mod:`hybridpriv.families.hybrid_trust.summary`.

Guarantees
----------
:attr:`~hybridpriv.core.mechanism.Mechanism.privacy` holds one
:class:`hybridpriv.core.privacy.Guarantee` per group, and its ``trust`` says whom it holds against:

* TCM users get **central** DP: ``Guarantee(epsilon_T, delta_T, relation)`` (``trust="central"``);
  the curator sees their raw values.  The TCM mean has sensitivity ``Delta / (c n)`` with
  ``Delta = bounds.sum_sensitivity(relation)`` (``m`` on ``[0, m]``).
* LM users get **local** DP: ``Guarantee(epsilon_L, delta_L, "replace", "local")``.  Each report
  ``x_i + Y_i`` is DP on its own, against the curator too, for any two values in the bounds
  (sensitivity ``bounds.width``); the release is post-processing of the reports.
* A group whose data the estimator never reads gets the perfect promise
  ``Guarantee(0.0, 0.0, "add-remove", "local")`` (nothing about it leaks, to anyone), as the
  engine records for units a mechanism does not read.

A group's own ``Group.trust`` is its *requirement*: an LM group declared ``trust="local"`` is
served only by the local promises, and a TCM group that declared ``"local"`` cannot be served by
a central one (:meth:`hybridpriv.core.privacy.Guarantee.satisfies`).  The audit
(:func:`hybridpriv.testing.audit_estimator`) checks the epsilon and delta of the release.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Real
from typing import Any

import numpy as np

from ... import noise as M
from ...core.privacy import NEIGHBOUR_RELATIONS, Bounds, Group, Guarantee, check_finite
from ...theory.avent import (
    full_lm_mse,
    hybrid_mse,
    kvh_weight,
    kvh_weight_heterogeneous,
    lm_only_mse,
    pwh_weight,
    tcm_only_mse,
)
from ..grouped.estimator import Estimator

__all__ = ["AVENT_NOISES", "AVENT_WEIGHTS", "FullLM", "Hybrid", "LMOnly", "TCMOnly"]

#: Noise distributions of the hybrid-model estimators.
AVENT_NOISES = ("laplace", "gaussian")
#: Named weights of :class:`Hybrid` (a number in [0, 1] is accepted too).
AVENT_WEIGHTS = ("kvh", "kvh-heterogeneous", "pwh", "naive", "bayes")
#: The promise to a group whose data an estimator never reads (nothing about it leaks, to anyone).
_UNUSED = Guarantee(0.0, 0.0, "add-remove", "local")


def _is_real(x: object) -> bool:
    return isinstance(x, Real) and not isinstance(x, bool)


def _nonneg(value: object, name: str) -> float:
    if hasattr(value, "variance_posterior_mean"):
        value = value.variance_posterior_mean  # type: ignore[union-attr]
    if not _is_real(value):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    v = float(value)  # type: ignore[arg-type]
    if not math.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    return v



class _Reports(np.ndarray):
    """LM reports already randomised on the users' devices (an array view: :meth:`_AventEstimator._noisy`
    leaves them as they are)."""


class _AventEstimator(Estimator):
    """Shared set-up: the two groups, noise calibration per group, the noise variances.

    Parameters
    ----------
    groups
        ``(tcm_group, lm_group)``: exactly two :class:`~hybridpriv.core.privacy.Group`, TCM first.
        ``c = n_T / (n_T + n_L)``.  A public group (``epsilon = inf``) gets no noise.
    bounds
        Range of every record (the paper: ``(0, m)``).
    noise
        ``"laplace"`` or ``"gaussian"``.
    delta
        Gaussian only: the delta of every private group; ``None`` uses each group's own
        ``Group.delta`` (which must then be in (0, 1)).  Must be ``None`` with Laplace noise.
    calibration
        Gaussian only: ``"analytic"`` (default, Balle & Wang, any epsilon) or ``"classic"``
        (``sqrt(2 ln(1.25/delta)) Delta/epsilon``, the paper's; needs epsilon < 1).
    relation
        Neighbouring relation of the TCM users' central promise (``"add-remove"`` with sizes
        fixed, the default, or ``"replace"``); local promises are always for any two values.
    clamp
        Clip records into the bounds instead of raising.

    Attributes
    ----------
    n, c
        Number of users and TCM fraction.
    s_T2
        Variance of the noise the curator adds to the TCM mean.
    s_L2
        Variance of one LM user's local noise.
    s_LT2
        Variance of one TCM user's local noise when they too randomise locally (Full-LM).
    """

    def __init__(
        self,
        groups: Sequence[Group],
        bounds: Bounds | tuple[float, float],
        noise: str = "laplace",
        delta: float | None = None,
        calibration: str = "analytic",
        relation: str = "add-remove",
        clamp: bool = False,
    ) -> None:
        super().__init__(groups, bounds, clamp)
        if len(self.groups) != 2:
            raise ValueError(
                f"groups must be exactly two groups (TCM users, LM users), got {len(self.groups)}: "
                f"{[g.name for g in self.groups]}"
            )
        if not isinstance(noise, str) or noise not in AVENT_NOISES:
            raise ValueError(f"noise must be one of {AVENT_NOISES}, got {noise!r}")
        if not isinstance(calibration, str) or calibration not in ("analytic", "classic"):
            raise ValueError(f"calibration must be 'analytic' or 'classic', got {calibration!r}")
        if not isinstance(relation, str) or relation not in NEIGHBOUR_RELATIONS:
            raise ValueError(f"relation must be one of {NEIGHBOUR_RELATIONS}, got {relation!r}")
        self.noise = noise
        self.calibration = calibration
        self.relation = relation
        self.delta = delta
        tcm, lm = self.groups
        self.deltas = (self._group_delta(tcm, delta), self._group_delta(lm, delta))
        self.n_T, self.n_L = tcm.size, lm.size
        self.n = self.n_T + self.n_L
        self.c = self.n_T / self.n
        #: sensitivity of the TCM users' mean (central) and of one user's value (local)
        self.tcm_sensitivity = self.bounds.sum_sensitivity(relation) / self.n_T
        self.local_sensitivity = self.bounds.width
        self._scale_T, self.s_T2 = self._calibrate(tcm, self.deltas[0], self.tcm_sensitivity, "TCM mean (central)")
        self._scale_L, self.s_L2 = self._calibrate(lm, self.deltas[1], self.local_sensitivity, "local report")
        self._scale_LT, self.s_LT2 = self._calibrate(tcm, self.deltas[0], self.local_sensitivity, "local report")

    # -- calibration ------------------------------------------------------------------
    def _group_delta(self, group: Group, delta: object) -> float:
        if self.noise == "laplace":
            if delta is not None:
                raise ValueError(f"delta is only used with noise='gaussian', got delta={delta!r} with noise='laplace'")
            return 0.0
        if group.is_public:
            return 0.0
        d = group.delta if delta is None else delta
        if not _is_real(d) or not 0.0 < float(d) < 1.0:  # type: ignore[arg-type]
            where = "delta" if delta is not None else f"group {group.name!r}: delta (or the delta argument)"
            raise ValueError(f"{where} must be in (0, 1) for Gaussian noise, got {d!r}")
        return float(d)  # type: ignore[arg-type]

    def _scale(self, epsilon: float, delta: float, sensitivity: float) -> float:
        if math.isinf(epsilon):
            return 0.0
        if self.noise == "laplace":
            return sensitivity / epsilon
        return M.gaussian_sigma(epsilon, delta, sensitivity, method=self.calibration)

    def _variance(self, scale: float) -> float:
        # float products give inf/0 on over/underflow instead of raising OverflowError
        return 2.0 * scale * scale if self.noise == "laplace" else scale * scale

    def _calibrate(self, group: Group, delta: float, sensitivity: float, what: str) -> tuple[float, float]:
        """``(scale, variance)`` of one noise draw; both must be finite and > 0 (normal floats) unless public,
        and the scale at most :attr:`MAX_NOISE_WIDTHS` times the bounds' width (nothing useful is
        released beyond, and squared errors overflow)."""
        scale = self._scale(group.epsilon, delta, sensitivity)
        if group.is_public:
            return scale, self._variance(scale)
        variance = self._variance(scale)
        tiny = np.finfo(float).tiny
        if not (math.isfinite(scale) and scale >= tiny and math.isfinite(variance) and variance >= tiny):
            raise ValueError(
                f"group {group.name!r}: the {self.noise} noise on the {what} has scale {scale:g} and variance "
                f"{variance:g} (sensitivity {sensitivity:g}), not a finite (normal) number > 0: "
                f"epsilon={group.epsilon!r} with bounds ({self.bounds.lower:g}, {self.bounds.upper:g}) is too "
                "extreme for floating point"
            )
        self._check_noise(scale, f"group {group.name!r}: epsilon={group.epsilon:g} (the noise on the {what})")
        return scale, variance

    def release(self, data, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
        """``trials`` estimates; ``data`` one array per group (simulation: the LM group's raw values, whose local
        noise is drawn here), or reports (an object with ``tcm`` and ``lm_reports``: a release, whose LM
        users randomised on their own devices; their reports are averaged, not noised again)."""
        reports = getattr(data, "lm_reports", None)
        if reports is None:
            return super().release(data, rng, trials)
        from ...core.validation import check_trials

        trials = check_trials(trials)
        tcm = self.bounds.clamp(data.tcm) if self.clamp else self.bounds.check(np.asarray(data.tcm), "TCM values")
        if tcm.size != self.n_T or np.size(reports) != self.n_L:
            raise ValueError(f"reports: the TCM values and LM reports must number {self.n_T} and {self.n_L} (the groups' "
                             "sizes)")
        lm = np.broadcast_to(np.asarray(reports, dtype=float), (trials, self.n_L)).view(_Reports)
        return self._checked(self._estimate([np.broadcast_to(tcm, (trials, self.n_T)), lm], M.check_rng(rng)), trials)

    def _noisy(self, values: np.ndarray, scale: float, rng: np.random.Generator) -> np.ndarray:
        if isinstance(values, _Reports):  # already randomised on the users' devices: post-processing only
            return np.asarray(values)
        if scale == 0.0:
            return values
        if self.noise == "laplace":
            return M.laplace(values, scale, rng)
        return M.gaussian(values, scale, rng)

    def _noisy_sum(self, values: np.ndarray, scale: float, rng: np.random.Generator) -> np.ndarray:
        """Per trial (row), the sum of the users' locally noised values: what every estimator here uses of
        them.  In simulation (a plain NumPy generator) the sum of a row's noise is drawn at once, exactly in
        law (:func:`hybridpriv.noise.laplace_sum`; a Gaussian sum is one Gaussian of ``sqrt(n)`` times the
        scale), so a trial costs one draw, not one per user; any other generator (a release's OpenDP
        adapter) draws each user's noise itself."""
        if isinstance(values, _Reports) or scale == 0.0 or type(rng) is not np.random.Generator:
            return self._noisy(values, scale, rng).sum(axis=1)
        n = values.shape[1]  # rows broadcast from one (stride 0: a fixed dataset) are summed once
        total = np.broadcast_to(values[0].sum(), values.shape[:1]) if values.strides[0] == 0 else values.sum(axis=1)
        if self.noise == "laplace":
            return M.laplace_sum(total, scale, n, rng)
        return M.gaussian(total, scale * math.sqrt(n), rng)

    # -- the two group estimates ------------------------------------------------------
    def _tcm_estimate(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return self._noisy(x.mean(axis=1), self._scale_T, rng)

    def _lm_estimate(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return self._noisy_sum(x, self._scale_L, rng) / x.shape[1]

    def _central(self, i: int) -> Guarantee:
        g = self.groups[i]
        return Guarantee(g.epsilon, self.deltas[i] if not g.is_public else 0.0, self.relation)

    def _local(self, i: int) -> Guarantee:
        g = self.groups[i]
        return Guarantee(g.epsilon, self.deltas[i] if not g.is_public else 0.0, "replace", "local")

    def _names(self) -> tuple[str, str]:
        return self.groups[0].name, self.groups[1].name

    @property
    def privacy_events(self) -> dict[str, Any]:
        """Per group, the noise it gets: on the TCM mean (central: scale ``_scale_T``, sensitivity
        ``Delta / (c n)``), on each local report (``_scale_L`` or, for TCM users who report locally,
        ``_scale_LT``; sensitivity the width); a group never read: a no-op; a public group: non-private."""
        from ...core import events

        t, _ = self._names()
        out = {}
        for unit, g in self.privacy.items():
            if g.epsilon == 0.0 and g.delta == 0.0:
                out[unit] = events.epsilon_delta(0.0)
            elif g.is_public:
                out[unit] = events.epsilon_delta(math.inf)
            else:
                scale, sens = ((self._scale_T, self.tcm_sensitivity) if g.trust == "central" else
                               (self._scale_LT if unit == t else self._scale_L, self.local_sensitivity))
                out[unit] = events.laplace(scale, sens) if self.noise == "laplace" else events.gaussian(scale, sens)
        return out

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(label={self.label!r}, groups={list(self._names())}, n={self.n}, c={self.c:g}, "
            f"noise={self.noise!r})"
        )


class TCMOnly(_AventEstimator):
    """The TCM-only estimator: ``mean(TCM values) + Y_T`` (Definition 3.1); LM users are ignored.

    ``Y_T`` is Laplace(``Delta/(c n epsilon_T)``) or Gaussian; variance :attr:`s_T2`.

    Parameters
    ----------
    groups, bounds, noise, delta, calibration, relation, clamp
        See :class:`_AventEstimator` (``groups = (tcm_group, lm_group)``).

    Guarantee
    ---------
    TCM group: central ``(epsilon_T, delta_T)``-DP under ``relation``.  LM group: never read
    (``epsilon = 0``, local).
    """

    label = "tcm-only"

    @property
    def privacy(self) -> dict[str, Guarantee]:
        t, l_ = self._names()
        return {t: self._central(0), l_: _UNUSED}

    def _estimate(self, data: list[np.ndarray], rng: np.random.Generator) -> np.ndarray:
        return self._tcm_estimate(data[0], rng)

    def mse(self, sigma_T2: float, sigma_L2: float | None = None, mu_T: float = 0.0, mu_L: float = 0.0, benchmark: str = "empirical") -> float:
        """Exact MSE (:func:`hybridpriv.theory.avent.tcm_only_mse`) for records of these moments."""
        return tcm_only_mse(self.n, self.c, sigma_T2, self.s_T2, sigma_L2=sigma_L2, mu_T=mu_T, mu_L=mu_L, benchmark=benchmark)


class LMOnly(_AventEstimator):
    """The LM-only estimator: the mean of the LM users' reports ``x_i + Y_L,i`` (Definition 3.10).

    Guarantee
    ---------
    LM group: local ``(epsilon_L, delta_L)``-DP for any two values (``"replace"``, ``"local"``).
    TCM group: never read (``epsilon = 0``, local).
    """

    label = "lm-only"

    @property
    def privacy(self) -> dict[str, Guarantee]:
        t, l_ = self._names()
        return {t: _UNUSED, l_: self._local(1)}

    def _estimate(self, data: list[np.ndarray], rng: np.random.Generator) -> np.ndarray:
        return self._lm_estimate(data[1], rng)

    def mse(self, sigma_T2: float, sigma_L2: float | None = None, mu_T: float = 0.0, mu_L: float = 0.0, benchmark: str = "empirical") -> float:
        """Exact MSE (:func:`hybridpriv.theory.avent.lm_only_mse`); ``sigma_L2`` defaults to ``sigma_T2``."""
        vL = sigma_T2 if sigma_L2 is None else sigma_L2
        return lm_only_mse(self.n, self.c, vL, self.s_L2, sigma_T2=sigma_T2, mu_T=mu_T, mu_L=mu_L, benchmark=benchmark)


class FullLM(_AventEstimator):
    """The Full-LM estimator: every user reports ``x_i + Y_i``; the mean of all ``n`` reports (Definition 3.3).

    TCM users randomise locally too, with their own group's epsilon (variance :attr:`s_LT2`).

    Guarantee
    ---------
    Both groups: local DP at their own ``(epsilon, delta)`` for any two values (``"replace"``,
    ``"local"``).
    """

    label = "full-lm"

    @property
    def privacy(self) -> dict[str, Guarantee]:
        t, l_ = self._names()
        return {t: self._local(0), l_: self._local(1)}

    def _estimate(self, data: list[np.ndarray], rng: np.random.Generator) -> np.ndarray:
        total = self._noisy_sum(data[0], self._scale_LT, rng) + self._noisy_sum(data[1], self._scale_L, rng)
        return total / self.n

    def mse(self, sigma_T2: float, sigma_L2: float | None = None, mu_T: float = 0.0, mu_L: float = 0.0, benchmark: str = "empirical") -> float:
        """Exact MSE (:func:`hybridpriv.theory.avent.full_lm_mse`)."""
        vL = sigma_T2 if sigma_L2 is None else sigma_L2
        return full_lm_mse(self.n, self.c, sigma_T2, vL, self.s_L2, mu_T=mu_T, mu_L=mu_L, s_LT2=self.s_LT2, benchmark=benchmark)


class Hybrid(_AventEstimator):
    """The convex hybrid ``w * TCMOnly + (1 - w) * LMOnly`` (Definition 3.12).

    Parameters
    ----------
    groups, bounds, noise, delta, calibration, relation, clamp
        See :class:`_AventEstimator` (``groups = (tcm_group, lm_group)``).
    weight
        ``"kvh"`` (Definition 4.1; needs ``sigma2``), ``"kvh-heterogeneous"`` (Definition 6.1;
        needs ``sigma_T2`` and ``sigma_L2``, optionally ``mu_T``, ``mu_L``), ``"pwh"``
        (Definition 5.3), ``"naive"`` (``w = c``), ``"bayes"`` (needs ``posterior``, any object
        with ``posterior.bayes_weight(n, c, s_T2, s_L2) -> float``), or a number in ``[0, 1]``.
        The weight is computed once, at construction, from public quantities and the given
        knowledge -- never from the private data.
    sigma2
        Variance of the records (``"kvh"``): a number >= 0 or a fitted model with
        ``variance_posterior_mean``.
    sigma_T2, sigma_L2, mu_T, mu_L
        Per-group variances and means (``"kvh-heterogeneous"``; means default to 0, i.e. equal).
    posterior
        For ``"bayes"``.

    Attributes
    ----------
    w
        The weight used.

    Guarantee
    ---------
    TCM group: central ``(epsilon_T, delta_T)``-DP under ``relation``; LM group: local
    ``(epsilon_L, delta_L)``-DP.  The combination is post-processing of two releases that
    each read one group only.  With ``w = 0`` (``w = 1``) the TCM (LM) data are never read
    (``epsilon = 0``, local).
    """

    def __init__(
        self,
        groups: Sequence[Group],
        bounds: Bounds | tuple[float, float],
        weight: str | float = "kvh",
        noise: str = "laplace",
        delta: float | None = None,
        calibration: str = "analytic",
        relation: str = "add-remove",
        sigma2: object = None,
        sigma_T2: float | None = None,
        sigma_L2: float | None = None,
        mu_T: float | None = None,
        mu_L: float | None = None,
        posterior: object = None,
        clamp: bool = False,
    ) -> None:
        super().__init__(groups, bounds, noise=noise, delta=delta, calibration=calibration, relation=relation, clamp=clamp)
        self.weight = weight
        self.sigma2, self.sigma_T2, self.sigma_L2, self.mu_T, self.mu_L = sigma2, sigma_T2, sigma_L2, mu_T, mu_L
        self.posterior = posterior
        given = {
            "sigma2": sigma2,
            "sigma_T2": sigma_T2,
            "sigma_L2": sigma_L2,
            "mu_T": mu_T,
            "mu_L": mu_L,
            "posterior": posterior,
        }
        needs: dict[str, tuple[str, ...]] = {
            "kvh": ("sigma2",),
            "kvh-heterogeneous": ("sigma_T2", "sigma_L2", "mu_T", "mu_L"),
            "bayes": ("posterior",),
        }
        if isinstance(weight, str):
            if weight not in AVENT_WEIGHTS:
                raise ValueError(f"weight must be one of {AVENT_WEIGHTS} or a number in [0, 1], got {weight!r}")
            used = needs.get(weight, ())
        elif _is_real(weight):
            used = ()
        else:
            raise TypeError(f"weight must be one of {AVENT_WEIGHTS} or a number in [0, 1], got {weight!r}")
        extra = [k for k, v in given.items() if v is not None and k not in used]
        if extra:
            raise ValueError(f"{extra} are not used by weight={weight!r}; it uses {list(used) or 'none of them'}")
        self.w = self._compute_weight()
        self.label = f"hybrid-{weight}" if isinstance(weight, str) else f"hybrid-w={float(weight):g}"

    def _compute_weight(self) -> float:
        n, c, sT, sL = self.n, self.c, self.s_T2, self.s_L2
        weight = self.weight
        if not isinstance(weight, str):
            w = check_finite(weight, "weight")
            if not 0.0 <= w <= 1.0:
                raise ValueError(f"weight must be in [0, 1], got {weight!r}")
            return w
        if weight == "naive":
            return c
        if weight == "pwh":
            return float(pwh_weight(n, c, sT, sL))
        if weight == "kvh":
            if self.sigma2 is None:
                raise ValueError("weight='kvh' needs sigma2 (the records' variance), got None")
            return float(kvh_weight(n, c, _nonneg(self.sigma2, "sigma2"), sT, sL))
        if weight == "kvh-heterogeneous":
            if self.sigma_T2 is None or self.sigma_L2 is None:
                raise ValueError(
                    f"weight='kvh-heterogeneous' needs sigma_T2 and sigma_L2, got sigma_T2={self.sigma_T2!r}, "
                    f"sigma_L2={self.sigma_L2!r}"
                )
            mT = 0.0 if self.mu_T is None else check_finite(self.mu_T, "mu_T")
            mL = 0.0 if self.mu_L is None else check_finite(self.mu_L, "mu_L")
            return float(
                kvh_weight_heterogeneous(
                    n, c, _nonneg(self.sigma_T2, "sigma_T2"), _nonneg(self.sigma_L2, "sigma_L2"), sT, sL, mT, mL
                )
            )
        # bayes
        post = self.posterior
        if post is None:
            raise ValueError("weight='bayes' needs posterior (an object with bayes_weight(n, c, s_T2, s_L2)), got None")
        method = getattr(post, "bayes_weight", None)
        if not callable(method):
            raise TypeError(f"posterior must have a method bayes_weight(n, c, s_T2, s_L2), got {type(post).__name__}")
        value = method(n, c, sT, sL)
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value.item()
        if not _is_real(value) or not math.isfinite(float(value)) or not 0.0 <= float(value) <= 1.0:
            raise ValueError(f"posterior.bayes_weight returned {value!r}; a weight must be a number in [0, 1]")
        return float(value)

    @property
    def privacy(self) -> dict[str, Guarantee]:
        t, l_ = self._names()
        return {
            t: self._central(0) if self.w > 0 else _UNUSED,
            l_: self._local(1) if self.w < 1 else _UNUSED,
        }

    def _estimate(self, data: list[np.ndarray], rng: np.random.Generator) -> np.ndarray:
        w = self.w
        return w * self._tcm_estimate(data[0], rng) + (1.0 - w) * self._lm_estimate(data[1], rng)

    def mse(self, sigma_T2: float, sigma_L2: float | None = None, mu_T: float = 0.0, mu_L: float = 0.0, benchmark: str = "empirical") -> float:
        """Exact MSE (:func:`hybridpriv.theory.avent.hybrid_mse`) at this estimator's ``w``."""
        vL = sigma_T2 if sigma_L2 is None else sigma_L2
        return hybrid_mse(self.w, self.n, self.c, sigma_T2, vL, self.s_T2, self.s_L2, mu_T, mu_L, benchmark=benchmark)
