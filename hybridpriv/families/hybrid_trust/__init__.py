"""The hybrid-trust family (:class:`~hybridpriv.families.hybrid_trust.family.HybridTrustFamily`): its SPEC (``spec``) and the family
object (``family``)."""

from .family import FAMILY, HybridTrustFamily

__all__ = ["FAMILY", "HybridTrustFamily"]
