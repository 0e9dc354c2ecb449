"""Privacy budget accounting: sequential composition per group, refusing to overspend.

An :class:`Accountant` holds a budget ``(epsilon, delta)`` for every privacy group (``inf``
for public groups) and records releases.  Each release spends ``(epsilon_i, delta_i)`` on some
groups; under sequential composition the totals add up (basic composition: the sum of the
epsilons and the sum of the deltas is a valid guarantee for any sequence of releases on the
same records).  A release that would take any group past its budget is refused *before*
anything is recorded, with an error naming the group, the budget and what was asked.

Mechanisms that spend a budget in parts (a subset chosen with part of the budget and released
with the rest, K-means iterations, local users' per-coordinate splits) call
:meth:`Accountant.spend` once per part, so the total is computed, not asserted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from numbers import Real
from types import MappingProxyType

import numpy as np
import xarray as xr

from .core.privacy import Group, Guarantee, check_epsilon

__all__ = ["Accountant", "BudgetExceededError", "RTOL", "Release", "split_budget"]

#: Relative slack for floating-point sums of budget parts (a spend may exceed a budget by this
#: fraction of it, never by an absolute amount: tiny budgets are honoured too).
RTOL = 1e-9


class BudgetExceededError(ValueError):
    """A release would spend more than a group's budget."""


@dataclass(frozen=True)
class Release:
    """One recorded release: what it spent on each group."""

    label: str
    epsilon: Mapping[str, float]
    delta: Mapping[str, float]


def _check_delta(delta: object, name: str) -> float:
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {delta!r}")
    d = float(delta)
    if not 0.0 <= d < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {delta!r}")
    return d


def _as_float(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    return float(value)


def split_budget(epsilon: float, fractions: Sequence[float]) -> list[float]:
    """Split ``epsilon`` into parts proportional to ``fractions`` (which must be > 0).

    >>> split_budget(2.0, [0.8, 0.2, 1.0])
    [0.8, 0.2, 1.0]
    """
    eps = check_epsilon(epsilon, allow_inf=False)
    f = np.asarray(fractions, dtype=float)
    if f.ndim != 1 or f.size == 0 or np.isnan(f).any() or (f <= 0).any() or np.isinf(f).any():
        raise ValueError(f"fractions must be a non-empty list of finite numbers > 0, got {list(fractions)!r}")
    return [float(x) for x in eps * f / f.sum()]


class _Total:
    """A compensated (Neumaier) running sum: adding thousands of small parts stays exact to rounding."""

    __slots__ = ("sum", "comp")

    def __init__(self) -> None:
        self.sum, self.comp = 0.0, 0.0

    def value(self) -> float:
        return self.sum + self.comp

    def plus(self, x: float) -> tuple[float, float]:
        t = self.sum + x
        if math.isinf(t) or math.isinf(x):
            return t, 0.0
        comp = self.comp + ((self.sum - t) + x if abs(self.sum) >= abs(x) else (x - t) + self.sum)
        return t, comp


class Accountant:
    """Per-group budgets and the releases spent against them (basic sequential composition).

    Parameters
    ----------
    budgets
        ``{group name: (epsilon, delta)}`` (or just epsilon); ``epsilon = inf`` means no limit (public).

    The budgets and the ledger cannot be changed after construction except by :meth:`spend`
    (``budgets`` is a read-only mapping, ``releases`` a tuple).  Spending is checked against the
    budgets with a relative tolerance :data:`RTOL` only, in constant time per release (running
    compensated totals).  A composite release spends all its parts or none: group them in
    :meth:`transaction`.

    Examples
    --------
    >>> acc = Accountant.for_groups([Group("a", 10, 1.0), Group("b", 5, 0.5)])
    >>> acc.spend(0.4, label="choose the subset")
    >>> acc.spend({"a": 0.6, "b": 0.1}, label="release")
    >>> acc.spent_epsilon()
    {'a': 1.0, 'b': 0.5}
    """

    def __init__(self, budgets: Mapping[str, tuple[float, float] | float]) -> None:
        if not isinstance(budgets, Mapping) or not budgets:
            raise ValueError("budgets must be a non-empty mapping {group: (epsilon, delta)}")
        clean = {}
        for name, value in budgets.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                value = (value, 0.0)
            if not isinstance(value, (tuple, list)) or len(value) != 2:
                raise ValueError(f"budget of group {name!r} must be (epsilon, delta), got {value!r}")
            clean[str(name)] = (
                check_epsilon(value[0], f"budget epsilon of group {name!r}"),
                _check_delta(value[1], f"budget delta of group {name!r}"),
            )
        self._budgets = MappingProxyType(clean)
        self._releases: list[Release] = []
        self._eps = {g: _Total() for g in clean}
        self._delta = {g: _Total() for g in clean}
        self._staged: list[list[Release]] = []

    @property
    def budgets(self) -> Mapping[str, tuple[float, float]]:
        """``{group: (epsilon, delta)}`` (read-only)."""
        return self._budgets

    @property
    def releases(self) -> tuple[Release, ...]:
        """The recorded releases, in order (read-only)."""
        return tuple(self._releases)

    def __repr__(self) -> str:
        return f"Accountant(budgets={dict(self._budgets)!r}, releases={len(self._releases)})"

    @classmethod
    def for_groups(cls, groups: Iterable[Group]) -> Accountant:
        """An accountant whose budgets are the groups' own ``(epsilon, delta)``."""
        return cls({g.name: (g.epsilon, g.delta) for g in groups})

    # -- spending -------------------------------------------------------------------
    def _per_group(self, value: float | Mapping[str, float], groups: Sequence[str] | None, what: str) -> dict[str, float]:
        if isinstance(value, Mapping):
            unknown = [g for g in value if g not in self._budgets]
            if unknown:
                raise ValueError(f"{what} names unknown group(s) {unknown}; known: {list(self._budgets)}")
            return {str(k): _as_float(v, f"{what} spent on group {k!r}") for k, v in value.items()}
        names = list(self._budgets) if groups is None else list(groups)
        unknown = [g for g in names if g not in self._budgets]
        if unknown:
            raise ValueError(f"groups names unknown group(s) {unknown}; known: {list(self._budgets)}")
        v = _as_float(value, f"{what} spent")
        return {g: v for g in names}

    def spend(
        self,
        epsilon: float | Mapping[str, float],
        delta: float | Mapping[str, float] = 0.0,
        groups: Sequence[str] | None = None,
        label: str = "",
    ) -> None:
        """Record a release spending ``epsilon`` (and ``delta``) on ``groups`` (default: all).

        ``epsilon`` and ``delta`` may be mappings by group name.  Raises
        :class:`BudgetExceededError` (nothing recorded) if any group would exceed its budget.
        """
        eps = self._per_group(epsilon, groups, "epsilon")
        dlt = self._per_group(delta, groups if not isinstance(delta, Mapping) else None, "delta")
        for g, e in eps.items():
            if math.isnan(e) or e < 0:
                raise ValueError(f"epsilon spent on group {g!r} must be >= 0, got {e!r}")
        for g, d in dlt.items():
            _check_delta(d, f"delta spent on group {g!r}")
        new_e = {g: self._eps[g].plus(e) for g, e in eps.items()}
        new_d = {g: self._delta[g].plus(d) for g, d in dlt.items()}
        for g in set(eps) | set(dlt):
            be, bd = self._budgets[g]
            te = sum(new_e[g]) if g in new_e else self._eps[g].value()
            td = sum(new_d[g]) if g in new_d else self._delta[g].value()
            if te > be * (1 + RTOL) or td > bd * (1 + RTOL):
                raise BudgetExceededError(
                    f"release {label or '(unnamed)'!r} would spend epsilon={te:g}, delta={td:g} on group "
                    f"{g!r}, over its budget epsilon={be:g}, delta={bd:g} (already spent "
                    f"epsilon={self._eps[g].value():g}, delta={self._delta[g].value():g})"
                )
        for g, (t, c) in new_e.items():
            self._eps[g].sum, self._eps[g].comp = t, c
        for g, (t, c) in new_d.items():
            self._delta[g].sum, self._delta[g].comp = t, c
        release = Release(label, eps, dlt)
        self._releases.append(release)
        if self._staged:
            self._staged[-1].append(release)

    @contextmanager
    def transaction(self) -> Iterator[Accountant]:
        """All or nothing: the spends inside the block are undone if the block raises.

        >>> acc = Accountant({"a": 1.0})
        >>> with acc.transaction():
        ...     acc.spend(0.5, label="part 1")
        ...     acc.spend(0.5, label="part 2")
        """
        self._staged.append([])
        try:
            yield self
        except BaseException:
            for r in reversed(self._staged.pop()):
                self._undo(r)
            raise
        else:
            done = self._staged.pop()
            if self._staged:
                self._staged[-1].extend(done)

    def _undo(self, release: Release) -> None:
        index = next(i for i in range(len(self._releases) - 1, -1, -1) if self._releases[i] is release)
        del self._releases[index]
        self._recompute()

    def _recompute(self) -> None:
        self._eps = {g: _Total() for g in self._budgets}
        self._delta = {g: _Total() for g in self._budgets}
        for r in self._releases:
            for totals, parts in ((self._eps, r.epsilon), (self._delta, r.delta)):
                for g, x in parts.items():
                    totals[g].sum, totals[g].comp = totals[g].plus(x)

    def spend_guarantee(self, guarantee: Mapping[str, Guarantee], label: str = "") -> None:
        """Record one release of a mechanism that promises ``guarantee`` (by group).

        Groups promised ``inf`` (public records, no promise) spend ``inf`` of an ``inf`` budget.
        """
        eps = {g: float(x.epsilon) for g, x in guarantee.items()}
        dlt = {g: float(x.delta) for g, x in guarantee.items()}
        self.spend(eps, dlt, label=label)

    def charge(self, mechanism, label: str | None = None) -> None:
        """Record one release of ``mechanism`` (any family): its declared ``privacy``, unit by unit.

        Every unit the mechanism promises a finite epsilon must be a group of this accountant;
        units it promises nothing (``epsilon = inf``: public records) are charged only if the
        accountant tracks them.  All or nothing, like :meth:`spend`.
        """
        privacy = getattr(mechanism, "privacy", None)
        if not isinstance(privacy, Mapping) or not all(isinstance(g, Guarantee) for g in privacy.values()):
            raise TypeError(f"mechanism must declare privacy as {{unit: Guarantee}} (a hybridpriv Mechanism), "
                            f"got {type(mechanism).__name__}")
        units = {u: g for u, g in privacy.items() if u in self._budgets or math.isfinite(g.epsilon)}
        unknown = [u for u in units if u not in self._budgets]
        if unknown:
            raise ValueError(f"mechanism {getattr(mechanism, 'label', '')!r} protects unit(s) {unknown} that this "
                             f"accountant has no budget for; known: {list(self._budgets)}")
        name = label if label is not None else str(getattr(mechanism, "label", type(mechanism).__name__))
        self.spend_guarantee(units, label=name)

    # -- totals -------------------------------------------------------------------------
    def spent_epsilon(self) -> dict[str, float]:
        """Total epsilon spent per group (sum over releases)."""
        return {g: t.value() for g, t in self._eps.items()}

    def spent_delta(self) -> dict[str, float]:
        """Total delta spent per group (sum over releases)."""
        return {g: t.value() for g, t in self._delta.items()}

    def remaining_epsilon(self) -> dict[str, float]:
        spent = self.spent_epsilon()
        return {g: self.budgets[g][0] - spent[g] for g in self.budgets}

    def to_xarray(self) -> xr.Dataset:
        """Budgets and totals per group, and the ledger, for results files."""
        names = list(self.budgets)
        labels = [r.label or f"release {k}" for k, r in enumerate(self.releases)]
        return xr.Dataset(
            {
                "budget_epsilon": ("group", [self.budgets[g][0] for g in names]),
                "budget_delta": ("group", [self.budgets[g][1] for g in names]),
                "spent_epsilon": ("group", [self.spent_epsilon()[g] for g in names]),
                "spent_delta": ("group", [self.spent_delta()[g] for g in names]),
                "release_epsilon": (("release", "group"), [[r.epsilon.get(g, 0.0) for g in names] for r in self.releases])
                if self.releases
                else (("release", "group"), np.zeros((0, len(names)))),
            },
            coords={"group": names, "release": labels},
        )
