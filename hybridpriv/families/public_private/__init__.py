"""The public-private family (:class:`~hybridpriv.families.public_private.family.PublicPrivateFamily`): its SPEC (``spec``) and the family
object (``family``)."""

from .family import FAMILY, PublicPrivateFamily

__all__ = ["FAMILY", "PublicPrivateFamily"]
