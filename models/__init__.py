"""The models of public knowledge, by name (installed as ``hybridpriv.models``): thin re-exports.

Each family's PyMC model lives in its own package (``hybridpriv.families.<family>.model``), the base classes
in :mod:`hybridpriv.core.model`; this package gathers their public names, so that
``from hybridpriv.models import GroupedDataModel`` keeps working.
"""

if __name__ != "hybridpriv.models":  # the import guard: one copy of every class
    raise ImportError(
        f"import this package as hybridpriv.models, not {__name__!r}: `models/` is installed inside "
        "hybridpriv, and importing it from a checkout by its folder name would load a second copy "
        "of every class (isinstance checks against hybridpriv.models would then fail)"
    )

from ..core import model as base
from ..core.model import *  # noqa: F403  (base.__all__)
from ..families.grouped import model as grouped
from ..families.grouped.model import *  # noqa: F403  (grouped.__all__)
from ..families.hybrid_trust import model as avent
from ..families.hybrid_trust.model import *  # noqa: F403  (avent.__all__)
from ..families.kmeans import model as kmeans_pilot
from ..families.kmeans.model import *  # noqa: F403  (kmeans_pilot.__all__)
from ..families.public_private.wang import model as wang
from ..families.public_private.wang.model import *  # noqa: F403  (wang.__all__)
from ..families.user_item import model as useritem
from ..families.user_item.model import *  # noqa: F403  (useritem.__all__)

__all__ = [*base.__all__, *avent.__all__, *grouped.__all__, *kmeans_pilot.__all__, *useritem.__all__, *wang.__all__]
