"""Totals of a unit's releases three ways: basic composition, RDP and PLD accountants (dp-accounting).

Every release spends ``(epsilon_i, delta_i)`` on a protected unit.  :func:`compose` gives the total
guarantee of a list of such parts:

* **basic**: ``(sum epsilon_i, sum delta_i)`` (what the ledger's budgets are checked against: it is
  valid for any mechanisms, adaptively chosen);
* **PLD**: Google's ``dp_accounting`` privacy-loss-distribution accountant, each part entered as the
  worst case of an ``(epsilon_i, delta_i)``-DP mechanism
  (``PrivacyLossDistribution.from_privacy_parameters``), composed and read at ``target_delta``: the
  optimal composition of the parts (Kairouz, Oh & Viswanath 2015), up to a pessimistic discretisation;
* **RDP**: each pure part entered by its Renyi-DP curve ``min(epsilon_i, alpha epsilon_i^2 / 2)`` at
  every order ``alpha`` of ``dp_accounting``'s default orders (pure epsilon-DP is ``(alpha, epsilon)``-RDP,
  Mironov 2017, Proposition 3; and ``epsilon^2 / 2``-zCDP, Bun & Steinke 2016, Proposition 3.3), the
  curves summed (RDP composes additively) and converted to ``(epsilon, target_delta)`` by
  ``dp_accounting``'s ``compute_epsilon``.  A part
  with ``delta_i > 0`` has no RDP curve without a description of its noise, so the RDP total is then
  ``None`` (the reason is in :attr:`Totals.notes`).

The same function serves a mechanism whose one release is made of parts (Wang et al.'s Algorithm 2:
a subset chosen with part of the budget, the estimate released with the rest; hybrid K-means:
iterations), e.g. ``compose([Guarantee(0.2), Guarantee(0.8)], 1e-6)``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.privacy import Guarantee

__all__ = ["DEFAULT_TARGET_DELTA", "Totals", "compose", "plan_totals"]

#: The delta at which the RDP and PLD totals are read unless another is asked for.
DEFAULT_TARGET_DELTA = 1e-6


@dataclass(frozen=True)
class Totals:
    """A unit's total guarantee three ways (``epsilon = inf`` for a public unit)."""

    parts: int
    basic_epsilon: float
    basic_delta: float
    target_delta: float
    rdp_epsilon: float | None
    pld_epsilon: float | None
    notes: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, object]:
        """JSON data (``inf`` as the string ``"inf"``)."""
        def num(x: float | None) -> object:
            return None if x is None else ("inf" if math.isinf(x) else x)

        return {"parts": self.parts, "basic_epsilon": num(self.basic_epsilon), "basic_delta": self.basic_delta,
                "target_delta": self.target_delta, "rdp_epsilon": num(self.rdp_epsilon),
                "pld_epsilon": num(self.pld_epsilon), "notes": list(self.notes)}


def _parts(parts: Iterable[Guarantee | tuple[float, float] | float]) -> list[tuple[float, float]]:
    out = []
    for k, p in enumerate(parts):
        if isinstance(p, Guarantee):
            g = p
        elif isinstance(p, tuple) and len(p) == 2:
            g = Guarantee(p[0], p[1])
        else:
            try:
                g = Guarantee(p)  # type: ignore[arg-type]
            except (TypeError, ValueError) as exc:
                raise TypeError(f"parts[{k}] must be a Guarantee, (epsilon, delta) or epsilon, got {p!r}: {exc}") from None
        out.append((g.epsilon, g.delta))
    return out


def compose(parts: Sequence[Guarantee | tuple[float, float] | float], target_delta: float = DEFAULT_TARGET_DELTA,
            events: Sequence[object] | None = None) -> Totals:
    """The total guarantee of ``parts`` (releases on one unit) by basic composition, RDP and PLD.

    Parameters
    ----------
    parts
        :class:`~hybridpriv.core.privacy.Guarantee` objects, ``(epsilon, delta)`` pairs or epsilons.
        Parts with ``epsilon = 0`` (the release never read the unit) are left out.
    target_delta
        The delta the RDP and PLD totals are read at, in ``(0, 1)``.
    events
        Optionally, each part's privacy event (:mod:`hybridpriv.core.events`, in the unit's terms): the PLD
        total then composes the events themselves (a Gaussian release by its privacy-loss distribution, not
        as its worst-case ``(epsilon, delta)`` pair), and the RDP total too where dp-accounting's RDP
        accountant knows every part.

    Returns
    -------
    Totals
        ``basic_*`` always; ``pld_epsilon`` and ``rdp_epsilon`` when the parts are finite (a public
        part, ``epsilon = inf``, makes every total ``inf``); ``rdp_epsilon`` is ``None`` when a part has
        ``delta > 0``.

    Examples
    --------
    >>> t = compose([1.0] * 10, target_delta=1e-6)
    >>> t.basic_epsilon, t.pld_epsilon < 10, t.rdp_epsilon < 10
    (10.0, True, True)
    """
    if isinstance(target_delta, bool) or not isinstance(target_delta, (int, float)) or not 0 < target_delta < 1:
        raise ValueError(f"target_delta must be in (0, 1), got {target_delta!r}")
    items = [(e, d) for e, d in _parts(parts) if not (e == 0.0 and d == 0.0)]
    basic_e = math.fsum(e for e, _ in items)
    basic_d = math.fsum(d for _, d in items)
    if not items:
        return Totals(0, 0.0, 0.0, float(target_delta), 0.0, 0.0)
    if any(math.isinf(e) for e, _ in items):
        return Totals(len(items), math.inf, basic_d, float(target_delta), math.inf, math.inf,
                      ("a release gave this unit no promise (epsilon = inf)",))
    notes = []
    if events is not None:
        if len(events) != len(parts):
            raise ValueError(f"events must give one event per part ({len(parts)}), got {len(events)}")
        from ..core import events as ev

        total = ev.composed(list(events))
        pld_eps = min(ev.epsilon(total, target_delta), _pld(items, target_delta))
        rdp_eps = _rdp_events(total, target_delta)
        if rdp_eps is None:
            notes.append("RDP total not computed: dp-accounting's RDP accountant does not know every part")
        return Totals(len(items), basic_e, basic_d, float(target_delta), rdp_eps, pld_eps, tuple(notes))
    pld_eps = _pld(items, target_delta)
    rdp_eps = None
    if all(d == 0.0 for _, d in items):
        rdp_eps = _rdp(items, target_delta)
    else:
        notes.append("RDP total not computed: a release has delta > 0 and no noise description")
    return Totals(len(items), basic_e, basic_d, float(target_delta), rdp_eps, pld_eps, tuple(notes))


def _rdp_events(event: object, target_delta: float) -> float | None:
    """dp-accounting's RDP accountant on ``event`` (``None`` if it does not know a part)."""
    from dp_accounting import UnsupportedEventError
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    acc = rdp.RdpAccountant()
    try:
        acc.compose(event)
    except (UnsupportedEventError, ValueError, TypeError):
        return None
    return float(acc.get_epsilon(target_delta))


def _pld(items: list[tuple[float, float]], target_delta: float) -> float:
    from dp_accounting.pld import privacy_loss_distribution as pld_mod
    from dp_accounting.pld.common import DifferentialPrivacyParameters

    total = None
    for (e, d), count in Counter(items).items():
        one = pld_mod.from_privacy_parameters(DifferentialPrivacyParameters(e, d))
        part = one.self_compose(count) if count > 1 else one
        total = part if total is None else total.compose(part)
    return float(total.get_epsilon_for_delta(target_delta))


def _rdp(items: list[tuple[float, float]], target_delta: float) -> float:
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    orders = np.asarray(rdp.DEFAULT_RDP_ORDERS, dtype=float)
    curve = np.zeros_like(orders)
    for e, _ in items:
        curve += np.minimum(e, orders * e * e / 2.0)
    eps, _order = rdp.compute_epsilon(orders, curve, target_delta)
    return float(eps)


def plan_totals(mechanism: object, target_delta: float = DEFAULT_TARGET_DELTA) -> dict[str, Totals]:
    """A multi-release mechanism's total per unit, three ways: its ``ledger_plan()`` composed.

    ``ledger_plan()`` lists every release one run makes, as ``(label, {unit: epsilon})`` (hybrid
    K-means) or ``(label, epsilon)`` on the one unit ``"private"`` (Wang et al.'s Algorithm 2).
    The basic total equals the mechanism's declared ``privacy`` epsilon; the RDP and PLD totals
    (read at ``target_delta``) are what tighter accounting gives the same releases.
    """
    plan = getattr(mechanism, "ledger_plan", None)
    if not callable(plan):
        raise TypeError(f"mechanism must have a ledger_plan() listing its releases, got {type(mechanism).__name__}")
    parts: dict[str, list[float]] = {}
    for _label, spent in plan():
        for unit, eps in (spent.items() if isinstance(spent, Mapping) else [("private", spent)]):
            parts.setdefault(unit, []).append(float(eps))
    return {unit: compose(eps, target_delta) for unit, eps in parts.items()}
