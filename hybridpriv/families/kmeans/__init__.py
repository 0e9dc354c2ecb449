"""The K-means family (:class:`~hybridpriv.families.kmeans.family.KMeansFamily`): its SPEC (``spec``) and the family
object (``family``)."""

from .family import FAMILY, KMeansFamily

__all__ = ["FAMILY", "KMeansFamily"]
