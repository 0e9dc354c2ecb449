"""The grouped family (:class:`~hybridpriv.families.grouped.family.GroupedFamily`): its data and sources
(``data``: :class:`GroupedDataset`, :class:`IIDSource`, :func:`normal_source`), its task (``task``:
:class:`Statistic`), its SPEC (``spec``), its private-data loader (``release``) and the family object that
ties them (``family``, imported when first asked for)."""

from .data import (BetaSampler, GroupedDataset, IIDSource, NormalSampler, STATISTICS, UniformSampler,
                   clamped_normal_moments, normal_source, sample_statistic)
from .task import Statistic

__all__ = ["BetaSampler", "FAMILY", "GroupedDataset", "GroupedFamily", "IIDSource", "NormalSampler", "STATISTICS",
           "Statistic", "UniformSampler", "clamped_normal_moments", "normal_source", "sample_statistic"]


def __getattr__(name: str) -> object:
    if name in ("FAMILY", "GroupedFamily"):
        from . import family

        return getattr(family, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
