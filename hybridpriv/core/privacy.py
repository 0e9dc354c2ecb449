"""Privacy groups, data bounds and per-group guarantees.

A *group* is a set of records that share one privacy requirement: a size, an epsilon
(``math.inf`` for public records) and an optional delta.  *Bounds* declare the range
``[lower, upper]`` every record lies in; clamping records into it is an explicit step
(:meth:`Bounds.clamp`), never a silent one.

Every validation error names the parameter and the bad value, for example
``epsilon must be > 0, got -1``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

__all__ = [
    "Bounds",
    "Group",
    "Guarantee",
    "MAX_BOUND",
    "NEIGHBOUR_RELATIONS",
    "NOT_READ",
    "TRUST_MODELS",
    "check_epsilon",
    "check_finite",
    "check_groups",
    "check_group_data",
    "check_integer",
    "check_positive",
    "check_real_array",
    "smallest_private_epsilon",
]

#: Neighbouring relations an estimator can declare.  ``"add-remove"``: the neighbour has one
#: record of a group more or less (sensitivity of a sum: ``max(|a|, |b|)``);
#: ``"replace"``: one record of a group is changed to another value in the bounds
#: (sensitivity of a sum: ``b - a``).
NEIGHBOUR_RELATIONS = ("add-remove", "replace")

#: Largest magnitude of a bound: squared errors (and sums of squares over thousands of records)
#: of values up to this stay finite in float64.
MAX_BOUND = 1e150

#: Whom a promise holds against.  ``"central"``: anyone who sees the release (the curator is
#: trusted); ``"local"``: also the curator (each user randomises their own report).
TRUST_MODELS = ("central", "local")


def _is_real(x: object) -> bool:
    return isinstance(x, Real) and not isinstance(x, bool)


def check_real_array(values: object, name: str) -> np.ndarray:
    """Return ``values`` as a float array after checking they are real numbers.

    Strings (even numeric ones such as ``"1"``), bytes, complex numbers, dates and objects
    that are not real numbers raise ``TypeError`` naming ``name``; booleans count as 0/1.
    Only the type is checked here: NaN and infinities are left to the caller.
    """
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric: {exc}") from None
    if arr.dtype.kind == "O":
        bad = next((v for v in arr.flat if not isinstance(v, (Real, np.bool_))), None)
        if bad is not None:
            raise TypeError(f"{name} must be numeric (real numbers), got {bad!r}")
    elif arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric (real numbers), got dtype {arr.dtype}")
    return arr.astype(float, copy=False)  # no copy of float arrays (nor of broadcast views)


def check_epsilon(epsilon: object, name: str = "epsilon", allow_inf: bool = True) -> float:
    """Return ``epsilon`` as a float after checking it is a number > 0 (``inf`` = public)."""
    if not _is_real(epsilon):
        raise TypeError(f"{name} must be a real number, got {epsilon!r}")
    value = float(epsilon)  # type: ignore[arg-type]
    if math.isnan(value):
        raise ValueError(f"{name} must be > 0, got nan")
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {epsilon!r}")
    if math.isinf(value) and not allow_inf:
        raise ValueError(f"{name} must be finite, got {epsilon!r}")
    return value


def check_integer(value: object, name: str, minimum: int = 1) -> int:
    """Return ``value`` as an int after checking it is an integer (not a bool) >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_finite(value: object, name: str) -> float:
    """Return ``value`` as a float after checking it is a finite real number."""
    if not _is_real(value):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    v = float(value)  # type: ignore[arg-type]
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return v


def check_positive(value: object, name: str, allow_zero: bool = False) -> float:
    """Return ``value`` as a finite float after checking it is > 0 (or >= 0)."""
    if not _is_real(value):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    v = float(value)  # type: ignore[arg-type]
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>=' if allow_zero else '>'} 0, got {value!r}")
    return v


def _nonnegative_or_inf(value: object, name: str) -> float:
    """Return ``value`` as a float after checking it is a number >= 0 (``inf`` allowed, NaN not)."""
    if not _is_real(value):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    v = float(value)  # type: ignore[arg-type]
    if math.isnan(v) or v < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return v


@dataclass(frozen=True)
class Guarantee:
    """A differential-privacy promise to one protected unit (a group of records, or every user).

    The same class states what a mechanism *promises* (its :attr:`privacy` declaration) and what a
    unit *requires* (:meth:`Group.requirement`); :meth:`satisfies` compares the two.

    Parameters
    ----------
    epsilon, delta
        The (epsilon, delta)-DP guarantee for every record of the unit.  ``epsilon = inf``
        means no promise (public records).
    relation
        The neighbouring relation the promise is for, one of :data:`NEIGHBOUR_RELATIONS`.
    trust
        ``"central"`` (against anyone who sees the release) or ``"local"`` (also against the
        curator), one of :data:`TRUST_MODELS`.
    """

    epsilon: float
    delta: float = 0.0
    relation: str = "add-remove"
    trust: str = "central"

    def __post_init__(self) -> None:
        # epsilon = 0 is allowed: records a release never reads get a perfect promise
        object.__setattr__(self, "epsilon", _nonnegative_or_inf(self.epsilon, "guarantee epsilon"))
        if not _is_real(self.delta):
            raise TypeError(f"guarantee delta must be a real number, got {self.delta!r}")
        if not 0.0 <= float(self.delta) < 1.0:
            raise ValueError(f"guarantee delta must be in [0, 1), got {self.delta!r}")
        object.__setattr__(self, "delta", float(self.delta))
        if self.relation not in NEIGHBOUR_RELATIONS:
            raise ValueError(f"guarantee relation must be one of {NEIGHBOUR_RELATIONS}, got {self.relation!r}")
        if self.trust not in TRUST_MODELS:
            raise ValueError(f"guarantee trust must be one of {TRUST_MODELS}, got {self.trust!r}")

    @property
    def is_public(self) -> bool:
        """True for no promise (``epsilon = inf``)."""
        return math.isinf(self.epsilon)

    def as_relation(self, relation: str) -> tuple[float, float]:
        """The ``(epsilon, delta)`` this promise gives under ``relation``.

        The same relation: itself.  Add/remove-one implies replace-one (a replacement is a
        removal and an addition) at ``(2 epsilon, (1 + e^epsilon) delta)`` (group privacy for two
        changes).  Replace-one does not imply add/remove-one (the number of records may be
        what leaks): ``(inf, 0)``, unless the promise is perfect (``epsilon = delta = 0``).
        """
        if relation not in NEIGHBOUR_RELATIONS:
            raise ValueError(f"relation must be one of {NEIGHBOUR_RELATIONS}, got {relation!r}")
        if relation == self.relation or (self.epsilon == 0.0 and self.delta == 0.0):
            return self.epsilon, self.delta
        if self.relation == "add-remove":  # required: replace
            if math.isinf(self.epsilon):
                return math.inf, 0.0
            return 2.0 * self.epsilon, min(1.0, (1.0 + math.exp(min(self.epsilon, 700.0))) * self.delta)
        return math.inf, 0.0

    def charge_to(self, unit: Guarantee) -> Guarantee:
        """What a release promising this costs a unit whose budget (or requirement) is ``unit``.

        The promise restated in ``unit``'s relation and trust model, so it can be compared with and
        added to that unit's budget: :meth:`as_relation` for the relation (add/remove ``eps`` costs a
        replace-one budget ``2 eps``; replace-one costs an add/remove budget ``inf``); a central
        promise costs a local-trust unit ``inf`` (it says nothing about what the curator learns),
        a local promise costs a central unit its own epsilon (the release is a post-processing of
        the local reports).  A perfect promise (``epsilon = delta = 0``: the unit is never read)
        costs nothing under any relation and trust.  A delta that reaches 1 is no promise: ``inf``.

        Examples
        --------
        >>> Guarantee(0.5, relation="add-remove").charge_to(Guarantee(1.0, relation="replace"))
        Guarantee(epsilon=1.0, delta=0.0, relation='replace', trust='central')
        >>> Guarantee(0.5).charge_to(Guarantee(1.0, trust="local")).epsilon
        inf
        """
        if not isinstance(unit, Guarantee):
            raise TypeError(f"unit must be a Guarantee (the unit's budget), got {type(unit).__name__}")
        perfect = self.epsilon == 0.0 and self.delta == 0.0
        if unit.trust == "local" and self.trust != "local" and not perfect:
            return Guarantee(math.inf, 0.0, unit.relation, unit.trust)
        eps, delta = self.as_relation(unit.relation)
        if delta >= 1.0:
            eps, delta = math.inf, 0.0
        return Guarantee(eps, delta, unit.relation, unit.trust)

    def satisfies(self, required: Guarantee, rtol: float = 1e-9) -> bool:
        """Whether this promise gives at least the protection ``required`` asks for.

        Compares epsilon *and* delta of what the promise costs the unit (:meth:`charge_to`: under
        the required relation and trust model; a central promise does not meet a local requirement
        unless it is perfect).  A public requirement
        (``epsilon = inf``) is met by anything.  ``rtol``: relative slack for rounding.
        """
        if not isinstance(required, Guarantee):
            raise TypeError(f"required must be a Guarantee, got {type(required).__name__}")
        if required.is_public:
            return True
        cost = self.charge_to(required)
        return cost.epsilon <= required.epsilon * (1.0 + rtol) and cost.delta <= required.delta * (1.0 + rtol)

    def __str__(self) -> str:
        if math.isinf(self.epsilon):
            return "public (no promise)"
        d = f", delta={self.delta:g}" if self.delta else ""
        t = ", local" if self.trust == "local" else ""
        return f"epsilon={self.epsilon:g}{d} ({self.relation}{t})"


#: What a built-in mechanism promises a unit its declaration leaves out: a unit it never reads leaks nothing
#: (``epsilon = 0``, local: it satisfies every requirement).  The selection and the release read it the same way.
NOT_READ = Guarantee(0.0, 0.0, "add-remove", "local")


@dataclass(frozen=True)
class Group:
    """A privacy group: records that share one privacy requirement.

    Parameters
    ----------
    name
        A label, unique within a study.
    size
        Number of records (a public quantity, as in the papers).
    epsilon
        The group's epsilon; ``math.inf`` marks public records.
    delta
        Optional delta for approximate DP (0 for pure DP).
    trust
        ``"central"`` (default: the group trusts the curator) or ``"local"`` (its users only
        trust their own device: every promise to them must hold against the curator too).

    Examples
    --------
    >>> Group("public", 200, math.inf).is_public
    True
    >>> Group("opt-in", 1000, 1.0)
    Group(name='opt-in', size=1000, epsilon=1.0, delta=0.0, trust='central')
    """

    name: str
    size: int
    epsilon: float
    delta: float = 0.0
    trust: str = "central"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"group name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.size, Integral) or isinstance(self.size, bool):
            raise TypeError(f"group {self.name!r}: size must be an integer, got {self.size!r}")
        if self.size < 1:
            raise ValueError(f"group {self.name!r}: size must be >= 1 (empty groups are not allowed), got {self.size!r}")
        object.__setattr__(self, "size", int(self.size))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, f"group {self.name!r}: epsilon"))
        if not _is_real(self.delta):
            raise TypeError(f"group {self.name!r}: delta must be a real number, got {self.delta!r}")
        d = float(self.delta)
        if not (0.0 <= d < 1.0):
            raise ValueError(f"group {self.name!r}: delta must be in [0, 1), got {self.delta!r}")
        object.__setattr__(self, "delta", d)
        if self.trust not in TRUST_MODELS:
            raise ValueError(f"group {self.name!r}: trust must be one of {TRUST_MODELS}, got {self.trust!r}")

    @property
    def is_public(self) -> bool:
        """True for public records (epsilon = inf)."""
        return math.isinf(self.epsilon)

    def requirement(self, relation: str = "add-remove") -> Guarantee:
        """What the group asks for, as a :class:`Guarantee` under ``relation``."""
        return Guarantee(self.epsilon, self.delta, relation, self.trust)


@dataclass(frozen=True)
class Bounds:
    """The declared range ``[lower, upper]`` of every record.

    Parameters
    ----------
    lower, upper
        Finite numbers with ``lower < upper``.

    Notes
    -----
    The paper's sensitivity of a sum under add/remove-one neighbours is
    ``r = max(|lower|, |upper|)``; under replace-one neighbours it is ``upper - lower``.
    """

    lower: float
    upper: float

    def __post_init__(self) -> None:
        for name in ("lower", "upper"):
            v = getattr(self, name)
            if not _is_real(v):
                raise TypeError(f"bounds {name} must be a real number, got {v!r}")
            if not math.isfinite(float(v)):
                raise ValueError(f"bounds {name} must be finite, got {v!r}")
            object.__setattr__(self, name, float(v))
        if not self.lower < self.upper:
            raise ValueError(f"bounds must satisfy lower < upper, got [{self.lower:g}, {self.upper:g}]")
        if max(abs(self.lower), abs(self.upper)) > MAX_BOUND:
            raise ValueError(
                f"bounds must lie within +-{MAX_BOUND:g} (squared errors of larger values overflow), "
                f"got [{self.lower:g}, {self.upper:g}]"
            )

    @classmethod
    def from_pair(cls, pair: object) -> Bounds:
        """Build from ``(lower, upper)`` or return an existing :class:`Bounds`."""
        if isinstance(pair, Bounds):
            return pair
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Iterable):
            raise TypeError(f"bounds must be a pair (lower, upper), got {pair!r}")
        items = list(pair)  # type: ignore[arg-type]
        if len(items) != 2:
            raise ValueError(f"bounds must be a pair (lower, upper), got {pair!r}")
        return cls(items[0], items[1])

    @property
    def width(self) -> float:
        return self.upper - self.lower

    @property
    def midpoint(self) -> float:
        return 0.5 * (self.lower + self.upper)

    def sum_sensitivity(self, relation: str = "add-remove") -> float:
        """Sensitivity of a sum of records under ``relation`` (see :data:`NEIGHBOUR_RELATIONS`)."""
        if relation == "add-remove":
            return max(abs(self.lower), abs(self.upper))
        if relation == "replace":
            return self.width
        raise ValueError(f"relation must be one of {NEIGHBOUR_RELATIONS}, got {relation!r}")

    def clamp(self, values: np.ndarray) -> np.ndarray:
        """Return ``values`` clipped into ``[lower, upper]`` (the documented clamping step).

        NaN is an error, not something to clip.
        """
        arr = check_real_array(values, "values")
        if np.isnan(arr).any():
            raise ValueError("values contain NaN; clamping does not repair missing values")
        return np.clip(arr, self.lower, self.upper)

    def check(self, values: np.ndarray, name: str = "data") -> np.ndarray:
        """Return ``values`` as floats after checking they are finite and inside the bounds."""
        arr = check_real_array(values, name)
        if np.isnan(arr).any():
            raise ValueError(f"{name} contains NaN")
        outside = (arr < self.lower) | (arr > self.upper)
        if outside.any():
            bad = arr[outside].flat[0]
            raise ValueError(
                f"{name} has {int(outside.sum())} value(s) outside bounds "
                f"[{self.lower:g}, {self.upper:g}] (first: {bad:g}); clamp them with Bounds.clamp or clamp=True"
            )
        return arr


def check_groups(groups: object) -> tuple[Group, ...]:
    """Return ``groups`` as a tuple after checking it is a non-empty sequence of unique groups."""
    if isinstance(groups, Group):
        groups = [groups]
    if not isinstance(groups, Sequence) or isinstance(groups, (str, bytes)):
        raise TypeError(f"groups must be a sequence of Group, got {type(groups).__name__}")
    if len(groups) == 0:
        raise ValueError("groups must hold at least one group, got an empty sequence")
    for g in groups:
        if not isinstance(g, Group):
            raise TypeError(f"groups must hold Group objects, got {g!r}")
    names = [g.name for g in groups]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"group names must be unique, got duplicates {dup}")
    return tuple(groups)


def smallest_private_epsilon(groups: Sequence[Group]) -> float:
    """The smallest epsilon among ``groups`` (``inf`` when all are public)."""
    return min(g.epsilon for g in groups)


def check_group_data(
    data: object,
    groups: Sequence[Group],
    bounds: Bounds,
    clamp: bool = False,
) -> tuple[list[np.ndarray], bool]:
    """Validate the data handed to an estimator.

    Parameters
    ----------
    data
        One array per group (a sequence in group order, or a mapping by group name), each of
        shape ``(n_i,)`` or ``(trials, n_i)`` with ``n_i`` the group's declared size.
    groups, bounds
        The setting the estimator was built for.
    clamp
        Clip values into the bounds instead of raising on values outside them.

    Returns
    -------
    arrays, batched
        Float arrays of shape ``(trials, n_i)`` and whether the input had a trial axis.
    """
    if isinstance(data, Mapping):
        missing = [g.name for g in groups if g.name not in data]
        extra = [k for k in data if k not in {g.name for g in groups}]
        if missing or extra:
            raise ValueError(f"data must have one entry per group; missing {missing}, unknown {extra}")
        data = [data[g.name] for g in groups]
    if isinstance(data, np.ndarray) or not isinstance(data, Sequence) or isinstance(data, (str, bytes)):
        raise TypeError("data must be a sequence with one array per group (or a mapping by group name)")
    if len(data) != len(groups):
        raise ValueError(f"data must hold one array per group: expected {len(groups)}, got {len(data)}")
    arrays = []
    ndims = set()
    for g, x in zip(groups, data):
        arr = check_real_array(x, f"data for group {g.name!r}")
        if arr.ndim not in (1, 2):
            raise ValueError(f"data for group {g.name!r} must have shape (n,) or (trials, n), got {arr.shape}")
        if arr.shape[-1] != g.size:
            raise ValueError(f"data for group {g.name!r} must have {g.size} records (its declared size), got {arr.shape[-1]}")
        if clamp:
            if np.isnan(arr).any():
                raise ValueError(f"data for group {g.name!r} contains NaN (clamping does not repair missing values)")
            arr = bounds.clamp(arr)
        else:
            arr = bounds.check(arr, name=f"data for group {g.name!r}")
        ndims.add(arr.ndim)
        arrays.append(arr)
    if len(ndims) > 1:
        raise ValueError("data arrays must all have a trial axis or none")
    batched = ndims == {2}
    if batched:
        trials = {a.shape[0] for a in arrays}
        if len(trials) > 1:
            raise ValueError(f"data arrays must share the trial axis length, got {sorted(trials)}")
        if trials == {0}:
            raise ValueError("data must hold at least one trial, got 0")
    else:
        arrays = [a[np.newaxis, :] for a in arrays]
    return arrays, batched
