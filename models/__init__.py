"""PyMC generative models of public knowledge (installed as ``hybridpriv.models``)."""

from . import grouped, useritem
from .grouped import *  # noqa: F403  (the public names are grouped.__all__)
from .useritem import *  # noqa: F403  (and useritem.__all__)

__all__ = [*grouped.__all__, *useritem.__all__]
