"""Closed forms of the papers, one module per paper, all re-exported here.

* :mod:`hybridpriv.theory.ferrando` -- Ferrando et al. (optimal weights and variance of the mixed
  mean) and Jorgensen et al. (PDP Sample: keep probabilities, variance, optimal threshold);
  derivations in ``docs/theory.md``;
* :mod:`hybridpriv.theory.useritem` -- Zeber & Lopatka (the exact risk of contribution-bounded item
  counts given the matrix); derivation in ``docs/theory-user-item.md``;
* :mod:`hybridpriv.theory.avent` -- Avent et al. (the hybrid trust model); ``docs/theory-avent.md``;
* :mod:`hybridpriv.theory.heterogeneity` -- combining group releases when the groups may differ
  (bias-aware weights, DerSimonian and Laird's between-group variance).

The validators of user-item input (:func:`check_user_item_matrix`, :func:`check_contribution_bounds`)
live in :mod:`hybridpriv.core.validation` and are re-exported here for compatibility.
"""

from __future__ import annotations

from ..core.validation import check_contribution_bounds, check_user_item_matrix
from . import ferrando as _ferrando
from . import useritem as _useritem
from .ferrando import *  # noqa: F401,F403
from .useritem import *  # noqa: F401,F403

__all__ = [*_ferrando.__all__, *_useritem.__all__, "check_contribution_bounds", "check_user_item_matrix"]

# Avent et al. (hybrid trust model): its own module, re-exported here.
from . import avent as _avent  # noqa: E402
from .avent import *  # noqa: E402,F401,F403

__all__ += _avent.__all__

# Combining group releases when the groups may differ (the adaptive candidates).
from . import heterogeneity as _heterogeneity  # noqa: E402
from .heterogeneity import *  # noqa: E402,F401,F403

__all__ += _heterogeneity.__all__
