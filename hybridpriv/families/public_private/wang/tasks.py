"""Tasks for the ``"public-private"`` kind: what a Wang release is scored by in :func:`hybridpriv.engine.evaluate.evaluate`.

* :class:`PredictionError` -- Section 5.1's criterion: ``||expit(X_D theta) - expit(X_D theta_hat(D))||_2``
  over the private rows, ``theta_hat(D)`` the non-private fit (the truth of a dataset, as scalars).
* :class:`ParameterError` -- the plain distance of ``theta`` to ``theta_hat(D)`` (any contrast).
* :class:`SubsetDistance` -- ``d(D, E')`` (eq. 5, Figure 4) of the public subset an
  :class:`~hybridpriv.families.public_private.wang.Algorithm1` releases on (exact: no noise involved).
* :class:`Released` -- records a scalar release itself (e.g. the subset size Algorithm 2 chose).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ....core.tasks import Task
from .contrasts import as_contrast
from .criteria import logistic_contrast, prediction_error
from .design import HybridDesign
from .mestimation import m_estimate

__all__ = ["ParameterError", "PredictionError", "Released", "SubsetDistance"]


def _design(data: Any) -> HybridDesign:
    if not isinstance(data, HybridDesign):
        raise TypeError(f"data must be a HybridDesign (hybridpriv.families.public_private.wang), got {type(data).__name__}")
    return data


def _names(theta: np.ndarray) -> dict[str, float]:
    return {f"theta_hat[{j}]": float(v) for j, v in enumerate(theta)}


def _reference(truth: Mapping[str, float]) -> np.ndarray:
    return np.array([truth[f"theta_hat[{j}]"] for j in range(len(truth))], dtype=float)


class PredictionError(Task):
    """The Section 5.1 prediction error of logistic releases.

    ``truth(data)``: the non-private fit ``theta_hat(D)`` on the private points (``theta_hat[j]``);
    ``loss``: ``|| expit(X_D theta) - expit(X_D theta_hat(D)) ||_2`` over the ``n_D`` private
    covariate rows (not normalised, as in the paper) for each released ``theta``.

    Parameters
    ----------
    contrast
        The :class:`~hybridpriv.families.public_private.wang.LogisticContrast` of the releases and of the
        reference fit (default ``"logistic"``: no intercept, no ridge, label last).  A candidate
        whose contrast has another intercept or label column is refused.
    """

    data_kind = "public-private"
    loss_name = "prediction error"

    def __init__(self, contrast: object = "logistic") -> None:
        self.contrast = logistic_contrast(contrast)

    def check(self, mechanism: Any) -> None:
        super().check(mechanism)
        c = getattr(mechanism, "contrast", None)
        mine = (self.contrast.intercept, self.contrast.label)
        if not hasattr(c, "intercept") or (c.intercept, c.label) != mine:
            raise ValueError(f"PredictionError scores logistic releases with intercept={mine[0]}, label={mine[1]}; "
                             f"{type(mechanism).__name__} uses contrast {c!r}")
        if getattr(mechanism, "output", "theta") != "theta":
            raise ValueError(f"PredictionError scores coefficient releases; {type(mechanism).__name__} releases "
                             f"output={mechanism.output!r}")

    def truth(self, data: Any) -> dict[str, float]:
        design = _design(data)
        D = self.contrast.check_points(design.private)
        return _names(m_estimate(D, np.ones(D.shape[0]), self.contrast))

    def loss(self, mechanism: Any, releases: np.ndarray, data: Any, truth: Mapping[str, float]) -> np.ndarray:
        design = _design(data)
        X = design.cached(("covariates", self.contrast.label),
                          lambda: np.delete(design.private, self.contrast.label % design.private.shape[1], axis=1))
        return np.asarray(prediction_error(np.atleast_2d(releases), X, reference=_reference(truth),
                                           contrast=self.contrast), dtype=float)


class ParameterError(Task):
    """Distance of a released ``theta`` to the non-private fit ``theta_hat(D)`` (any contrast).

    Parameters
    ----------
    contrast
        The contrast of the releases and of the reference fit (``"mean"``, ``"median"``, ...).
    loss
        ``"squared"`` (squared Euclidean distance, default) or ``"euclidean"``.
    """

    data_kind = "public-private"

    def __init__(self, contrast: object = "mean", loss: str = "squared") -> None:
        self.contrast = as_contrast(contrast)
        if not isinstance(loss, str) or loss not in ("squared", "euclidean"):
            raise ValueError(f"loss must be 'squared' or 'euclidean', got {loss!r}")
        self.norm = loss
        self.loss_name = f"{loss} parameter error"

    def check(self, mechanism: Any) -> None:
        super().check(mechanism)
        c = getattr(mechanism, "contrast", None)
        if type(c) is not type(self.contrast) or c.get_params() != self.contrast.get_params():
            raise ValueError(f"ParameterError({self.contrast!r}) scores releases of that contrast; "
                             f"{type(mechanism).__name__} uses {c!r}")

    def truth(self, data: Any) -> dict[str, float]:
        design = _design(data)
        return _names(m_estimate(design.private, np.ones(design.n_private), self.contrast))

    def loss(self, mechanism: Any, releases: np.ndarray, data: Any, truth: Mapping[str, float]) -> np.ndarray:
        diff = np.atleast_2d(np.asarray(releases, dtype=float)) - _reference(truth)
        sq = np.sum(diff**2, axis=1)
        return sq if self.norm == "squared" else np.sqrt(sq)


class SubsetDistance(Task):
    """``d(D, E')``: the mean distance of the private points to their nearest point of the public
    subset ``E'`` an :class:`~hybridpriv.families.public_private.wang.Algorithm1` releases on (eq. 5; the paper's
    Figure 4, on the rescaled points).  Deterministic given the dataset: exact, no releases run."""

    data_kind = "public-private"
    loss_name = "d(D, E')"

    def check(self, mechanism: Any) -> None:
        super().check(mechanism)
        if not callable(getattr(mechanism, "nearest", None)):
            raise ValueError(f"SubsetDistance scores mechanisms that release on a public subset (Algorithm1), "
                             f"got {type(mechanism).__name__}")

    def truth(self, data: Any) -> dict[str, float]:
        return {}

    def _distance(self, mechanism: Any, data: Any) -> float:
        design = _design(data)
        return float(mechanism.nearest(design)[1].mean())

    def loss(self, mechanism: Any, releases: np.ndarray, data: Any, truth: Mapping[str, float]) -> np.ndarray:
        return np.full(len(releases), self._distance(mechanism, data))

    def exact_risk(self, mechanisms: Sequence[Any], data: Any, truth: Mapping[str, float]) -> np.ndarray:
        return np.array([self._distance(m, data) for m in mechanisms])


class Released(Task):
    """Records each (scalar) release itself as its "loss": for diagnostics that are releases, such as the
    subset size :class:`~hybridpriv.families.public_private.wang.Algorithm2` chose (``output="size"``).  ``risk``
    is then the mean release over trials and ``estimate`` holds every release.

    Parameters
    ----------
    data_kind
        The data kind of the mechanisms (a registered data kind, :func:`hybridpriv.families.data_kinds`).
    """

    loss_name = "released value"

    def __init__(self, data_kind: str = "public-private") -> None:
        from ... import data_kinds

        if not isinstance(data_kind, str) or data_kind not in data_kinds():
            raise ValueError(f"data_kind must be one of {list(data_kinds())}, got {data_kind!r}")
        self.data_kind = data_kind

    def truth(self, data: Any) -> dict[str, float]:
        return {}

    def loss(self, mechanism: Any, releases: np.ndarray, data: Any, truth: Mapping[str, float]) -> np.ndarray:
        r = np.asarray(releases, dtype=float)
        if r.ndim == 2 and r.shape[1] == 1:
            r = r[:, 0]
        if r.ndim != 1:
            raise ValueError(f"Released records scalar releases; {type(mechanism).__name__} released shape {r.shape}")
        return r
