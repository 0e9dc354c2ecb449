"""The protocols every family implements: :class:`Family` (:mod:`hybridpriv.core.family`) and the
kinds of data its mechanisms read, :class:`DataKind` (:mod:`hybridpriv.core.datakind`)."""

from .datakind import DataKind
from .family import Family, NoChecks, Unsupported

__all__ = ["DataKind", "Family", "NoChecks", "Unsupported"]
