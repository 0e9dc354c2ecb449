"""The protocols every family implements (:mod:`hybridpriv.core.family`)."""

from .family import Family, NoChecks, Unsupported

__all__ = ["Family", "NoChecks", "Unsupported"]
