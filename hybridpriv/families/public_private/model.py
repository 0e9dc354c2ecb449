"""The model of the ``public-private`` SPEC kind: a :class:`~hybridpriv.families.public_private.wang.model.WangPrivateModel`
whose posterior lays each generated private dataset out as the SPEC declares it.

Imported lazily by :func:`hybridpriv.spec.public_private.build` (it imports PyMC).  The classes live
at module level so that the posterior pickles to dask workers (``--workers``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .wang.model import WangPosterior, WangPrivateModel

__all__ = ["Layout", "SpecWangModel", "SpecWangPosterior"]


class Layout:
    """How a generated private dataset is laid out beside the public records.

    Parameters
    ----------
    v
        The validated SPEC values (``columns``, ``outcome``, ``contrast``, ``public``).
    center, scale, Z
        The public means and sds of the columns (categorical: 0 and 1) and the standardised public
        covariates (categorical columns: level codes).
    """

    def __init__(self, v: dict[str, Any], center: np.ndarray, scale: np.ndarray, Z: np.ndarray) -> None:
        types = list(v.columns.values())
        self.center, self.scale = center, scale
        self.integer = np.array([t == "integer" for t in types])
        self.categorical = tuple(j for j, t in enumerate(types) if t == "categorical")
        names = tuple(v.columns)
        self.n_levels = {j: len(v.public["levels"][names[j]]) for j in self.categorical}
        self.logistic = v.contrast == "logistic"
        self.columns = (*names, v.outcome) if self.logistic else names
        self.label = v.outcome if self.logistic else None
        y = v.public["y"]
        self.public = np.column_stack([Z, y]) if self.logistic else np.array(Z, dtype=float)
        self.public.flags.writeable = False

    def describe_params(self) -> dict[str, Any]:
        """What results and checkpoints record."""
        return {"class": "Layout", "columns": list(self.columns), "label": self.label,
                "categorical": list(self.categorical), "integer": self.integer.tolist(),
                "center": self.center, "scale": self.scale, "public": self.public}

    def design(self, Z: np.ndarray, y: np.ndarray) -> Any:
        """The :class:`~hybridpriv.families.public_private.wang.HybridDesign` of private records ``(Z, y)`` (standardised scale):
        integer columns rounded on their original scale, categorical ones to the nearest level code."""
        from .wang import HybridDesign

        Z = np.array(Z, dtype=float, copy=True)
        if self.integer.any():
            j = self.integer
            Z[:, j] = (np.round(self.center[j] + self.scale[j] * Z[:, j]) - self.center[j]) / self.scale[j]
        for j in self.categorical:
            Z[:, j] = np.clip(np.rint(Z[:, j]), 0, self.n_levels[j] - 1)
        private = np.column_stack([Z, y]) if self.logistic else Z
        return HybridDesign(private, self.public, categorical=self.categorical, columns=self.columns, label=self.label)


class SpecWangPosterior(WangPosterior):
    """A :class:`~hybridpriv.families.public_private.wang.model.WangPosterior` whose datasets follow the SPEC's :class:`Layout`."""

    def generate(self, chain: int, draw: int, rng: np.random.Generator) -> Any:
        """The simulated private dataset of ``(chain, draw)`` beside the public records, laid out by the SPEC."""
        Z, y = self.simulate(chain, draw, rng)
        return self.spec.layout.design(Z, y)


class SpecWangModel(WangPrivateModel):
    """A :class:`~hybridpriv.families.public_private.wang.model.WangPrivateModel` of the standardised public columns (``layout``:
    how its posterior lays out the datasets it generates)."""

    posterior_class = SpecWangPosterior

    def __init__(self, public_X: Any, public_y: Any, summaries: Any, layout: Layout, **kwargs: Any) -> None:
        super().__init__(public_X, public_y, summaries, **kwargs)
        if not isinstance(layout, Layout):
            raise TypeError(f"layout must be a Layout, got {type(layout).__name__}")
        self.layout = layout
