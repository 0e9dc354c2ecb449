"""The grouped family (:class:`~hybridpriv.families.grouped.family.GroupedFamily`): its SPEC (``spec``),
its private-data loader (``release``), the family object that ties them (``family``)."""

from .family import FAMILY, GroupedFamily

__all__ = ["FAMILY", "GroupedFamily"]
