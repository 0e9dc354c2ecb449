"""The histogram family (:class:`~hybridpriv.families.histogram.family.HistogramFamily`): shares of public
categories for groups of different epsilons; its data kind, mechanisms, task, model, SPEC, private-data
loader and held-out truths, one module each."""

from .family import FAMILY, HistogramFamily

__all__ = ["FAMILY", "HistogramFamily"]
