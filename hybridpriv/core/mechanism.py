"""The mechanism protocol every family implements.

A :class:`Mechanism` is a candidate the engine can evaluate, the selection can choose, the audit
can test and the accountant can charge:

* ``data_kind``: the data it reads (a registered data kind, :func:`hybridpriv.families.data_kinds`);
* ``release(data, rng, trials) -> array``: ``trials`` independent releases on one dataset, stacked
  on a leading axis (vectorised where it can be);
* ``privacy``: **one** machine-readable declaration per protected unit (a group, or every user):
  a :class:`~hybridpriv.core.privacy.Guarantee` (epsilon, delta, neighbouring relation, trust model);
* ``privacy_events``: the same as dp-accounting ``DpEvent`` trees (:mod:`hybridpriv.core.events`);
* ``get_params()`` (scikit-learn style, recorded automatically from the constructor), so a
  candidate can be stored in results, cloned and fingerprinted.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from .params import Parametrized
from .privacy import Guarantee

__all__ = ["Mechanism"]


class Mechanism(Parametrized, ABC):
    """Base class of every candidate mechanism (see the module docstring).

    Subclasses set ``data_kind`` and ``label``, implement :meth:`release` and :attr:`privacy`.
    """

    #: The data the mechanism reads: a registered data kind (:func:`hybridpriv.families.data_kinds`); every
    #: subclass names one.
    data_kind: ClassVar[str] = ""
    #: The coordinate of this candidate in results (unique within a comparison).
    label: str = "mechanism"

    @property
    @abstractmethod
    def privacy(self) -> dict[str, Guarantee]:
        """What the mechanism promises each protected unit, by unit name (group name, or ``"users"``)."""

    @abstractmethod
    def release(self, data: Any, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
        """``trials`` independent releases on ``data``, stacked on a leading axis of length ``trials``."""

    @property
    def privacy_events(self) -> dict[str, Any]:
        """What the mechanism does to each protected unit, as a dp-accounting ``DpEvent``
        (:mod:`hybridpriv.core.events`): how the promise arises (Laplace or Gaussian noise of a scale on a
        sensitivity, randomized response, sampling, composition), so that the ledger composes releases
        tightly.  By default each unit's :attr:`privacy` label (``EpsilonDeltaDpEvent``); a mechanism that
        knows its noise overrides it, and the conformance checks hold the two consistent (the event's
        epsilon at the declared delta is at most the declared one)."""
        from . import events

        return {u: events.epsilon_delta(g.epsilon, g.delta) for u, g in self.privacy.items()}

    def describe_privacy(self) -> str:
        """The declaration as one readable line: ``unit: promise; ...``."""
        return "; ".join(f"{name}: {g}" for name, g in self.privacy.items())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(label={self.label!r})"
