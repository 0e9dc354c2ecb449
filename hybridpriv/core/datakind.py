"""What a mechanism reads: a :class:`DataKind`, defined by the family that owns it.

The audit needs, for each kind of data, the neighbouring pairs that change one record (or user) of a
protected unit as much as the unit's relation allows; the engine needs to tell a dataset's kind.  A
family defines the data kinds it introduces (:attr:`hybridpriv.core.family.Family.defines`), and
:func:`hybridpriv.families.data_kinds` collects them, so the audit of a new kind of data needs no edit
outside its family.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

__all__ = ["DataKind"]


class DataKind:
    """The protocol of a kind of data (subclass it; its family registers one instance).

    ``name`` is what mechanisms declare as their ``data_kind``.
    """

    name: ClassVar[str] = ""

    def __repr__(self) -> str:
        return f"<data kind {self.name!r}>"

    def check_mechanism(self, mechanism: Any) -> None:
        """Raise ``TypeError`` if ``mechanism`` lacks what this kind's audit reads of it."""

    def base(self, mechanism: Any, data: Any) -> Any:
        """The base dataset of an audit, checked (and converted) for ``mechanism``."""
        return data

    def sampler(self, mechanism: Any) -> Callable[[Any, Any, int], Any] | None:
        """A faster ``sampler(data, rng, size)`` for the audit than ``mechanism.release``, or ``None``."""
        return None

    def neighbouring_pairs(self, mechanism: Any, data: Any, unit: str, guarantee: Any, record: int) -> list:
        """Every candidate pair of datasets that changes one record (or user) of ``unit`` as much as
        ``guarantee.relation`` allows, worst first (:class:`hybridpriv.testing.NeighbouringPair`)."""
        raise NotImplementedError(f"data kind {self.name!r} defines no neighbouring pairs")

    def default_task(self) -> Any:
        """The task ``evaluate`` scores this kind's candidates with when none is given (``None``: one must be)."""
        return None

    def check_candidate(self, mechanism: Any, source: Any, coordinate: Any) -> None:
        """Refuse (``ValueError`` naming ``coordinate``) a candidate built for another setting than ``source``'s."""

    def recognises(self, data: Any) -> bool:
        """Whether ``data`` (without a ``data_kind`` attribute) is of this kind (e.g. a SciPy matrix)."""
        return False
