"""Privacy as events: what a mechanism does to one protected unit, as a dp-accounting ``DpEvent``.

A :class:`~hybridpriv.core.privacy.Guarantee` is a label (``epsilon, delta``); an *event* says how the
promise arises, so that composition can be tight: a Gaussian release composes by its privacy-loss
distribution, not as a worst-case ``(epsilon, delta)`` pair.  Events are dp-accounting's own classes
(``LaplaceDpEvent``, ``GaussianDpEvent``, ``RandomizedResponseDpEvent``, ``PoissonSampledDpEvent``,
``ComposedDpEvent``, ``SelfComposedDpEvent``, ``NoOpDpEvent``, ``NonPrivateDpEvent``) plus
:class:`EpsilonDeltaDpEvent` for a promise known only by its label (a plugin's declaration).
Constructors here take the mechanism's own terms (a noise scale and the sensitivity it was
calibrated to): :func:`laplace`, :func:`gaussian`, :func:`randomized_response`, :func:`poisson_sampled`,
:func:`composed`, :func:`repeated`, :func:`epsilon_delta`.

What is derived from an event:

* :func:`pure_epsilon`: the exact epsilon of an event made only of pure parts (Laplace ``sensitivity /
  scale``, K-ary randomized response ``log(q / r)``, pure labels), summed over composition; ``None`` if
  some part is not pure;
* :func:`pld`: its privacy-loss distribution (dp-accounting's PLD, pessimistic), composed part by part
  (an event's sensitivity is the one of its unit's relation: two neighbours' values differ by at most it;
  the relation itself matters only to a sampled part); :func:`epsilon` reads it at a delta (pure events: exact);
* :func:`guarantee`: the :class:`~hybridpriv.core.privacy.Guarantee` view at a delta;
* :func:`to_json` / :func:`from_json`: the ledger's form;
* :func:`charge_to`: the event restated in a unit budget's relation (add/remove-one to replace-one
  doubles every sensitivity; a part without a sensitivity, or a sampled one, falls back to its label,
  converted by :meth:`~hybridpriv.core.privacy.Guarantee.charge_to`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attr
import dp_accounting as dpa

from .privacy import Guarantee

__all__ = ["EpsilonDeltaDpEvent", "charge_to", "composed", "epsilon", "epsilon_delta", "from_json", "gaussian",
           "guarantee", "laplace", "pld", "poisson_sampled", "pure_epsilon", "randomized_response", "repeated",
           "to_json"]

#: The PLD's discretisation (dp-accounting's default): epsilons read from a PLD are pessimistic by about this.
PLD_INTERVAL = 1e-4


@attr.define(frozen=True)
class EpsilonDeltaDpEvent(dpa.DpEvent):
    """A promise known only by its label: ``(epsilon, delta)``-DP (composed as the worst mechanism with it)."""

    epsilon: float
    delta: float = 0.0


def _positive(x: object, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 < float(x) < math.inf:
        raise ValueError(f"{name} must be a finite number > 0, got {x!r}")
    return float(x)


def laplace(scale: float, sensitivity: float) -> dpa.DpEvent:
    """Laplace noise of ``scale`` on a value of L1 ``sensitivity``: ``epsilon = sensitivity / scale``."""
    return dpa.LaplaceDpEvent(noise_multiplier=_positive(scale, "scale") / _positive(sensitivity, "sensitivity"))


def gaussian(sigma: float, sensitivity: float) -> dpa.DpEvent:
    """Gaussian noise of standard deviation ``sigma`` on a value of L2 ``sensitivity``."""
    return dpa.GaussianDpEvent(noise_multiplier=_positive(sigma, "sigma") / _positive(sensitivity, "sensitivity"))


def randomized_response(epsilon: float, k: int) -> dpa.DpEvent:
    """K-ary randomized response at ``epsilon``: the true label with ``e^eps / (k - 1 + e^eps)`` (replace-one)."""
    eps = _positive(epsilon, "epsilon")
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise ValueError(f"k must be an integer >= 2, got {k!r}")
    # dp-accounting's noise parameter: the probability of reporting a uniformly random bucket
    return dpa.RandomizedResponseDpEvent(noise_parameter=k / (k - 1 + math.exp(min(eps, 700.0))), num_buckets=k)


def poisson_sampled(probability: float, event: dpa.DpEvent) -> dpa.DpEvent:
    """``event`` on a Poisson sample: every record kept independently with ``probability``."""
    if isinstance(probability, bool) or not 0.0 <= float(probability) <= 1.0:
        raise ValueError(f"probability must be in [0, 1], got {probability!r}")
    return event if float(probability) == 1.0 else dpa.PoissonSampledDpEvent(float(probability), event)


def composed(events: Sequence[dpa.DpEvent]) -> dpa.DpEvent:
    """The events one after another (each may be chosen after seeing the earlier ones' output)."""
    events = [e for e in events if not isinstance(e, dpa.NoOpDpEvent)]
    if not events:
        return dpa.NoOpDpEvent()
    return events[0] if len(events) == 1 else dpa.ComposedDpEvent(list(events))


def repeated(event: dpa.DpEvent, count: int) -> dpa.DpEvent:
    """``event`` ``count`` times."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(f"count must be an integer >= 0, got {count!r}")
    return dpa.NoOpDpEvent() if count == 0 else (event if count == 1 else dpa.SelfComposedDpEvent(event, count))


def epsilon_delta(epsilon: float, delta: float = 0.0) -> dpa.DpEvent:
    """A promise known by its label; ``epsilon = 0`` (never read): a no-op; ``inf``: non-private."""
    if epsilon == 0.0 and delta == 0.0:
        return dpa.NoOpDpEvent()
    if math.isinf(epsilon):
        return dpa.NonPrivateDpEvent()
    return EpsilonDeltaDpEvent(float(epsilon), float(delta))


# -- what is derived from an event -------------------------------------------------------------------
def pure_epsilon(event: dpa.DpEvent) -> float | None:
    """The exact epsilon of an event of pure parts (``inf`` if non-private), else ``None``."""
    if isinstance(event, dpa.NoOpDpEvent):
        return 0.0
    if isinstance(event, dpa.NonPrivateDpEvent):
        return math.inf
    if isinstance(event, dpa.LaplaceDpEvent):
        return 1.0 / event.noise_multiplier
    if isinstance(event, dpa.RandomizedResponseDpEvent):
        k, p = event.num_buckets, event.noise_parameter
        return math.log((1.0 - p + p / k) / (p / k)) if p > 0 else math.inf
    if isinstance(event, EpsilonDeltaDpEvent):
        return event.epsilon if event.delta == 0.0 else None
    if isinstance(event, dpa.ComposedDpEvent):
        parts = [pure_epsilon(e) for e in event.events]
        return None if any(p is None for p in parts) else math.fsum(parts)  # type: ignore[arg-type]
    if isinstance(event, dpa.SelfComposedDpEvent):
        one = pure_epsilon(event.event)
        return None if one is None else one * event.count
    if isinstance(event, dpa.PoissonSampledDpEvent):  # amplification by sampling (Balle et al. 2018, Thm 8)
        one = pure_epsilon(event.event)
        if one is None:
            return None
        return math.log1p(event.sampling_probability * math.expm1(one)) if math.isfinite(one) else math.inf
    return None


def _relation(relation: str) -> Any:
    from dp_accounting.privacy_accountant import NeighboringRelation

    return NeighboringRelation.REPLACE_ONE if relation == "replace" else NeighboringRelation.ADD_OR_REMOVE_ONE


def pld(event: dpa.DpEvent, relation: str = "add-remove") -> Any:
    """The event's privacy-loss distribution (dp-accounting, pessimistic), composed part by part."""
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as P

    kw = {"value_discretization_interval": PLD_INTERVAL}
    if isinstance(event, dpa.NoOpDpEvent):
        return P.identity(**kw)
    if isinstance(event, dpa.LaplaceDpEvent):
        return P.from_laplace_mechanism(event.noise_multiplier, **kw)
    if isinstance(event, dpa.GaussianDpEvent):  # the sensitivity is the declared relation's already
        return P.from_gaussian_mechanism(event.noise_multiplier, **kw)
    if isinstance(event, dpa.RandomizedResponseDpEvent):
        return P.from_randomized_response(event.noise_parameter, event.num_buckets, **kw)
    if isinstance(event, EpsilonDeltaDpEvent):
        return P.from_privacy_parameters(common.DifferentialPrivacyParameters(event.epsilon, event.delta), **kw)
    if isinstance(event, dpa.PoissonSampledDpEvent):
        inner, p = event.event, event.sampling_probability
        if isinstance(inner, dpa.LaplaceDpEvent):
            return P.from_laplace_mechanism(inner.noise_multiplier, sampling_prob=p, **kw)
        if isinstance(inner, dpa.GaussianDpEvent):
            return P.from_gaussian_mechanism(inner.noise_multiplier, sampling_prob=p,
                                             neighboring_relation=_relation(relation), **kw)
        pure = pure_epsilon(event)
        if pure is not None:
            return P.from_privacy_parameters(common.DifferentialPrivacyParameters(pure, 0.0), **kw)
    if isinstance(event, dpa.ComposedDpEvent):
        out = P.identity(**kw)
        for e in event.events:
            out = out.compose(pld(e, relation))
        return out
    if isinstance(event, dpa.SelfComposedDpEvent):
        return pld(event.event, relation).self_compose(event.count)
    raise ValueError(f"no privacy-loss distribution for {event!r}")


def epsilon(event: dpa.DpEvent, delta: float = 0.0, relation: str = "add-remove") -> float:
    """The event's epsilon at ``delta``: exact for pure events, else read from its PLD (pessimistic)."""
    pure = pure_epsilon(event)
    if pure is not None and (delta == 0.0 or math.isinf(pure)):
        return pure
    if isinstance(event, dpa.NonPrivateDpEvent) or _has(event, dpa.NonPrivateDpEvent):
        return math.inf
    value = float(pld(event, relation).get_epsilon_for_delta(delta))
    return value if pure is None else min(value, pure)


def _has(event: dpa.DpEvent, kind: type) -> bool:
    if isinstance(event, kind):
        return True
    if isinstance(event, dpa.ComposedDpEvent):
        return any(_has(e, kind) for e in event.events)
    if isinstance(event, (dpa.SelfComposedDpEvent, dpa.PoissonSampledDpEvent)):
        return _has(event.event, kind)
    return False


def guarantee(event: dpa.DpEvent, delta: float, relation: str, trust: str = "central") -> Guarantee:
    """The :class:`~hybridpriv.core.privacy.Guarantee` view of ``event`` at ``delta`` (pure: ``delta`` is 0)."""
    pure = pure_epsilon(event)
    if pure is not None:
        return Guarantee(pure, 0.0, relation, trust)
    return Guarantee(epsilon(event, delta, relation), delta, relation, trust)


# -- the ledger's form ---------------------------------------------------------------------------------
def to_json(event: dpa.DpEvent) -> dict[str, Any]:
    """JSON data for ``event`` (:func:`from_json` reads it back)."""
    if isinstance(event, dpa.ComposedDpEvent):
        return {"type": "composed", "events": [to_json(e) for e in event.events]}
    if isinstance(event, dpa.SelfComposedDpEvent):
        return {"type": "repeated", "count": event.count, "event": to_json(event.event)}
    if isinstance(event, dpa.PoissonSampledDpEvent):
        return {"type": "poisson-sampled", "probability": event.sampling_probability, "event": to_json(event.event)}
    for kind, cls in _SIMPLE.items():
        if type(event) is cls:
            return {"type": kind, **{f.name: getattr(event, f.name) for f in attr.fields(cls)}}
    raise ValueError(f"cannot write {event!r} as JSON")


_SIMPLE = {"laplace": dpa.LaplaceDpEvent, "gaussian": dpa.GaussianDpEvent, "randomized-response": dpa.RandomizedResponseDpEvent,
           "epsilon-delta": EpsilonDeltaDpEvent, "no-op": dpa.NoOpDpEvent, "non-private": dpa.NonPrivateDpEvent}


def from_json(data: Mapping[str, Any], where: str = "event") -> dpa.DpEvent:
    """The event :func:`to_json` wrote (a malformed one is refused, naming ``where``)."""
    try:
        kind = data["type"]
        if kind == "composed":
            return dpa.ComposedDpEvent([from_json(e, f"{where}.events[{i}]") for i, e in enumerate(data["events"])])
        if kind == "repeated":
            return dpa.SelfComposedDpEvent(from_json(data["event"], f"{where}.event"), int(data["count"]))
        if kind == "poisson-sampled":
            return dpa.PoissonSampledDpEvent(float(data["probability"]), from_json(data["event"], f"{where}.event"))
        cls = _SIMPLE[kind]
        return cls(**{f.name: data[f.name] for f in attr.fields(cls)})
    except (KeyError, TypeError, ValueError, AttributeError):
        raise ValueError(f"{where} is not a privacy event this version reads: {str(dict(data))[:80]}") from None


# -- charges in a budget's terms ------------------------------------------------------------------------
def charge_to(event: dpa.DpEvent, declared: Guarantee, unit: Guarantee) -> dpa.DpEvent:
    """``event`` (a mechanism's, under ``declared``'s relation and trust) restated in budget ``unit``'s terms.

    The same relation and trust, or a local promise charged to a central unit: the event itself.  An
    add/remove-one promise charged to a replace-one budget: every Laplace or Gaussian part with its
    sensitivity doubled (a replacement is a removal and an addition), randomized response unchanged
    (its promise is for replace-one already); a part that cannot be restated (a sampled part, a label)
    is replaced by its label's :meth:`~hybridpriv.core.privacy.Guarantee.charge_to`.  Anything else (a
    central promise to a local unit; replace-one to an add/remove budget): the label's charge."""
    perfect = isinstance(event, dpa.NoOpDpEvent)
    if perfect or ((declared.relation, declared.trust) == (unit.relation, unit.trust)):
        return event
    if declared.trust == "local" and unit.trust == "central" and declared.relation == unit.relation:
        return event
    if declared.relation == "add-remove" and unit.relation == "replace" and not (unit.trust == "local"
                                                                               and declared.trust != "local"):
        return _doubled(event, declared, unit)
    c = declared.charge_to(unit)
    return epsilon_delta(c.epsilon, c.delta)


def _doubled(event: dpa.DpEvent, declared: Guarantee, unit: Guarantee) -> dpa.DpEvent:
    if isinstance(event, dpa.LaplaceDpEvent):
        return dpa.LaplaceDpEvent(event.noise_multiplier / 2.0)
    if isinstance(event, dpa.GaussianDpEvent):
        return dpa.GaussianDpEvent(event.noise_multiplier / 2.0)
    if isinstance(event, (dpa.RandomizedResponseDpEvent, dpa.NoOpDpEvent, dpa.NonPrivateDpEvent)):
        return event
    if isinstance(event, dpa.ComposedDpEvent):
        return dpa.ComposedDpEvent([_doubled(e, declared, unit) for e in event.events])
    if isinstance(event, dpa.SelfComposedDpEvent):
        return dpa.SelfComposedDpEvent(_doubled(event.event, declared, unit), event.count)
    eps = pure_epsilon(event)
    part = Guarantee(eps, 0.0, declared.relation, declared.trust) if eps is not None else (
        Guarantee(event.epsilon, event.delta, declared.relation, declared.trust) if isinstance(event, EpsilonDeltaDpEvent)
        else declared)
    c = part.charge_to(unit)
    return epsilon_delta(c.epsilon, c.delta)
