"""Tasks: what a release is for, so that one engine can score every family.

A *task* says, for one dataset, what the truth is and how far a release is from it:

* ``truth(data) -> {name: float}``: the named true quantities of the dataset, stored per dataset
  in the evaluation (``truth`` with a ``quantity`` dimension); may be empty;
* ``loss(mechanism, releases, data, truth) -> (trials,)``: the loss of each of ``trials``
  releases of ``mechanism`` on ``data``;
* ``exact_risk(mechanisms, data, truth) -> (len(mechanisms),)`` or ``None``: where the expected
  loss *given the dataset* has a closed form, the engine uses it instead of averaging noisy
  releases (NaN for a mechanism without one, which then runs by Monte Carlo).

Tasks are :class:`~hybridpriv.params.Parametrized` (their parameters go into results and
checkpoint fingerprints).  The tasks of the families live beside their mechanisms; the scalar
statistic task of the grouped estimators is here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .params import Parametrized

__all__ = ["LOSSES", "Statistic", "Task", "scalar_loss"]

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

    #: The data kind the task scores (a registered data kind, ``hybridpriv.families.data_kinds()``).
    data_kind: str = "grouped"
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


class Statistic(Task):
    """Scalar estimates of a grouped dataset's mean or median.

    Each mechanism says which statistic it estimates (its ``statistic`` attribute, ``"mean"`` or
    ``"median"``); its releases are scored against that statistic of the dataset.

    Parameters
    ----------
    target
        ``"population"`` (default, the papers' convention): the generating distribution's value
        after clamping; ``"sample"``: the simulated dataset's own pooled statistic.
    loss
        ``"squared"`` or ``"absolute"`` error.
    """

    data_kind = "grouped"

    def __init__(self, target: str = "population", loss: str = "squared") -> None:
        if not isinstance(target, str) or target not in ("population", "sample"):
            raise ValueError(f"target must be 'population' or 'sample', got {target!r}")
        self.target = target
        self._loss = scalar_loss(loss)
        self.loss_name = f"{loss} error"

    def check(self, mechanism: Any) -> None:
        super().check(mechanism)
        stat = getattr(mechanism, "statistic", None)
        if stat not in ("mean", "median"):
            raise ValueError(f"{type(mechanism).__name__} must estimate 'mean' or 'median', got statistic={stat!r}")

    def truth(self, data: Any) -> dict[str, float]:
        from .data import STATISTICS

        if self.target == "sample":
            return {s: data.truth(s, "sample") for s in STATISTICS}
        return {s: float(data.population[s]) for s in STATISTICS if s in data.population}

    def loss(self, mechanism: Any, releases: np.ndarray, data: Any, truth: Mapping[str, float]) -> np.ndarray:
        stat = mechanism.statistic
        if stat not in truth:
            raise ValueError(f"the source gives no population {stat!r}; use Statistic(target='sample')")
        return self._loss(np.asarray(releases, dtype=float) - truth[stat])
