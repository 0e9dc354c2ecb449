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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from .privacy import Group, Guarantee, check_epsilon

__all__ = ["Accountant", "BudgetExceededError", "Release", "split_budget"]

_SLACK = 1e-12  # relative slack for floating-point sums of budget parts


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


@dataclass
class Accountant:
    """Per-group budgets and the releases spent against them (basic sequential composition).

    Parameters
    ----------
    budgets
        ``{group name: (epsilon, delta)}``; ``epsilon = inf`` means no limit (public).

    Examples
    --------
    >>> acc = Accountant.for_groups([Group("a", 10, 1.0), Group("b", 5, 0.5)])
    >>> acc.spend(0.4, label="choose the subset")
    >>> acc.spend({"a": 0.6, "b": 0.1}, label="release")
    >>> acc.spent_epsilon()
    {'a': 1.0, 'b': 0.5}
    """

    budgets: Mapping[str, tuple[float, float]]
    releases: list[Release] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.budgets, Mapping) or not self.budgets:
            raise ValueError("budgets must be a non-empty mapping {group: (epsilon, delta)}")
        clean = {}
        for name, value in self.budgets.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                value = (value, 0.0)
            if not isinstance(value, (tuple, list)) or len(value) != 2:
                raise ValueError(f"budget of group {name!r} must be (epsilon, delta), got {value!r}")
            clean[str(name)] = (
                check_epsilon(value[0], f"budget epsilon of group {name!r}"),
                _check_delta(value[1], f"budget delta of group {name!r}"),
            )
        self.budgets = clean

    @classmethod
    def for_groups(cls, groups: Iterable[Group]) -> Accountant:
        """An accountant whose budgets are the groups' own ``(epsilon, delta)``."""
        return cls({g.name: (g.epsilon, g.delta) for g in groups})

    # -- spending -------------------------------------------------------------------
    def _per_group(self, value: float | Mapping[str, float], groups: Sequence[str] | None, what: str) -> dict[str, float]:
        if isinstance(value, Mapping):
            unknown = [g for g in value if g not in self.budgets]
            if unknown:
                raise ValueError(f"{what} names unknown group(s) {unknown}; known: {list(self.budgets)}")
            return {str(k): float(v) for k, v in value.items()}
        names = list(self.budgets) if groups is None else list(groups)
        unknown = [g for g in names if g not in self.budgets]
        if unknown:
            raise ValueError(f"groups names unknown group(s) {unknown}; known: {list(self.budgets)}")
        return {g: value for g in names}  # type: ignore[misc]

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
            if isinstance(e, bool) or math.isnan(e) or e < 0:
                raise ValueError(f"epsilon spent on group {g!r} must be >= 0, got {e!r}")
        for g, d in dlt.items():
            _check_delta(d, f"delta spent on group {g!r}")
        spent_e, spent_d = self.spent_epsilon(), self.spent_delta()
        for g in set(eps) | set(dlt):
            be, bd = self.budgets[g]
            new_e = spent_e[g] + eps.get(g, 0.0)
            new_d = spent_d[g] + dlt.get(g, 0.0)
            if new_e > be * (1 + _SLACK) + _SLACK or new_d > bd * (1 + _SLACK) + _SLACK:
                raise BudgetExceededError(
                    f"release {label or '(unnamed)'!r} would spend epsilon={new_e:g}, delta={new_d:g} on group "
                    f"{g!r}, over its budget epsilon={be:g}, delta={bd:g} (already spent epsilon={spent_e[g]:g}, "
                    f"delta={spent_d[g]:g})"
                )
        self.releases.append(Release(label, eps, dlt))

    def spend_guarantee(self, guarantee: Mapping[str, Guarantee], label: str = "") -> None:
        """Record one release of a mechanism that promises ``guarantee`` (by group).

        Groups promised ``inf`` (public records, no promise) spend ``inf`` of an ``inf`` budget.
        """
        eps = {g: float(x.epsilon) for g, x in guarantee.items()}
        dlt = {g: float(x.delta) for g, x in guarantee.items()}
        self.spend(eps, dlt, label=label)

    # -- totals -------------------------------------------------------------------------
    def spent_epsilon(self) -> dict[str, float]:
        """Total epsilon spent per group (sum over releases)."""
        out = dict.fromkeys(self.budgets, 0.0)
        for r in self.releases:
            for g, e in r.epsilon.items():
                out[g] += e
        return out

    def spent_delta(self) -> dict[str, float]:
        """Total delta spent per group (sum over releases)."""
        out = dict.fromkeys(self.budgets, 0.0)
        for r in self.releases:
            for g, d in r.delta.items():
                out[g] += d
        return out

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
