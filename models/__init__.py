"""PyMC generative models of public knowledge (installed as ``hybridpriv.models``)."""

from . import grouped
from .grouped import *  # noqa: F403  (the public names are grouped.__all__)

__all__ = list(grouped.__all__)
