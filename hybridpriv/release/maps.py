"""OpenDP's privacy maps of a mechanism's privacy events: an independent check of the declared guarantee.

Before a release, every unit's event (:attr:`~hybridpriv.core.mechanism.Mechanism.privacy_events`) is
rebuilt part by part as OpenDP measurements and OpenDP's own privacy map is asked what each part costs:

* a Laplace part (noise multiplier ``b``: scale over sensitivity) is ``make_laplace(scale=b)`` on a value
  that moves by at most 1: its map is the part's epsilon;
* K-ary randomized response is ``make_randomized_response`` with the probability of the true label: its
  map is ``log(q / r)``;
* a Gaussian part is ``make_gaussian(scale=b)``: its map is zero-concentrated DP, ``rho = 1 / (2 b^2)``.

Pure parts add up (basic composition) to the epsilon OpenDP vouches for, which must not exceed the declared
epsilon (:func:`check_declaration`); Gaussian parts add up in ``rho`` (zCDP composes additively), reported
beside the exact ``(epsilon, delta)`` of the Gaussian profile (dp-accounting), which the conformance checks
already hold to the declaration (OpenDP's zCDP-to-approximate-DP conversion is looser than the analytic
Gaussian calibration the mechanisms use, so it is not the yardstick).  A part OpenDP has no measurement for
here (a sampled part, a bare ``(epsilon, delta)`` label) is listed as unmapped; OpenDP then vouches for no
total: the map's ``epsilon`` is ``None`` and ``mapped_epsilon`` holds what the mapped parts alone cost (the
declaration rests on the audit and the conformance checks of the events instead).
"""

from __future__ import annotations

import math
from typing import Any

import dp_accounting as dpa

from ..core import events as ev
from .noise import _opendp

__all__ = ["check_declaration", "privacy_map"]


def _parts(event: Any, count: int = 1) -> list[tuple[Any, int]]:
    if isinstance(event, dpa.ComposedDpEvent):
        return [p for e in event.events for p in _parts(e, count)]
    if isinstance(event, dpa.SelfComposedDpEvent):
        return _parts(event.event, count * event.count)
    return [(event, count)]


def privacy_map(event: Any) -> dict[str, Any]:
    """``{"epsilon": OpenDP's epsilon of the pure parts, "rho": its zCDP of the Gaussian parts, "parts": n,
    "unmapped": [what OpenDP did not map], "mapped_epsilon": the epsilon of the mapped pure parts}``
    (``epsilon`` is ``inf`` for a non-private part, and ``None`` when some part is unmapped: OpenDP then
    vouches for no total, and a reader must not take the mapped parts' sum for one)."""
    dp = _opendp()
    eps, rho, unmapped, n = 0.0, 0.0, [], 0
    for part, count in _parts(event):
        n += count
        if isinstance(part, dpa.NoOpDpEvent):
            continue
        if isinstance(part, dpa.NonPrivateDpEvent):
            eps = math.inf
        elif isinstance(part, dpa.LaplaceDpEvent):
            m = dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float),
                                  scale=float(part.noise_multiplier))
            eps += count * float(m.map(1.0))
        elif isinstance(part, dpa.RandomizedResponseDpEvent):
            k, p = part.num_buckets, part.noise_parameter
            m = dp.m.make_randomized_response(categories=list(range(k)), prob=1.0 - p + p / k)
            eps += count * float(m.map(1))
        elif isinstance(part, dpa.GaussianDpEvent):
            m = dp.m.make_gaussian(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float),
                                   scale=float(part.noise_multiplier))
            rho += count * float(m.map(1.0))
        else:
            unmapped.append(type(part).__name__)
    return {"epsilon": None if unmapped else eps, "mapped_epsilon": eps, "rho": rho, "parts": n,
            "unmapped": sorted(set(unmapped)), "by": "OpenDP privacy maps"}


def check_declaration(mech: Any) -> dict[str, dict[str, Any]]:
    """Per unit, OpenDP's map of the mechanism's event (:func:`privacy_map`) beside the declaration; refuses
    (``ValueError``) a unit whose pure parts alone cost more, by OpenDP's maps, than its declared epsilon."""
    out = {}
    label = getattr(mech, "label", type(mech).__name__)
    for unit, event in mech.privacy_events.items():
        g = mech.privacy[unit]
        m = privacy_map(event)
        m["declared_epsilon"] = g.epsilon if math.isfinite(g.epsilon) else "inf"
        m["event"] = ev.to_json(event)
        if m["mapped_epsilon"] > g.epsilon * (1 + 1e-9) + 1e-12:
            raise ValueError(f"candidate {label!r}: OpenDP's privacy maps of its noise give unit {unit!r} epsilon "
                             f"{m['mapped_epsilon']:.6g}, above the declared {g.epsilon:g}; not released")
        for key in ("epsilon", "mapped_epsilon"):  # JSON has no infinity
            if m[key] is not None and math.isinf(m[key]):
                m[key] = "inf"
        out[unit] = m
    return out
