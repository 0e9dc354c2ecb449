"""P(the private outcome law is the public sample's | what was published), by importance sampling from the
public-private model's priors in NumPy: the independent computation the PyMC mixture is checked against
(tests/families/public_private/test_wang_same_law.py and test_wang_cross_moments.py)."""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

from hybridpriv.families.public_private.wang.model import PUBLIC_FIT_PRIOR_SD


def independent_p_same(model, pi: float, draws: int = 40_000, seed: int = 0) -> float:
    """``theta_public`` from its Gaussian posterior given the public fit (prior N(0, 10^2) times the Laplace
    likelihood), shift and log-scale from their priors, ``delta`` from N(0, I); each branch's marginal likelihood of
    the published rate and, if released, the cross-moments (jointly Normal, by explicit formulas over the model's fixed
    covariate draws) is the mean of its density over the draws."""
    rng = np.random.default_rng(seed)
    s = model.summaries
    r, n, R, cm = s.outcome_rate, s.n, model.rate_draws, s.cross_moments
    k = model.p + 1
    lik_prec = np.linalg.inv(model.theta_public_cov)
    cov = np.linalg.inv(lik_prec + np.eye(k) / PUBLIC_FIT_PRIOR_SD**2)
    theta_public = rng.multivariate_normal(cov @ lik_prec @ model.theta_public_hat, cov, draws)
    delta = rng.standard_normal((draws, k))
    shift = rng.normal(0.0, model.shift_sd, (draws, model.p))
    scale = np.exp(rng.normal(0.0, model.log_scale_sd, (draws, model.p)))
    loglik = {}
    for name, theta in (("same", theta_public), ("differ", theta_public + model.coef_sd * delta)):
        out = np.empty(draws)
        for i in range(0, draws, 1000):
            sl = slice(i, i + 1000)
            z = shift[sl, None, :] + scale[sl, None, :] * model.rate_U[None]
            prob = special.expit(theta[sl, :1] + np.einsum("dkp,dp->dk", z, theta[sl, 1:]))
            if cm is None:
                out[sl] = stats.norm.logpdf(r, prob.mean(1), math.sqrt(r * (1 - r) * (1 / n + 1 / R)))
                continue
            # (rate, cross-moments) jointly Normal: the moments of a = (1, clip(x)) weighted by the probabilities
            a = np.concatenate([np.ones_like(z[:, :, :1]), np.clip(model.center + model.sd * z, -cm.clip, cm.clip)],
                               axis=2)
            mu = np.einsum("dk,dki->di", prob, a) / a.shape[1]
            C = np.einsum("dk,dki,dkj->dij", prob, a, a) / a.shape[1] - mu[:, :, None] * mu[:, None, :]
            cov = C * (1 / n + 1 / R) + np.diag(np.r_[0.0, np.full(model.p, 2 * cm.noise_scale**2)])
            resid = np.r_[r, cm.values][None, :] - mu
            sign, logdet = np.linalg.slogdet(cov)
            quad = np.einsum("di,di->d", resid, np.linalg.solve(cov, resid[:, :, None])[:, :, 0])
            out[sl] = -0.5 * (quad + logdet + (model.p + 1) * math.log(2 * math.pi))
        loglik[name] = special.logsumexp(out) - math.log(draws)
    return 1.0 / (1.0 + (1 - pi) / pi * math.exp(loglik["differ"] - loglik["same"]))
