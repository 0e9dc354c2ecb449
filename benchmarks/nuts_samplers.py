"""PyMC's own NUTS against nutpie on the built-in examples' models of public knowledge (issue 25, item 4).

Issue 25 named nutpie (PyMC's Rust NUTS, ``pip install nutpie``) as a way to speed up the calibration
study, whose time goes into many small fits: one model per truth, a few hundred draws each.  This
script fits each example's model as ``select`` does (a fresh ``pm.Model`` per fit, the toolkit's strict
Numba mode, 2 chains on one core) with ``nuts_sampler="pymc"`` and with ``"nutpie"``, after one
warm-up fit of each (so both find PyTensor's compile cache warm), and prints seconds per fit and the
ratio nutpie / pymc.  nutpie compiles each new model for several seconds; it pays only for long runs.

Since PyMC 6 samples with nutpie whenever it is installed, the toolkit names ``nuts_sampler="pymc"``
(``hybridpriv.core.model._strict_sample_kwargs``): the same seed then gives the same draws on any machine.

    pip install nutpie && python benchmarks/nuts_samplers.py                  # 500 and 2,000 draws
    python benchmarks/nuts_samplers.py --draws 300 --examples grouped.toml
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings
from importlib import resources

import numpy as np

from hybridpriv.spec import load_spec

EXAMPLES = ("grouped.toml", "salaries.toml", "pima.toml")


def fit_seconds(spec_path, sampler: str, draws: int, seed: int) -> tuple[float, float]:
    """Seconds of one fit of the example's model (built afresh) and the posterior mean of its first variable."""
    model = load_spec(spec_path).problem().model
    start = time.perf_counter()
    post = model.fit(draws=draws, tune=draws, chains=2, seed=seed, cores=1, nuts_sampler=sampler,
                     on_unconverged="ignore")
    seconds = time.perf_counter() - start
    first = next(iter(post.idata["posterior"].data_vars))
    return seconds, float(np.asarray(post.idata["posterior"][first]).mean())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, nargs="+", default=[500, 2000], help="draws (and tuning steps) per chain")
    parser.add_argument("--examples", nargs="+", default=list(EXAMPLES), help="built-in example SPECs")
    parser.add_argument("--repeats", type=int, default=2, help="timed fits per setting (after one warm-up)")
    args = parser.parse_args(argv)
    try:
        import nutpie  # noqa: F401
    except ImportError:
        parser.exit(2, "nuts_samplers.py compares against nutpie: pip install nutpie first\n")
    warnings.filterwarnings("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    print(f"{'example':16s} {'draws':>6s} {'pymc s/fit':>11s} {'nutpie s/fit':>13s} {'ratio':>6s}  first variable's mean")
    for name in args.examples:
        path = resources.files("hybridpriv.examples") / name
        for sampler in ("pymc", "nutpie"):
            fit_seconds(path, sampler, 50, seed=99)  # warm-up: compile caches
        for draws in args.draws:
            times, means = {}, {}
            for sampler in ("pymc", "nutpie"):
                runs = [fit_seconds(path, sampler, draws, seed=r) for r in range(args.repeats)]
                times[sampler] = float(np.mean([t for t, _ in runs]))
                means[sampler] = float(np.mean([m for _, m in runs]))
            print(f"{name:16s} {draws:6d} {times['pymc']:11.2f} {times['nutpie']:13.2f} "
                  f"{times['nutpie'] / times['pymc']:6.2f}  {means['pymc']:.3f} / {means['nutpie']:.3f}")


if __name__ == "__main__":
    main()
