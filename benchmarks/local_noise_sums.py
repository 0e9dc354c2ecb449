"""Speed of simulating the LM users' local noise: one draw of its sum per trial against one draw per user.

Every hybrid-trust estimator uses the LM users' noisy reports only through their sum, so in simulation
:meth:`~hybridpriv.families.hybrid_trust.mechanisms._AventEstimator._noisy_sum` draws that sum at once,
exactly in law (:func:`hybridpriv.noise.laplace_sum`: ``b (G1 - G2)``, ``G`` ~ Gamma(n, 1); a Gaussian sum
is one Gaussian).  The previous path drew every user's noise (``trials x n`` draws); it is what the
estimators still do with any other generator (a release's OpenDP adapter), and what this script times
through a :class:`numpy.random.Generator` subclass.  ``tests/families/hybrid_trust/test_mechanisms.py``
checks that both paths give the same law.

Two tables, ratios measured in this run (CPU seconds of this process, ``time.process_time``; run with
``OMP_NUM_THREADS=1``; the load average is printed first):

* **estimators**: ``estimate`` of ``lm-only``, ``full-lm``, ``hybrid-pwh`` on a fixed dataset broadcast to
  ``--trials`` rows (as the engine passes one), for each LM group size in ``--sizes``;
* **calibration**: :func:`hybridpriv.calibration.calibrate_truth` on hybrid-trust truths of the
  calibration study (seed 0, default settings: the whole select path, then every candidate's realised
  risk), once per path after one warm-up (PyTensor's compile cache).

    python benchmarks/local_noise_sums.py                       # both tables (~4 min)
    python benchmarks/local_noise_sums.py --truths --sizes 100 10000
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
import warnings

import numpy as np

from hybridpriv.core.privacy import Group
from hybridpriv.families.hybrid_trust import mechanisms as mech


class PerUser(np.random.Generator):
    """A generator subclass: the estimators draw every user's noise (the previous simulation path)."""


def _generator(per_user: bool, seed: int) -> np.random.Generator:
    bits = np.random.PCG64(np.random.SeedSequence([0x10CA1, seed]))
    return PerUser(bits) if per_user else np.random.Generator(bits)


@contextlib.contextmanager
def per_user_everywhere():
    """Inside the block every estimator draws each user's noise, whatever generator it is handed."""
    fast = mech._AventEstimator._noisy_sum

    def slow(self, values, scale, rng):
        return self._noisy(values, scale, rng).sum(axis=1)

    mech._AventEstimator._noisy_sum = slow
    try:
        yield
    finally:
        mech._AventEstimator._noisy_sum = fast


def cpu(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def estimators(sizes: list[int], trials: int) -> None:
    print(f"estimate(), {trials} trials, CPU s: per user / one sum / ratio")
    makers = {"lm-only": lambda g: mech.LMOnly(g, (0, 1)), "full-lm": lambda g: mech.FullLM(g, (0, 1)),
              "hybrid-pwh": lambda g: mech.Hybrid(g, (0, 1), "pwh")}
    for n_l in sizes:
        groups = [Group("tcm", max(10, n_l // 10), 1.0), Group("lm", n_l, 1.0)]
        data = [np.broadcast_to(np.linspace(0.0, 1.0, g.size), (trials, g.size)) for g in groups]
        for name, make in makers.items():
            est = make(groups)
            slow = cpu(lambda: est.estimate(data, _generator(True, 1)))
            fast = cpu(lambda: est.estimate(data, _generator(False, 1)))
            print(f"  n_LM = {n_l:>6}  {name:<11} {slow:8.3f} {fast:8.3f}  {slow / max(fast, 1e-9):8.1f}x")


def calibration(truths: list[int]) -> None:
    """The calibration study's select path and realised risks on hybrid-trust truths of seed 0 (its default
    settings): where the local noise's share of the time shows."""
    from hybridpriv.calibration import calibrate_truth
    from hybridpriv.core.random import rng
    from hybridpriv.families import family

    fam = family("hybrid-trust")
    made = {i: fam.synthetic_truth(i, rng(0, "calibration", "hybrid-trust", i, "truth")) for i in truths}

    def run(i: int) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            calibrate_truth(made[i], 0, i)

    run(truths[0])  # warm-up: PyTensor's and Numba's caches
    print("calibrate_truth (hybrid-trust, seed 0), CPU s: per user / one sum / ratio")
    total = [0.0, 0.0]
    for i in truths:
        with per_user_everywhere():
            slow = cpu(lambda: run(i))
        fast = cpu(lambda: run(i))
        total = [total[0] + slow, total[1] + fast]
        print(f"  truth {i:>2} ({made[i].generator}, n_LM = {made[i].spec['lm']['size']})"
              f"  {slow:6.1f} {fast:6.1f}  {slow / fast:5.2f}x")
    print(f"  all {len(truths)}  {total[0]:6.1f} {total[1]:6.1f}  {total[0] / total[1]:5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10_000])
    parser.add_argument("--trials", type=int, default=5000)
    parser.add_argument("--truths", type=int, nargs="*", default=[0, 1, 2, 3],
                        help="hybrid-trust calibration truths of seed 0 to time (none: skip the table)")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    estimators(args.sizes, args.trials)
    if args.truths:
        calibration(args.truths)


if __name__ == "__main__":
    main()
