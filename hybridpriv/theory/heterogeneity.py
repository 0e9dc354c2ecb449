"""Combining per-group releases when the groups may differ: bias-aware weights and the spread between groups.

Ferrando et al.'s mixed estimator weighs each group's release by its inverse variance.  That is right when every
group estimates the same quantity, and biased when the groups differ (people who choose a stricter privacy
setting may answer otherwise): the target is the pooled value ``sum_g s_g theta_g`` (``s_g = n_g / n``), and a
weight that departs from ``s_g`` leaves part of a group's own value out.  :func:`bias_aware_weights` gives the
weights minimising the expected squared error when group ``g``'s value lies around a common one with variance
``spread_g`` (between-group spread plus sampling) and its release adds noise of variance ``noise_g``; the
histogram family's ``adaptive`` candidate estimates the spread from the releases and uses them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bias_aware_weights"]


def bias_aware_weights(sizes: object, spread: object, noise: object) -> np.ndarray:
    """Weights ``w`` (summing to 1 over the last axis) minimising ``sum_g (w_g - s_g)^2 a_g + w_g^2 b_g``.

    That is the expected squared error of ``sum_g w_g x~_g`` against the pooled value ``sum_g s_g x_g``
    (``s_g = n_g / sum n``) when ``x_g`` varies around a common value with variance ``a_g`` (``spread``) and the
    release ``x~_g`` adds independent noise of variance ``b_g`` (``noise``; 0 for a public group): the common
    value cancels because ``sum_g (w_g - s_g) = 0``.  Lagrange: ``w_g = (lam + s_g a_g) / (a_g + b_g)``, ``lam``
    making the sum 1.  ``spread`` and ``noise`` broadcast against ``sizes`` (e.g. ``(trials, groups)``).
    """
    n = np.asarray(sizes, dtype=float)
    s = n / n.sum()
    a = np.asarray(spread, dtype=float)
    k = 1.0 / (a + np.asarray(noise, dtype=float))
    lam = (1.0 - np.sum(s * a * k, axis=-1, keepdims=True)) / np.sum(k, axis=-1, keepdims=True)
    return (lam + s * a) * k
