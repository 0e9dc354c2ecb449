"""``family="auto"``: the grouped model's data family chosen by PSIS-LOO on the public records.

Each candidate family (clamped normal, Beta, :class:`MixtureFamily`) is fitted to the public
records alone and scored by its expected log pointwise predictive density, estimated by
Pareto-smoothed importance-sampling leave-one-out (Vehtari, Gelman & Gabry 2017; ``arviz_stats.loo``).
Scores are comparable because every family's pointwise log-likelihood is on the data scale: a
probability for a record exactly on a bound (the censored normal's tail mass, the mixture's point
mass) and a density in data units elsewhere (the Beta's unit-scale density divided by the width).
The Beta family cannot put mass on a bound, so it is left out when a record sits on one.

The fits run on the unit scale: records ``(x - a) / (b - a)`` on bounds ``[0, 1]`` with each family's
default priors, which are equivariant under that map (the normal's prior on ``mu`` is centred at the
midpoint with the width as its sd, ``sigma``'s scale is half the width; the Beta's and the mixture's
priors live on the unit scale), so the posterior is the same law, and an interior record's log density
is moved back to the data scale by ``- log(b - a)``.  The records enter as ``pm.Data``: every choice
then compiles the same three graphs, which PyTensor's Numba cache compiles once (per machine, on disk)
instead of once per set of records.

The simplest family (normal, then beta, then mixture) is kept unless a more flexible one improves
the ELPD by more than :data:`SE_MARGIN` standard errors of the pointwise difference.

The choice is a function of its arguments (the records, the bounds, the seed, the candidates and the
sampler's sizes): the last :data:`CACHE_SIZE` choices of a process are kept, keyed by all of them, and a
repeated call returns a copy of the same table without sampling again (the calibration study asks twice
per truth: its select run and its budget-spending selector share the public records).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
import pymc as pm
import xarray as xr

from ...core.privacy import Bounds
from ...core.random import stream

__all__ = ["CACHE_SIZE", "FAMILY_ORDER", "SE_MARGIN", "choose_family"]

#: Candidate families, simplest first.
FAMILY_ORDER = ("normal", "beta", "mixture")
#: A more flexible family must beat the chosen one by this many standard errors of the ELPD difference.
SE_MARGIN = 2.0
#: How many choices a process keeps (:func:`choose_family`).
CACHE_SIZE = 8
_CACHE: OrderedDict[tuple, tuple[str, xr.Dataset]] = OrderedDict()


def _fit_loo(family, records: np.ndarray, seed: int, draws: int, tune: int, chains: int, pit: np.random.SeedSequence):
    from ...core.model import quiet_sampler

    with quiet_sampler():  # a choice among families, not the fit the user asked for: no chatter
        return _sample_loo(family, records, seed, draws, tune, chains, pit)


def _sample_loo(family, records: np.ndarray, seed, draws: int, tune: int, chains: int, pit: np.random.SeedSequence):
    """PSIS-LOO and the LOO-PIT p-value of ``family`` (bound to the data's bounds) on ``records``, fitted on
    the unit scale (module docstring)."""
    import arviz_stats
    import pytensor

    from ...core.model import _strict_sample_kwargs

    bounds = family.bounds
    unit = (records - bounds.lower) / bounds.width  # exactly 0 / 1 for a record on a bound
    family = family.__class__().with_bounds(Bounds(0.0, 1.0))
    # fast-math off for everything this compiles (the trace and log-likelihood functions too), as in
    # KnowledgeModel.fit: the same bits whatever the compile cache holds
    with pm.Model(), pytensor.config.change_flags(numba__fastmath=False):
        params = family.priors()
        family.observe("y", params, pm.Data("records", unit))
        idata = pm.sample(draws=draws, tune=tune, chains=chains, random_seed=seed, progressbar=False,
                          compute_convergence_checks=False, **_strict_sample_kwargs({}))
        pm.compute_log_likelihood(idata, var_names=["y"], progressbar=False)
    # an interior record's unit-scale density -> data-scale density (a record on a bound has a probability)
    ll = idata["log_likelihood"].to_dataset()
    interior = xr.DataArray((unit > 0) & (unit < 1), dims=ll["y"].dims[-1:])
    idata["log_likelihood"] = ll.assign(y=ll["y"] - np.log(bounds.width) * interior)
    import warnings

    with warnings.catch_warnings():  # the table reports max_pareto_k (and select prints it once): no raw warning
        warnings.filterwarnings("ignore", message="Estimated shape parameter of Pareto")
        loo = arviz_stats.loo(idata, pointwise=True, var_name="y")
    return loo, _loo_pit_p(family, idata, unit, pit, list(params))  # PIT values do not depend on the scale


def _loo_pit_p(family, idata, records: np.ndarray, pit: np.random.SeedSequence, names: Sequence[str]) -> float:
    """p-value of the uniformity of the records' LOO-PIT values (``arviz_stats.loo_pit``; ArviZ's
    pointwise-order uniformity test, ``pot_c``): small when the family's leave-one-out predictive
    distribution misplaces the records (too narrow, too wide, skewed the wrong way).  Replicates
    are ``family.simulate`` at each posterior draw (the scale of ``records``, clamped: ties at a bound are
    randomised by ``loo_pit``).  Randomness: ``pit``, stream ``("family-choice", family, "loo-pit")``."""
    import arviz_stats
    from arviz_base import from_dict
    from arviz_stats.base import array_stats

    post = idata["posterior"].to_dataset()
    chains, draws = post.sizes["chain"], post.sizes["draw"]
    replicates, ties = (np.random.default_rng(s) for s in pit.spawn(2))
    rep = np.empty((chains, draws, records.size))
    for c in range(chains):
        for d in range(draws):
            p = {n: (float(post[n].values[c, d]) if post[n].ndim == 2 else post[n].values[c, d].copy())
                 for n in names}
            rep[c, d] = family.simulate(p, records.size, replicates)
    ll = np.asarray(idata["log_likelihood"]["y"].transpose("chain", "draw", ...).values)
    dt = from_dict({"posterior": {"dummy": np.zeros((chains, draws))}, "log_likelihood": {"y": ll},
                    "posterior_predictive": {"y": rep}, "observed_data": {"y": records}},
                   dims={"y": ["record"]})
    pit = arviz_stats.loo_pit(dt, var_names="y", random_state=ties)
    values = np.asarray(pit["y"] if hasattr(pit, "data_vars") else pit).ravel()
    return float(array_stats.uniformity_test(values)[0])


def choose_family(records: np.ndarray, bounds: Bounds, seed: int = 0, candidates: Sequence[str] = FAMILY_ORDER,
                  draws: int = 500, tune: int = 500, chains: int = 2) -> tuple[str, xr.Dataset]:
    """The family of ``candidates`` the public ``records`` support best, and the comparison table.

    Returns
    -------
    (name, table)
        ``table`` over ``family``: ``elpd``, ``se``, ``elpd_diff`` (to the chosen), ``se_diff``,
        ``max_pareto_k`` (above 0.7 the estimate is unreliable), ``loo_pit_p`` (p-value of the
        uniformity of the records' LOO-PIT values: below 0.01 the family misplaces the records
        even when it is the best of those compared), ``chosen``; families left out
        (the Beta with records on a bound) are absent.
    """
    x = np.asarray(records, dtype=float).ravel()
    if x.size < 5:
        raise ValueError(f"choosing a family needs at least 5 public records, got {x.size}")
    unknown = [c for c in candidates if c not in FAMILY_ORDER]
    if unknown or not candidates:
        raise ValueError(f"candidates must be among {FAMILY_ORDER}, got {list(candidates)!r}")
    key = (hashlib.sha256(x.tobytes()).hexdigest(), x.size, float(bounds.lower), float(bounds.upper), int(seed),
           tuple(candidates), int(draws), int(tune), int(chains))
    if key in _CACHE:
        _CACHE.move_to_end(key)
        chosen, table = _CACHE[key]
    else:
        chosen, table = _CACHE[key] = _choose(x, bounds, seed, candidates, draws, tune, chains)
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return chosen, table.copy(deep=True)


def _choose(x: np.ndarray, bounds: Bounds, seed: int, candidates: Sequence[str], draws: int, tune: int,
            chains: int) -> tuple[str, xr.Dataset]:
    from .model_families import BetaFamily, NormalFamily
    from .model_mixture import MixtureFamily

    families = {"normal": NormalFamily, "beta": BetaFamily, "mixture": MixtureFamily}
    on_bound = bool(np.any((x <= bounds.lower) | (x >= bounds.upper)))
    names = [c for c in FAMILY_ORDER if c in candidates and not (c == "beta" and on_bound)]
    results, pit_p = {}, {}
    for name in names:
        family = families[name]().with_bounds(bounds)
        chain_seeds = [int(stream(seed, "family-choice", name, c).generate_state(1, np.uint32)[0]) for c in range(chains)]
        results[name], pit_p[name] = _fit_loo(family, x, chain_seeds, draws, tune, chains,
                                              stream(seed, "family-choice", name, "loo-pit"))
    chosen = names[0]
    for name in names[1:]:
        diff = np.asarray(results[name].elpd_i).ravel() - np.asarray(results[chosen].elpd_i).ravel()
        if diff.sum() > SE_MARGIN * np.sqrt(diff.size * diff.var()):
            chosen = name
    ref = np.asarray(results[chosen].elpd_i).ravel()
    rows = []
    for name in names:
        r = results[name]
        diff = np.asarray(r.elpd_i).ravel() - ref
        rows.append((r.elpd, r.se, diff.sum(), np.sqrt(diff.size * diff.var()), float(np.max(r.pareto_k)),
                     pit_p[name]))
    arr = np.array(rows, dtype=float)
    table = xr.Dataset(
        {"elpd": ("family", arr[:, 0]), "se": ("family", arr[:, 1]), "elpd_diff": ("family", arr[:, 2]),
         "se_diff": ("family", arr[:, 3]), "max_pareto_k": ("family", arr[:, 4]),
         "loo_pit_p": ("family", arr[:, 5]),
         "chosen": ("family", np.array([n == chosen for n in names]))},
        coords={"family": names},
        attrs={"rule": f"the simplest family unless a more flexible one gains more than {SE_MARGIN:g} s.e. of ELPD "
                       "(PSIS-LOO on the public records)", "records": int(x.size)},
    )
    return chosen, table
