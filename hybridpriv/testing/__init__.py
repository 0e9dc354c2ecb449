"""Statistical privacy audits: test a mechanism's claimed (epsilon, delta) on neighbouring datasets.

The audit follows the black-box testers of Ding et al. (StatDP, 2018), Bichsel et al.
(DP-Sniper, 2021) and Google's stochastic tester: run the mechanism many times on two
neighbouring datasets, search for an output event on which the two output distributions differ
most, and bound the privacy loss on that event from below with exact confidence intervals on
held-out samples (method: :mod:`hybridpriv.testing.core`).

Modules
-------
core
    :func:`audit`, :class:`AuditReport`, :class:`NeighbouringPair`, :func:`assert_passes`.
intervals
    The Clopper-Pearson and Wilson bounds and the event grid.
conformance
    :func:`check_mechanism`: what a mechanism class still lacks (protocol, parameters, releases,
    optionally its audit), scikit-learn's ``check_estimator`` in spirit.
pairs
    Neighbouring pairs for every data kind of the Mechanism protocol, and :func:`audit_estimator`,
    which audits a mechanism's declaration unit by unit.
cases
    The registry of audit cases: every DP-claiming built-in at two settings (``CORRECT``) and
    deliberately broken variants that must be caught (``BROKEN``).
matrix
    The audit matrix: every DP-claiming mechanism under each relation it offers, over bounds that
    straddle 0, exclude it on either side and are asymmetric, each unit in turn.

``cases`` and ``matrix`` are imported on first use (``hybridpriv.testing.cases``), not with
this package.
"""

from __future__ import annotations

from .conformance import MechanismCheckError, check_mechanism, mechanism_problems
from .core import AuditReport, NeighbouringPair, assert_passes, audit
from .pairs import (
    Coordinate,
    audit_estimator,
    mechanism_sampler,
    neighbouring_pair,
    neighbouring_pairs,
)

__all__ = [
    "AuditReport",
    "Coordinate",
    "MechanismCheckError",
    "NeighbouringPair",
    "assert_passes",
    "audit",
    "audit_estimator",
    "check_mechanism",
    "mechanism_problems",
    "mechanism_sampler",
    "neighbouring_pair",
    "neighbouring_pairs",
]
