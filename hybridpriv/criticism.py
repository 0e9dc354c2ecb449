"""Model criticism: can the fitted model of public knowledge reproduce what is public?

A posterior predictive check (Gelman et al., *Bayesian Data Analysis*, ch. 6; ArviZ's ``ppc``
convention): for posterior draws ``theta_s``, replicate the public data ``y_rep ~ p(y | theta_s)``
and compare a statistic ``T(y_rep)`` with the observed ``T(y)``.  The two-sided tail probability

    p = 2 * min(P[T(y_rep) >= T(y)], P[T(y_rep) <= T(y)])   (capped at 1)

is small when the observed statistic sits in a tail of what the model predicts.  With several
statistics some small ``p`` arise by chance, so a check is *flagged* only below ``level``
(default 0.01); a flag means: the model cannot reproduce this piece of public knowledge, and its
simulated datasets (hence the decision) may be off in that respect.

:func:`predictive_check` builds the table (an ``xarray.Dataset`` over ``statistic``) from observed
values and replicated draws; the models supply the replications (e.g.
``GroupedPosterior.predictive_checks``).  :func:`format_checks` gives the lines ``select`` prints.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr

__all__ = ["ADVICE", "LEVEL", "format_checks", "predictive_check"]

#: Tail probability below which a statistic is flagged.
LEVEL = 0.01


#: What the warning advises when a statistic is flagged, unless the model says more specifically.
ADVICE = "consider another family (e.g. beta for bounded records) or check the knowledge"


def predictive_check(observed: Mapping[str, float], replicated: Mapping[str, np.ndarray],
                     level: float = LEVEL, advice: str = ADVICE) -> xr.Dataset:
    """The check table of ``observed`` statistics against their ``replicated`` draws.

    Parameters
    ----------
    observed
        ``{statistic: T(y)}``.
    replicated
        ``{statistic: draws of T(y_rep)}`` (1-D, the same statistics as ``observed``).
    level
        Flag statistics whose two-sided tail probability is below it (in (0, 1)).
    advice
        What the warning tells the user to do when a statistic is flagged (the model knows best).

    Returns
    -------
    xarray.Dataset
        Over ``statistic``: ``observed``, ``replicated_mean``, ``replicated_low`` / ``_high``
        (5% / 95%), ``p_value``, ``flagged``.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if set(observed) != set(replicated):
        raise ValueError(f"observed and replicated must name the same statistics, got {sorted(observed)} and "
                         f"{sorted(replicated)}")
    names = list(observed)
    if not names:
        raise ValueError("predictive_check needs at least one statistic")
    rows = []
    for name in names:
        obs = float(observed[name])
        rep = np.asarray(replicated[name], dtype=float).ravel()
        if rep.size < 2:
            raise ValueError(f"replicated[{name!r}] needs at least 2 draws, got {rep.size}")
        if not (np.isfinite(obs) and np.isfinite(rep).all()):
            raise ValueError(f"statistic {name!r} is not finite (observed {obs!r} or a replicated draw)")
        p = min(1.0, 2 * min(np.mean(rep >= obs), np.mean(rep <= obs)))
        rows.append((obs, rep.mean(), *np.quantile(rep, [0.05, 0.95]), p))
    arr = np.array(rows)
    return xr.Dataset(
        {
            "observed": ("statistic", arr[:, 0]),
            "replicated_mean": ("statistic", arr[:, 1]),
            "replicated_low": ("statistic", arr[:, 2]),
            "replicated_high": ("statistic", arr[:, 3]),
            "p_value": ("statistic", arr[:, 4]),
            "flagged": ("statistic", arr[:, 4] < level),
        },
        coords={"statistic": names},
        attrs={"level": level, "advice": advice, "description": "posterior predictive checks of the public knowledge "
                                              "(two-sided tail probabilities; flagged below level)"},
    )


def format_checks(checks: xr.Dataset) -> list[str]:
    """Lines for the terminal: one per statistic, then a warning naming every flagged one."""
    lines = [f"{'statistic':<26} {'observed':>10} {'replicated 5-95%':>24} {'p':>6}"]
    for name in checks.statistic.values:
        c = checks.sel(statistic=name)
        mark = "  <- not reproduced" if bool(c.flagged) else ""
        lines.append(f"{str(name):<26} {float(c.observed):>10.4g} "
                     f"{f'[{float(c.replicated_low):.4g}, {float(c.replicated_high):.4g}]':>24} "
                     f"{float(c.p_value):>6.3f}{mark}")
    flagged = [str(n) for n in checks.statistic.values[checks.flagged.values]]
    if flagged:
        lines.append(f"warning: the model of public knowledge cannot reproduce {', '.join(flagged)} "
                     f"(p < {checks.attrs['level']:g}); its simulated datasets may be off there: "
                     f"{checks.attrs.get('advice', ADVICE)}")
    return lines
