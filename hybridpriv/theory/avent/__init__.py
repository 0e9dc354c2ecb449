"""Exact risk of the hybrid-model mean estimators of Avent, Dubey & Korolova (PETS 2020).

``n`` users, a fraction ``c`` of them (``c n`` users, the *TCM group*) trust the curator, the
other ``(1 - c) n`` (the *LM group*) randomise locally.  Records lie in ``[0, m]``; TCM records
have mean ``mu_T`` and variance ``sigma_T2``, LM records ``mu_L`` and ``sigma_L2``.

``s_T2`` is the variance of the noise the curator adds to the TCM users' *mean*; ``s_L2`` the
variance of the noise *one* LM user adds to their own value.

Risk (the paper's Definition 2.2): every MSE is ``E[(estimate - mu_hat)^2]`` against the
non-private empirical mean ``mu_hat`` of all ``n`` records (``benchmark="empirical"``, the
default).  ``benchmark="population"`` gives ``E[(estimate - mu)^2]`` against the mixture mean
``mu = c mu_T + (1 - c) mu_L`` instead.  Expectations are over the records (drawn i.i.d. from
the group's distribution) and the noise.

Every function broadcasts over NumPy arrays and, given :class:`xarray.DataArray` arguments,
returns DataArrays (dimensions broadcast by name; the one wrapper is
:func:`hybridpriv.theory._xarray.xarray_aware`).  The modules, along the paper's seams:

=====================  ===========================================================================
:mod:`.risk`           noise variances; MSE of TCM-only, Full-LM, LM-only, the hybrid, KVH, PWH
:mod:`.weights`        KVH, heterogeneous KVH and PWH weights; critical ``c`` and ``n``
:mod:`.improvement`    ``R`` and ``r``; where PWH beats both; the 17/8 .. 16/7 bound of KVH
:mod:`.amplification`  amplified epsilon of the Gaussian and Laplace hybrids (Section 8, App. D)
=====================  ===========================================================================

Derivations and the discrepancies with the printed paper are in ``docs/theory-avent.md``; checks
in ``tests/theory/test_avent*.py``.
"""

from __future__ import annotations

from . import amplification, improvement, risk, weights
from ._checks import AMPLIFICATION_GROUPS, BENCHMARKS, CALIBRATIONS, NOISES  # noqa: F401  (in __all__ below)
from .amplification import *  # noqa: F403  (amplification.__all__)
from .improvement import *  # noqa: F403  (improvement.__all__)
from .risk import *  # noqa: F403  (risk.__all__)
from .weights import *  # noqa: F403  (weights.__all__)

__all__ = sorted(["AMPLIFICATION_GROUPS", "BENCHMARKS", "CALIBRATIONS", "NOISES", *amplification.__all__,
                  *improvement.__all__, *risk.__all__, *weights.__all__])
