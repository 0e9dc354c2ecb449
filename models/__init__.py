"""PyMC generative models of public knowledge (installed as ``hybridpriv.models``)."""

if __name__ != "hybridpriv.models":  # the import guard: one copy of every class
    raise ImportError(
        f"import this package as hybridpriv.models, not {__name__!r}: `models/` is installed inside "
        "hybridpriv, and importing it from a checkout by its folder name would load a second copy "
        "of every class (isinstance checks against hybridpriv.models would then fail)"
    )

from . import avent, grouped, useritem, wang
from .avent import *  # noqa: F403  (the public names are avent.__all__)
from .grouped import *  # noqa: F403  (grouped.__all__)
from .useritem import *  # noqa: F403  (useritem.__all__)
from .wang import *  # noqa: F403  (and wang.__all__)
from . import kmeans_pilot
from .kmeans_pilot import *  # noqa: F403  (kmeans_pilot.__all__)

__all__ = [*avent.__all__, *grouped.__all__, *useritem.__all__, *wang.__all__]
__all__ += kmeans_pilot.__all__
