"""Audit every mechanism the release path can publish, as it publishes it: OpenDP noise, ChaCha20 draws.

``hybridpriv release`` publishes the grouped mean estimators whose noise the OpenDP backend draws
(the medians draw Gumbel noise and are refused) and user-item's contribution-bounded counts.  This
script audits each of them with the *release* generator (:class:`hybridpriv.release.noise.OpenDPGenerator`,
not the simulation's NumPy one), on two kinds of neighbouring pairs:

* **own pairs**, chosen here: grouped: every other record at the lower bound and the changed record
  at the lower vs the upper bound (replace-one; the claim audited is the declaration charged to a
  replace-one unit, ``2 epsilon`` for an add/remove declaration), bounds that exclude 0
  (``[10, 20]``, ``[-20, -10]``) and one asymmetric around it (``[-1, 5]``); user-item: a matrix in
  which the user who leaves holds exactly ``k`` items (all of them kept), statistic the sum of the
  counts of those items;
* **the toolkit's pairs** (:func:`hybridpriv.testing.neighbouring_pairs`) for the declared relation.

Broken variants must be flagged: the power of the audit on this path.  Grouped: the weighted mean with a
fifth of its noise (at bounds that exclude 0 an add/remove claim cannot be tested with the sizes fixed
beyond the in-bounds change ``b - a``, which a half-noise variant still covers, so the variant must be
broken by more than 2x to be broken at all on such pairs); user-item: half the noise.  Printed: one line per (mechanism, relation, bounds, unit) with the claim, the lower bound and
the verdict, then the counts.

    python benchmarks/audit_release_path.py              # 20,000 releases per dataset
    python benchmarks/audit_release_path.py --samples 50000
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np


class ReleasePath:
    """A mechanism whose every release draws from a fresh release generator (the ``rng`` given is ignored:
    OpenDP's samplers and ChaCha20 are not seedable, and an audit's bounds hold for any randomness)."""

    def __init__(self, mech, scale: float = 1.0) -> None:
        self._mech = mech
        self._scale = scale  # < 1: a broken variant (noise at this fraction of its scale)

    def __getattr__(self, name):
        return getattr(self._mech, name)

    def _rng(self):
        from hybridpriv.release.noise import OpenDPGenerator

        rng = OpenDPGenerator()
        if self._scale != 1.0:
            laplace = rng.laplace
            rng.laplace = lambda loc=0.0, scale=1.0, size=None: laplace(loc, np.asarray(scale) * self._scale, size)
        return rng

    def release(self, data, rng, trials=1):
        return self._mech.release(data, self._rng(), trials)

    def estimate(self, data, rng):
        return self._mech.estimate(data, self._rng())


NAMES = ("weighted", "uniform-mean", "public-mean", "pdp-min", "pdp-avg", "pdp-max", "pdp-opt", "pdp-opt-expected")
BOUNDS = ((10.0, 20.0), (-20.0, -10.0), (-1.0, 5.0))


def grouped_cases(bounds_list, names=NAMES):
    from hybridpriv.core.privacy import Group
    from hybridpriv.estimators import make_estimator
    from hybridpriv.release.noise import UnsupportedNoiseError, probe_noise

    groups = [Group("panel", 30, math.inf), Group("a", 40, 1.0), Group("b", 30, 0.3)]
    for bounds in bounds_list:
        mid = 0.5 * (bounds[0] + bounds[1])
        for relation in ("add-remove", "replace"):
            for name in names:
                mech = make_estimator(name, groups, bounds, sigma2=(bounds[1] - bounds[0]) ** 2 / 12, relation=relation,
                                      mean_square=mid ** 2)
                try:
                    probe_noise(mech, [np.full(g.size, mid) for g in groups])
                except UnsupportedNoiseError:
                    continue
                yield f"{name} {relation} {list(bounds)}", mech, False
            if relation == "add-remove":
                yield f"weighted (BROKEN: 1/5 noise) {relation} {list(bounds)}", make_estimator(
                    "weighted", groups, bounds, sigma2=1.0, relation=relation), True


def own_grouped_pairs(mech, unit):
    from hybridpriv.testing import NeighbouringPair

    a, b = mech.bounds.lower, mech.bounds.upper
    base = [np.full(g.size, a) for g in mech.groups]
    idx = [g.name for g in mech.groups].index(unit)
    second = [x.copy() for x in base]
    second[idx][0] = b
    return [NeighbouringPair(base, second, f"{unit}: record 0 at {a:g} vs {b:g}, the rest at {a:g}")]


def run(samples: int, seed: int = 0, bounds_list=BOUNDS, names=NAMES, ks=(1, 3)) -> list[tuple]:
    from hybridpriv.core.privacy import Guarantee
    from hybridpriv.families.user_item.mechanisms import ContributionBoundedCounts
    from hybridpriv.testing import NeighbouringPair, audit, audit_estimator
    from hybridpriv.testing.pairs import mechanism_sampler

    rows = []
    replace_unit = Guarantee(1.0, relation="replace")
    for label, mech, broken in grouped_cases(bounds_list, names):
        wrapped = ReleasePath(mech, 0.2 if broken else 1.0)
        for unit, g in mech.privacy.items():
            if not math.isfinite(g.epsilon) or g.epsilon == 0:
                continue
            claim = g.charge_to(replace_unit)
            r = audit(mechanism_sampler(wrapped), own_grouped_pairs(mech, unit), claim.epsilon, claim.delta,
                      samples=samples, seed=seed)
            rows.append((label, "own", unit, claim.epsilon, r.epsilon_lower_bound, r.verdict, broken))
        for unit, r in audit_estimator(wrapped, [np.full(g_.size, mech.bounds.midpoint) for g_ in mech.groups],
                                       samples=samples, seed=seed).items():
            rows.append((label, "toolkit", unit, r.epsilon, r.epsilon_lower_bound, r.verdict, broken))
    for k in ks:
        for broken in (False, True):
            mech = ContributionBoundedCounts(k, 1.0)
            m = np.zeros((20, 6))
            m[np.arange(20), np.arange(20) % 6] = 1
            m[0, :k] = 1
            smaller = m[1:]
            items = np.flatnonzero(m[0])
            label = f"counts k={k}" + (" (BROKEN: half noise)" if broken else "")
            pair = NeighbouringPair(m, smaller, f"users: remove a user who holds {k} items",
                                    statistic=lambda out, items=items: np.asarray(out)[:, items].sum(axis=1))
            wrapped = ReleasePath(mech, 0.5 if broken else 1.0)
            r = audit(lambda d, rng, size: wrapped.release(d, rng, size), [pair], 1.0, samples=samples, seed=seed)
            rows.append((label, "own", "users", 1.0, r.epsilon_lower_bound, r.verdict, broken))
            for unit, r in audit_estimator(wrapped, m, samples=samples, seed=seed).items():
                rows.append((label, "toolkit", unit, r.epsilon, r.epsilon_lower_bound, r.verdict, broken))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows = run(args.samples, args.seed)
    print(f"{'mechanism':<46} {'pairs':<8} {'unit':<6} {'claim':>7} {'lower bound':>12}  verdict")
    for label, pairs, unit, claim, low, verdict, broken in rows:
        print(f"{label:<46} {pairs:<8} {unit:<6} {claim:>7.3g} {low:>12.3g}  {verdict}")
    correct = [r for r in rows if not r[6]]
    broken = {r[0] for r in rows if r[6]}
    caught = {r[0] for r in rows if r[6] and r[5] == "violation"}
    print(f"correct mechanisms: {sum(r[5] == 'violation' for r in correct)} of {len(correct)} audits flagged; "
          f"broken variants caught: {len(caught)} of {len(broken)}; {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
