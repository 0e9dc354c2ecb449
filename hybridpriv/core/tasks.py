"""Tasks: what a release is for, so that one engine can score every family.

A *task* says, for one dataset, what the truth is and how far a release is from it:

* ``truth(data) -> {name: float}``: the named true quantities of the dataset, stored per dataset
  in the evaluation (``truth`` with a ``quantity`` dimension); may be empty;
* ``loss(mechanism, releases, data, truth) -> (trials,)``: the loss of each of ``trials``
  releases of ``mechanism`` on ``data``;
* ``exact_risk(mechanisms, data, truth) -> (len(mechanisms),)`` or ``None``: where the expected
  loss *given the dataset* has a closed form, the engine uses it instead of averaging noisy
  releases (NaN for a mechanism without one, which then runs by Monte Carlo).

Tasks are :class:`~hybridpriv.core.params.Parametrized` (their parameters go into results and
checkpoint fingerprints).  The tasks of the families live in their packages (e.g. the grouped
family's scalar ``Statistic``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .params import Parametrized

__all__ = ["LOSSES", "Task", "scalar_loss"]

#: Losses of a scalar release against a scalar truth.
LOSSES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "squared": np.square,
    "absolute": np.abs,
}


def scalar_loss(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """The loss function called ``name`` (one of :data:`LOSSES`)."""
    if not isinstance(name, str) or name not in LOSSES:
        raise ValueError(f"loss must be one of {list(LOSSES)}, got {name!r}")
    return LOSSES[name]


class Task(Parametrized, ABC):
    """Base class of tasks (see the module docstring)."""

    #: The data kind the task scores (a registered data kind, ``hybridpriv.families.data_kinds()``); every task
    #: names it.
    data_kind: str = ""
    #: What the loss measures, for tables and figure axes.
    loss_name: str = "loss"

    @abstractmethod
    def truth(self, data: Any) -> Mapping[str, float]:
        """The named true quantities of ``data`` (stored per dataset)."""

    @abstractmethod
    def loss(self, mechanism: Any, releases: np.ndarray, data: Any, truth: Mapping[str, float]) -> np.ndarray:
        """Loss of each release (leading axis: trials) of ``mechanism`` on ``data``; shape ``(trials,)``."""

    def exact_risk(self, mechanisms: Sequence[Any], data: Any, truth: Mapping[str, float]) -> np.ndarray | None:
        """Expected loss given ``data`` for each mechanism where a closed form exists (else NaN), or None."""
        return None

    def check(self, mechanism: Any) -> None:
        """Raise if ``mechanism`` cannot be scored by this task (called once, before any work)."""
        kind = getattr(mechanism, "data_kind", None)
        if kind != self.data_kind:
            raise ValueError(
                f"{type(self).__name__} scores {self.data_kind!r} data, but {type(mechanism).__name__} "
                f"releases from {kind!r} data"
            )

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
