"""The fits of ``test_reproducible_fits.py``: every model of public knowledge, with each of its
options that changes what is sampled or how, on a tiny problem.

Imported by the test (by path) and run as a script in a fresh interpreter::

    python reproducible_fits_helper.py OUT.npz SEED NAME [NAME ...]

which fits configuration ``NAME`` with ``SEED`` for each name and saves every posterior variable
(``"NAME|variable"``) to ``OUT.npz``.  A configuration is a function of the seed returning
``{variable: array}``: the ``posterior`` group of the fit's ``idata`` (chains x draws), plus, for a
``family="auto"`` grouped model, the PSIS-LOO table that chose the family (``family_choice/...``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable

import numpy as np

#: Few draws: the point is the bytes, not the posterior (``on_unconverged="ignore"``).
FIT = dict(draws=30, tune=30, chains=2, on_unconverged="ignore")

#: name -> fit(seed) -> {variable: array}
CONFIGS: dict[str, Callable[[int], dict[str, np.ndarray]]] = {}


def config(name: str) -> Callable:
    def register(fn: Callable[[int], dict[str, np.ndarray]]) -> Callable[[int], dict[str, np.ndarray]]:
        assert name not in CONFIGS, name
        CONFIGS[name] = fn
        return fn
    return register


def posterior_arrays(post, prefix: str = "") -> dict[str, np.ndarray]:
    """Every variable of ``post.idata["posterior"]`` as ``(chain, draw, ...)`` arrays."""
    p = post.idata["posterior"]
    return {prefix + str(k): np.ascontiguousarray(p[k].transpose("chain", "draw", ...).values) for k in p.data_vars}


# ------------------------------------------------------------------------------ grouped data


def _grouped(seed: int, family, public: bool = True, **kwargs) -> dict[str, np.ndarray]:
    from hybridpriv.models import GroupedDataModel

    from hybridpriv.core.privacy import Group

    groups = [Group("panel", 30, math.inf), Group("a", 200, 1.0), Group("b", 100, 0.3)]
    rng = np.random.default_rng(20261123)
    panel = np.round(np.clip(rng.normal(3.5, 2.5, 30), 0.0, 10.0), 1)  # a few records on the lower bound
    if family == "beta":
        panel = np.clip(panel, 0.5, 9.5)
    model = GroupedDataModel(groups, (0.0, 10.0), family=family, public_data={"panel": panel} if public else None,
                             **kwargs)
    post = model.fit(seed=seed, cores=1, **FIT)
    out = posterior_arrays(post)
    if model.family_choice is not None:
        t = model.family_choice
        out.update({f"family_choice/{k}": np.ascontiguousarray(t[k].values) for k in t.data_vars})
        out["family_choice/chosen_family"] = np.array(model.family.name)
    return out


def _released(group):
    from hybridpriv.models import ReleasedMean

    return [ReleasedMean(4.1, 0.2, group)]


@config("grouped/normal/public-records")
def _(seed):
    return _grouped(seed, "normal")


@config("grouped/normal/known-variance+released-mean")
def _(seed):
    return _grouped(seed, "normal", known_variance=6.0, released_means=_released("a"))


@config("grouped/beta/public-records+released-mean")
def _(seed):
    return _grouped(seed, "beta", released_means=_released("b"))


@config("grouped/mixture/public-records+released-mean")
def _(seed):
    return _grouped(seed, "mixture", released_means=_released(None))


@config("grouped/auto/public-records")  # PSIS-LOO among normal, beta, mixture (fits of its own)
def _(seed):
    return _grouped(seed, "auto")


@config("grouped/auto/no-records+released-mean")  # nothing to choose by: normal
def _(seed):
    return _grouped(seed, "auto", public=False, released_means=_released(None))


def _gumbel_priors():
    import pymc as pm

    return {"mu": pm.Normal("mu", 4.0, 3.0), "beta": pm.HalfNormal("beta", 3.0)}


def _gumbel(mu, beta):
    import pymc as pm

    return pm.Gumbel.dist(mu, beta)


@config("grouped/custom-family/public-records")
def _(seed):
    from hybridpriv.models import CustomFamily

    return _grouped(seed, CustomFamily(_gumbel_priors, _gumbel))


# ------------------------------------------------------------------------------ user-item

#: Column sums of the user-item configurations (16 reports of 5 items).
COLUMN_SUMS = [6, 4, 3, 2, 1]


def _useritem(seed: int, n=None, **kwargs) -> dict[str, np.ndarray]:
    from hybridpriv.models import UserItemModel

    cores = kwargs.pop("cores", 1)
    post = UserItemModel(COLUMN_SUMS, n, **kwargs).fit(seed=seed, cores=cores, **FIT)
    return posterior_arrays(post)


@config("useritem/uniform/n-known")
def _(seed):
    return _useritem(seed, 8)


@config("useritem/uniform/n-range")
def _(seed):
    return _useritem(seed, (6, 12))


@config("useritem/uniform/n-unknown+poisson-n-prior")
def _(seed):
    import pymc as pm

    return _useritem(seed, None, n_prior=pm.Poisson.dist(9))


@config("useritem/negative-binomial/n-known")
def _(seed):
    return _useritem(seed, 8, items_prior="negative-binomial")


@config("useritem/negative-binomial/n-range")
def _(seed):
    return _useritem(seed, (6, 12), items_prior="negative-binomial")


@config("useritem/negative-binomial/n-unknown+poisson-n-prior/2-worker-processes")
def _(seed):  # the step (and its PointFunction) pickled into forkserver workers
    import pymc as pm

    return _useritem(seed, None, n_prior=pm.Poisson.dist(9), items_prior="negative-binomial", cores=2)


@config("useritem/fixed-items/n-range")
def _(seed):
    from hybridpriv.models import FixedItems

    return _useritem(seed, (6, 12), items_prior=FixedItems(np.log([0.4, 0.3, 0.15, 0.1, 0.05])))


# ------------------------------------------------------------------------------ hybrid trust (Avent et al.)


def _pilots():
    rng = np.random.default_rng(7)
    return rng.beta(2.0, 5.0, 15), rng.beta(3.0, 3.0, 20)


@config("avent/homogeneous/pilot-T")
def _(seed):
    from hybridpriv.models import HybridTrustModel

    pilot_T, _ = _pilots()
    return posterior_arrays(HybridTrustModel(1.0, homogeneous=True, pilot_T=pilot_T).fit(seed=seed, **FIT))


@config("avent/homogeneous/released-mean")
def _(seed):
    from hybridpriv.models import HybridTrustModel, ReleasedMean

    model = HybridTrustModel(1.0, homogeneous=True, sizes=(50, 200), released_means=[ReleasedMean(0.4, 0.05, None)])
    return posterior_arrays(model.fit(seed=seed, **FIT))


@config("avent/heterogeneous/no-records")
def _(seed):
    from hybridpriv.models import HybridTrustModel

    return posterior_arrays(HybridTrustModel(1.0).fit(seed=seed, **FIT))


@config("avent/heterogeneous/pilots+released-means")
def _(seed):
    from hybridpriv.models import HybridTrustModel, ReleasedMean

    pilot_T, pilot_L = _pilots()
    model = HybridTrustModel(1.0, pilot_T=pilot_T, pilot_L=pilot_L, sizes=(50, 200),
                             released_means=[ReleasedMean(0.3, 0.05, "T"), ReleasedMean(0.45, 0.05, None)])
    return posterior_arrays(model.fit(seed=seed, **FIT))


@config("avent/prior-draws")
def _(seed):
    from hybridpriv.models import HybridTrustModel

    return posterior_arrays(HybridTrustModel(1.0, sizes=(50, 200)).prior(draws=60, seed=seed))


@config("avent/fit_many")
def _(seed):
    from hybridpriv.models import HybridTrustModel, fit_many

    pilot_T, pilot_L = _pilots()
    models = [HybridTrustModel(1.0, homogeneous=True, pilot_T=pilot_T), HybridTrustModel(1.0, pilot_L=pilot_L)]
    out = {}
    for i, post in enumerate(fit_many(models, seed=seed, **FIT)):
        out.update(posterior_arrays(post, f"k{i}/"))
    return out


# ------------------------------------------------------------------------------ K-means pilot


@config("kmeans-pilot")
def _(seed):
    from hybridpriv.models import KMeansPilotModel

    pilot = np.random.default_rng(3).random((20, 2))
    model = KMeansPilotModel(pilot, (0.0, 1.0), n=100, c=0.3, k=2, smoothing=0.05)
    return posterior_arrays(model.fit(seed=seed, **FIT))


# ------------------------------------------------------------------------------ Wang et al.


def _wang(seed: int, summaries: str) -> dict[str, np.ndarray]:
    from hybridpriv.models import PublishedSummaries, WangPrivateModel

    rng = np.random.default_rng(11)
    X = rng.normal(0.0, 1.0, (60, 2))
    y = (rng.random(60) < 1 / (1 + np.exp(-(X @ [0.8, -0.5])))).astype(float)
    Xp = rng.normal(0.3, 1.2, (300, 2))
    yp = (rng.random(300) < 1 / (1 + np.exp(-(0.2 + Xp @ [0.8, -0.5])))).astype(float)
    summ = PublishedSummaries(300) if summaries == "size" else PublishedSummaries.from_data(Xp, yp)
    model = WangPrivateModel(X, y, summ, rate_draws=100, seed=5)
    return posterior_arrays(model.fit(seed=seed, cores=1, **FIT))


@config("wang/size-only")
def _(seed):
    return _wang(seed, "size")


@config("wang/means+variances+rate")
def _(seed):
    return _wang(seed, "all")


# ------------------------------------------------------------------------------ the script


def quiet() -> None:
    """PyMC's and PyTensor's chatter off (warnings of tiny fits, progress)."""
    import logging
    import warnings

    import pymc  # noqa: F401  (PyMC sets its logger's level on import: set it afterwards)

    warnings.filterwarnings("ignore")
    for name in ("pymc", "pytensor"):
        logging.getLogger(name).setLevel(logging.ERROR)


def main(argv: list[str]) -> None:
    out, seed, names = argv[0], int(argv[1]), argv[2:]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        raise SystemExit(f"unknown configurations: {unknown}")
    quiet()
    arrays = {}
    for name in names:
        for var, value in CONFIGS[name](seed).items():
            arrays[f"{name}|{var}"] = value
    np.savez(out, **arrays)


if __name__ == "__main__":
    main(sys.argv[1:])
