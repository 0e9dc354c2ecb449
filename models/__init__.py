"""PyMC generative models of public knowledge (installed as ``hybridpriv.models``)."""

from . import avent, grouped, useritem
from .avent import *  # noqa: F403  (the public names are avent.__all__)
from .grouped import *  # noqa: F403  (grouped.__all__)
from .useritem import *  # noqa: F403  (and useritem.__all__)

__all__ = [*avent.__all__, *grouped.__all__, *useritem.__all__]
