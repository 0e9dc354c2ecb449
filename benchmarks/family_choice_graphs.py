"""The grouped family choice (PSIS-LOO) with the records as ``pm.Data`` on the unit scale against constants (issue 25).

Since 2026-11-30 ``choose_family`` fits each candidate family on the unit scale with the records as ``pm.Data``:
every set of records then compiles the same graphs, which PyTensor's Numba cache reuses.  Before, the records
(and the bounds) were constants of each graph, so each new set of records compiled it again.  This script times
both on the same record sets, in one process, after one warm-up of each: ``choose_family`` as it is, and the old
way (a fit per family with the records as constants on the data scale; ``old_fits`` below, sampling only, no LOO,
so the old time is a lower bound).  It prints seconds per record set and the ratio old / new.

    python benchmarks/family_choice_graphs.py            # 3 record sets of 60-100 records
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import numpy as np
import pymc as pm
import pytensor

from hybridpriv.core.model import _strict_sample_kwargs, quiet_sampler
from hybridpriv.core.privacy import Bounds
from hybridpriv.families.grouped import model_choice
from hybridpriv.families.grouped.model_families import NormalFamily
from hybridpriv.families.grouped.model_mixture import MixtureFamily


def old_fits(records: np.ndarray, bounds: Bounds, seed: int) -> None:
    """The fits of the choice before: each family bound to the data's bounds, the records constants."""
    for cls in (NormalFamily, MixtureFamily):
        family = cls().with_bounds(bounds)
        with quiet_sampler(), pm.Model(), pytensor.config.change_flags(numba__fastmath=False):
            family.observe("y", family.priors(), records)
            idata = pm.sample(draws=500, tune=500, chains=2, random_seed=seed, progressbar=False,
                              compute_convergence_checks=False, **_strict_sample_kwargs({}))
            pm.compute_log_likelihood(idata, var_names=["y"], progressbar=False)


def new_choice(records: np.ndarray, bounds: Bounds, seed: int) -> None:
    model_choice._CACHE.clear()
    model_choice.choose_family(records, bounds, seed=seed, candidates=("normal", "mixture"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=int, default=3, help="record sets timed (each new to both paths)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    rng = np.random.default_rng(0)
    bounds = Bounds(0.0, 100.0)

    def records(k: int) -> np.ndarray:
        return np.clip(rng.normal(30 + 10 * k, 15, 60 + 20 * k), 0, 100)

    new_choice(records(0), bounds, 0)  # warm-up: imports and compile caches
    old_fits(records(0), bounds, 0)
    print(f"{'set':>4s} {'records':>8s} {'old s':>7s} {'new s':>7s} {'old / new':>10s}")
    totals = [0.0, 0.0]
    for k in range(1, args.sets + 1):
        x = records(k)
        start = time.process_time()
        old_fits(x, bounds, k)
        old = time.process_time() - start
        start = time.process_time()
        new_choice(x, bounds, k)
        new = time.process_time() - start
        totals[0] += old
        totals[1] += new
        print(f"{k:4d} {x.size:8d} {old:7.1f} {new:7.1f} {old / new:10.2f}")
    print(f"all  {'':8s} {totals[0]:7.1f} {totals[1]:7.1f} {totals[0] / totals[1]:10.2f}  (CPU seconds, one process)")


if __name__ == "__main__":
    main()
