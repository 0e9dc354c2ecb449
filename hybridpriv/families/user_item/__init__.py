"""The user-item family (:class:`~hybridpriv.families.user_item.family.UserItemFamily`): its SPEC (``spec``),
its private-data loader (``release``), the family object that ties them (``family``)."""

from .family import FAMILY, UserItemFamily

__all__ = ["FAMILY", "UserItemFamily"]
