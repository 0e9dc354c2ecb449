"""What a family's model of public knowledge takes for granted, and how the data could break it.

A recommendation is only as good as the model's assumptions.  A family declares the ones its model
makes and the data may well break (:class:`Assumption`: what is assumed, what departs from it, in the
data's own units, and how to make a dataset that departs by ``delta``).  The engine
(:func:`hybridpriv.engine.sensitivity.sensitivity`) then evaluates the same candidates on the same
simulated datasets departed by a grid of ``delta`` and reports the *tipping point*: how far the data may
depart before the recommendation stops being the best candidate, and which one is better beyond it.

Some assumptions no simulation can probe, because nothing public says how they would fail: that a pilot is a
random sample of the users, say.  A family declares them as a :class:`Premise` with the candidates whose error
rests on them alone, and the SPEC key by which a user who knows states that it holds;
:func:`hybridpriv.engine.decision.premise_lines` warns when the recommendation rests on one not stated.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["SHIFTS", "Assumption", "Branch", "Premise"]

#: The departures tried, as fractions of an assumption's ``scale`` (both directions, nearest first).
SHIFTS = (-0.2, -0.1, -0.05, -0.02, 0.02, 0.05, 0.1, 0.2)


def _check_words(obj: Any, *keys: str) -> None:
    """``obj.name``: a coordinate (non-empty, no '/'); each of ``keys``: a non-empty string."""
    if not isinstance(obj.name, str) or not obj.name or "/" in obj.name:
        raise ValueError(f"name must be a non-empty string without '/', got {obj.name!r}")
    for key in keys:
        if not isinstance(getattr(obj, key), str) or not getattr(obj, key):
            raise ValueError(f"{key} must be a non-empty string, got {getattr(obj, key)!r}")


@dataclass(frozen=True)
class Assumption:
    """One assumption of a family's model, and a way to break it.

    Parameters
    ----------
    name
        A short name (a coordinate of the results: ``"panel"``).
    assumes
        What the model assumes, in words ("the private groups' records follow the public panel's law").
    departure
        What ``delta`` measures, in words ("the private groups' mean minus the panel's").
    scale
        The departure's natural range, in data units (e.g. the records' bounds' width): the grid of
        ``delta`` is :data:`SHIFTS` times it, and tipping points are also shown as a share of it.
    perturb
        ``perturb(dataset, delta) -> dataset``: the same dataset, departed by ``delta`` (deterministic:
        the evaluation keeps its random streams, so the candidates are compared on common numbers).
    """

    name: str
    assumes: str
    departure: str
    scale: float
    perturb: Callable[[Any, float], Any]

    def __post_init__(self) -> None:
        _check_words(self, "assumes", "departure")
        if isinstance(self.scale, bool) or not isinstance(self.scale, (int, float)) or not (
                math.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f"scale must be a finite number > 0, got {self.scale!r}")
        if not callable(self.perturb):
            raise TypeError(f"perturb must be callable, got {type(self.perturb).__name__}")


@dataclass(frozen=True, eq=False)
class Branch:
    """Two alternatives a model of public knowledge cannot tell apart, drawn one per posterior draw.

    A model that is a mixture ("the private records follow the public ones' law" or not) knows only how
    likely each alternative is; the decision averages over them.
    :func:`hybridpriv.engine.branches.branch_check` decides again within each, so that a recommendation
    that is good on average but bad under one plausible alternative says so.

    Parameters
    ----------
    name
        A short name (a coordinate of the results: ``"law"``).
    holds, fails
        The two alternatives in words ("the private outcome depends on the covariates as the public one
        does" / "... differently").
    draws
        Boolean ``(chain, draw)`` over the posterior: does ``holds`` hold in that draw.
    advice
        How a user who knows which alternative holds says so (the SPEC key), or ``""``.
    """

    name: str
    holds: str
    fails: str
    draws: Any
    advice: str = ""

    def __post_init__(self) -> None:
        import numpy as np

        _check_words(self, "holds", "fails")
        draws = np.asarray(self.draws)
        if draws.ndim != 2 or draws.dtype != bool:
            raise ValueError(f"draws must be a boolean (chain, draw) array, got dtype {draws.dtype} and shape "
                             f"{draws.shape}")
        object.__setattr__(self, "draws", draws)


@dataclass(frozen=True)
class Premise:
    """An assumption some candidates rest on that neither the public knowledge nor a simulated departure can check.

    Parameters
    ----------
    name
        A short name (``"pilot-sample"``), printed in the warning and counted by the calibration study.
    assumes
        What is taken on trust, in words that follow "rests on" ("the pilot being a random sample of the users").
    fails
        How it fails in practice, in words that follow "if it does not hold (" ("recruited elsewhere, earlier, or
        more from some clusters than others"), or ``""``.
    key
        The SPEC key by which a user states that it holds (``"model.pilot_is_random_sample"``).
    stated
        Whether the user stated it: then nothing is printed.
    candidates
        The candidates (coordinates, as strings) whose error rests on it alone; ``None``: every candidate that
        spends no budget (:func:`hybridpriv.engine.decision.spends_nothing`), whose error is the public data's own.
    advice
        What to do where it does not hold, as far as the family has measured it (a sentence), or ``""``: the warning
        then names the best candidate that does not rest on it alone, which is not a claim that it is safer.
    """

    name: str
    assumes: str
    fails: str
    key: str
    stated: bool = False
    candidates: tuple[str, ...] | None = None
    advice: str = ""

    def __post_init__(self) -> None:
        _check_words(self, "assumes", "key")
        for key in ("fails", "advice"):
            if not isinstance(getattr(self, key), str):
                raise ValueError(f"{key} must be a string, got {getattr(self, key)!r}")
        if not isinstance(self.stated, bool):
            raise ValueError(f"stated must be True or False, got {self.stated!r}")
        if self.candidates is not None:
            names = self.candidates if isinstance(self.candidates, str) else tuple(self.candidates)
            if isinstance(names, str) or not names or not all(isinstance(c, str) and c for c in names):
                raise ValueError(f"candidates must be a non-empty sequence of candidate names or None, got {names!r}")
            object.__setattr__(self, "candidates", names)
