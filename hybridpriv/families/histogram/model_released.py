"""Earlier noisy releases of a private group's counts, in the histogram model (a linear-Gaussian update).

An earlier release of group ``g``'s histogram (``y_g = counts_g + Laplace(b_g)`` per category, e.g. the
budget-spending selector's feature, or a statistic published last year) says something about that group's shares
``q_g`` and, when the groups answer alike, about everyone's ``p``.  The Laplace noise and the multinomial make the
update non-conjugate; this module makes it in the Gaussian approximation, in which every step is exact:

* the shares in their first ``C - 1`` coordinates (the last is one minus their sum); ``S = diag(p^) - p^ p^T`` at the
  public posterior mean ``p^``;
* ``p ~ N(p^, S / (alpha_0 + 1))``: the covariance of the public posterior ``Dirichlet(alpha)`` (``alpha_0`` its
  sum);
* a group that differs, ``q_g | p, tau ~ N(p, tau^2 S)``: the covariance of ``Dirichlet(p (1 / tau^2 - 1))``; one
  that answers alike, ``q_g = p`` (``tau = 0``);
* its release, ``y_g / n_g | q_g ~ N(q_g, S_g / n_g + (2 b_g^2 / n_g^2) I)`` over all ``C`` categories: the
  multinomial's covariance at the group's own released shares (``S_g = diag(s_g) - s_g s_g^T``, ``s_g`` the
  release's counts floored at 0, plus one each, normalised), plus the Laplace noise's variance ``2 b^2``.

Given ``tau`` the posterior of ``p`` and of each ``q_g`` is Gaussian (information form), and the releases' marginal
likelihood is closed (:func:`log_evidence`).  ``tau`` is drawn from its posterior on a grid: ``alike`` (``tau = 0``,
prior ``shared_prior``) and :data:`TAU_GRID` equal-mass quantiles of ``HalfNormal(between)`` (each
``(1 - shared_prior) / TAU_GRID``).  Every draw is then exact within the approximation: ``tau``, then ``p``, then
``q_g``; shares below :data:`SHARE_FLOOR` are raised to it and each vector renormalised (the Gaussian's tails reach
below 0 where a share is small; :func:`draw_released` counts how often).  Independent draws: no MCMC.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtri

__all__ = ["MAX_RELEASE_CATEGORIES", "MAX_RELEASE_VALUE", "MAX_SPREAD", "MIN_NOISE_VARIANCE", "SHARE_FLOOR", "TAU_GRID", "ReleasedCounts", "draw_released", "log_evidence",
           "posterior_of_p", "tau_grid"]

#: Quantiles of the spread's prior ``HalfNormal(between)`` on which ``tau``'s posterior is computed.
TAU_GRID = 64
#: The smallest share a drawn vector keeps (the Gaussian's tail is cut there and the vector renormalised).
SHARE_FLOOR = 1e-9
#: Most categories a model with releases takes (its matrices are categories x categories per group and ``tau``).
MAX_RELEASE_CATEGORIES = 200
#: The largest spread a draw uses (``tau = 1`` would make every group's shares a single category); the model's
#: :meth:`~.model.CategoryPosterior.generate` caps an unreleased group's spread at the same value.
MAX_SPREAD = 0.99
#: The largest noise scale and absolute released count taken (beyond, a release says nothing a float can hold).
MAX_RELEASE_VALUE = 1e12
#: The smallest variance a released share's noise is given (a noiseless release would make its covariance singular).
MIN_NOISE_VARIANCE = 1e-12


@dataclass(frozen=True)
class ReleasedCounts:
    """An earlier release of private group ``group``'s counts per category, each with Laplace noise of scale
    ``noise_scale`` (the counts in the model's order of categories; may be negative or fractional)."""

    group: str
    counts: tuple[float, ...]
    noise_scale: float

    def __post_init__(self) -> None:
        if not isinstance(self.group, str) or not self.group:
            raise ValueError(f"group must be a group's name, got {self.group!r}")
        counts = np.asarray(self.counts, dtype=float)
        if counts.ndim != 1 or counts.size < 2 or not np.all(np.isfinite(counts)):
            raise ValueError(f"counts of the release of group {self.group!r} must be finite numbers, one per category")
        if np.abs(counts).max() > MAX_RELEASE_VALUE:
            raise ValueError(f"counts of the release of group {self.group!r} must lie within +-{MAX_RELEASE_VALUE:g}, "
                             f"got {float(counts[np.abs(counts).argmax()])!r}")
        scale = self.noise_scale
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not (
                np.isfinite(scale) and 0 < scale <= MAX_RELEASE_VALUE):
            raise ValueError(f"noise_scale of the release of group {self.group!r} must be a number in (0, "
                             f"{MAX_RELEASE_VALUE:g}], got {scale!r}")
        object.__setattr__(self, "counts", tuple(float(c) for c in counts))
        object.__setattr__(self, "noise_scale", float(scale))


def tau_grid(between: float, shared_prior: float, size: int = TAU_GRID) -> tuple[np.ndarray, np.ndarray]:
    """The spread's prior on the grid: values ``(0, tau_1 .. tau_size)`` and their prior masses
    (``shared_prior``, then ``(1 - shared_prior) / size`` each, the midpoints of equal-mass bins of
    ``HalfNormal(between)``, capped at :data:`MAX_SPREAD` as the model's draws are)."""
    mids = (np.arange(size) + 0.5) / size
    taus = np.minimum(between * ndtri(0.5 + mids / 2.0), MAX_SPREAD)  # the HalfNormal's quantiles, capped
    if shared_prior >= 1.0:
        return np.zeros(1), np.ones(1)
    if shared_prior <= 0.0:
        return taus, np.full(size, 1.0 / size)
    return np.r_[0.0, taus], np.r_[shared_prior, np.full(size, (1.0 - shared_prior) / size)]


def _parts(alpha: np.ndarray, releases: Sequence[tuple[int, np.ndarray, float]]):
    """``p^``, ``S`` (``C - 1`` coordinates), the prior covariance of ``p`` and per release its ``(A, z~, R)``."""
    alpha = np.asarray(alpha, dtype=float)
    c = alpha.size
    p_hat = alpha / alpha.sum()
    s = np.diag(p_hat[:-1]) - np.outer(p_hat[:-1], p_hat[:-1])
    v = s / (alpha.sum() + 1.0)
    a = np.vstack([np.eye(c - 1), -np.ones((1, c - 1))])  # C-1 free shares -> all C (plus e_C)
    e_c = np.zeros(c)
    e_c[-1] = 1.0
    obs = []
    for n, y, b in releases:
        y = np.asarray(y, dtype=float)
        own = np.maximum(y, 0.0) + 1.0  # the group's own shares, for its sampling covariance (one pseudo-count each)
        own = own / own.sum()
        r = (np.diag(own) - np.outer(own, own)) / n + max(2.0 * b * b / (n * n), MIN_NOISE_VARIANCE) * np.eye(c)
        obs.append((a, y / n - e_c, r))
    return p_hat, s, v, obs


def _gauss_logpdf(x: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> float:
    chol = np.linalg.cholesky(cov)
    z = np.linalg.solve(chol, x - mean)
    return float(-0.5 * z @ z - np.log(np.diag(chol)).sum() - 0.5 * x.size * np.log(2 * np.pi))


def posterior_of_p(alpha: np.ndarray, releases: Sequence[tuple[int, np.ndarray, float]], tau: float
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of ``p``'s first ``C - 1`` shares given the releases ``[(n_g, y_g, b_g), ...]`` and the
    spread ``tau`` (0: the groups answer alike)."""
    p_hat, s, v, obs = _parts(alpha, releases)
    prec = np.linalg.inv(v)
    info = prec @ p_hat[:-1]
    for a, z, r in obs:
        w = a @ (tau * tau * s) @ a.T + r
        winv_a = np.linalg.solve(w, a)
        prec = prec + a.T @ winv_a
        info = info + winv_a.T @ z
    cov = np.linalg.inv(prec)
    return cov @ info, (cov + cov.T) / 2.0


def log_evidence(alpha: np.ndarray, releases: Sequence[tuple[int, np.ndarray, float]], tau: float) -> float:
    """The releases' log marginal likelihood given ``tau``: ``p`` and the groups' shares integrated out (Gaussian),
    by the candidate's formula ``log N(z | A p*, W) + log N(p* | p^, V) - log N(p* | mu, Sigma)`` at ``p* = mu``."""
    p_hat, s, v, obs = _parts(alpha, releases)
    mu, cov = posterior_of_p(alpha, releases, tau)
    out = _gauss_logpdf(mu, p_hat[:-1], v) - _gauss_logpdf(mu, mu, cov)
    for a, z, r in obs:
        out += _gauss_logpdf(z, a @ mu, a @ (tau * tau * s) @ a.T + r)
    return out


def _full(x: np.ndarray) -> np.ndarray:
    """Free shares ``(..., C - 1)`` -> a probability vector ``(..., C)``: floored at :data:`SHARE_FLOOR`, renormalised."""
    full = np.concatenate([x, 1.0 - x.sum(axis=-1, keepdims=True)], axis=-1)
    full = np.maximum(full, SHARE_FLOOR)
    return full / full.sum(axis=-1, keepdims=True)


def draw_released(alpha: np.ndarray, sizes: Mapping[str, int], releases: Sequence[ReleasedCounts], between: float,
                  shared_prior: float, draws: int, gen: np.random.Generator) -> dict[str, Any]:
    """``draws`` independent draws of the model given the releases (``sizes``: each released group's size).

    Returns ``p`` ``(draws, C)``, ``between`` ``(draws,)`` (``tau``; 0 when alike), ``alike`` ``(draws,)`` (bool),
    ``q`` ``(draws, releases, C)`` (each released group's shares), ``floored`` (the share of drawn vectors a
    share was raised to :data:`SHARE_FLOOR` in) and ``tau_posterior`` (the grid and its posterior masses)."""
    obs = [(int(sizes[r.group]), np.asarray(r.counts, dtype=float), r.noise_scale) for r in releases]
    taus, prior = tau_grid(between, shared_prior)
    logw = np.log(prior) + np.array([log_evidence(alpha, obs, t) for t in taus])
    if not np.isfinite(logw).any():
        raise ValueError(f"released_counts of {[r.group for r in releases]}: the model gives these releases no "
                         "probability at any spread (counts far beyond the groups' sizes?)")
    post = np.exp(logw - np.max(logw[np.isfinite(logw)]))
    post[~np.isfinite(post)] = 0.0
    post /= post.sum()
    pick = gen.choice(taus.size, size=draws, p=post)
    p_hat, s, _, parts = _parts(alpha, obs)
    c = p_hat.size
    p = np.empty((draws, c - 1))
    q = np.empty((draws, len(obs), c - 1))
    for k in np.unique(pick):
        at = np.flatnonzero(pick == k)
        tau = float(taus[k])
        mu, cov = posterior_of_p(alpha, obs, tau)
        p[at] = gen.multivariate_normal(mu, cov, size=at.size, method="cholesky")
        for j, (a, z, r) in enumerate(parts):
            if tau == 0.0:
                q[at, j] = p[at]
                continue
            prior_prec = np.linalg.inv(tau * tau * s)
            rinv_a = np.linalg.solve(r, a)
            cov_q = np.linalg.inv(prior_prec + a.T @ rinv_a)
            cov_q = (cov_q + cov_q.T) / 2.0
            mean_q = (p[at] @ prior_prec + rinv_a.T @ z) @ cov_q  # cov_q symmetric: rows are the means
            q[at, j] = mean_q + gen.multivariate_normal(np.zeros(c - 1), cov_q, size=at.size, method="cholesky")
    full_p, full_q = _full(p), _full(q)
    raw_p = np.concatenate([p, 1.0 - p.sum(axis=-1, keepdims=True)], axis=-1)
    raw_q = np.concatenate([q, 1.0 - q.sum(axis=-1, keepdims=True)], axis=-1)
    floored = float(np.mean(np.r_[(raw_p < SHARE_FLOOR).any(axis=-1), (raw_q < SHARE_FLOOR).any(axis=-1).ravel()]))
    return {"p": full_p, "between": taus[pick], "alike": taus[pick] == 0.0, "q": full_q, "floored": floored,
            "tau_posterior": (taus, post)}
